package scan

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/arrowio"
)

// ArrowBatchRows is the most rows one record batch of ScanArrow holds.
const ArrowBatchRows = 64 * 1024

// BatchOrErr is one message from the producer: a batch, or the error that
// ended the scan.
type BatchOrErr struct {
	rec arrow.RecordBatch
	err error
}

// Reader is ScanArrow's RecordReader. A producer goroutine runs the
// plan's row scan, appends the rows to an arrowio.RecordBuilder and sends
// each full batch on a channel one deep, so decoding and building overlap
// with the consumer while memory stays at about two batches.
type Reader struct {
	Refs    atomic.Int64
	Sch     *arrow.Schema
	Cancel  context.CancelFunc
	Batches chan BatchOrErr
	cur     arrow.RecordBatch
	err     error
	done    bool
}

// Produce runs the scan and closes r.batches when it ends; closing gives
// the consumer a happens-before edge on the ScanStats the scan wrote.
func (r *Reader) Produce(ctx context.Context, p *Plan, rb *arrowio.RecordBuilder) {
	defer close(r.Batches)
	defer rb.Release()
	// Sends block: Release drains the channel after cancelling, so the
	// producer never outlives the reader, and an error (the caller's
	// context included) always reaches Next.
	send := func(m BatchOrErr) bool {
		r.Batches <- m
		return true
	}
	if err := p.arrowBatches(ctx, r.Sch, func(rec arrow.RecordBatch) bool { return send(BatchOrErr{rec: rec}) }); err != nil {
		send(BatchOrErr{err: err})
	}
}

func (r *Reader) Retain() { r.Refs.Add(1) }

func (r *Reader) Release() {
	if r.Refs.Add(-1) != 0 {
		return
	}
	r.Cancel()
	for m := range r.Batches { // wait for the producer
		if m.rec != nil {
			m.rec.Release()
		}
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *Reader) Schema() *arrow.Schema { return r.Sch }

func (r *Reader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done {
		return false
	}
	m, ok := <-r.Batches
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

func (r *Reader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record returns the current batch; it is RecordBatch under its older name.
//
// Deprecated: use RecordBatch.
func (r *Reader) Record() arrow.RecordBatch { return r.cur }

func (r *Reader) Err() error { return r.err }
