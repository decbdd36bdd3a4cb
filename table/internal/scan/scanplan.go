package scan

import (
	"context"
	"fmt"
	"math/big"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Source is what a scan plan reads: the snapshot, its table's URI
// (for messages) and the locator of its data files (or why there is none).
type Source struct {
	Uri     string
	Snap    *txlog.Snapshot
	Locs    *Locator
	LocsErr error
}

type Config struct {
	Filters     []expr.Expr
	Columns     []string
	ColumnsSet  bool
	Limit       int64
	Concurrency int
	Stats       *Stats
	// Arrow tunes ScanArrow's columnar path (tests set it; zero values
	// are the defaults).
	Arrow ArrowTuning
}

// Stats holds the counts of table.ScanStats (documented there; the
// two types have the same fields, so a *table.ScanStats converts to *Stats).
type Stats struct {
	Version          int64
	FilesTotal       int
	FilesPruned      int
	FilesSkipped     int
	FilesPlanned     int
	FilesRead        int
	BytesPlanned     int64
	RowsRead         int64
	RowsDeleted      int64
	RowsReturned     int64
	RowGroupsSkipped int
	FilesColumnar    int
	RowsLateSkipped  int64
	PagesSkipped     int
	RowsPageSkipped  int64
}

// partCol is a partition column a scan needs (for output or the filter).
type partCol struct {
	top  int    // index in the table schema
	name string // logical name
	key  string // partitionValues key: the physical name
	Type schema.Type
}

// File is one data file to read.
type File struct {
	Add   *txlog.Add
	Path  string // add.path decoded once
	Store objectstore.Store
	Key   string
	Part  []any // parsed values of plan.parts (nil for null)
	// Dv, when set, is the file's deletion vector already loaded (DML
	// plans load it first); readFile then does not load it again.
	Dv *roaring64.Bitmap
}

// Plan is a scan resolved against one snapshot: which files, which
// columns, which filter.
type Plan struct {
	src      Source
	Cfg      Config
	version  int64
	Mode     string
	Width    int // number of top-level columns
	Pred     *bind.Pred
	Out      []int // output columns (top-level indexes) in output order
	OutSch   *schema.StructType
	Read     *schema.StructType // data columns to read, in schema order
	ReadTop  []int              // read.Fields[i] is top-level column readTop[i]
	Parts    []partCol
	IsPart   []bool // by top-level index
	PartSlot []int  // by top-level index: index into parts, or -1
	FullOut  bool   // out is every column in schema order
	Direct   bool   // parquetio rows are the output rows as they are
	Files    []*File
	Locs     *Locator // set by selectFiles
	// FileErrors: errors name the data file only, the caller names the
	// table and the version (a change feed reads files of older versions).
	FileErrors bool
}

// Errorf wraps err with the table, the version and, if set, the file.
func (p *Plan) Errorf(file string, err error) error {
	if p.FileErrors && file != "" {
		return fmt.Errorf("data file %s: %w", file, err)
	}
	if file == "" {
		return fmt.Errorf("table: scan %s version %d: %w", p.src.Uri, p.version, err)
	}
	return fmt.Errorf("table: scan %s version %d: data file %s: %w", p.src.Uri, p.version, file, err)
}

// resolveColumns maps projection names to top-level indexes.
func resolveColumns(sch *schema.StructType, names []string) ([]int, error) {
	out := make([]int, 0, len(names))
	seen := map[int]bool{}
	for _, n := range names {
		i, err := bind.LookupField(sch, n)
		if err != nil {
			return nil, err
		}
		if seen[i] {
			return nil, bind.Invalidf("column %q is projected twice", sch.Fields[i].Name)
		}
		seen[i] = true
		out = append(out, i)
	}
	return out, nil
}

// NewPlan resolves the columns and the filter, but selects no files yet.
func NewPlan(src Source, cfg Config) (*Plan, error) {
	snap := src.Snap
	sch := snap.Schema()
	if sch == nil {
		return nil, fmt.Errorf("table: scan %s version %d: the snapshot has no schema", src.Uri, snap.Version())
	}
	p := &Plan{src: src, Cfg: cfg, version: snap.Version(), Width: len(sch.Fields),
		Mode: snap.Metadata().ColumnMappingMode()}
	if p.Mode == "" {
		p.Mode = "none"
	}
	partCols := snap.PartitionColumns()
	p.IsPart = make([]bool, p.Width)
	for _, c := range partCols {
		i := sch.FieldIndex(c)
		if i < 0 {
			return nil, p.Errorf("", fmt.Errorf("partition column %q is not in the schema", c))
		}
		p.IsPart[i] = true
	}
	// Projection.
	if cfg.ColumnsSet {
		out, err := resolveColumns(sch, cfg.Columns)
		if err != nil {
			return nil, p.Errorf("", err)
		}
		p.Out = out
	} else {
		p.Out = make([]int, p.Width)
		for i := range p.Out {
			p.Out[i] = i
		}
		p.FullOut = true
	}
	p.OutSch = &schema.StructType{Fields: make([]*schema.StructField, len(p.Out))}
	for i, top := range p.Out {
		p.OutSch.Fields[i] = sch.Fields[top]
	}
	// Filter, in negation normal form.
	needed := make([]bool, p.Width)
	for _, top := range p.Out {
		needed[top] = true
	}
	if len(cfg.Filters) > 0 {
		b := bind.NewBinder(sch, partCols, p.Mode)
		var e expr.Expr = expr.And(cfg.Filters...)
		if len(cfg.Filters) == 1 {
			e = cfg.Filters[0]
		}
		pr, err := b.Bind(e, false)
		if err != nil {
			return nil, p.Errorf("", fmt.Errorf("filter %s: %w", e, err))
		}
		if pr.Kind != bind.PredTrue {
			p.Pred = pr
			pr.Columns(func(c *bind.BoundCol) { needed[c.Top] = true })
		}
	}
	// Columns to read from data files and partition columns to fill.
	p.Read = &schema.StructType{}
	p.PartSlot = make([]int, p.Width)
	for i, f := range sch.Fields {
		p.PartSlot[i] = -1
		if !needed[i] {
			continue
		}
		if p.IsPart[i] {
			p.PartSlot[i] = len(p.Parts)
			p.Parts = append(p.Parts, partCol{top: i, name: f.Name, key: f.PhysicalName(p.Mode), Type: f.Type})
			continue
		}
		p.Read.Fields = append(p.Read.Fields, f)
		p.ReadTop = append(p.ReadTop, i)
	}
	p.Direct = p.Pred == nil && len(p.Parts) == 0 && slices.Equal(p.Out, p.ReadTop)
	return p, nil
}

// partitionValue parses the partition value of column c of file a (spec
// "Partition Value Serialization"; under column mapping the key is the
// physical name). Absent keys and "" are null.
func partitionValue(a *txlog.Add, c partCol) (any, error) {
	s, ok := a.PartitionValues[c.key]
	if !ok {
		s = a.PartitionValues[c.name]
	}
	v, err := ParsePartitionValue(c.Type, s)
	if err != nil {
		return nil, fmt.Errorf("partition value %q of column %s (%s): %w", s, c.name, c.Type, err)
	}
	return v, nil
}

// NewScanFile is the scan file of a (path: a.Path decoded) with the values
// of the plan's partition columns parsed.
func (p *Plan) NewScanFile(a *txlog.Add, path string) (*File, error) {
	f := &File{Add: a, Path: path}
	if len(p.Parts) > 0 {
		f.Part = make([]any, len(p.Parts))
		for i, c := range p.Parts {
			v, err := partitionValue(a, c)
			if err != nil {
				return nil, err
			}
			f.Part[i] = v
		}
	}
	return f, nil
}

// SelectFiles prunes and skips the snapshot's files with the filter and
// locates the files left. Files are in the snapshot's order (by path).
func (p *Plan) SelectFiles(ctx context.Context) error {
	// AllFiles: a large snapshot stays packed; only the planned files'
	// adds are kept.
	st := Stats{Version: p.version, FilesTotal: p.src.Snap.NumFiles()}
	stats := p.Pred != nil && p.Pred.HasDataLeaf()
	locs, err := p.src.Locs, p.src.LocsErr
	if err != nil {
		return p.Errorf("", err)
	}
	p.Locs = locs
	for a := range p.src.Snap.AllFiles() {
		path := txlog.DecodePath(a.Path)
		f, err := p.NewScanFile(a, path)
		if err != nil {
			return p.Errorf(path, err)
		}
		if p.Pred != nil {
			partFn := func(c *bind.BoundCol) any { return f.Part[p.PartSlot[c.Top]] }
			if !p.Pred.MayMatch(partFn, nil) {
				st.FilesPruned++
				continue
			}
			if stats {
				fs := bind.ParseFileStats(a.Stats)
				if fs != nil && fs.NumRecords == 0 || !p.Pred.MayMatch(partFn, fs.Bounds) {
					st.FilesSkipped++
					continue
				}
			}
		}
		store, key, err := locs.Locate(ctx, path)
		if err != nil {
			return p.Errorf(path, err)
		}
		f.Store, f.Key = store, key
		p.Files = append(p.Files, f)
		st.BytesPlanned += a.Size
	}
	st.FilesPlanned = len(p.Files)
	if p.Cfg.Stats != nil {
		*p.Cfg.Stats = st
	}
	return nil
}

// fileCounts are the counters of one file read.
type fileCounts struct {
	done    bool // read to the end
	rows    int64
	deleted int64
}

// ReadFile reads one data file and calls emit with every output row that
// passes the filter and its 0-based index in the file (as deletion vectors
// count rows), until emit returns false. It returns the counts and an error
// naming the file.
func (p *Plan) ReadFile(ctx context.Context, f *File, emit func(int64, value.Row) bool) (fileCounts, error) {
	var c fileCounts
	opts := []parquetio.ReadOption{parquetio.WithColumnMapping(p.Mode)}
	if dv := f.Add.DeletionVector; dv != nil {
		bm := f.Dv
		if bm == nil {
			var err error
			if bm, err = p.Locs.LoadDV(ctx, dv); err != nil {
				return c, p.Errorf(f.Path, fmt.Errorf("deletion vector: %w", err))
			}
		}
		if !bm.IsEmpty() {
			opts = append(opts, parquetio.WithSkipRows(func(i int64) bool {
				if i >= 0 && bm.Contains(uint64(i)) {
					c.deleted++
					return true
				}
				return false
			}))
		}
	}
	pf, err := parquetio.Open(ctx, f.Store, f.Key, p.Read, opts...)
	if err != nil {
		return c, p.Errorf(f.Path, err)
	}
	var scratch value.Row
	if !p.Direct && !p.FullOut {
		scratch = make(value.Row, p.Width)
	}
	for ir, err := range pf.IndexedRows(ctx) {
		if err != nil {
			return c, p.Errorf(f.Path, err)
		}
		row := ir.Row
		c.rows++
		if p.Direct {
			if !emit(ir.Index, row) {
				return c, nil
			}
			continue
		}
		full := scratch
		if p.FullOut {
			full = make(value.Row, p.Width)
		} else {
			clear(full)
		}
		for i, top := range p.ReadTop {
			full[top] = row[i]
		}
		for i, pc := range p.Parts {
			full[pc.top] = f.Part[i]
		}
		if p.Pred != nil && !p.Pred.MatchRow(full) {
			continue
		}
		var out value.Row
		if p.FullOut {
			out = full
			for _, pc := range p.Parts {
				out[pc.top] = clonePartValue(out[pc.top])
			}
		} else {
			out = make(value.Row, len(p.Out))
			for i, top := range p.Out {
				if p.IsPart[top] {
					out[i] = clonePartValue(full[top])
				} else {
					out[i] = full[top]
				}
			}
		}
		if !emit(ir.Index, out) {
			return c, nil
		}
	}
	c.done = true
	return c, nil
}

// clonePartValue copies the mutable parts of a partition value, so that no
// two yielded rows share memory.
func clonePartValue(v any) any {
	switch x := v.(type) {
	case []byte:
		return append([]byte{}, x...)
	case value.Decimal:
		if x.Unscaled != nil {
			x.Unscaled = new(big.Int).Set(x.Unscaled)
		}
		return x
	}
	return v
}

// Rows yields the plan's rows: files in order, rows in file order. They
// come from the columnar reader's record batches (arrowBatches, ScanArrow's
// reader), turned into rows batch by batch (batchRows); only a plan whose
// output has no Arrow mapping (a variant column) reads its files one after
// another through the row reader.
func (p *Plan) Rows(ctx context.Context, yield func(value.Row, error) bool) {
	st := p.Cfg.Stats
	if st == nil {
		st = &Stats{}
		p.Cfg.Stats = st
	}
	if len(p.Files) == 0 {
		return
	}
	outSch, err := arrowio.Schema(p.OutSch)
	if err != nil {
		p.rowsSequential(ctx, yield)
		return
	}
	var returned int64
	var failed error
	var box rowBoxer
	stopped := false
	err = p.arrowBatches(ctx, outSch, func(rec arrow.RecordBatch) bool {
		defer rec.Release()
		rows, err := box.batchRows(rec)
		if err != nil {
			failed = p.Errorf("", err)
			return false
		}
		for _, r := range rows {
			returned++
			if !yield(r, nil) {
				stopped = true
				return false
			}
		}
		return true
	})
	// arrowBatches counts the rows of the batches it sent; the caller may
	// have stopped within one.
	st.RowsReturned = returned
	if stopped {
		return
	}
	if err == nil {
		err = failed
	}
	if err != nil {
		yield(nil, err)
	}
}

// rowsSequential is rows through the row reader, one file after another.
func (p *Plan) rowsSequential(ctx context.Context, yield func(value.Row, error) bool) {
	st := p.Cfg.Stats
	limit := p.Cfg.Limit
	for _, f := range p.Files {
		stopped := false
		c, err := p.ReadFile(ctx, f, func(_ int64, r value.Row) bool {
			st.RowsReturned++
			if !yield(r, nil) || limit > 0 && st.RowsReturned >= limit {
				stopped = true
				return false
			}
			return true
		})
		if c.done {
			st.FilesRead++
			st.RowsRead += c.rows
			st.RowsDeleted += c.deleted
		}
		if err != nil {
			yield(nil, err)
			return
		}
		if stopped {
			return
		}
	}
}

// ParsePartitionValue is table.ParsePartitionValue (documented there).
func ParsePartitionValue(t schema.Type, s string) (any, error) {
	if s == "" {
		return nil, nil
	}
	c := value.CodecOf(t)
	if c == nil {
		return nil, &value.Error{Type: t, Value: s, Reason: value.ErrUnsupported,
			Detail: fmt.Sprintf("partition column type %s is not supported", t)}
	}
	return c.ParsePartition(s)
}

// PartitionPredicate returns the plan's filter as a predicate over
// serialized partition values, true where a file of those partitions may
// hold matching rows (data columns assumed to match): what the operation
// read, for txlog's conflict detection. nil (the whole table) without a
// filter. Values that do not parse count as matching.
func (p *Plan) PartitionPredicate() txlog.PartitionPredicate {
	if p.Pred == nil {
		return nil
	}
	pred, parts, slot := p.Pred, p.Parts, p.PartSlot
	return func(pv map[string]string) bool {
		vals := make([]any, len(parts))
		for i, c := range parts {
			s, ok := pv[c.key]
			if !ok {
				s = pv[c.name]
			}
			v, err := ParsePartitionValue(c.Type, s)
			if err != nil {
				return true
			}
			vals[i] = v
		}
		return pred.MayMatch(func(c *bind.BoundCol) any { return vals[slot[c.Top]] }, nil)
	}
}
