package table

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/table/internal/scan"
)

// ScanArrow scans t as Scan does and returns the rows as Apache Arrow record
// batches: the same rows in the same order, with every ScanOption honoured
// (WithColumns, WithFilter with partition pruning and statistics skipping,
// WithLimit, WithScanConcurrency, WithScanStats; open t at a version or a
// timestamp to time travel), partition columns materialised with their
// Delta types, deletion vectors applied and column mapping resolved.
//
// The reader's schema is arrowio.Schema of ScanSchema(opts...): Delta
// logical names and nullability, types as documented in package arrowio
// (timestamp → timestamp[us, tz=UTC], timestamp_ntz → timestamp[us],
// decimal(p,s) → decimal128(p,s), date → date32, array → list, map → map).
// Batches hold at most 65,536 rows (never rows of two files on the
// columnar path); WithLimit(n) yields exactly
// min(n, matching rows) rows in all.
//
// Planning errors (an invalid filter or projection, a bad partition value,
// a path outside the table: Scan's planning errors; a nil t) are returned
// at once, with an empty reader: its Next is false, its Err the error and
// its Release does nothing, so a Release deferred before the error check
// is safe. Errors while reading end the stream: Next returns
// false and Err returns the error, naming the table version and the data
// file as Scan's do. The caller must Release the reader; releasing it
// before the end stops every file reader. Each batch is valid until the
// next call to Next (Retain it to keep it longer). The reader is not safe
// for concurrent use, and ctx bounds the whole read; WithScanStats'
// counts are complete once Next has returned false.
//
// When every column read from the data files (the projection and the
// filter's columns) is a top-level primitive or decimal, the files are
// decoded column by column into Arrow arrays (arrow-go's pqarrow; see
// arrowscan.go), deletion vectors and the row filter applied as a
// selection mask, and row groups whose Parquet statistics rule the filter
// out (integer, date and string columns) are not decoded
// (ScanStats.RowGroupsSkipped). Files are decoded WithScanConcurrency at
// a time and, when that leaves cores idle (a table of one large file), a
// file is decoded by several goroutines in stripes of whole batches
// (arrowstripe.go); the batches and their order are the same either way. Otherwise, and for the files that reader
// does not map exactly (INT96 timestamps, case-insensitive column matches,
// ...), rows come from Scan's row reader; ScanStats.FilesColumnar tells
// which. Both give the same values.
//
// A RecordReader rather than an iter.Seq2 of batches: it is what ADBC
// statements, Flight and IPC writers (ipc.NewWriter, flight's record
// writers) and the C data interface (cdata.ExportRecordReader, for DuckDB,
// Polars and pyarrow) take, and it carries the schema even when no row
// matches.
func (t *Table) ScanArrow(ctx context.Context, opts ...ScanOption) (array.RecordReader, error) {
	if t == nil {
		err := nilTableError("scan")
		return failedReader{err}, err
	}
	p, err := t.plan(ctx, opts)
	if err != nil {
		return failedReader{err}, err
	}
	rb, err := arrowio.NewRecordBuilder(nil, p.OutSch)
	if err != nil {
		err = p.Errorf("", err)
		return failedReader{err}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &scan.Reader{Sch: rb.Schema(), Cancel: cancel, Batches: make(chan scan.BatchOrErr, 1)}
	r.Refs.Store(1)
	go r.Produce(ctx, p, rb)
	return r, nil
}
