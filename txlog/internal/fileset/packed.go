package fileset

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/deltakit/deltakit/txlog/internal/textpack"
)

// Packed is the compact, immutable bottom level of a snapshot's live
// files (see Set): one 48-byte record per file, the packed path
// (internal/textpack/path.go) and packed stats (internal/textpack/stats.go) bytes in shared byte
// chunks, and tables for what files share (stats and path skeletons,
// partitionValues maps) or rarely have (tags, deletion vectors, row
// tracking fields). A T is materialised on demand; the sorted
// materialised values are computed once, as for a map level. A file of the
// P5 benchmark table takes about 125 bytes (48 + 30 path + 45 stats) where
// a map of *txlog.Add took 630.
//
// Records are in key order unless order is set (a checkpoint that was not
// written in key order): order lists the indexes of the live records in key
// order. Chunks are never appended to once a level is built, so a merged
// level shares them (it copies the live items when most chunk bytes are
// dead).
type Packed[T, R any] struct {
	codec  *Codec[T, R]
	recs   []fileRec
	order  []int32
	chunks [][]byte
	skels  []*textpack.Skeleton // by skeleton id; 0 (no stats) and 1 (raw) are reserved
	pskels []string             // path skeletons by id; 0 (raw path) is reserved
	pvs    []map[string]string  // by id; 0 is nil, 1 the shared empty map
	rares  []*rare[R]           // by id; 0 is unused
	live   int                  // bytes of live items in chunks
	total  int                  // bytes of all chunks

	// sparse holds the key of every sparseStep-th file in key order, so
	// that a lookup unpacks only a few paths (computed on first lookup).
	sparseOnce sync.Once
	sparse     []Key

	sortOnce sync.Once
	sorted   []*T
	ready    atomic.Bool
	// as for fileLevel: a level merged from one whose sorted values were
	// ready is sorted by merging them with the delta
	seed      []*T
	seedDelta []entry[T]
}

// fileRec is one packed file. path and stats are item references into the
// chunks.
type fileRec struct {
	size, modTime int64
	path, stats   itemRef
	skel, pv      uint32
	rare          uint32
	pskel         uint16 // path skeleton; 0: the path is stored raw
	dataChange    bool
}

// rare holds the fields few files have (Codec.Split), and the file's key
// when it is not its path (an escaped path or a deletion vector).
type rare[R any] struct {
	key    Key
	hasKey bool
	fields R
}

const (
	skelNone = 0 // no stats
	skelRaw  = 1 // stats stored as written
	// maxSkeletons bounds a level's skeleton table; more distinct
	// skeletons are stored raw.
	maxSkeletons = 1 << 16
	// packMin is the size from which a bottom map level is packed.
	packMin = 1024
)

const (
	pvNil   = 0
	pvEmpty = 1
)

// itemRef is chunk index << 32 | offset of an item: a uvarint length and
// that many bytes.
type itemRef uint64

func (p *Packed[T, R]) item(r itemRef) []byte {
	c := p.chunks[r>>32][uint32(r):]
	n, w := binary.Uvarint(c)
	return c[w : w+int(n)]
}

// itemRaw returns the bytes of the item of r, prefix included.
func (p *Packed[T, R]) itemRaw(r itemRef) []byte {
	c := p.chunks[r>>32][uint32(r):]
	n, w := binary.Uvarint(c)
	return c[:w+int(n)]
}

func (p *Packed[T, R]) str(r itemRef) string {
	b := p.item(r)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (p *Packed[T, R]) len() int {
	if p.order != nil {
		return len(p.order)
	}
	return len(p.recs)
}

// at returns the record at sorted position i.
func (p *Packed[T, R]) at(i int) *fileRec {
	if p.order != nil {
		return &p.recs[p.order[i]]
	}
	return &p.recs[i]
}

// roomFor returns the unused end of buf when it has room for n bytes, else
// a new buffer: of n bytes for the first item, of at least 32 KiB once buf
// is in use (it serves many items).
func roomFor(buf []byte, n int) []byte {
	if cap(buf)-len(buf) < n {
		size := n
		if buf != nil {
			size = max(size, 32<<10)
		}
		return make([]byte, 0, size)
	}
	return buf[len(buf):]
}

// path returns r's path: the stored bytes of a raw path, else the path
// unpacked into buf's spare capacity when it has room (else into a new
// buffer); it returns what is left of buf.
func (p *Packed[T, R]) path(r *fileRec, buf []byte) (string, []byte) {
	if r.pskel == 0 {
		return p.str(r.path), buf
	}
	it := p.item(r.path)
	n, w := binary.Uvarint(it)
	buf = roomFor(buf, int(n))
	out, ok := textpack.UnpackPath(buf, p.pskels[r.pskel], it[w:])
	if !ok || len(out) != int(n) {
		panic("fileset: packed path does not unpack") // cannot happen for bytes this package packed
	}
	if len(out) == 0 {
		return "", out
	}
	return unsafe.String(&out[0], len(out)), out[len(out):]
}

// keyIn returns r's key; a packed path is unpacked into *scratch (grown
// as needed), so the key is valid until *scratch is reused.
func (p *Packed[T, R]) keyIn(r *fileRec, scratch *[]byte) Key {
	if r.rare != 0 {
		if x := p.rares[r.rare]; x.hasKey {
			return x.key
		}
	}
	if r.pskel == 0 {
		return Key{Path: p.str(r.path)}
	}
	it := p.item(r.path)
	_, w := binary.Uvarint(it)
	b, ok := textpack.UnpackPath((*scratch)[:0], p.pskels[r.pskel], it[w:])
	if !ok {
		panic("fileset: packed path does not unpack") // cannot happen for bytes this package packed
	}
	*scratch = b
	if len(b) == 0 {
		return Key{}
	}
	return Key{Path: unsafe.String(&b[0], len(b))}
}

// key returns r's key (its path allocated when packed).
func (p *Packed[T, R]) key(r *fileRec) Key {
	var scratch []byte
	return p.keyIn(r, &scratch)
}

// sparseStep is the distance between the keys of Packed[T, R].sparse.
const sparseStep = 32

// find returns the sorted position of k, ok false when absent.
func (p *Packed[T, R]) find(k Key) (int, bool) {
	n := p.len()
	p.sparseOnce.Do(func() {
		p.sparse = make([]Key, 0, (n+sparseStep-1)/sparseStep)
		for i := 0; i < n; i += sparseStep {
			p.sparse = append(p.sparse, p.key(p.at(i)))
		}
	})
	// the first position with a key >= k is in (lo, hi]: the keys before
	// sparse[j-1]'s position are smaller than k, the one at sparse[j]'s
	// larger
	j := sort.Search(len(p.sparse), func(j int) bool { return Compare(p.sparse[j], k) > 0 })
	if j > 0 && Compare(p.sparse[j-1], k) == 0 {
		return (j - 1) * sparseStep, true
	}
	lo, hi := max(0, (j-1)*sparseStep), min(n, j*sparseStep)
	var buf [256]byte
	scratch := buf[:0]
	i := lo + sort.Search(hi-lo, func(x int) bool { return Compare(p.keyIn(p.at(lo+x), &scratch), k) >= 0 })
	return i, i < n && Compare(p.keyIn(p.at(i), &scratch), k) == 0
}

func (p *Packed[T, R]) has(k Key) bool {
	_, ok := p.find(k)
	return ok
}

func (p *Packed[T, R]) get(k Key) (*T, bool) {
	i, ok := p.find(k)
	if !ok {
		return nil, false
	}
	if p.ready.Load() {
		return p.sorted[i], true
	}
	a := new(T)
	p.materialise(p.at(i), a, nil)
	return a, true
}

// stats returns the stats text of r, unpacked into buf's spare capacity
// when it has room (the texts of adds materialised together share one
// buffer), else into a new buffer; it returns what is left of buf.
func (p *Packed[T, R]) stats(r *fileRec, buf []byte) (string, []byte) {
	switch r.skel {
	case skelNone:
		return "", buf
	case skelRaw:
		return p.str(r.stats), buf
	}
	it := p.item(r.stats)
	n, w := binary.Uvarint(it)
	buf = roomFor(buf, int(n))
	out, ok := p.skels[r.skel].Unpack(buf, it[w:])
	if !ok || len(out) != int(n) {
		// cannot happen for bytes this package packed
		panic("fileset: packed stats do not unpack")
	}
	if len(out) == 0 {
		return "", out
	}
	return unsafe.String(&out[0], len(out)), out[len(out):]
}

// materialise fills a from r; buf is spare room for the stats text (see
// stats), returned with what is left.
func (p *Packed[T, R]) materialise(r *fileRec, a *T, buf []byte) []byte {
	f := Fields{PartitionValues: p.pvs[r.pv], Size: r.size, ModificationTime: r.modTime, DataChange: r.dataChange}
	f.Path, buf = p.path(r, buf)
	f.Stats, buf = p.stats(r, buf)
	var x *R
	if r.rare != 0 {
		x = &p.rares[r.rare].fields
	}
	p.codec.Join(a, &f, x)
	return buf
}

// sortedValues returns every file, materialised, in key order (computed
// once per level).
func (p *Packed[T, R]) sortedValues(keyOf func(*T) Key) []*T {
	p.sortOnce.Do(func() {
		if p.seed != nil || p.seedDelta != nil {
			p.sorted = mergeSorted(p.seed, p.seedDelta, p.len(), keyOf)
		} else {
			n := p.len()
			out := make([]*T, n)
			// Large levels are materialised by several goroutines, each
			// filling its own range of out.
			workers := min(runtime.GOMAXPROCS(0), 1+n/32768)
			var wg sync.WaitGroup
			for w := range workers {
				lo, hi := n*w/workers, n*(w+1)/workers
				wg.Go(func() { p.materialiseRange(out, lo, hi) })
			}
			wg.Wait()
			p.sorted = out
		}
		p.seed, p.seedDelta = nil, nil
		p.ready.Store(true)
	})
	return p.sorted
}

// materialiseRange sets out[lo:hi] to the files at sorted positions lo to
// hi, allocating their adds and stats texts in batches.
func (p *Packed[T, R]) materialiseRange(out []*T, lo, hi int) {
	var adds []T
	var buf []byte
	for i := lo; i < hi; i++ {
		if len(adds) == 0 {
			adds = make([]T, min(hi-i, 1024))
		}
		buf = p.materialise(p.at(i), &adds[0], buf)
		out[i] = &adds[0]
		adds = adds[1:]
	}
}

func (p *Packed[T, R]) isReady() bool { return p.ready.Load() }

func (p *Packed[T, R]) reordered() bool { return p.order != nil }

// all yields every file in key order: the values of sortedValues once they
// are computed, else each file materialised for the call (adds allocated
// 1,024 at a time) and not kept by p.
func (p *Packed[T, R]) all(yield func(*T) bool) {
	if p.ready.Load() {
		for _, v := range p.sorted {
			if !yield(v) {
				return
			}
		}
		return
	}
	var adds []T
	var buf []byte
	for i, n := 0, p.len(); i < n; i++ {
		if len(adds) == 0 {
			adds = make([]T, min(n-i, 1024))
		}
		buf = p.materialise(p.at(i), &adds[0], buf)
		a := &adds[0]
		adds = adds[1:]
		if !yield(a) {
			return
		}
	}
}

// merge returns the level of p with the changes of delta (sorted by key;
// nil values remove the key) applied.
func (p *Packed[T, R]) merge(delta []entry[T]) level[T] {
	b := NewSeg(p.codec, p.len()+len(delta))
	b.skels = slices.Clone(p.skels)
	b.skelIDs = make(map[string]uint32, len(p.skels))
	for i, s := range p.skels[skelRaw+1:] {
		b.skelIDs[s.Text()] = uint32(i + skelRaw + 1)
	}
	b.pskels = slices.Clone(p.pskels)
	b.pskelIDs = make(map[string]uint16, len(p.pskels))
	for i, s := range p.pskels[1:] {
		b.pskelIDs[s] = uint16(i + 1)
	}
	// Share the chunks unless most of their bytes are dead.
	share := p.total <= 2*p.live+shareSlack
	if share {
		// The shared chunks are p's and stay immutable: clipped, so that
		// the merged level's new items go into chunks of its own.
		b.arena.chunks = slices.Clone(p.chunks)
		for i, c := range b.arena.chunks {
			b.arena.chunks[i] = slices.Clip(c)
		}
		b.arena.total = p.total
	}
	pvMap := make([]uint32, len(p.pvs))
	rareMap := make([]uint32, len(p.rares))
	copyRec := func(r *fileRec) {
		q := *r
		if share {
			b.live += len(p.itemRaw(r.path))
			if r.skel != skelNone {
				b.live += len(p.itemRaw(r.stats))
			}
		} else {
			q.path = b.arena.copyItem(p.itemRaw(r.path))
			b.live += len(p.itemRaw(r.path))
			if r.skel != skelNone {
				q.stats = b.arena.copyItem(p.itemRaw(r.stats))
				b.live += len(p.itemRaw(r.stats))
			}
		}
		if r.pv > pvEmpty {
			if pvMap[r.pv] == 0 {
				b.pvs = append(b.pvs, p.pvs[r.pv])
				pvMap[r.pv] = uint32(len(b.pvs) - 1)
			}
			q.pv = pvMap[r.pv]
		}
		if r.rare != 0 {
			if rareMap[r.rare] == 0 {
				b.rares = append(b.rares, p.rares[r.rare])
				rareMap[r.rare] = uint32(len(b.rares) - 1)
			}
			q.rare = rareMap[r.rare]
		}
		b.recs = append(b.recs, q)
	}
	i, j, n := 0, 0, p.len()
	var scratch []byte
	for i < n || j < len(delta) {
		c := -1
		switch {
		case i == n:
			c = 1
		case j < len(delta):
			c = Compare(p.keyIn(p.at(i), &scratch), delta[j].k)
		}
		if c < 0 {
			copyRec(p.at(i))
			i++
			continue
		}
		if c == 0 {
			i++
		}
		if v := delta[j].v; v != nil {
			b.Add(v)
		}
		j++
	}
	q := b.finish()
	if p.isReady() {
		q.seed, q.seedDelta = p.sorted, delta
	}
	return q
}

// arena hands out items in chunks that grow to maxChunk.
type arena struct {
	chunks [][]byte
	next   int
	total  int
}

// A segment's chunks grow from minChunk to maxChunk; its last chunk is
// on average half empty, so maxChunk is kept small next to a row group's
// items (~2 MB for P5's 32,768-row groups). A merge shares the chunks of
// the level it starts from while they hold at most twice the live bytes
// plus shareSlack.
const (
	minChunk   = 4 << 10
	maxChunk   = 256 << 10
	shareSlack = 1 << 20
)

// alloc returns the reference and the bytes of a new item of n bytes
// (prefix included).
func (a *arena) alloc(n int) (itemRef, []byte) {
	if k := len(a.chunks); k > 0 {
		c := a.chunks[k-1]
		if cap(c)-len(c) >= n {
			off := len(c)
			a.chunks[k-1] = c[:off+n]
			a.total += n
			return itemRef(uint64(k-1)<<32 | uint64(off)), c[off : off+n]
		}
	}
	size := max(a.next, minChunk)
	a.next = min(2*size, maxChunk)
	c := make([]byte, n, max(size, n))
	a.chunks = append(a.chunks, c)
	a.total += n
	return itemRef(uint64(len(a.chunks)-1) << 32), c
}

func (a *arena) putString(s string) (itemRef, int) {
	var pre [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(pre[:], uint64(len(s)))
	ref, b := a.alloc(w + len(s))
	copy(b, pre[:w])
	copy(b[w:], s)
	return ref, w + len(s)
}

func (a *arena) copyItem(raw []byte) itemRef {
	ref, b := a.alloc(len(raw))
	copy(b, raw)
	return ref
}

// Seg[T, R] builds packed records; the checkpoint reader uses one per row
// group, merges one per level.
type Seg[T, R any] struct {
	codec    *Codec[T, R]
	recs     []fileRec
	arena    arena
	live     int
	skels    []*textpack.Skeleton
	skelIDs  map[string]uint32
	hint     uint32 // the skeleton of the last stats packed
	pskels   []string
	pskelIDs map[string]uint16
	pvs      []map[string]string
	pvIDs    map[unsafe.Pointer]uint32
	rares    []*rare[R]
	skel     []byte // scratch
	lit      []byte
	// order tracks whether the records were packed in strict key order,
	// so that Builder.Finish need not unpack every path to find out.
	order keyOrder
	// winEnd is, for a segment of Builder.SegAt whose records are written
	// in place, the end of its window in the builder's reserved array; 0
	// for a segment with an array of its own.
	winEnd int
}

func NewSeg[T, R any](c *Codec[T, R], n int) *Seg[T, R] {
	return &Seg[T, R]{codec: c, recs: make([]fileRec, 0, n), skels: []*textpack.Skeleton{nil, nil}, pskels: []string{""},
		pvs:   []map[string]string{nil, EmptyPartitionValues},
		rares: []*rare[R]{nil}}
}

func (b *Seg[T, R]) pvID(m map[string]string) uint32 {
	switch {
	case m == nil:
		return pvNil
	case len(m) == 0:
		return pvEmpty
	}
	ptr := reflect.ValueOf(m).UnsafePointer()
	if id, ok := b.pvIDs[ptr]; ok {
		return id
	}
	if b.pvIDs == nil {
		b.pvIDs = map[unsafe.Pointer]uint32{}
	}
	b.pvs = append(b.pvs, m)
	id := uint32(len(b.pvs) - 1)
	b.pvIDs[ptr] = id
	return id
}

// Add packs v. v's strings may be scratch memory: they are copied. v
// escapes to the heap (the codec's functions are called through function
// values): a caller packing many files from one scratch value calls the
// codec's functions itself and hands their results to Pack.
func (b *Seg[T, R]) Add(v *T) {
	a, fields, hasRare := b.codec.Split(v)
	b.Pack(&a, fields, hasRare, b.codec.Key(v))
}

// Pack packs the file that the codec's Split took apart into a, fields
// and hasRare, of key k. a's and k's strings may be scratch memory: they
// are copied. Neither a nor anything that a caller allocated on its stack
// escapes, so a caller that calls its codec's functions directly (not
// through the Codec's function values) packs a file without allocating
// it.
func (b *Seg[T, R]) Pack(a *Fields, fields R, hasRare bool, k Key) {
	r := fileRec{size: a.Size, modTime: a.ModificationTime, dataChange: a.DataChange, pv: b.pvID(a.PartitionValues)}
	var n int
	r.path, r.pskel, n = b.putPath(a.Path)
	b.live += n
	if a.Stats != "" {
		r.skel = skelRaw
		var ok bool
		// Most files have the skeleton of the file before.
		if b.hint > skelRaw {
			if b.lit, ok = textpack.PackWith(b.skels[b.hint], a.Stats, b.lit[:0]); ok {
				r.skel = b.hint
			}
		}
		if !ok {
			b.skel, b.lit, ok = textpack.PackStats(a.Stats, b.skel[:0], b.lit[:0])
		}
		if r.skel == skelRaw && ok && len(b.skel) > 0 {
			id, known := b.skelIDs[string(b.skel)]
			if !known && len(b.skels) < maxSkeletons {
				if b.skelIDs == nil {
					b.skelIDs = map[string]uint32{}
				}
				id = uint32(len(b.skels))
				b.skels = append(b.skels, textpack.NewSkeleton(string(b.skel)))
				b.skelIDs[b.skels[id].Text()] = id
				known = true
			}
			if known {
				r.skel = id
				b.hint = id
			}
		}
		if r.skel == skelRaw {
			r.stats, n = b.arena.putString(a.Stats)
		} else {
			r.stats, n = b.putLiterals(len(a.Stats))
		}
		b.live += n
	}
	if hasRare || k.Path != a.Path || k.DV != "" {
		x := &rare[R]{fields: fields}
		if k.Path != a.Path || k.DV != "" {
			// a.Path may be scratch memory
			x.key, x.hasKey = Key{Path: strings.Clone(k.Path), DV: k.DV}, true
		}
		b.rares = append(b.rares, x)
		r.rare = uint32(len(b.rares) - 1)
	}
	b.recs = append(b.recs, r)
	b.order.next(k)
}

// keyOrder follows the keys of a run of records: whether each was greater
// than the one before, and the first and last key (copies).
type keyOrder struct {
	n           int
	unordered   bool
	first, last []byte // paths
	fdv, ldv    string // deletion vector parts
}

// next notes the next record's key k (its path may be scratch memory).
func (o *keyOrder) next(k Key) {
	if o.n == 0 {
		o.first, o.fdv = append(o.first[:0], k.Path...), k.DV
	} else if !o.unordered && compareTo(o.last, o.ldv, k) >= 0 {
		o.unordered = true
	}
	o.n++
	o.last, o.ldv = append(o.last[:0], k.Path...), k.DV
}

// then notes the run of s after o's run.
func (o *keyOrder) then(s *keyOrder) {
	if s.n == 0 {
		return
	}
	if o.n == 0 {
		o.first, o.fdv = append(o.first[:0], s.first...), s.fdv
	} else if compareTo(o.last, o.ldv, Key{Path: unsafe.String(unsafe.SliceData(s.first), len(s.first)), DV: s.fdv}) >= 0 {
		o.unordered = true
	}
	o.unordered = o.unordered || s.unordered
	o.n += s.n
	o.last, o.ldv = append(o.last[:0], s.last...), s.ldv
}

// compareTo is Compare of the key (path, dv) and k.
func compareTo(path []byte, dv string, k Key) int {
	return Compare(Key{Path: unsafe.String(unsafe.SliceData(path), len(path)), DV: dv}, k)
}

// putLiterals stores the packed form of a text of textLen bytes whose
// literals are in b.lit: uvarint(len(rest)), rest = uvarint(textLen),
// literals. It returns the item and the bytes used.
func (b *Seg[T, R]) putLiterals(textLen int) (itemRef, int) {
	var pre, pre2 [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(pre[:], uint64(textLen))
	rest := w + len(b.lit)
	w2 := binary.PutUvarint(pre2[:], uint64(rest))
	ref, dst := b.arena.alloc(w2 + rest)
	copy(dst, pre2[:w2])
	copy(dst[w2:], pre[:w])
	copy(dst[w2+w:], b.lit)
	return ref, len(dst)
}

// putPath stores path, packed when it has a hex run and a known or new
// skeleton; it returns the item, the skeleton (0: raw) and the bytes used.
func (b *Seg[T, R]) putPath(path string) (itemRef, uint16, int) {
	var ok bool
	b.skel, b.lit, ok = textpack.PackPath(path, b.skel[:0], b.lit[:0])
	if ok && len(b.lit) > 0 {
		id, known := b.pskelIDs[string(b.skel)]
		if !known && len(b.pskels) < 1<<16-1 {
			if b.pskelIDs == nil {
				b.pskelIDs = map[string]uint16{}
			}
			id = uint16(len(b.pskels))
			b.pskels = append(b.pskels, string(b.skel))
			b.pskelIDs[b.pskels[id]] = id
			known = true
		}
		if known {
			ref, n := b.putLiterals(len(path))
			return ref, id, n
		}
	}
	ref, n := b.arena.putString(path)
	return ref, 0, n
}

// finish returns the level of b's records, which must be in key order.
func (b *Seg[T, R]) finish() *Packed[T, R] {
	for i, c := range b.arena.chunks {
		b.arena.chunks[i] = slices.Clip(c)
	}
	return &Packed[T, R]{codec: b.codec, recs: b.recs, chunks: b.arena.chunks, skels: b.skels, pskels: b.pskels, pvs: b.pvs, rares: b.rares,
		live: b.live, total: b.arena.total}
}

// Builder[T, R] assembles the packed level of a checkpoint from row-group
// segments and single adds, in file order.
//
// The records of a checkpoint file's row groups are written in place: Reserve
// reserves the builder's record array for the file's rows, and the segment
// of each row group (SegAt) writes its records straight into its window of
// that array, the rows of the group, so that appending it (AppendSeg) moves
// them down over the gaps left by the rows that were not adds instead of
// copying a record array of its own per row group.
type Builder[T, R any] struct {
	out Packed[T, R]
	// res is out.recs's array at the last Reserve, whole (len = cap), and
	// resBase the number of records before it: row group g's window is
	// res[resBase+firsts[g] : resBase+firsts[g+1]]. None of these changes
	// until the next Reserve, so SegAt may be called while AppendSeg runs.
	res      []fileRec
	resBase  int
	firsts   []int64 // the first row of each group, then the file's rows; nil: no windows
	rows     []int64 // Reserve's rows
	skelIDs  map[string]uint32
	pskelIDs map[string]uint16
	premap   []uint16
	tail     *Seg[T, R]
	remap    []uint32
	rawChunk int      // index in out.chunks of the chunk putRaw fills; -1 before the first
	order    keyOrder // of the records appended
}

func NewBuilder[T, R any](c *Codec[T, R]) *Builder[T, R] {
	return &Builder[T, R]{out: Packed[T, R]{codec: c, skels: []*textpack.Skeleton{nil, nil}, pskels: []string{""},
		pvs: []map[string]string{nil, EmptyPartitionValues}, rares: []*rare[R]{nil}},
		skelIDs: map[string]uint32{}, pskelIDs: map[string]uint16{}, rawChunk: -1}
}

// Reserve appends the single adds given so far (Add) and reserves room
// for the records of one checkpoint file whose row groups have rows[g]
// rows each, for the segments of SegAt. The room is reserved, and the
// groups' segments write in place, only when no count is negative and
// their sum is at most limit (a bound on what an untrusted footer can make
// it allocate); otherwise room for limit records is reserved and each
// segment gets an array of its own.
func (pb *Builder[T, R]) Reserve(rows []int64, limit int64) {
	pb.flushTail()
	pb.res, pb.resBase, pb.firsts = nil, 0, nil
	firsts := make([]int64, len(rows)+1)
	for g, n := range rows {
		if n < 0 || n > limit-firsts[g] {
			firsts = nil
			break
		}
		firsts[g+1] = firsts[g] + n
	}
	o := &pb.out
	if firsts == nil {
		o.recs = slices.Grow(o.recs, int(max(limit, 0)))
		pb.rows = rows
		return
	}
	o.recs = slices.Grow(o.recs, int(firsts[len(rows)]))
	pb.res, pb.resBase, pb.firsts, pb.rows = o.recs[:cap(o.recs)], len(o.recs), firsts, rows
}

// SegAt returns the segment for the adds of row group g of the file of the
// last Reserve: one writing its records into the group's window of the
// builder's array when Reserve reserved one, else one with an array of its
// own. SegAt may be called from several goroutines at once and while
// AppendSeg runs; the segments of a file must be appended in group order.
func (pb *Builder[T, R]) SegAt(g int) *Seg[T, R] {
	if pb.firsts == nil {
		return NewSeg(pb.out.codec, int(min(max(pb.rows[g], 0), 1<<16)))
	}
	lo, hi := pb.resBase+int(pb.firsts[g]), pb.resBase+int(pb.firsts[g+1])
	s := NewSeg(pb.out.codec, 0)
	s.recs, s.winEnd = pb.res[lo:lo:hi], hi
	return s
}

// Add packs one file given alone (JSON checkpoints).
func (pb *Builder[T, R]) Add(a *T) {
	if pb.tail == nil {
		pb.tail = NewSeg(pb.out.codec, 64)
	}
	pb.tail.Add(a)
}

func (pb *Builder[T, R]) flushTail() {
	if t := pb.tail; t != nil {
		pb.tail = nil
		pb.AppendSeg(t)
	}
}

// AppendSeg appends the records of s after those already added; a nil s
// appends nothing.
func (pb *Builder[T, R]) AppendSeg(s *Seg[T, R]) {
	if s == nil {
		return
	}
	if pb.tail != nil && pb.tail != s {
		pb.flushTail()
	}
	pb.order.then(&s.order)
	o := &pb.out
	if s.winEnd > 0 && len(o.recs)+len(s.recs) > s.winEnd && unsafe.SliceData(o.recs) == unsafe.SliceData(pb.res) {
		// s outgrew its window (more adds than rows: a damaged file) and
		// its records are in an array of their own: appending them in
		// place would write into the windows of the segments after it,
		// which may be filling now. Move the records to a new array.
		o.recs = slices.Clip(o.recs)
	}
	chunkBase := uint64(len(o.chunks))
	for _, c := range s.arena.chunks {
		o.chunks = append(o.chunks, slices.Clip(c))
	}
	o.total += s.arena.total
	o.live += s.live
	pb.remap = pb.remap[:0]
	pb.remap = append(pb.remap, skelNone, skelRaw)
	for _, sk := range s.skels[skelRaw+1:] {
		id, ok := pb.skelIDs[sk.Text()]
		if !ok {
			if len(o.skels) >= maxSkeletons {
				id = skelRaw // unpacked below
			} else {
				id = uint32(len(o.skels))
				o.skels = append(o.skels, sk)
				pb.skelIDs[sk.Text()] = id
			}
		}
		pb.remap = append(pb.remap, id)
	}
	pb.premap = append(pb.premap[:0], 0)
	for _, sk := range s.pskels[1:] {
		id, ok := pb.pskelIDs[sk]
		if !ok {
			if len(o.pskels) >= 1<<16-1 {
				id = 0 // unpacked below
			} else {
				id = uint16(len(o.pskels))
				o.pskels = append(o.pskels, sk)
				pb.pskelIDs[sk] = id
			}
		}
		pb.premap = append(pb.premap, id)
	}
	pvBase := uint32(len(o.pvs) - 2)
	o.pvs = append(o.pvs, s.pvs[2:]...)
	rareBase := uint32(len(o.rares) - 1)
	o.rares = append(o.rares, s.rares[1:]...)
	for _, r := range s.recs {
		r.path += itemRef(chunkBase << 32)
		r.stats += itemRef(chunkBase << 32)
		if r.pv > pvEmpty {
			r.pv += pvBase
		}
		if r.rare != 0 {
			r.rare += rareBase
		}
		if r.skel > skelRaw {
			old := r.skel
			r.skel = pb.remap[old]
			if r.skel == skelRaw {
				r.stats = pb.rawStats(s.skels[old], r.stats)
			}
		}
		if r.pskel != 0 {
			old := r.pskel
			r.pskel = pb.premap[old]
			if r.pskel == 0 {
				r.path = pb.rawPath(s.pskels[old], r.path)
			}
		}
		// In place (a window of SegAt), the j-th record moves from its
		// window's start + j down to len(o.recs) (at most that index:
		// every segment before fitted its window), so no record is
		// overwritten before it is read.
		o.recs = append(o.recs, r)
	}
}

// rawStats stores the packed stats at ref (in out's chunks) as raw text.
func (pb *Builder[T, R]) rawStats(skel *textpack.Skeleton, ref itemRef) itemRef {
	it := pb.out.item(ref)
	_, w := binary.Uvarint(it)
	text, _ := skel.Unpack(nil, it[w:])
	return pb.putRaw(text)
}

// rawPath stores the packed path at ref (in out's chunks) as raw text.
func (pb *Builder[T, R]) rawPath(skel string, ref itemRef) itemRef {
	it := pb.out.item(ref)
	_, w := binary.Uvarint(it)
	text, _ := textpack.UnpackPath(nil, skel, it[w:])
	return pb.putRaw(text)
}

// rawChunkSize is the size of the chunks that hold raw re-encodings.
const rawChunkSize = 64 << 10

// putRaw stores text as a raw item (uvarint length, bytes) in out's chunks:
// all raw items of the builder share chunks of rawChunkSize, which finish
// clips, so no published level has a chunk with room that a later merge
// could write into.
func (pb *Builder[T, R]) putRaw(text []byte) itemRef {
	o := &pb.out
	var pre [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(pre[:], uint64(len(text)))
	n := w + len(text)
	if pb.rawChunk < 0 || cap(o.chunks[pb.rawChunk])-len(o.chunks[pb.rawChunk]) < n {
		o.chunks = append(o.chunks, make([]byte, 0, max(n, rawChunkSize)))
		pb.rawChunk = len(o.chunks) - 1
	}
	c := o.chunks[pb.rawChunk]
	off := len(c)
	c = append(c, pre[:w]...)
	o.chunks[pb.rawChunk] = append(c, text...)
	o.total += n
	o.live += n
	return itemRef(uint64(pb.rawChunk)<<32 | uint64(off))
}

// Finish returns the packed level: records in key order as given, else
// with an order; of several records with one key the last one counts. The
// builder is empty again afterwards.
func (pb *Builder[T, R]) Finish() *Packed[T, R] {
	pb.flushTail()
	o := &pb.out
	// The segments noted their keys as they were packed: when those were
	// in strict order the records are, and no path is unpacked to check.
	sorted := !pb.order.unordered
	var s1, s2 []byte
	var prev Key
	for i := range o.recs {
		if pb.order.n == len(o.recs) {
			break
		}
		k := o.keyIn(&o.recs[i], &s2)
		if i > 0 && Compare(prev, k) >= 0 {
			sorted = false
			break
		}
		prev = k
		s1, s2 = s2, s1 // prev's path stays in s1
	}
	if !sorted {
		idx := make([]int32, len(o.recs))
		for i := range idx {
			idx[i] = int32(i)
		}
		slices.SortStableFunc(idx, func(a, b int32) int {
			return Compare(o.keyIn(&o.recs[a], &s1), o.keyIn(&o.recs[b], &s2))
		})
		out := idx[:0]
		for i, x := range idx {
			if i+1 < len(idx) && Compare(o.keyIn(&o.recs[x], &s1), o.keyIn(&o.recs[idx[i+1]], &s2)) == 0 {
				continue // a later record has this key
			}
			out = append(out, x)
		}
		o.order = slices.Clip(out)
	}
	for i, c := range o.chunks {
		o.chunks[i] = slices.Clip(c)
	}
	p := &Packed[T, R]{codec: o.codec, recs: o.recs, order: o.order, chunks: o.chunks, skels: o.skels, pskels: o.pskels, pvs: o.pvs, rares: o.rares,
		live: o.live, total: o.total}
	pb.out = Packed[T, R]{codec: o.codec}
	pb.res, pb.resBase, pb.firsts, pb.rows = nil, 0, nil, nil
	pb.rawChunk = -1
	pb.order = keyOrder{}
	return p
}

// packEntries returns the packed level of entries sorted by key (no nil
// values).
func packEntries[T, R any](c *Codec[T, R], es []entry[T]) *Packed[T, R] {
	b := NewSeg(c, len(es))
	for _, e := range es {
		b.Add(e.v)
	}
	return b.finish()
}
