package table

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// DefaultScanConcurrency is how many data files a scan reads at once unless
// WithScanConcurrency says otherwise.
const DefaultScanConcurrency = 4

// ScanOption configures Scan, ScanAs, Files and ScanSchema.
type ScanOption func(*scan.Config)

func newScanConfig(opts []ScanOption) scan.Config {
	c := scan.Config{Concurrency: DefaultScanConcurrency}
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
	return func(c *scan.Config) { c.Filters = append(c.Filters, e) }
}

// WithColumns projects the scan onto these columns (logical names, matched
// as in Col): each yielded row holds their values in this order. Without
// it, rows hold every column in schema order. WithColumns() with no names
// yields empty rows, one per matching row, and reads no column data (a
// count). Unknown or repeated names make the scan fail with
// ErrInvalidArgument.
func WithColumns(names ...string) ScanOption {
	return func(c *scan.Config) {
		c.Columns = append([]string{}, names...)
		c.ColumnsSet = true
	}
}

// WithLimit stops the scan after n rows; n <= 0 means no limit (the
// default).
func WithLimit(n int64) ScanOption { return func(c *scan.Config) { c.Limit = n } }

// WithScanConcurrency sets how many data files are read at once (default
// DefaultScanConcurrency; 1 reads them one after another, each on one
// goroutine). Rows are yielded in the same order whatever the concurrency.
// Memory stays bounded: the files being read hold at most a few batches
// each, and at most 160 MiB of Parquet at once.
func WithScanConcurrency(n int) ScanOption {
	return func(c *scan.Config) { c.Concurrency = max(n, 1) }
}

// WithScanStats makes the scan record what it did in s (file and row
// counts). s is written by the goroutine that iterates the scan, while it
// iterates: read it after the loop ends. Files fills the planning fields.
func WithScanStats(s *ScanStats) ScanOption {
	return func(c *scan.Config) { c.Stats = (*scan.Stats)(s) }
}

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

// scanSource returns what a scan of t reads.
func (t *Table) scanSource() scan.Source {
	l, err := newLocator(t)
	return scan.Source{Uri: t.URI(), Snap: t.snap, Locs: l, LocsErr: err}
}

// plan builds the scan plan and selects its files.
func (t *Table) plan(ctx context.Context, opts []ScanOption) (*scan.Plan, error) {
	p, err := scan.NewPlan(t.scanSource(), newScanConfig(opts))
	if err != nil {
		return nil, err
	}
	if err := p.SelectFiles(ctx); err != nil {
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
		p.Rows(ctx, yield)
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
	out := make([]*txlog.Add, len(p.Files))
	for i, f := range p.Files {
		out[i] = f.Add
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
	p, err := scan.NewPlan(t.scanSource(), newScanConfig(opts))

	if err != nil {
		return nil, err
	}
	return p.OutSch, nil
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
		if !newScanConfig(opts).ColumnsSet {
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
		dec, err := rowDecoder[T](p.OutSch)
		if err != nil {
			yield(zero, p.Errorf("", err))
			return
		}
		p.Rows(ctx, func(r value.Row, err error) bool {
			if err != nil {
				return yield(zero, err)
			}
			v, err := dec(r)
			if err != nil {
				yield(zero, p.Errorf("", err))
				return false
			}
			return yield(v, nil)
		})
	}
}
