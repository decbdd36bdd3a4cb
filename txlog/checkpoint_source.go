package txlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
)

// A checkpoint Parquet file larger than rangedCheckpointBytes is read row
// group by row group with ranged Gets (rangedSource) instead of whole: a
// 1,000,000-file checkpoint is ~64 MB, which held on the heap while its
// rows are decoded (and doubled by the collector's headroom) was a third
// of the peak RSS of loading it. A smaller one is one Get, as before.
const (
	rangedCheckpointBytes = 16 << 20
	rangedTailBytes       = 1 << 20 // fetched first: the footer, usually whole
	rangedCachedGroups    = 4       // row groups held at once (2 decoding, 1 for the metadata pass)
)

// rangedSource is the io.ReaderAt of a checkpoint file read in ranges. It
// serves the footer from the tail fetched first; once bind knows the row
// groups, a read inside one fetches that whole row group with one Get,
// checks its page headers (parquetio.CheckRowGroupPages: nothing of a row
// group is decoded before its headers are checked) and keeps it among the
// few most recently used. Any other read is a ranged Get of its bytes.
type rangedSource struct {
	ctx     context.Context
	store   objectstore.Store
	key     string
	size    int64
	tail    []byte
	tailOff int64

	mu     sync.Mutex
	pf     *parquet.File
	groups []byteSpan // by row group; set by bind
	cached []cachedGroup
	// storeErr is the first failed Get after the tail: the caller reports
	// it as the store's failure, not as a damaged file.
	storeErr error
}

type byteSpan struct{ off, end int64 }

type cachedGroup struct {
	g    int
	data []byte
}

// newRangedSource fetches the tail of the file key of size bytes.
func newRangedSource(ctx context.Context, store objectstore.Store, key string, size int64) (*rangedSource, error) {
	tailOff := max(size-rangedTailBytes, 0)
	tail, err := store.Get(ctx, key, objectstore.Range{Offset: tailOff, Length: size - tailOff})
	if err != nil {
		return nil, err
	}
	if int64(len(tail)) != size-tailOff {
		return nil, fmt.Errorf("got %d bytes of the last %d of a %d-byte file", len(tail), size-tailOff, size)
	}
	return &rangedSource{ctx: ctx, store: store, key: key, size: size, tail: tail, tailOff: tailOff}, nil
}

// bind records the row groups of the opened file pf. Every column chunk
// must lie inside the file and row groups must not overlap, so that each
// byte of a chunk belongs to its own row group's span.
func (s *rangedSource) bind(pf *parquet.File) error {
	rgs := pf.Metadata().RowGroups
	groups := make([]byteSpan, len(rgs))
	for g := range rgs {
		sp := byteSpan{off: s.size, end: 0}
		for c := range rgs[g].Columns {
			md := &rgs[g].Columns[c].MetaData
			off := md.DataPageOffset
			if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < off {
				off = md.DictionaryPageOffset
			}
			n := md.TotalCompressedSize
			if off < 0 || n < 0 || off > s.size || n > s.size-off {
				return fmt.Errorf("%w: column chunk %d of row group %d at [%d,+%d) outside the file of %d bytes", parquetio.ErrCorrupt, c, g, off, n, s.size)
			}
			sp.off, sp.end = min(sp.off, off), max(sp.end, off+n)
		}
		if sp.end < sp.off {
			sp = byteSpan{}
		}
		groups[g] = sp
	}
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(groups[a].off - groups[b].off) })
	for i := 1; i < len(order); i++ {
		if a, b := groups[order[i-1]], groups[order[i]]; a.end > a.off && b.end > b.off && b.off < a.end {
			return fmt.Errorf("%w: row groups %d and %d overlap", parquetio.ErrCorrupt, order[i-1], order[i])
		}
	}
	s.mu.Lock()
	s.pf, s.groups = pf, groups
	s.mu.Unlock()
	return nil
}

func (s *rangedSource) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		k, err := s.readSome(p[n:], off+int64(n))
		n += k
		if err != nil {
			return n, err
		}
		if k == 0 {
			return n, io.EOF
		}
	}
	return n, nil
}

// readSome reads from off into p as far as one source (the tail, a row
// group, one Get) holds; 0 bytes at or past the end.
func (s *rangedSource) readSome(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if off >= s.size {
		return 0, nil
	}
	if off >= s.tailOff {
		return copy(p, s.tail[off-s.tailOff:]), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.cached {
		if sp := s.groups[c.g]; off >= sp.off && off < sp.end {
			if i > 0 { // most recently used first
				copy(s.cached[1:i+1], s.cached[:i])
				s.cached[0] = c
			}
			return copy(p, c.data[off-sp.off:]), nil
		}
	}
	for g, sp := range s.groups {
		if off >= sp.off && off < sp.end {
			data, err := s.loadGroup(g, sp)
			if err != nil {
				return 0, err
			}
			return copy(p, data[off-sp.off:]), nil
		}
	}
	// Outside every row group (the footer beyond the tail, a page index):
	// exactly the bytes asked for, up to the next row group or the tail.
	end := min(off+int64(len(p)), s.tailOff)
	for _, sp := range s.groups {
		if sp.off > off && sp.off < end {
			end = sp.off
		}
	}
	b, err := s.get(off, end)
	if err != nil {
		return 0, err
	}
	return copy(p, b), nil
}

// failure returns the first failed Get, if any.
func (s *rangedSource) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.storeErr
}

// loadGroup fetches row group g (span sp), checks its page headers and
// caches it; s.mu is held.
//
// The least recently used group's buffer is dropped from the cache first
// and read into (objectstore.ReadAt fills it in place), so reading a
// checkpoint allocates rangedCachedGroups buffers of about a row group each
// rather than a fresh one per row group: nothing else refers to a cached
// buffer, since readSome copies out of it.
func (s *rangedSource) loadGroup(g int, sp byteSpan) ([]byte, error) {
	var buf []byte
	if len(s.cached) == rangedCachedGroups {
		buf = s.cached[len(s.cached)-1].data
		s.cached = s.cached[:len(s.cached)-1]
	}
	data, err := s.readInto(buf, sp.off, sp.end)
	if err != nil {
		return nil, err
	}
	if err := parquetio.CheckRowGroupPages(s.pf, g, &offsetReaderAt{data: data, off: sp.off}); err != nil {
		return nil, err
	}
	s.cached = slices.Insert(s.cached, 0, cachedGroup{g: g, data: data})
	return data, nil
}

// readInto reads bytes [off,end) of the file into buf, grown when it is
// too short, and returns them.
func (s *rangedSource) readInto(buf []byte, off, end int64) ([]byte, error) {
	n := int(end - off)
	if cap(buf) < n {
		// An eighth more: row groups of one file differ a little in size,
		// and a buffer just too small for the next one would be dropped.
		buf = make([]byte, n, n+n/8)
	}
	buf = buf[:n]
	k, err := objectstore.ReadAt(s.ctx, s.store, s.key, buf, off)
	switch {
	case err == nil || errors.Is(err, io.EOF):
		if k < n {
			return nil, fmt.Errorf("got %d bytes of range [%d,%d) of a %d-byte file", k, off, end, s.size)
		}
		return buf, nil
	default:
		if s.storeErr == nil {
			s.storeErr = err
		}
		return nil, err
	}
}

func (s *rangedSource) get(off, end int64) ([]byte, error) {
	b, err := s.store.Get(s.ctx, s.key, objectstore.Range{Offset: off, Length: end - off})
	if err != nil {
		if s.storeErr == nil {
			s.storeErr = err
		}
		return nil, err
	}
	if int64(len(b)) != end-off {
		return nil, fmt.Errorf("got %d bytes of range [%d,%d) of a %d-byte file", len(b), off, end, s.size)
	}
	return b, nil
}

// offsetReaderAt reads data as the bytes of a file from offset off on.
type offsetReaderAt struct {
	data []byte
	off  int64
}

func (r *offsetReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < r.off || off-r.off > int64(len(r.data)) {
		return 0, fmt.Errorf("%w: read at offset %d outside row group bytes [%d,%d)", parquetio.ErrCorrupt, off, r.off, r.off+int64(len(r.data)))
	}
	n := copy(p, r.data[off-r.off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
