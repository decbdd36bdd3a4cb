package table

import (
	"context"
	"fmt"
	"iter"
	"math/big"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/arrowio"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// DefaultScanConcurrency is how many data files a scan reads at once unless
// WithScanConcurrency says otherwise.
const DefaultScanConcurrency = 4

// ScanOption configures Scan, ScanAs, Files and ScanSchema.
type ScanOption func(*scanConfig)

type scanConfig struct {
	filters     []Expr
	columns     []string
	columnsSet  bool
	limit       int64
	concurrency int
	stats       *ScanStats
	// arrow tunes ScanArrow's columnar path (tests set it; zero values
	// are the defaults).
	arrow arrowTuning
}

func newScanConfig(opts []ScanOption) scanConfig {
	c := scanConfig{concurrency: DefaultScanConcurrency}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithFilter makes the scan return only the rows for which e is true (see
// Expr), and skip the data files that cannot hold such rows: by partition
// values, then by the files' min/max/null-count statistics. Several
// WithFilter options combine with AND.
func WithFilter(e Expr) ScanOption {
	return func(c *scanConfig) { c.filters = append(c.filters, e) }
}

// WithColumns projects the scan onto these columns (logical names, matched
// as in Col): each yielded row holds their values in this order. Without
// it, rows hold every column in schema order. WithColumns() with no names
// yields empty rows, one per matching row, and reads no column data (a
// count). Unknown or repeated names make the scan fail with
// ErrInvalidArgument.
func WithColumns(names ...string) ScanOption {
	return func(c *scanConfig) {
		c.columns = append([]string{}, names...)
		c.columnsSet = true
	}
}

// WithLimit stops the scan after n rows; n <= 0 means no limit (the
// default).
func WithLimit(n int64) ScanOption { return func(c *scanConfig) { c.limit = n } }

// WithScanConcurrency sets how many data files are read at once (default
// DefaultScanConcurrency; 1 reads them one after another, each on one
// goroutine). Rows are yielded in the same order whatever the concurrency.
// Memory stays bounded: the files being read hold at most a few batches
// each, and at most 160 MiB of Parquet at once.
func WithScanConcurrency(n int) ScanOption {
	return func(c *scanConfig) { c.concurrency = max(n, 1) }
}

// WithScanStats makes the scan record what it did in s (file and row
// counts). s is written by the goroutine that iterates the scan, while it
// iterates: read it after the loop ends. Files fills the planning fields.
func WithScanStats(s *ScanStats) ScanOption { return func(c *scanConfig) { c.stats = s } }

// ScanStats reports the work of one scan: how many files the filter pruned
// or skipped and how much was read.
type ScanStats struct {
	// Version is the table version scanned.
	Version int64
	// FilesTotal is the number of live files in the snapshot (after
	// reconciliation).
	FilesTotal int
	// FilesPruned is the number of files skipped by their partition values.
	FilesPruned int
	// FilesSkipped is the number of files skipped by their statistics
	// (after partition pruning).
	FilesSkipped int
	// FilesPlanned is the number of files left to read:
	// FilesTotal - FilesPruned - FilesSkipped.
	FilesPlanned int
	// FilesRead is the number of data files read to the end (fewer than
	// FilesPlanned when the loop stops early or WithLimit ends it).
	FilesRead int
	// BytesPlanned is the sum of add.size of the planned files, in bytes.
	BytesPlanned int64
	// RowsRead is the number of rows decoded from the files read to the
	// end, after deletion vectors and before the row filter.
	RowsRead int64
	// RowsDeleted is the number of rows of those files dropped by deletion
	// vectors.
	RowsDeleted int64
	// RowsReturned is the number of rows yielded.
	RowsReturned int64
	// RowGroupsSkipped is the number of Parquet row groups of the files
	// read that the filter skipped by their column statistics, without
	// decoding them (the columnar path only; their rows still count in
	// RowsRead and RowsDeleted).
	RowGroupsSkipped int
	// FilesColumnar is the number of the files read to the end that were
	// decoded column by column (the columnar path Scan, ScanAs and
	// ScanArrow share); the others went through the row reader.
	FilesColumnar int
	// RowsLateSkipped is the number of rows of the decoded row groups
	// whose projected columns outside the filter were never decoded,
	// because the filter, evaluated on its own columns first, rejected
	// them (the columnar path only; page indexes let whole pages
	// of the other columns go unread).
	RowsLateSkipped int64
	// PagesSkipped is the number of pages of the filter's columns, in the
	// row groups the statistics kept, that the filter ruled out by the
	// Parquet page index (column index min/max and null pages), and
	// RowsPageSkipped the number of rows it ruled out with them: no column
	// is decoded for those rows (the columnar path only; the rows
	// still count in RowsRead and RowsDeleted).
	PagesSkipped    int
	RowsPageSkipped int64
}

// partCol is a partition column a scan needs (for output or the filter).
type partCol struct {
	top  int    // index in the table schema
	name string // logical name
	key  string // partitionValues key: the physical name
	typ  schema.Type
}

// scanFile is one data file to read.
type scanFile struct {
	add   *txlog.Add
	path  string // add.path decoded once
	store objectstore.Store
	key   string
	part  []any // parsed values of plan.parts (nil for null)
	// dv, when set, is the file's deletion vector already loaded (DML
	// plans load it first); readFile then does not load it again.
	dv *roaring64.Bitmap
}

// scanPlan is a scan resolved against one snapshot: which files, which
// columns, which filter.
type scanPlan struct {
	t        *Table
	cfg      scanConfig
	version  int64
	mode     string
	width    int // number of top-level columns
	pred     *pred
	out      []int // output columns (top-level indexes) in output order
	outSch   *schema.StructType
	read     *schema.StructType // data columns to read, in schema order
	readTop  []int              // read.Fields[i] is top-level column readTop[i]
	parts    []partCol
	isPart   []bool // by top-level index
	partSlot []int  // by top-level index: index into parts, or -1
	fullOut  bool   // out is every column in schema order
	direct   bool   // parquetio rows are the output rows as they are
	files    []*scanFile
	locs     *locator // set by selectFiles
	// fileErrors: errors name the data file only, the caller names the
	// table and the version (a change feed reads files of older versions).
	fileErrors bool
}

// errorf wraps err with the table, the version and, if set, the file.
func (p *scanPlan) errorf(file string, err error) error {
	if p.fileErrors && file != "" {
		return fmt.Errorf("data file %s: %w", file, err)
	}
	if file == "" {
		return fmt.Errorf("table: scan %s version %d: %w", p.t.URI(), p.version, err)
	}
	return fmt.Errorf("table: scan %s version %d: data file %s: %w", p.t.URI(), p.version, file, err)
}

// resolveColumns maps projection names to top-level indexes.
func resolveColumns(sch *schema.StructType, names []string) ([]int, error) {
	out := make([]int, 0, len(names))
	seen := map[int]bool{}
	for _, n := range names {
		i, err := lookupField(sch, n)
		if err != nil {
			return nil, err
		}
		if seen[i] {
			return nil, invalidf("column %q is projected twice", sch.Fields[i].Name)
		}
		seen[i] = true
		out = append(out, i)
	}
	return out, nil
}

// newPlan resolves the columns and the filter, but selects no files yet.
func (t *Table) newPlan(cfg scanConfig) (*scanPlan, error) {
	snap := t.snap
	sch := snap.Schema()
	if sch == nil {
		return nil, fmt.Errorf("table: scan %s version %d: the snapshot has no schema", t.URI(), snap.Version())
	}
	p := &scanPlan{t: t, cfg: cfg, version: snap.Version(), width: len(sch.Fields),
		mode: snap.Metadata().ColumnMappingMode()}
	if p.mode == "" {
		p.mode = "none"
	}
	partCols := snap.PartitionColumns()
	p.isPart = make([]bool, p.width)
	for _, c := range partCols {
		i := sch.FieldIndex(c)
		if i < 0 {
			return nil, p.errorf("", fmt.Errorf("partition column %q is not in the schema", c))
		}
		p.isPart[i] = true
	}
	// Projection.
	if cfg.columnsSet {
		out, err := resolveColumns(sch, cfg.columns)
		if err != nil {
			return nil, p.errorf("", err)
		}
		p.out = out
	} else {
		p.out = make([]int, p.width)
		for i := range p.out {
			p.out[i] = i
		}
		p.fullOut = true
	}
	p.outSch = &schema.StructType{Fields: make([]*schema.StructField, len(p.out))}
	for i, top := range p.out {
		p.outSch.Fields[i] = sch.Fields[top]
	}
	// Filter, in negation normal form.
	needed := make([]bool, p.width)
	for _, top := range p.out {
		needed[top] = true
	}
	if len(cfg.filters) > 0 {
		b := newBinder(sch, partCols, p.mode)
		var e Expr = And(cfg.filters...)
		if len(cfg.filters) == 1 {
			e = cfg.filters[0]
		}
		pr, err := b.bind(e, false)
		if err != nil {
			return nil, p.errorf("", fmt.Errorf("filter %s: %w", e, err))
		}
		if pr.kind != predTrue {
			p.pred = pr
			pr.columns(func(c *boundCol) { needed[c.top] = true })
		}
	}
	// Columns to read from data files and partition columns to fill.
	p.read = &schema.StructType{}
	p.partSlot = make([]int, p.width)
	for i, f := range sch.Fields {
		p.partSlot[i] = -1
		if !needed[i] {
			continue
		}
		if p.isPart[i] {
			p.partSlot[i] = len(p.parts)
			p.parts = append(p.parts, partCol{top: i, name: f.Name, key: f.PhysicalName(p.mode), typ: f.Type})
			continue
		}
		p.read.Fields = append(p.read.Fields, f)
		p.readTop = append(p.readTop, i)
	}
	p.direct = p.pred == nil && len(p.parts) == 0 && slices.Equal(p.out, p.readTop)
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
	v, err := ParsePartitionValue(c.typ, s)
	if err != nil {
		return nil, fmt.Errorf("partition value %q of column %s (%s): %w", s, c.name, c.typ, err)
	}
	return v, nil
}

// newScanFile is the scan file of a (path: a.Path decoded) with the values
// of the plan's partition columns parsed.
func (p *scanPlan) newScanFile(a *txlog.Add, path string) (*scanFile, error) {
	f := &scanFile{add: a, path: path}
	if len(p.parts) > 0 {
		f.part = make([]any, len(p.parts))
		for i, c := range p.parts {
			v, err := partitionValue(a, c)
			if err != nil {
				return nil, err
			}
			f.part[i] = v
		}
	}
	return f, nil
}

// selectFiles prunes and skips the snapshot's files with the filter and
// locates the files left. Files are in the snapshot's order (by path).
func (p *scanPlan) selectFiles(ctx context.Context) error {
	// AllFiles: a large snapshot stays packed; only the planned files'
	// adds are kept.
	st := ScanStats{Version: p.version, FilesTotal: p.t.snap.NumFiles()}
	stats := p.pred != nil && p.pred.hasDataLeaf()
	locs, err := newLocator(p.t)
	if err != nil {
		return p.errorf("", err)
	}
	p.locs = locs
	for a := range p.t.snap.AllFiles() {
		path := txlog.DecodePath(a.Path)
		f, err := p.newScanFile(a, path)
		if err != nil {
			return p.errorf(path, err)
		}
		if p.pred != nil {
			partFn := func(c *boundCol) any { return f.part[p.partSlot[c.top]] }
			if !p.pred.mayMatch(partFn, nil) {
				st.FilesPruned++
				continue
			}
			if stats {
				fs := parseFileStats(a.Stats)
				if fs != nil && fs.numRecords == 0 || !p.pred.mayMatch(partFn, fs.bounds) {
					st.FilesSkipped++
					continue
				}
			}
		}
		store, key, err := locs.locate(ctx, path)
		if err != nil {
			return p.errorf(path, err)
		}
		f.store, f.key = store, key
		p.files = append(p.files, f)
		st.BytesPlanned += a.Size
	}
	st.FilesPlanned = len(p.files)
	if p.cfg.stats != nil {
		*p.cfg.stats = st
	}
	return nil
}

// fileCounts are the counters of one file read.
type fileCounts struct {
	done    bool // read to the end
	rows    int64
	deleted int64
}

// readFile reads one data file and calls emit with every output row that
// passes the filter and its 0-based index in the file (as deletion vectors
// count rows), until emit returns false. It returns the counts and an error
// naming the file.
func (p *scanPlan) readFile(ctx context.Context, f *scanFile, emit func(int64, value.Row) bool) (fileCounts, error) {
	var c fileCounts
	opts := []parquetio.ReadOption{parquetio.WithColumnMapping(p.mode)}
	if dv := f.add.DeletionVector; dv != nil {
		bm := f.dv
		if bm == nil {
			var err error
			if bm, err = p.locs.loadDV(ctx, dv); err != nil {
				return c, p.errorf(f.path, fmt.Errorf("deletion vector: %w", err))
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
	pf, err := parquetio.Open(ctx, f.store, f.key, p.read, opts...)
	if err != nil {
		return c, p.errorf(f.path, err)
	}
	var scratch value.Row
	if !p.direct && !p.fullOut {
		scratch = make(value.Row, p.width)
	}
	for ir, err := range pf.IndexedRows(ctx) {
		if err != nil {
			return c, p.errorf(f.path, err)
		}
		row := ir.Row
		c.rows++
		if p.direct {
			if !emit(ir.Index, row) {
				return c, nil
			}
			continue
		}
		full := scratch
		if p.fullOut {
			full = make(value.Row, p.width)
		} else {
			clear(full)
		}
		for i, top := range p.readTop {
			full[top] = row[i]
		}
		for i, pc := range p.parts {
			full[pc.top] = f.part[i]
		}
		if p.pred != nil && !p.pred.matchRow(full) {
			continue
		}
		var out value.Row
		if p.fullOut {
			out = full
			for _, pc := range p.parts {
				out[pc.top] = clonePartValue(out[pc.top])
			}
		} else {
			out = make(value.Row, len(p.out))
			for i, top := range p.out {
				if p.isPart[top] {
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

// rows yields the plan's rows: files in order, rows in file order. They
// come from the columnar reader's record batches (arrowBatches, ScanArrow's
// reader), turned into rows batch by batch (batchRows); only a plan whose
// output has no Arrow mapping (a variant column) reads its files one after
// another through the row reader.
func (p *scanPlan) rows(ctx context.Context, yield func(value.Row, error) bool) {
	st := p.cfg.stats
	if st == nil {
		st = &ScanStats{}
		p.cfg.stats = st
	}
	if len(p.files) == 0 {
		return
	}
	outSch, err := arrowio.Schema(p.outSch)
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
			failed = p.errorf("", err)
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
func (p *scanPlan) rowsSequential(ctx context.Context, yield func(value.Row, error) bool) {
	st := p.cfg.stats
	limit := p.cfg.limit
	for _, f := range p.files {
		stopped := false
		c, err := p.readFile(ctx, f, func(_ int64, r value.Row) bool {
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

// plan builds the scan plan and selects its files.
func (t *Table) plan(ctx context.Context, opts []ScanOption) (*scanPlan, error) {
	p, err := t.newPlan(newScanConfig(opts))
	if err != nil {
		return nil, err
	}
	if err := p.selectFiles(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Scan returns the table's rows at this version: the live files after
// reconciliation, pruned by partition values and skipped by statistics when
// WithFilter is given, read in path order with deletion vectors applied,
// and filtered row by row, so the scan yields exactly the matching rows.
//
// Rows hold the table's columns in schema order, or the WithColumns
// projection in its order, in the value model (package value); each row is newly
// allocated and belongs to the caller. Partition columns take their values
// from add.partitionValues (never from directory names). Under column
// mapping (modes name and id), data columns are found by physical name or
// field id. Up to WithScanConcurrency files (default 4) are read at once;
// rows are yielded in file order regardless. Files are read by ScanArrow's
// reader (column by column where it can) and its record batches turned
// into rows.
//
// Every data file and deletion vector file must lie under the table root
// (relative paths, and absolute URIs with the root's scheme and authority
// whose path is under the root once "." and ".." are cleaned), or under a
// root allowed with WithAllowedRoots: a path elsewhere fails the scan with
// ErrPathOutsideTable before any store is opened for it (an s3:// path in
// a local table's log does not reach S3). Symbolic links inside a local
// table root are followed, wherever they point; Verify reports those that
// resolve outside the root.
//
// Errors are yielded once, as (nil, err), and end the iteration: an invalid
// filter or projection (ErrInvalidArgument), a path outside the table
// (ErrPathOutsideTable), a bad partition value, a
// missing or corrupt data file or deletion vector (wrapping
// objectstore.ErrNotExist, parquetio.ErrCorrupt, txlog.ErrCorruptLog, ...),
// or the context's error. Each names the table version and the data file.
// Breaking out of the loop stops every reader.
func (t *Table) Scan(ctx context.Context, opts ...ScanOption) iter.Seq2[Row, error] {
	if t == nil {
		return func(yield func(value.Row, error) bool) { yield(nil, nilTableError("scan")) }
	}
	return func(yield func(value.Row, error) bool) {
		p, err := t.plan(ctx, opts)
		if err != nil {
			yield(nil, err)
			return
		}
		p.rows(ctx, yield)
	}
}

// Files returns the add actions of the files a scan with these options
// would read, in the order it reads them: the live files of this version,
// minus those pruned by partition values or skipped by statistics
// (WithFilter). WithColumns, WithLimit and WithScanConcurrency do not
// change the result; WithScanStats receives the planning counts. Errors are
// those of Scan's planning (invalid filter, bad partition value, a path
// outside the table root: ErrPathOutsideTable).
func (t *Table) Files(ctx context.Context, opts ...ScanOption) ([]*Add, error) {
	if t == nil {
		return nil, nilTableError("files")
	}
	p, err := t.plan(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]*txlog.Add, len(p.files))
	for i, f := range p.files {
		out[i] = f.add
	}
	return out, nil
}

// ScanSchema returns the schema of the rows a Scan with these options
// yields: the table schema, or its WithColumns projection in that order.
// It returns ErrInvalidArgument for an unknown or repeated column, and for
// an invalid filter.
func (t *Table) ScanSchema(opts ...ScanOption) (*schema.StructType, error) {
	if t == nil {
		return nil, nilTableError("scan schema")
	}
	p, err := t.newPlan(newScanConfig(opts))
	if err != nil {
		return nil, err
	}
	return p.outSch, nil
}

// ScanAs is Scan with every row converted into a value of the Go struct
// type T (or *T, then a new struct per row), mapped as Append maps it (see
// SchemaOf): each exported field takes the column of its `delta` tag name
// (exact, then case-insensitive match), and a null read into a non-pointer
// field leaves its zero value. Without WithColumns, the scan reads only the
// columns T has fields for; with it, T binds to that projection.
//
// Errors are yielded once, as (zero T, err), and end the iteration: Scan's
// errors, and ErrSchemaMismatch (or ErrInvalidArgument for an unsupported
// Go type) when a field of T has no column or cannot hold the column's
// type, naming the field.
func ScanAs[T any](ctx context.Context, t *Table, opts ...ScanOption) iter.Seq2[T, error] {
	if t == nil {
		return func(yield func(T, error) bool) {
			var zero T
			yield(zero, nilTableError("scan"))
		}
	}
	return func(yield func(T, error) bool) {
		var zero T
		if !newScanConfig(opts).columnsSet {
			sch, err := SchemaOf[T]()
			if err != nil {
				yield(zero, err)
				return
			}
			tsch := t.Schema()
			var cols []string
			seen := map[int]bool{}
			for _, f := range sch.Fields {
				i := fieldByName(tsch, f.Name)
				if i < 0 {
					yield(zero, fmt.Errorf("table: scan %s version %d: %w: %T has a field for column %q, which the table does not have",
						t.URI(), t.Version(), ErrSchemaMismatch, zero, f.Name))
					return
				}
				if !seen[i] {
					seen[i] = true
					cols = append(cols, tsch.Fields[i].Name)
				}
			}
			opts = append(slices.Clone(opts), WithColumns(cols...))
		}
		p, err := t.plan(ctx, opts)
		if err != nil {
			yield(zero, err)
			return
		}
		dec, err := rowDecoder[T](p.outSch)
		if err != nil {
			yield(zero, p.errorf("", err))
			return
		}
		p.rows(ctx, func(r value.Row, err error) bool {
			if err != nil {
				return yield(zero, err)
			}
			v, err := dec(r)
			if err != nil {
				yield(zero, p.errorf("", err))
				return false
			}
			return yield(v, nil)
		})
	}
}
