package table

import (
	"context"
	"iter"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/parquetio"
)

// arrowBatchRows is the most rows one record batch of ScanArrow holds.
const arrowBatchRows = 64 * 1024

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
// Batches hold at most 65,536 rows; WithLimit(n) yields exactly
// min(n, matching rows) rows in all.
//
// Planning errors (an invalid filter or projection, a bad partition value,
// a path outside the table: Scan's planning errors) are returned at once,
// with a nil reader. Errors while reading end the stream: Next returns
// false and Err returns the error, naming the table version and the data
// file as Scan's do. The caller must Release the reader; releasing it
// before the end stops every file reader. Each batch is valid until the
// next call to Next (Retain it to keep it longer). The reader is not safe
// for concurrent use, and ctx bounds the whole read.
//
// A RecordReader rather than an iter.Seq2 of batches: it is what ADBC
// statements, Flight and IPC writers (ipc.NewWriter, flight's record
// writers) and the C data interface (cdata.ExportRecordReader, for DuckDB,
// Polars and pyarrow) take, and it carries the schema even when no row
// matches.
func ScanArrow(ctx context.Context, t *Table, opts ...ScanOption) (array.RecordReader, error) {
	p, err := t.plan(ctx, opts)
	if err != nil {
		return nil, err
	}
	rb, err := arrowio.NewRecordBuilder(nil, p.outSch)
	if err != nil {
		return nil, p.errorf("", err)
	}
	r := &scanReader{rb: rb, p: p}
	r.refs.Store(1)
	r.next, r.stop = iter.Pull2(iter.Seq2[parquetio.Row, error](func(yield func(parquetio.Row, error) bool) {
		p.rows(ctx, yield)
	}))
	return r, nil
}

// scanReader is ScanArrow's RecordReader: it pulls rows from the plan and
// appends them to an arrowio.RecordBuilder.
type scanReader struct {
	refs atomic.Int64
	p    *scanPlan
	rb   *arrowio.RecordBuilder
	next func() (parquetio.Row, error, bool)
	stop func()
	cur  arrow.RecordBatch
	err  error
	done bool
}

func (r *scanReader) Retain() { r.refs.Add(1) }

func (r *scanReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.stop()
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	r.rb.Release()
}

func (r *scanReader) Schema() *arrow.Schema { return r.rb.Schema() }

func (r *scanReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done {
		return false
	}
	for r.rb.Len() < arrowBatchRows {
		row, err, ok := r.next()
		if !ok {
			r.done = true
			break
		}
		if err == nil {
			err = r.rb.Append(row)
			if err != nil {
				err = r.p.errorf("", err)
			}
		}
		if err != nil {
			r.err, r.done = err, true
			r.stop()
			return false
		}
	}
	if r.rb.Len() == 0 {
		return false
	}
	r.cur = r.rb.NewRecordBatch()
	return true
}

func (r *scanReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record returns the current batch; it is RecordBatch under its older name.
//
// Deprecated: use RecordBatch.
func (r *scanReader) Record() arrow.RecordBatch { return r.cur }

func (r *scanReader) Err() error { return r.err }
