package parquetio

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"runtime/debug"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// ReadOption configures Open, OpenReaderAt, ReadFile and ReadReaderAt.
type ReadOption func(*readConfig)

type readConfig struct {
	mappingMode string
	skipRow     func(int64) bool
	tailSize    int64
	coalesce    int64
}

func newReadConfig(opts []ReadOption) readConfig {
	c := readConfig{mappingMode: "none", tailSize: 64 << 10, coalesce: 1 << 20}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithColumnMapping sets the table's column mapping mode: "none" (the
// default), "name" or "id". Under "name" and "id" a field is found in the file
// by its physical name (delta.columnMapping.physicalName); under "id" a
// Parquet field_id equal to the field's delta.columnMapping.id is tried first.
func WithColumnMapping(mode string) ReadOption {
	return func(c *readConfig) { c.mappingMode = mode }
}

// WithSkipRows drops the rows for which skip returns true, given the row's
// 0-based index in the file (as a deletion vector names rows). Skipped rows
// are still decoded, but not converted or yielded.
func WithSkipRows(skip func(rowIndex int64) bool) ReadOption {
	return func(c *readConfig) { c.skipRow = skip }
}

// File is an open Parquet data file with a read plan for one Delta read
// schema. Its row iterators may be used one at a time (a File is not safe for
// concurrent iteration).
type File struct {
	name  string
	cfg   readConfig
	pf    *parquet.File
	root  *pnode
	plan  *readPlan
	store objectstore.Store // nil when reading from a caller's io.ReaderAt
	key   string
	ra    io.ReaderAt // the whole file
	// tail is the file from tailOff to its end, fetched by Open: column
	// chunk bytes it holds are not fetched again.
	tail    []byte
	tailOff int64
	body    *spanReaderAt // all row groups' chunks, when fetched at once
}

// Open reads the footer of the Parquet file at key in store and prepares to
// read it as readSchema (logical field order, Delta types). Fields of
// readSchema absent from the file read as nil; file columns not in
// readSchema are never fetched. Open GETs the file's last 64 KiB (the whole
// file when it is smaller), which hold the footer. Column chunks are fetched
// from the store one row group at a time, only for the requested columns
// and only the bytes that tail does not hold; the chunks of all row groups
// are fetched at once when they are back to back (every column is read) and
// at most 4 MiB. So a file read in full costs one GET when the tail holds it,
// else two when it has one row group or at most 4 MiB outside the tail.
//
// Errors are *FileError values naming key; they wrap objectstore errors,
// ErrCorrupt or ErrSchemaMismatch.
func Open(ctx context.Context, store objectstore.Store, key string, readSchema *schema.StructType, opts ...ReadOption) (*File, error) {
	cfg := newReadConfig(opts)
	info, err := store.Stat(ctx, key)
	if err != nil {
		return nil, fileErr("open", key, err)
	}
	size := info.Size
	tailOff := max(size-cfg.tailSize, 0)
	tail, err := store.Get(ctx, key, objectstore.Range{Offset: tailOff, Length: size - tailOff})
	if err != nil {
		return nil, fileErr("open", key, err)
	}
	if int64(len(tail)) != size-tailOff {
		return nil, fileErr("open", key, fmt.Errorf("%w: object shorter than its stat size %d", ErrCorrupt, size))
	}
	ra := &storeReaderAt{ctx: ctx, store: store, key: key, tail: tail, tailOff: tailOff}
	// No GET of the 4-byte leading magic: it is checked here when the tail
	// holds the whole file, else from the body when the first row group's
	// fetch GETs the chunk at offset 4 (fetchRanges); a read that needs no
	// GET from offset 4 (a projection without the first column, a file of
	// no row groups) does not check it. The trailing magic is in the tail.
	lead := leadMagic{skip: true}
	if tailOff == 0 {
		lead.held = tail
	}
	f, err := openFile(ra, size, key, readSchema, cfg, lead)
	if err != nil {
		return nil, err
	}
	f.store, f.key, f.tail, f.tailOff = store, key, tail, tailOff
	return f, nil
}

// leadMagic says how openFile checks a file's leading "PAR1".
type leadMagic struct {
	skip bool   // parquet-go does not read it (it would cost a GET)
	held []byte // the file from offset 0, when already fetched: checked here
}

// OpenReaderAt is Open for a file the caller holds as an io.ReaderAt of size
// bytes (an *os.File, a bytes.Reader, ...). name is used in errors only.
func OpenReaderAt(r io.ReaderAt, size int64, name string, readSchema *schema.StructType, opts ...ReadOption) (*File, error) {
	return openFile(r, size, name, readSchema, newReadConfig(opts), leadMagic{})
}

func openFile(r io.ReaderAt, size int64, name string, readSchema *schema.StructType, cfg readConfig, lead leadMagic) (f *File, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fileErr("open", name, fmt.Errorf("%w: %v\n%s", ErrCorrupt, p, debug.Stack()))
		}
	}()
	if readSchema == nil {
		return nil, fileErr("open", name, errors.New("nil read schema"))
	}
	if size < 12 {
		return nil, fileErr("open", name, fmt.Errorf("%w: %d bytes is too small for a parquet file", ErrCorrupt, size))
	}
	// Check the footer length before parquet-go allocates a buffer of it.
	var trailer [8]byte
	if _, err := r.ReadAt(trailer[:], size-8); err != nil && !errors.Is(err, io.EOF) {
		return nil, fileErr("open", name, err)
	}
	if string(trailer[4:]) != "PAR1" {
		return nil, fileErr("open", name, fmt.Errorf("%w: no PAR1 magic at the end (encrypted or not parquet)", ErrCorrupt))
	}
	if footerLen := int64(binary.LittleEndian.Uint32(trailer[:4])); footerLen > size-12 {
		return nil, fileErr("open", name, fmt.Errorf("%w: footer length %d exceeds the file size %d", ErrCorrupt, footerLen, size))
	}
	if len(lead.held) >= 4 {
		if err := checkLeadMagic(lead.held); err != nil {
			return nil, fileErr("open", name, err)
		}
	}
	pf, err := parquet.OpenFile(r, size,
		parquet.SkipMagicBytes(lead.skip),
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(256<<10),
	)
	if err != nil {
		return nil, fileErr("open", name, fmt.Errorf("%w: %v", ErrCorrupt, err))
	}
	root, err := buildFileSchema(pf.Metadata().Schema)
	if err != nil {
		return nil, fileErr("open", name, err)
	}
	plan, err := buildReadPlan(readSchema, root, cfg.mappingMode)
	if err != nil {
		return nil, fileErr("open", name, err)
	}
	nleaves := root.numLeaves
	for i, rg := range pf.Metadata().RowGroups {
		if len(rg.Columns) != nleaves {
			return nil, fileErr("open", name, fmt.Errorf("%w: row group %d has %d column chunks, schema has %d leaves", ErrCorrupt, i, len(rg.Columns), nleaves))
		}
		if rg.NumRows < 0 {
			return nil, fileErr("open", name, fmt.Errorf("%w: row group %d has %d rows", ErrCorrupt, i, rg.NumRows))
		}
	}
	return &File{name: name, cfg: cfg, pf: pf, root: root, plan: plan, ra: r}, nil
}

// checkLeadMagic checks that a file's first bytes b are the "PAR1" magic,
// as parquet-go does when it reads them.
func checkLeadMagic(b []byte) error {
	if string(b[:4]) != "PAR1" {
		return fmt.Errorf("%w: invalid magic header of parquet file: %q", ErrCorrupt, b[:4])
	}
	return nil
}

// NumRows returns the number of rows in the file, as its footer says.
func (f *File) NumRows() int64 { return f.pf.NumRows() }

// NumRowGroups returns the number of row groups in the file.
func (f *File) NumRowGroups() int { return len(f.pf.RowGroups()) }

// CreatedBy returns the footer's created_by string ("parquet-mr version ...").
func (f *File) CreatedBy() string { return f.pf.Metadata().CreatedBy }

// Rows yields the file's rows in order as Rows aligned with the read schema.
// Each yielded Row is freshly allocated and belongs to the caller. On error
// the iterator yields (nil, err) once and stops; err is a *FileError.
func (f *File) Rows(ctx context.Context) iter.Seq2[value.Row, error] {
	return func(yield func(value.Row, error) bool) {
		for ir, err := range f.IndexedRows(ctx) {
			if !yield(ir.Row, err) || err != nil {
				return
			}
		}
	}
}

// IndexedRows is Rows with each row's 0-based index within the file.
func (f *File) IndexedRows(ctx context.Context) iter.Seq2[value.IndexedRow, error] {
	return func(yield func(value.IndexedRow, error) bool) {
		var base int64
		for g := range f.pf.RowGroups() {
			if err := ctx.Err(); err != nil {
				yield(value.IndexedRow{}, fileErr("read", f.name, err))
				return
			}
			rr, err := f.openRowGroup(ctx, g)
			if err != nil {
				yield(value.IndexedRow{}, fileErr("read", f.name, err))
				return
			}
			ok := func() bool {
				defer rr.close()
				n := rr.numRows
				for i := range n {
					idx := base + i
					skip := f.cfg.skipRow != nil && f.cfg.skipRow(idx)
					row, err := rr.next(skip)
					if err != nil {
						yield(value.IndexedRow{}, fileErr("read", f.name, fmt.Errorf("row group %d, row %d: %w", g, i, err)))
						return false
					}
					if skip {
						continue
					}
					if !yield(value.IndexedRow{Index: idx, Row: row}, nil) {
						return false
					}
					if i&1023 == 1023 {
						if err := ctx.Err(); err != nil {
							yield(value.IndexedRow{}, fileErr("read", f.name, err))
							return false
						}
					}
				}
				if err := rr.finish(); err != nil {
					yield(value.IndexedRow{}, fileErr("read", f.name, fmt.Errorf("row group %d: %w", g, err)))
					return false
				}
				return true
			}()
			if !ok {
				return
			}
			base += rr.numRows
		}
	}
}

// ReadFile opens the file at key in store and yields its rows as readSchema;
// see Open and File.Rows. Errors (also from opening) are yielded once.
func ReadFile(ctx context.Context, store objectstore.Store, key string, readSchema *schema.StructType, opts ...ReadOption) iter.Seq2[value.Row, error] {
	return openRows(ctx, func() (*File, error) { return Open(ctx, store, key, readSchema, opts...) })
}

// openRows yields the rows of the file open opens (ReadFile, ReadReaderAt):
// its error, or each row until the first error.
func openRows(ctx context.Context, open func() (*File, error)) iter.Seq2[value.Row, error] {
	return func(yield func(value.Row, error) bool) {
		f, err := open()
		if err != nil {
			yield(nil, err)
			return
		}
		for row, err := range f.Rows(ctx) {
			if !yield(row, err) || err != nil {
				return
			}
		}
	}
}

// ReadReaderAt is ReadFile for a file held as an io.ReaderAt of size bytes;
// name is used in errors only.
func ReadReaderAt(ctx context.Context, r io.ReaderAt, size int64, name string, readSchema *schema.StructType, opts ...ReadOption) iter.Seq2[value.Row, error] {
	return openRows(ctx, func() (*File, error) { return OpenReaderAt(r, size, name, readSchema, opts...) })
}

// storeReaderAt serves the footer from the prefetched tail and anything else
// with a ranged Get.
type storeReaderAt struct {
	ctx     context.Context
	store   objectstore.Store
	key     string
	tail    []byte
	tailOff int64
}

func (s *storeReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.tailOff && off-s.tailOff <= int64(len(s.tail)) {
		return readFrom(p, s.tail[off-s.tailOff:])
	}
	b, err := s.store.Get(s.ctx, s.key, objectstore.Range{Offset: off, Length: int64(len(p))})
	if err != nil {
		return 0, err
	}
	return readFrom(p, b)
}

// readFrom is io.ReaderAt's result of a read into p of the bytes src that
// the file holds from the offset on: io.EOF when they do not fill p.
func readFrom(p, src []byte) (int, error) {
	n := copy(p, src)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// span is one fetched byte range of a file.
type span struct {
	off  int64
	data []byte
}

// spanReaderAt serves reads from fetched spans at absolute file offsets.
type spanReaderAt struct{ spans []span }

// A read may run on from one span into the next when that starts where the
// first ends (a range split between a GET and the tail Open fetched).
func (s *spanReaderAt) ReadAt(p []byte, off int64) (int, error) {
	for i, sp := range s.spans {
		if off < sp.off || off >= sp.off+int64(len(sp.data)) {
			continue
		}
		n := copy(p, sp.data[off-sp.off:])
		for _, next := range s.spans[i+1:] {
			if n == len(p) || next.off != off+int64(n) {
				break
			}
			n += copy(p[n:], next.data)
		}
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: read at offset %d outside the fetched column chunks", ErrCorrupt, off)
}

// chunkRange returns the byte range of a column chunk, clamped to the file.
func (f *File) chunkRange(g, c int) (off, length int64, err error) {
	cc := &f.pf.Metadata().RowGroups[g].Columns[c]
	md := &cc.MetaData
	off = md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < off {
		off = md.DictionaryPageOffset
	}
	length = md.TotalCompressedSize
	size := f.pf.Size()
	if off < 0 || length < 0 || off > size || length > size-off {
		return 0, 0, fmt.Errorf("%w: column chunk %d of row group %d at [%d,+%d) outside the file of %d bytes", ErrCorrupt, c, g, off, length, size)
	}
	return off, length, nil
}

// openRowGroup positions a cursor at the start of every needed column chunk
// of row group g, fetching the chunks' bytes first when reading from a store.
func (f *File) openRowGroup(ctx context.Context, g int) (rr *rowReader, err error) {
	defer func() {
		if p := recover(); p != nil {
			rr, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, p)
		}
	}()
	rg := f.pf.RowGroups()[g]
	chunks := rg.ColumnChunks()
	rr = &rowReader{plan: f.plan, numRows: rg.NumRows(), cursors: make([]*colCursor, len(f.plan.cols))}
	var ra io.ReaderAt
	if f.store != nil && len(f.plan.cols) > 0 {
		sra, err := f.fetchChunks(ctx, g)
		if err != nil {
			return nil, err
		}
		ra = sra
	}
	for _, col := range f.plan.cols {
		off, n, err := f.chunkRange(g, col)
		if err != nil {
			return nil, err
		}
		src := ra
		if src == nil {
			src = f.ra
		}
		if err := checkChunkPages(src, off, n, f.pf.Metadata().RowGroups[g].Columns[col].MetaData.Codec); err != nil {
			return nil, fmt.Errorf("column chunk %d: %w", col, err)
		}
	}
	for i, col := range f.plan.cols {
		fcc, ok := chunks[col].(*parquet.FileColumnChunk)
		if !ok {
			return nil, fmt.Errorf("%w: column chunk %d is a %T", ErrCorrupt, col, chunks[col])
		}
		var pages parquet.Pages
		if ra != nil {
			pages = fcc.PagesFrom(ra)
		} else {
			pages = fcc.Pages()
		}
		rr.cursors[i] = &colCursor{pages: pages, col: col}
	}
	return rr, nil
}

// wholeBody is the most bytes outside Open's tail that the first row
// group's fetch takes for the chunks of all row groups at once, when they
// are back to back (a read of every column): a file of several row groups
// read in full then costs the tail and one GET, not one per row group.
const wholeBody = 4 << 20

// byteRange is a range [off, end) of a file.
type byteRange struct{ off, end int64 }

// fetchChunks gets the byte ranges of the needed column chunks of row group
// g, merging ranges that are close together into one request.
func (f *File) fetchChunks(ctx context.Context, g int) (*spanReaderAt, error) {
	if f.body != nil {
		return f.body, nil
	}
	if n := len(f.pf.RowGroups()); g == 0 && n > 1 {
		all, err := f.neededRanges(0, n, 0)
		if err != nil {
			return nil, err
		}
		if len(all) == 1 && min(all[0].end, f.tailOff)-all[0].off <= wholeBody {
			body, err := f.fetchRanges(ctx, all, true)
			if err != nil {
				return nil, err
			}
			f.body = body
			return body, nil
		}
	}
	merged, err := f.neededRanges(g, g+1, f.cfg.coalesce)
	if err != nil {
		return nil, err
	}
	return f.fetchRanges(ctx, merged, g == 0)
}

// neededRanges returns the byte ranges of the needed column chunks of row
// groups [from, to), sorted, those at most gap bytes apart merged.
func (f *File) neededRanges(from, to int, gap int64) ([]byteRange, error) {
	var rs []byteRange
	for g := from; g < to; g++ {
		for _, col := range f.plan.cols {
			off, n, err := f.chunkRange(g, col)
			if err != nil {
				return nil, err
			}
			rs = append(rs, byteRange{off, off + n})
		}
	}
	slices.SortFunc(rs, func(a, b byteRange) int { return cmp.Compare(a.off, b.off) })
	var merged []byteRange
	for _, r := range rs {
		if k := len(merged) - 1; k >= 0 && r.off <= merged[k].end+gap {
			merged[k].end = max(merged[k].end, r.end)
			continue
		}
		merged = append(merged, r)
	}
	return merged, nil
}

// fetchRanges gets the sorted ranges merged, serving the bytes Open's tail
// holds from it. With first (the first row group's chunks) the leading
// magic is checked too: a file's first chunk starts right after it in files
// as writers lay them out, so the GET of that range starts at 0 instead and
// the magic costs no request of its own. When no range to GET starts at 4,
// the leading magic is not checked.
func (f *File) fetchRanges(ctx context.Context, merged []byteRange, first bool) (*spanReaderAt, error) {
	checkLead := first && len(merged) > 0 && merged[0].off == 4 && f.tailOff > 0
	if checkLead {
		merged[0].off = 0
	}
	out := &spanReaderAt{}
	for _, r := range merged {
		// Bytes the tail holds are served from it; only the part before
		// the tail is fetched, when there is one.
		if end := min(r.end, f.tailOff); r.off < end {
			b, err := f.store.Get(ctx, f.key, objectstore.Range{Offset: r.off, Length: end - r.off})
			if err != nil {
				return nil, err
			}
			if int64(len(b)) != end-r.off {
				return nil, fmt.Errorf("%w: got %d bytes of column chunk range [%d,%d)", ErrCorrupt, len(b), r.off, end)
			}
			out.spans = append(out.spans, span{off: r.off, data: b})
		}
		if r.end > f.tailOff {
			off := max(r.off, f.tailOff)
			out.spans = append(out.spans, span{off: off, data: f.tail[off-f.tailOff : r.end-f.tailOff]})
		}
	}
	if checkLead {
		var magic [4]byte
		if _, err := out.ReadAt(magic[:], 0); err != nil {
			return nil, fmt.Errorf("%w: reading the leading magic: %v", ErrCorrupt, err)
		}
		if err := checkLeadMagic(magic[:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// colCursor walks the values (with levels) of one column chunk.
type colCursor struct {
	col    int
	pages  parquet.Pages
	page   parquet.Page
	values parquet.ValueReader
	buf    []parquet.Value
	pos    int
	eof    bool
}

const cursorBatch = 512

// fill makes buf[pos] valid; it reports false at the end of the chunk.
// A page is released only once all of its buffered values were used, since
// byte array values point into the page's memory.
func (c *colCursor) fill() (bool, error) {
	for c.pos >= len(c.buf) {
		if c.values == nil {
			if c.page != nil {
				parquet.Release(c.page)
				c.page = nil
			}
			if c.eof {
				return false, nil
			}
			p, err := c.pages.ReadPage()
			if err != nil {
				if errors.Is(err, io.EOF) {
					c.eof = true
					return false, nil
				}
				return false, fmt.Errorf("%w: column %d: %v", ErrCorrupt, c.col, err)
			}
			c.page = p
			c.values = p.Values()
		}
		if cap(c.buf) == 0 {
			c.buf = make([]parquet.Value, cursorBatch)
		}
		c.buf = c.buf[:cursorBatch]
		n, err := c.values.ReadValues(c.buf)
		c.buf = c.buf[:n]
		c.pos = 0
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return false, fmt.Errorf("%w: column %d: %v", ErrCorrupt, c.col, err)
			}
			c.values = nil
		} else if n == 0 {
			c.values = nil // a reader that makes no progress: treat the page as done
		}
	}
	return true, nil
}

func (c *colCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		_ = c.pages.Close()
	}
}
