package table

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
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
	rb, err := arrowio.NewRecordBuilder(nil, p.outSch)
	if err != nil {
		err = p.errorf("", err)
		return failedReader{err}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &scanReader{sch: rb.Schema(), cancel: cancel, batches: make(chan batchOrErr, 1)}
	r.refs.Store(1)
	go r.produce(ctx, p, rb)
	return r, nil
}

// batchOrErr is one message from the producer: a batch, or the error that
// ended the scan.
type batchOrErr struct {
	rec arrow.RecordBatch
	err error
}

// scanReader is ScanArrow's RecordReader. A producer goroutine runs the
// plan's row scan, appends the rows to an arrowio.RecordBuilder and sends
// each full batch on a channel one deep, so decoding and building overlap
// with the consumer while memory stays at about two batches.
type scanReader struct {
	refs    atomic.Int64
	sch     *arrow.Schema
	cancel  context.CancelFunc
	batches chan batchOrErr
	cur     arrow.RecordBatch
	err     error
	done    bool
}

// produce runs the scan and closes r.batches when it ends; closing gives
// the consumer a happens-before edge on the ScanStats the scan wrote.
func (r *scanReader) produce(ctx context.Context, p *scanPlan, rb *arrowio.RecordBuilder) {
	defer close(r.batches)
	defer rb.Release()
	// Sends block: Release drains the channel after cancelling, so the
	// producer never outlives the reader, and an error (the caller's
	// context included) always reaches Next.
	send := func(m batchOrErr) bool {
		r.batches <- m
		return true
	}
	if err := p.arrowBatches(ctx, r.sch, func(rec arrow.RecordBatch) bool { return send(batchOrErr{rec: rec}) }); err != nil {
		send(batchOrErr{err: err})
	}
}

func (r *scanReader) Retain() { r.refs.Add(1) }

func (r *scanReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.cancel()
	for m := range r.batches { // wait for the producer
		if m.rec != nil {
			m.rec.Release()
		}
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *scanReader) Schema() *arrow.Schema { return r.sch }

func (r *scanReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done {
		return false
	}
	m, ok := <-r.batches
	switch {
	case !ok:
		r.done = true
		return false
	case m.err != nil:
		r.err, r.done = m.err, true
		return false
	}
	r.cur = m.rec
	return true
}

func (r *scanReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record returns the current batch; it is RecordBatch under its older name.
//
// Deprecated: use RecordBatch.
func (r *scanReader) Record() arrow.RecordBatch { return r.cur }

func (r *scanReader) Err() error { return r.err }
