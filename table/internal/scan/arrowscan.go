package scan

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
	"golang.org/x/sync/semaphore"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/value"
)

// The columnar path of ScanArrow: each data file's column chunks are
// decoded by arrow-go's pqarrow straight into Arrow arrays, which are then
// brought to the scan's Arrow types (arrowio.Schema of the Delta types):
// timestamps of every unit to microseconds (flooring), type widening by a
// cast (integers, float → double, decimals), a column the file lacks as
// nulls, partition columns as constant arrays. Deletion vectors and the
// row filter become one selection mask applied with the Arrow filter
// kernel; row groups whose Parquet statistics rule the filter out are not
// decoded, nor, within the others, the rows of the pages whose page index
// rules it out (arrowpages.go).
//
// It is taken when every column the plan reads from data files is a
// top-level primitive or decimal (ColumnarPlan). Within such a plan, a
// file whose layout the columnar reader does not map exactly (a column
// found by a case-insensitive match only, a nested or repeated file column
// where a primitive is expected, an INT96 column (pqarrow's nanoseconds
// overflow outside 1677-2262), a file type that is no exact or widening
// match such as date → timestamp_ntz, a stored Arrow schema asking for
// dictionaries or large strings, a footer pqarrow rejects) is read by the
// row reader instead, so it yields the same values and errors as Scan.
// ScanStats.FilesColumnar counts the files that took the columnar path.

// ColumnarPlan reports whether ScanArrow can take the columnar path.
func (p *Plan) ColumnarPlan() bool {
	for _, f := range p.Read.Fields {
		if !columnarType(f.Type) {
			return false
		}
	}
	return true
}

// columnarType reports whether the columnar path can read a column of
// type t: anything but void and variant, at any depth.
func columnarType(t schema.Type) bool {
	switch t := t.(type) {
	case *schema.DecimalType:
		return true
	case *schema.PrimitiveType:
		return t.Name != schema.Void && t.Name != schema.Variant
	case *schema.StructType:
		for _, f := range t.Fields {
			if !columnarType(f.Type) {
				return false
			}
		}
		return true
	case *schema.ArrayType:
		return columnarType(t.ElementType)
	case *schema.MapType:
		return columnarType(t.KeyType) && columnarType(t.ValueType)
	}
	return false
}

// ArrowInflightBytes bounds the Parquet bytes (add.size) of the files a
// columnar scan reads at once.
const ArrowInflightBytes = 160 << 20

// InflightWeight is the share of arrowInflightBytes that reading f holds:
// its add.size, at least 1, a file larger than the budget taking it whole.
func InflightWeight(f *File) int64 { return min(max(f.Add.Size, 1), ArrowInflightBytes) }

// arrowMsg is one message of a file's columnar reader: a batch, or the
// end of the file with its counts or error.
type arrowMsg struct {
	rec       arrow.RecordBatch
	counts    *fileCounts
	rgSkipped int
	late      int64 // rows whose non-filter columns were not decoded
	pages     int   // pages the page indexes skipped
	pageRows  int64 // their rows
	columnar  bool
	err       error
}

// sendBatch sends m on ch unless ctx ends first; then rec, the batch m
// carries (nil for none), is released, as no receiver will. It reports
// whether m was sent.
func sendBatch[M any](ctx context.Context, ch chan<- M, m M, rec arrow.RecordBatch) bool {
	select {
	case ch <- m:
		return true
	case <-ctx.Done():
		if rec != nil {
			rec.Release()
		}
		return false
	}
}

// arrowBatches sends the plan's batches to send, files in order, up to
// WithLimit's rows, keeping ScanStats as the row scan keeps them.
func (p *Plan) arrowBatches(ctx context.Context, outSch *arrow.Schema, send func(arrow.RecordBatch) bool) error {
	st := p.Cfg.Stats
	if st == nil {
		st = &Stats{}
	}
	limit := p.Cfg.Limit
	if len(p.Files) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	conc := max(p.Cfg.Concurrency, 1)
	slots := make(chan struct{}, conc)
	// Besides conc files at most, the files being read hold at most
	// arrowInflightBytes of Parquet (add.size; a larger file alone), so
	// that large files do not each bring their buffers and batches at
	// once: the scan's memory stays bounded whatever the file sizes.
	budget := semaphore.NewWeighted(ArrowInflightBytes)
	pending := make(chan chan arrowMsg, conc)
	workers := p.stripeWorkers(conc)
	mem := NewPoolAllocator()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(pending)
		for _, f := range p.Files {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			if budget.Acquire(ctx, InflightWeight(f)) != nil {
				return
			}
			ch := make(chan arrowMsg, 2)
			select {
			case pending <- ch:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(ch)
				p.produceArrow(ctx, f, outSch, (conc == 1 || len(p.Files) == 1) && workers == 1, workers, mem, ch)
			}()
		}
	}()
	drain := func(ch chan arrowMsg) {
		for m := range ch {
			if m.rec != nil {
				m.rec.Release()
			}
		}
	}
	fileIdx := 0
	for ch := range pending {
		for m := range ch {
			if m.err != nil {
				if m.counts != nil && m.counts.done {
					st.FilesRead++
				}
				drain(ch)
				return m.err
			}
			if m.counts != nil {
				c := m.counts
				if c.done {
					st.FilesRead++
					st.RowsRead += c.rows
					st.RowsDeleted += c.deleted
					st.RowGroupsSkipped += m.rgSkipped
					st.RowsLateSkipped += m.late
					st.PagesSkipped += m.pages
					st.RowsPageSkipped += m.pageRows
					if m.columnar {
						st.FilesColumnar++
					}
				}
				continue
			}
			rec := m.rec
			n := rec.NumRows()
			if limit > 0 && st.RowsReturned+n >= limit {
				// The last batch: the row scan stops in this file, which
				// it then does not count as read.
				keep := limit - st.RowsReturned
				if keep < n {
					cut := rec.NewSlice(0, keep)
					rec.Release()
					rec = cut
				}
				st.RowsReturned += keep
				send(rec)
				drain(ch)
				return nil
			}
			st.RowsReturned += n
			if !send(rec) {
				drain(ch)
				return nil
			}
		}
		<-slots
		budget.Release(InflightWeight(p.Files[fileIdx]))
		fileIdx++
	}
	if err := ctx.Err(); err != nil {
		return p.Errorf("", err)
	}
	return nil
}

// stripeWorkers is the number of goroutines decoding each file (see
// arrowstripe.go): the cores the files read at once leave idle, 1 with
// WithScanConcurrency(1).
func (p *Plan) stripeWorkers(conc int) int {
	if p.Cfg.Arrow.Workers > 0 {
		return p.Cfg.Arrow.Workers
	}
	if conc <= 1 {
		return 1
	}
	return max(1, runtime.GOMAXPROCS(0)/min(conc, len(p.Files)))
}

// produceArrow reads file f into batches on ch, columnar when the file
// allows it, else through the row reader.
func (p *Plan) produceArrow(ctx context.Context, f *File, outSch *arrow.Schema, parallel bool, workers int, mem memory.Allocator, ch chan<- arrowMsg) {
	send := func(m arrowMsg) bool { return sendBatch(ctx, ch, m, m.rec) }
	if !p.ColumnarPlan() {
		p.produceArrowRows(ctx, f, send)
		return
	}
	cf, err := p.openColumnar(ctx, f, parallel, mem)
	if err != nil {
		send(arrowMsg{counts: &fileCounts{}, err: p.Errorf(f.Path, err)})
		return
	}
	if cf == nil {
		p.produceArrowRows(ctx, f, send)
		return
	}
	counts, err := cf.read(ctx, p, f, outSch, workers, func(rec arrow.RecordBatch) bool { return send(arrowMsg{rec: rec}) })
	if ctx.Err() != nil && err == nil && !counts.done {
		return
	}
	if err != nil {
		err = p.Errorf(f.Path, err)
	}
	send(arrowMsg{counts: &counts, rgSkipped: cf.rgSkipped, late: cf.lateSkipped,
		pages: cf.pagesSkipped, pageRows: cf.rowsPageSkipped, columnar: true, err: err})
}

// produceArrowRows is produceArrow through the row reader.
func (p *Plan) produceArrowRows(ctx context.Context, f *File, send func(arrowMsg) bool) {
	rb, err := arrowio.NewRecordBuilder(nil, p.OutSch)
	if err != nil {
		send(arrowMsg{counts: &fileCounts{}, err: p.Errorf(f.Path, err)})
		return
	}
	defer rb.Release()
	var failed error
	counts, err := p.ReadFile(ctx, f, func(_ int64, row value.Row) bool {
		if err := rb.Append(row); err != nil {
			failed = p.Errorf(f.Path, err)
			return false
		}
		if rb.Len() == ArrowBatchRows {
			return send(arrowMsg{rec: rb.NewRecordBatch()})
		}
		return true
	})
	if err == nil {
		err = failed
	}
	if ctx.Err() != nil && err == nil && !counts.done {
		return
	}
	if err == nil && rb.Len() > 0 {
		if !send(arrowMsg{rec: rb.NewRecordBatch()}) {
			return
		}
	}
	send(arrowMsg{counts: &counts, err: err})
}

// colFile is how one read column is found in a data file.
type colFile struct {
	leaf   int            // (first) leaf column index in the file, -1: absent (nulls)
	leaves []int          // every leaf of the field
	nested bool           // a struct, list or map field
	field  int            // index of its top-level field in the file
	src    arrow.DataType // pqarrow's type of the file column
	dst    arrow.DataType // the scan's type
}

// columnarFile is one data file opened for the columnar path.
type columnarFile struct {
	fr   *pqarrow.FileReader
	md   *metadata.FileMetaData
	mem  memory.Allocator // pqarrow's, the page reader's and gathered strings' offsets
	pool *poolAllocator   // mem when it pools (pinOutput before a batch is emitted)
	cols []colFile        // by p.read index
	// rgSkipped counts the row groups the filter skipped.
	rgSkipped int
	// lateSkipped counts the rows whose non-filter columns were not
	// decoded (ScanStats.RowsLateSkipped).
	lateSkipped int64
	// pagesSkipped counts the filter columns' pages, and rowsPageSkipped
	// the rows, that the page indexes ruled out (selectPages).
	pagesSkipped    int
	rowsPageSkipped int64
}

// openColumnar opens f with pqarrow and maps the plan's read columns to
// file columns. It returns nil (and no error) when the row reader must
// read the file; errors are those of the store.
func (p *Plan) openColumnar(ctx context.Context, f *File, parallel bool, mem memory.Allocator) (*columnarFile, error) {
	info, err := f.Store.Stat(ctx, f.Key)
	if err != nil {
		return nil, nil // the row reader reports it, as Scan does
	}
	ra := NewTailReaderAt(ctx, f.Store, f.Key, info.Size)
	rdr, err := openParquet(ra, info.Size, mem)
	if err != nil {
		return nil, nil
	}
	props := pqarrow.ArrowReadProperties{BatchSize: p.Cfg.Arrow.batchRows(), Parallel: parallel, PreAllocBinaryData: true}
	// Strings of a small dictionary are decoded as dictionaries (indices
	// into the chunk's dictionary page, no copy per value) and gathered
	// into utf8 arrays in one pass (gatherStrings): faster than building
	// them value by value. A column of mostly distinct values (its
	// dictionary a large part of the chunk) is read plain: pqarrow would
	// hash every dictionary value into a builder, costing time and memory.
	for c := 0; c < rdr.MetaData().Schema.NumColumns(); c++ {
		col := rdr.MetaData().Schema.Column(c)
		if col.PhysicalType() == parquet.Types.ByteArray && col.LogicalType().Equals(pqschema.StringLogicalType{}) &&
			len(col.ColumnPath()) == 1 && smallDictionary(rdr.MetaData(), c) {
			props.SetReadDict(c, true)
		}
	}
	fr, err := pqarrow.NewFileReader(rdr, props, mem)
	if err != nil {
		return nil, nil
	}
	asch, err := fr.Schema()
	if err != nil {
		return nil, nil
	}
	md := rdr.MetaData()
	root := md.Schema.Root()
	pool, _ := mem.(*poolAllocator)
	cf := &columnarFile{fr: fr, md: md, mem: mem, pool: pool, cols: make([]colFile, len(p.Read.Fields))}
	for i, fld := range p.Read.Fields {
		dst, err := arrowio.Type(fld.Type)
		if err != nil {
			return nil, nil
		}
		idx := -1
		if p.Mode == "id" {
			if id, ok := fld.FieldID(); ok && id != 0 {
				for j := 0; j < root.NumFields(); j++ {
					if int64(root.Field(j).FieldID()) == id {
						idx = j
						break
					}
				}
			}
		}
		if idx < 0 {
			idx = root.FieldIndexByName(fld.PhysicalName(p.Mode))
		}
		if idx < 0 {
			if hasFoldedName(root, fld.PhysicalName(p.Mode)) {
				return nil, nil // the row reader's case-insensitive match
			}
			cf.cols[i] = colFile{leaf: -1, dst: dst}
			continue
		}
		node := root.Field(idx)
		if idx >= len(asch.Fields()) || asch.Field(idx).Name != node.Name() {
			return nil, nil
		}
		if _, group := node.(*pqschema.GroupNode); group {
			// A struct, list or map: taken when pqarrow's Arrow type is
			// exactly the scan's (names, nullability, element types), so
			// no child needs renaming (column mapping), widening or a
			// timestamp rescale; else the row reader reads the file.
			src := asch.Field(idx).Type
			if !arrow.TypeEqual(src, dst) || hasInt96(node) {
				return nil, nil
			}
			var leaves []int
			for c := 0; c < md.Schema.NumColumns(); c++ {
				if md.Schema.ColumnRoot(c) == node {
					leaves = append(leaves, c)
				}
			}
			if len(leaves) == 0 {
				return nil, nil
			}
			cf.cols[i] = colFile{leaf: leaves[0], leaves: leaves, field: idx, src: src, dst: dst, nested: true}
			continue
		}
		prim, ok := node.(*pqschema.PrimitiveNode)
		if !ok || node.RepetitionType() == parquet.Repetitions.Repeated || prim.PhysicalType() == parquet.Types.Int96 {
			// INT96 too: pqarrow decodes it to nanoseconds, which overflow
			// outside 1677-2262; the row reader converts every value.
			return nil, nil
		}
		src := asch.Field(idx).Type
		if !convertible(src, dst) {
			return nil, nil
		}
		leaf := md.Schema.ColumnIndexByNode(prim)
		if leaf < 0 {
			return nil, nil
		}
		cf.cols[i] = colFile{leaf: leaf, leaves: []int{leaf}, field: idx, src: src, dst: dst}
	}
	return cf, nil
}

// smallDictionary reports whether leaf column c has, in every row group,
// a dictionary page of less than maxReadDict bytes and a quarter of the
// chunk, and (when the chunk lists its page encodings) no data page that
// fell back to plain encoding.
func smallDictionary(md *metadata.FileMetaData, c int) bool {
	for g := 0; g < md.NumRowGroups(); g++ {
		cc, err := md.RowGroup(g).ColumnChunk(c)
		if err != nil || !cc.HasDictionaryPage() {
			return false
		}
		dict := cc.DataPageOffset() - cc.DictionaryPageOffset()
		if dict <= 0 || dict >= maxReadDict || 4*dict >= cc.TotalCompressedSize() {
			return false
		}
		for _, es := range cc.EncodingStats() {
			// Page types of parquet.thrift: 0 DATA_PAGE, 3 DATA_PAGE_V2.
			if pt := int(es.PageType); (pt == 0 || pt == 3) &&
				es.Encoding != parquet.Encodings.RLEDict && es.Encoding != parquet.Encodings.PlainDict {
				return false
			}
		}
	}
	return true
}

// maxReadDict is the largest dictionary page, in bytes, whose strings the
// columnar path reads as dictionaries.
const maxReadDict = 256 << 10

// hasInt96 reports whether a leaf below n is INT96.
func hasInt96(n pqschema.Node) bool {
	switch n := n.(type) {
	case *pqschema.PrimitiveNode:
		return n.PhysicalType() == parquet.Types.Int96
	case *pqschema.GroupNode:
		for i := 0; i < n.NumFields(); i++ {
			if hasInt96(n.Field(i)) {
				return true
			}
		}
	}
	return false
}

func hasFoldedName(root *pqschema.GroupNode, name string) bool {
	for j := 0; j < root.NumFields(); j++ {
		if n := root.Field(j).Name(); n != name && equalFold(n, name) {
			return true
		}
	}
	return false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// openParquet opens a parquet footer with pqarrow's reader, turning its
// panics on corrupt input into errors.
func openParquet(ra io.ReaderAt, size int64, mem memory.Allocator) (rdr *file.Reader, err error) {
	defer func() {
		if r := recover(); r != nil {
			rdr, err = nil, fmt.Errorf("%w: %v", parquetio.ErrCorrupt, r)
		}
	}()
	// Column chunks are read through a buffer of columnBuffer bytes
	// rather than whole: a row group's chunks can be hundreds of MB, and
	// a scan has several files open at once.
	// The page reader's buffers are overwritten whole before they are
	// read: from the pool unzeroed (rawAllocator).
	pageMem := mem
	if pool, ok := mem.(*poolAllocator); ok {
		pageMem = RawAllocator{pool}
	}
	props := parquet.NewReaderProperties(pageMem)
	props.BufferedStreamEnabled = true
	props.BufferSize = columnBuffer
	return file.NewParquetReader(io.NewSectionReader(ra, 0, size), file.WithReadProps(props))
}

// columnBuffer is the read buffer of one column chunk of the columnar
// path, in bytes: each refill is one ranged Get of the store.
const columnBuffer = 1 << 20

// convertible reports whether the columnar path converts a file column of
// Arrow type src to the scan's type dst exactly as the row reader would.
func convertible(src, dst arrow.DataType) bool {
	if arrow.TypeEqual(src, dst) {
		return true
	}
	if d, ok := src.(*arrow.DictionaryType); ok {
		return dst.ID() == arrow.STRING && d.ValueType.ID() == arrow.STRING && isSignedInt(d.IndexType)
	}
	switch d := dst.(type) {
	case *arrow.TimestampType:
		_, ok := src.(*arrow.TimestampType)
		return ok
	case *arrow.Int64Type:
		return isSignedInt(src)
	case *arrow.Int32Type:
		return src.ID() == arrow.INT16 || src.ID() == arrow.INT8
	case *arrow.Int16Type:
		return src.ID() == arrow.INT8
	case *arrow.Float64Type:
		return src.ID() == arrow.FLOAT32 || src.ID() == arrow.INT8 || src.ID() == arrow.INT16 || src.ID() == arrow.INT32
	case *arrow.Decimal128Type:
		s, ok := src.(*arrow.Decimal128Type)
		return ok && s.Scale <= d.Scale && s.Precision-s.Scale <= d.Precision-d.Scale
	}
	return false
}

func isSignedInt(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return true
	}
	return false
}

// tailReaderAt serves the last bytes of an object (the footer) from one
// prefetched range and everything else with ranged Gets. An object of at
// most wholeObject bytes is read whole by that one Get: a small file's
// footer and column chunks then cost one request (one open and read on a
// local store) instead of one per chunk.
type tailReaderAt struct {
	ctx     context.Context
	store   objectstore.Store
	key     string
	size    int64
	once    sync.Once
	tail    []byte
	tailOff int64
	err     error
}

const (
	tailPrefetch = 64 << 10
	// WholeObject is the largest object tailReaderAt reads whole, in
	// bytes: at DefaultScanConcurrency files at once, at most 16 MiB more
	// than the column buffers (columnBuffer) those files hold anyway.
	WholeObject = 4 << 20
)

func NewTailReaderAt(ctx context.Context, store objectstore.Store, key string, size int64) *tailReaderAt {
	off := max(size-tailPrefetch, 0)
	if size <= WholeObject {
		off = 0
	}
	return &tailReaderAt{ctx: ctx, store: store, key: key, size: size, tailOff: off}
}

func (r *tailReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.tailOff {
		r.once.Do(func() {
			r.tail, r.err = r.store.Get(r.ctx, r.key, objectstore.Range{Offset: r.tailOff, Length: r.size - r.tailOff})
		})
		if r.err != nil {
			return 0, r.err
		}
		if off-r.tailOff > int64(len(r.tail)) {
			return 0, io.EOF
		}
		n := copy(p, r.tail[off-r.tailOff:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	length := min(int64(len(p)), r.size-off)
	if length <= 0 {
		return 0, io.EOF
	}
	b, err := r.store.Get(r.ctx, r.key, objectstore.Range{Offset: off, Length: length})
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// segment is a run of rows of the selected row groups: file rows
// [start, start+n).
type segment struct{ start, n int64 }

// read decodes the file's selected row groups and emits its output
// batches; the counts are those readFile keeps. With workers > 1 and a
// stream of several stripes, stripes are decoded by that many goroutines
// at once (readParallel), the batches emitted in the same order and with
// the same boundaries as one goroutine gives.
func (cf *columnarFile) read(ctx context.Context, p *Plan, f *File, outSch *arrow.Schema, workers int, emit func(arrow.RecordBatch) bool) (c fileCounts, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", parquetio.ErrCorrupt, r)
		}
	}()
	fr, err := cf.selectRowGroups(ctx, p, f, &c)
	if err != nil {
		return c, err
	}
	if fr.total == 0 {
		c.done = true
		return c, nil
	}
	if err := cf.planColumns(p, fr); err != nil {
		return c, err
	}
	cf.selectPages(p, f, fr, &c)
	if fr.keep != nil && len(fr.keep) == 0 {
		c.done = true
		return c, nil
	}
	stripes := fr.stripes(p.Cfg.Arrow.stripeRows())
	var u unitCounts
	if workers > 1 && len(stripes) > 1 && cf.seekable(fr) && !cf.readsForward(fr, cf.lateLeaves(fr)) {
		u, err = cf.readParallel(ctx, p, f, fr, outSch, stripes, workers, emit)
	} else {
		u, err = cf.readSequential(ctx, p, f, fr, outSch, emit)
	}
	c.rows += u.rows
	c.deleted += u.deleted
	cf.lateSkipped += u.late
	c.done = err == nil && u.done
	return c, err
}

// fileRead is what the stripe readers of one file share: the selected
// row groups and how the read columns are decoded.
type fileRead struct {
	bm    *roaring64.Bitmap // deletion vector; nil: none
	rgs   []int             // selected row groups
	segs  []segment         // their file rows
	total int64             // rows of the selected row groups
	// keep, when not nil, holds the spans of the stream the page indexes
	// leave to read (selectPages); nil: all of it.
	keep []stripe
	// pos[i] is read column i's position in the decoded batch, -1: not in
	// it (absent from the file, or late).
	pos    []int
	leaves []int // the decoded batch's leaves, sorted
	// late[i]: read column i is decoded only for the rows the filter
	// keeps (lateCols).
	late   []bool
	lateOn bool
}

// selectRowGroups loads the deletion vector and selects the row groups the
// filter may match. Skipped row groups' rows still count as read (minus
// their deleted rows) in c, as the row scan counts them.
func (cf *columnarFile) selectRowGroups(ctx context.Context, p *Plan, f *File, c *fileCounts) (*fileRead, error) {
	fr := &fileRead{}
	if dv := f.Add.DeletionVector; dv != nil {
		bm := f.Dv
		if bm == nil {
			var err error
			if bm, err = p.Locs.LoadDV(ctx, dv); err != nil {
				return nil, fmt.Errorf("deletion vector: %w", err)
			}
		}
		if !bm.IsEmpty() {
			fr.bm = bm
		}
	}
	var start int64
	for g := 0; g < cf.md.NumRowGroups(); g++ {
		rg := cf.md.RowGroup(g)
		n := rg.NumRows()
		if n < 0 {
			return nil, fmt.Errorf("%w: row group %d has %d rows", parquetio.ErrCorrupt, g, n)
		}
		if p.Pred != nil && !p.Pred.MayMatch(func(bc *bind.BoundCol) any { return f.Part[p.PartSlot[bc.Top]] }, cf.rowGroupBounds(p, rg)) {
			del := deletedIn(fr, start, n)
			c.rows += n - del
			c.deleted += del
			cf.rgSkipped++
			start += n
			continue
		}
		fr.rgs = append(fr.rgs, g)
		if k := len(fr.segs) - 1; k >= 0 && fr.segs[k].start+fr.segs[k].n == start {
			fr.segs[k].n += n
		} else {
			fr.segs = append(fr.segs, segment{start, n})
		}
		start += n
		fr.total += n
	}
	if len(fr.rgs) == 0 {
		fr.total = 0
	}
	return fr, nil
}

// planColumns decides how each read column is decoded. With a filter, the
// filter's columns are decoded first; the other columns (late) only for
// the rows the filter keeps in each batch, seeking past the rest (whole
// pages are skipped with the file's offset index).
func (cf *columnarFile) planColumns(p *Plan, fr *fileRead) error {
	inFilter := make([]bool, len(cf.cols))
	if p.Pred != nil {
		p.Pred.Columns(func(bc *bind.BoundCol) {
			if !bc.Partition {
				for i, top := range p.ReadTop {
					if top == bc.Top {
						inFilter[i] = true
					}
				}
			}
		})
	}
	var nFilter, nOther int
	for i, col := range cf.cols {
		switch {
		case col.leaf < 0:
		case inFilter[i]:
			nFilter++
		default:
			nOther++
		}
	}
	fr.lateOn = nFilter > 0 && nOther > 0
	fr.pos = make([]int, len(cf.cols))
	fr.late = make([]bool, len(cf.cols))
	var fields []int
	for i, col := range cf.cols {
		fr.pos[i] = -1
		if col.leaf < 0 {
			continue
		}
		if fr.lateOn && !inFilter[i] {
			fr.late[i] = true
			continue
		}
		fr.pos[i] = len(fields)
		fields = append(fields, col.field)
		fr.leaves = append(fr.leaves, col.leaves...)
	}
	fr.leaves = sortedCopy(fr.leaves)
	// pqarrow yields fields in file order: sort positions by field.
	order := sortedOrder(fields)
	for i := range fr.pos {
		if fr.pos[i] >= 0 {
			fr.pos[i] = order[fr.pos[i]]
		}
	}
	return nil
}

// readSequential reads the stream's spans with one stripe reader.
func (cf *columnarFile) readSequential(ctx context.Context, p *Plan, f *File, fr *fileRead, outSch *arrow.Schema, emit func(arrow.RecordBatch) bool) (unitCounts, error) {
	sr, err := cf.newStripeReader(ctx, p, f, fr, outSch)
	if err != nil {
		return unitCounts{}, err
	}
	defer sr.close()
	for _, sp := range fr.spans() {
		ok, err := sr.readStripe(ctx, sp, emit)
		if !ok || err != nil {
			return sr.counts, err
		}
	}
	sr.counts.done = true
	return sr.counts, nil
}

// lateCols reads a file's non-filter columns for the row ranges the
// filter kept.
type lateCols struct {
	cf      *columnarFile
	rgs     []int
	readers []*pqarrow.ColumnReader // by read index; nil: not late
	// forward[i]: readers[i] cannot seek (readsForward) and skips rows by
	// reading them.
	forward []bool
	pos     int64 // stream row the readers are at
}

func (lt *lateCols) release() {
	for _, r := range lt.readers {
		if r != nil {
			r.Release()
		}
	}
}

// fetch sets cols[i] of every late column i to rows [from, from+n) of the
// selected row groups, in the scan's types.
func (lt *lateCols) fetch(ctx context.Context, p *Plan, from, n int64, cols []arrow.Array) error {
	if from != lt.pos {
		for i, r := range lt.readers {
			switch {
			case r == nil:
			case lt.forward[i]:
				if err := skipByReading(r, from-lt.pos, p.Cfg.Arrow.batchRows()); err != nil {
					return fmt.Errorf("%w: column %s: skip from row %d to %d: %v", parquetio.ErrCorrupt, p.Read.Fields[i].Name, lt.pos, from, err)
				}
			default:
				if err := r.SeekToRow(from); err != nil {
					return fmt.Errorf("%w: seek to row %d: %v", parquetio.ErrCorrupt, from, err)
				}
			}
		}
	}
	lt.pos = from + n
	for i, r := range lt.readers {
		if r == nil {
			continue
		}
		ch, err := r.NextBatch(n)
		if err != nil {
			return fmt.Errorf("%w: column %s: %v", parquetio.ErrCorrupt, p.Read.Fields[i].Name, err)
		}
		var a arrow.Array
		switch {
		case ch.Len() != int(n):
			err = fmt.Errorf("%w: column %s: %d rows where %d were expected", parquetio.ErrCorrupt, p.Read.Fields[i].Name, ch.Len(), n)
		case len(ch.Chunks()) == 1:
			a = ch.Chunk(0)
			a.Retain()
		default:
			a, err = array.Concatenate(ch.Chunks(), memory.DefaultAllocator)
		}
		ch.Release()
		if err != nil {
			return err
		}
		conv, err := convertArray(ctx, a, lt.cf.cols[i].dst, lt.cf.mem)
		a.Release()
		if err != nil {
			return fmt.Errorf("column %s: %w", p.Read.Fields[i].Name, err)
		}
		cols[i] = conv
	}
	return nil
}

// skipByReading moves r n rows forward by decoding them, batch rows at a
// time.
func skipByReading(r *pqarrow.ColumnReader, n, batch int64) error {
	if n < 0 {
		return fmt.Errorf("cannot seek back %d rows in a column chunk without dictionary_page_offset", -n)
	}
	for n > 0 {
		k := min(n, batch)
		ch, err := r.NextBatch(k)
		if err != nil {
			return err
		}
		got := int64(ch.Len())
		ch.Release()
		if got != k {
			return fmt.Errorf("%d rows where %d were expected", got, k)
		}
		n -= k
	}
	return nil
}

func sortedOrder(leaves []int) []int {
	s := sortedCopy(leaves)
	order := make([]int, len(leaves))
	for i, l := range leaves {
		for j, x := range s {
			if x == l {
				order[i] = j
			}
		}
	}
	return order
}

func sortedCopy(s []int) []int {
	out := append([]int{}, s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// fileRow maps position k of the stream of selected row groups to the
// file's row index.
func fileRow(segs []segment, k int64) int64 {
	for _, s := range segs {
		if k < s.n {
			return s.start + k
		}
		k -= s.n
	}
	return -1
}

// batch turns one decoded batch, rows [streamPos, streamPos+n) of the
// selected row groups, into an output batch (nil when no row is left).
// With lateOn, rec holds the filter's columns only and the others are
// fetched for the span of the rows the filter keeps.
func (sr *stripeReader) batch(ctx context.Context, rec arrow.RecordBatch, streamPos int64) (arrow.RecordBatch, error) {
	cf, p := sr.cf, sr.p
	n := rec.NumRows()
	cols, later, err := sr.decodedColumns(ctx, rec)
	defer releaseAll(cols)
	if err != nil {
		return nil, err
	}
	keep, kept := sr.selection(cols, n, streamPos)
	if kept == 0 {
		if sr.lt != nil {
			sr.counts.late += n
		}
		return nil, nil
	}
	if sr.lt != nil {
		// The span of kept rows: the late columns are decoded for it only.
		first, last := int64(0), n-1
		for !keep[first] {
			first++
		}
		for !keep[last] {
			last--
		}
		m := last - first + 1
		sr.counts.late += n - m
		if m < n {
			for i, a := range cols {
				if a != nil {
					cols[i] = array.NewSlice(a, first, last+1)
					a.Release()
				}
			}
			keep = keep[first : last+1]
			n = m
		}
		if err := sr.lt.fetch(ctx, p, streamPos+first, m, cols); err != nil {
			return nil, err
		}
	}
	for i, l := range later {
		if l {
			a, err := convertArray(ctx, cols[i], cf.cols[i].dst, cf.mem)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", p.Read.Fields[i].Name, err)
			}
			cols[i].Release()
			cols[i] = a
		}
	}
	out, err := sr.assemble(cols, n)
	if err != nil || kept == n {
		return out, err
	}
	mb := array.NewBooleanBuilder(memory.DefaultAllocator)
	mb.AppendValues(keep, nil)
	mask := mb.NewArray()
	mb.Release()
	defer mask.Release()
	defer out.Release()
	return compute.FilterRecordBatch(ctx, out, mask, compute.DefaultFilterOptions())
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// decodedColumns returns the batch's read columns in the scan's types
// (nulls for a column the file lacks, nil for a late one). With a filter,
// dictionary-encoded strings stay dictionaries until the filter has run
// (it compares each dictionary value once), and are gathered for the kept
// rows only: later marks them.
func (sr *stripeReader) decodedColumns(ctx context.Context, rec arrow.RecordBatch) (cols []arrow.Array, later []bool, err error) {
	cf, p := sr.cf, sr.p
	cols = make([]arrow.Array, len(cf.cols))
	for i, col := range cf.cols {
		if pos := sr.fr.pos[i]; pos >= 0 {
			if _, dict := col.src.(*arrow.DictionaryType); dict && p.Pred != nil {
				if later == nil {
					later = make([]bool, len(cf.cols))
				}
				later[i] = true
				cols[i] = rec.Column(pos)
				cols[i].Retain()
				continue
			}
			a, err := convertArray(ctx, rec.Column(pos), col.dst, cf.mem)
			if err != nil {
				return cols, nil, fmt.Errorf("column %s: %w", p.Read.Fields[i].Name, err)
			}
			cols[i] = a
		} else if col.leaf < 0 {
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, col.dst, int(rec.NumRows()))
		}
	}
	return cols, later, nil
}

// selection applies the deletion vector, then the row filter, to n rows
// from streamPos: keep (nil: every row) and the kept count. It counts the
// rows read and deleted.
func (sr *stripeReader) selection(cols []arrow.Array, n, streamPos int64) (keep []bool, kept int64) {
	p, f := sr.p, sr.f
	kept = n
	if bm := sr.fr.bm; bm != nil {
		keep = make([]bool, n)
		for k := range keep {
			r := fileRow(sr.fr.segs, streamPos+int64(k))
			if r >= 0 && bm.Contains(uint64(r)) {
				kept--
				continue
			}
			keep[k] = true
		}
		sr.counts.deleted += n - kept
	}
	sr.counts.rows += kept
	if p.Pred == nil {
		return keep, kept
	}
	if keep == nil {
		keep = make([]bool, n)
		for k := range keep {
			keep[k] = true
		}
	}
	af := &arrowFilter{
		col: func(bc *bind.BoundCol) arrow.Array {
			for i, top := range p.ReadTop {
				if top == bc.Top {
					return cols[i]
				}
			}
			return nil
		},
		part: func(bc *bind.BoundCol) any { return f.Part[p.PartSlot[bc.Top]] },
	}
	af.eval(p.Pred, keep)
	kept = 0
	for _, k := range keep {
		if k {
			kept++
		}
	}
	return keep, kept
}

// assemble builds the output batch of n rows from the read columns and
// the partition columns (constant arrays, kept across batches).
func (sr *stripeReader) assemble(cols []arrow.Array, n int64) (arrow.RecordBatch, error) {
	p, f := sr.p, sr.f
	for i, pc := range p.Parts {
		if c := sr.consts[i]; c == nil || int64(c.Len()) < n {
			if c != nil {
				c.Release()
			}
			a, err := constantArray(pc.Type, f.Part[i], int(max(n, int64(p.Cfg.Arrow.batchRows()))))
			if err != nil {
				sr.consts[i] = nil
				return nil, fmt.Errorf("partition column %s: %w", pc.name, err)
			}
			sr.consts[i] = a
		}
	}
	outCols := make([]arrow.Array, len(p.Out))
	for i, top := range p.Out {
		if s := p.PartSlot[top]; s >= 0 {
			outCols[i] = array.NewSlice(sr.consts[s], 0, n)
			continue
		}
		for j, rt := range p.ReadTop {
			if rt == top {
				outCols[i] = cols[j]
				cols[j].Retain()
				break
			}
		}
	}
	if pool := sr.cf.pool; pool != nil {
		for _, c := range outCols {
			pool.pinOutput(c.Data())
		}
	}
	out := array.NewRecordBatch(sr.outSch, outCols, n)
	releaseAll(outCols)
	return out, nil
}

// constantArray returns an array of n copies of v (nil: null) of Delta
// type t.
func constantArray(t schema.Type, v any, n int) (arrow.Array, error) {
	rb, err := arrowio.NewRecordBuilder(nil, schema.NewStruct(schema.NewField("c", t, true)))
	if err != nil {
		return nil, err
	}
	defer rb.Release()
	row := value.Row{v}
	for range n {
		if err := rb.Append(row); err != nil {
			return nil, err
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	a := rec.Column(0)
	a.Retain()
	return a, nil
}

// convertArray brings a decoded column to the scan's type dst (convertible
// says which).
func convertArray(ctx context.Context, a arrow.Array, dst arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), dst) {
		a.Retain()
		return a, nil
	}
	if d, ok := dst.(*arrow.TimestampType); ok {
		return convertTimestamps(a.(*array.Timestamp), d), nil
	}
	if d, ok := a.(*array.Dictionary); ok {
		return GatherStrings(d, mem)
	}
	return compute.CastArray(ctx, a, compute.SafeCastOptions(dst))
}

// convertTimestamps rescales timestamps to microseconds (flooring, as the
// row reader does) and relabels the zone.
func convertTimestamps(a *array.Timestamp, dst *arrow.TimestampType) arrow.Array {
	unit := a.DataType().(*arrow.TimestampType).Unit
	vals := a.TimestampValues()
	out := make([]arrow.Timestamp, len(vals))
	switch unit {
	case arrow.Second:
		for i, v := range vals {
			out[i] = v * 1e6
		}
	case arrow.Millisecond:
		for i, v := range vals {
			out[i] = v * 1e3
		}
	case arrow.Microsecond:
		copy(out, vals)
	case arrow.Nanosecond:
		for i, v := range vals {
			q := v / 1e3
			if v%1e3 < 0 {
				q--
			}
			out[i] = q
		}
	}
	data := array.NewData(dst, a.Len(), []*memory.Buffer{a.Data().Buffers()[0], memory.NewBufferBytes(arrow.TimestampTraits.CastToBytes(out))},
		nil, a.NullN(), 0)
	defer data.Release()
	return array.NewTimestampData(data)
}

// rowGroupBounds returns the filter's bounds from a row group's Parquet
// statistics: top-level integer, date and string columns read from the
// file whose stats the Delta stats would also use (no type widening); nil
// for the others (the row group may match).
func (cf *columnarFile) rowGroupBounds(p *Plan, rg *metadata.RowGroupMetaData) func(*bind.BoundCol) *expr.Bounds {
	return func(bc *bind.BoundCol) *expr.Bounds {
		ri, ok := cf.statsColumn(p, bc)
		if !ok {
			return nil
		}
		cc, err := rg.ColumnChunk(cf.cols[ri].leaf)
		if err != nil {
			return nil
		}
		if ok, err := cc.StatsSet(); !ok || err != nil {
			return nil
		}
		ts, err := cc.Statistics()
		if err != nil || ts == nil {
			return nil
		}
		b := &expr.Bounds{Kind: bc.Kind, NullCount: -1, NumRecords: rg.NumRows()}
		if ts.HasNullCount() {
			b.NullCount = ts.NullCount()
		}
		if !ts.HasMinMax() {
			return b
		}
		switch s := ts.(type) {
		case *metadata.Int32Statistics:
			setMinMax(b, cf.cols[ri].src, s.Min(), s.Max())
		case *metadata.Int64Statistics:
			setMinMax(b, cf.cols[ri].src, s.Min(), s.Max())
		case *metadata.ByteArrayStatistics:
			setMinMax(b, cf.cols[ri].src, s.Min(), s.Max())
		}
		return b
	}
}

// GatherStrings materialises a dictionary<int, utf8> array as utf8, its
// offsets allocated from mem (nil: Go's allocator) and its bytes from Go's
// heap, never from a pool: String.Value aliases them.
//
// Dictionary values of at most 8 bytes (airport codes, enum-like columns)
// are copied as one unaligned 8-byte store each instead of a memmove call
// per value; the data buffer has 8 bytes of slack past its length for it.
func GatherStrings(d *array.Dictionary, mem memory.Allocator) (arrow.Array, error) {
	dict, ok := d.Dictionary().(*array.String)
	if !ok {
		return nil, fmt.Errorf("%w: dictionary of %s", parquetio.ErrCorrupt, d.Dictionary().DataType())
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	n := d.Len()
	nd := dict.Len()
	dictOffs := dict.ValueOffsets()
	var dictBytes []byte // offsets are into the whole data buffer
	if b := dict.Data().Buffers()[2]; b != nil {
		dictBytes = b.Bytes()
	}
	// Each dictionary value's length, and its bytes as one little-endian
	// word when it has at most 8 (short[j]).
	lens := make([]int32, nd)
	words := make([]uint64, nd)
	short := make([]bool, nd)
	for j := range nd {
		v := dictBytes[dictOffs[j]:dictOffs[j+1]]
		lens[j] = int32(len(v))
		if len(v) <= 8 {
			var w [8]byte
			copy(w[:], v)
			words[j] = binary.LittleEndian.Uint64(w[:])
			short[j] = true
		}
	}
	// The indices as one typed slice (pqarrow's are int32); other index
	// types through GetValueIndex.
	var idx32 []int32
	if ix, ok := d.Indices().(*array.Int32); ok {
		idx32 = ix.Int32Values()
	}
	index := func(i int) int {
		if idx32 != nil {
			return int(idx32[i])
		}
		return d.GetValueIndex(i)
	}
	hasNulls := d.NullN() > 0
	var total int
	for i := range n {
		if hasNulls && d.IsNull(i) {
			continue
		}
		j := index(i)
		if j < 0 || j >= nd {
			return nil, fmt.Errorf("%w: dictionary index %d of %d", parquetio.ErrCorrupt, j, nd)
		}
		total += int(lens[j])
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d bytes of strings in one batch", parquetio.ErrCorrupt, total)
	}
	offBuf := memory.NewResizableBuffer(mem)
	offBuf.Resize(arrow.Int32Traits.BytesRequired(n + 1))
	buf := make([]byte, total+8)
	dataBuf := memory.NewBufferBytes(buf[:total])
	offsets := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	var pos int32
	offsets[0] = 0
	for i := range n {
		if !hasNulls || !d.IsNull(i) {
			j := index(i)
			if short[j] {
				binary.LittleEndian.PutUint64(buf[pos:], words[j])
			} else {
				copy(buf[pos:], dictBytes[dictOffs[j]:dictOffs[j+1]])
			}
			pos += lens[j]
		}
		offsets[i+1] = pos
	}
	clear(buf[total:]) // the slack the last short value's word wrote
	var validity *memory.Buffer
	if hasNulls {
		validity = d.Data().Buffers()[0]
		if off := d.Data().Offset(); off != 0 {
			// A slice: its validity bits start at off.
			bits := make([]byte, bitutil.BytesForBits(int64(n)))
			bitutil.CopyBitmap(validity.Bytes(), off, n, bits, 0)
			validity = memory.NewBufferBytes(bits)
		}
	}
	ad := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{validity, offBuf, dataBuf}, nil, d.NullN(), 0)
	offBuf.Release()
	defer ad.Release()
	return array.NewStringData(ad), nil
}
