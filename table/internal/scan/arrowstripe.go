package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/deltakit/deltakit/parquetio"
)

// Decoding one file on several goroutines. A scan of fewer files than
// cores (a table optimized to one file) would decode on one core while the
// others wait; so the stream of a file's selected row groups is cut into
// stripes of whole batches (arrowStripeBatches batches, the last one
// shorter), and stripe i is decoded by worker i mod workers, each worker
// with its own pqarrow record reader seeking from stripe to stripe (the
// offset index skips the pages in between). The batches are emitted in
// stream order with the boundaries one reader gives (multiples of the
// batch size from the stream's start), whatever the number of workers.
// Each worker buffers at most one stripe ahead, so memory stays at about
// workers × (arrowStripeBatches+1) batches per file.

// arrowStripeBatches is the number of batches in a stripe.
const arrowStripeBatches = 16

// ArrowTuning holds the columnar path's sizes; zero values take the
// defaults. Tests shrink them to exercise stripes on small tables.
type ArrowTuning struct {
	Batch   int // rows per batch (arrowBatchRows)
	Stripe  int // batches per stripe (arrowStripeBatches)
	Workers int // stripe workers per file; 0: from GOMAXPROCS
	// NoPageIndex turns page-index skipping off (selectPages).
	NoPageIndex bool
}

func (t ArrowTuning) batchRows() int64 {
	if t.Batch > 0 {
		return int64(t.Batch)
	}
	return ArrowBatchRows
}

func (t ArrowTuning) stripeRows() int64 {
	s := int64(arrowStripeBatches)
	if t.Stripe > 0 {
		s = int64(t.Stripe)
	}
	return s * t.batchRows()
}

// stripe is rows [from, from+n) of a file's stream of selected row groups.
type stripe struct{ from, n int64 }

// spans returns the spans of the stream to read: fr.keep, or the whole
// stream.
func (fr *fileRead) spans() []stripe {
	if fr.keep != nil {
		return fr.keep
	}
	return []stripe{{0, fr.total}}
}

// maxStripes bounds how many stripes stripes cuts a file into: 2^16
// stripes of 2^20 rows are 2^36 rows, more than any real file holds, and
// the row counts come from the file's footer, which a damaged file can
// make claim 2^62 rows in a few KiB.
const maxStripes = 1 << 16

// stripes cuts each span of the stream into stripes of stripeRows (a
// multiple of the batch size). A stream of more than maxStripes stripes
// is one stripe (read by one goroutine, which meets the end of the data
// the footer over-counts as an error).
func (fr *fileRead) stripes(stripeRows int64) []stripe {
	var n int64
	for _, sp := range fr.spans() {
		n += (sp.n + stripeRows - 1) / stripeRows
	}
	if n > maxStripes || n < 0 {
		return []stripe{{0, fr.total}}
	}
	var out []stripe
	for _, sp := range fr.spans() {
		for from := sp.from; from < sp.from+sp.n; from += stripeRows {
			out = append(out, stripe{from, min(stripeRows, sp.from+sp.n-from)})
		}
	}
	return out
}

// seekable reports whether the stripe readers can seek in the file: every
// decoded column chunk has an offset index. Without one, arrow-go seeks by
// walking the page headers from the data page offset, which skips the
// dictionary page of writers that leave dictionary_page_offset unset
// (parquet-mr 1.10, in the corpus): such files are read by one goroutine.
func (cf *columnarFile) seekable(fr *fileRead) bool {
	return cf.seekableLeaves(fr, fr.leaves)
}

// seekableLeaves is seekable for the given leaves.
func (cf *columnarFile) seekableLeaves(fr *fileRead, leaves []int) bool {
	for _, g := range fr.rgs {
		rg := cf.md.RowGroup(g)
		for _, leaf := range leaves {
			cc, err := rg.ColumnChunk(leaf)
			if err != nil || cc.GetOffsetIndexLocation() == nil {
				return false
			}
			if UnlistedDictionary(cc) {
				return false
			}
		}
	}
	return true
}

// UnlistedDictionary reports whether column chunk cc has dictionary-encoded
// pages but no dictionary_page_offset (parquet-mr 1.10 leaves it unset, its
// dictionary page being at data_page_offset). arrow-go reads such a chunk
// from its start, but cannot seek in it: SeekToRow skips the dictionary
// page and then fails with "dictionary page must be before data page".
func UnlistedDictionary(cc *metadata.ColumnChunkMetaData) bool {
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
		return false
	}
	enc := cc.Encodings()
	return slices.Contains(enc, parquet.Encodings.RLEDict) || slices.Contains(enc, parquet.Encodings.PlainDict)
}

// readsForward reports whether a reader of the given leaves must not seek
// (unlistedDictionary in a selected row group): it skips rows by reading
// them.
func (cf *columnarFile) readsForward(fr *fileRead, leaves []int) bool {
	for _, g := range fr.rgs {
		rg := cf.md.RowGroup(g)
		for _, leaf := range leaves {
			cc, err := rg.ColumnChunk(leaf)
			if err != nil || UnlistedDictionary(cc) {
				return true
			}
		}
	}
	return false
}

// unitCounts are one stripe reader's counts: rows read (not deleted) and
// deleted, rows whose late columns were skipped, and whether it read all
// its stripes.
type unitCounts struct {
	rows, deleted, late int64
	done                bool
}

// stripeReader decodes stripes of one file: its own record reader (or a
// row counter when no column is decoded), late column readers and
// partition constants.
type stripeReader struct {
	cf     *columnarFile
	p      *Plan
	f      *File
	fr     *fileRead
	outSch *arrow.Schema
	rr     pqarrow.RecordReader // nil: no decoded column
	at     int64                // stream row rr is at
	lt     *lateCols
	consts []arrow.Array
	counts unitCounts
}

func (cf *columnarFile) newStripeReader(ctx context.Context, p *Plan, f *File, fr *fileRead, outSch *arrow.Schema) (*stripeReader, error) {
	sr := &stripeReader{cf: cf, p: p, f: f, fr: fr, outSch: outSch, consts: make([]arrow.Array, len(p.Parts))}
	if fr.lateOn {
		sr.lt = &lateCols{cf: cf, rgs: fr.rgs, readers: make([]*pqarrow.ColumnReader, len(cf.cols)), forward: make([]bool, len(cf.cols))}
		for i, col := range cf.cols {
			if !fr.late[i] {
				continue
			}
			sr.lt.forward[i] = cf.readsForward(fr, col.leaves)
			incl := map[int]bool{}
			for _, l := range col.leaves {
				incl[l] = true
			}
			r, err := cf.fr.GetFieldReader(ctx, col.field, incl, fr.rgs)
			if err != nil {
				sr.close()
				return nil, fmt.Errorf("%w: %v", parquetio.ErrCorrupt, err)
			}
			sr.lt.readers[i] = r
		}
	}
	if len(fr.leaves) > 0 {
		rr, err := cf.fr.GetRecordReader(ctx, fr.leaves, fr.rgs)
		if err != nil {
			sr.close()
			return nil, fmt.Errorf("%w: %v", parquetio.ErrCorrupt, err)
		}
		sr.rr = rr
	}
	return sr, nil
}

func (sr *stripeReader) close() {
	if sr.lt != nil {
		sr.lt.release()
	}
	if sr.rr != nil {
		sr.rr.Release()
	}
	releaseAll(sr.consts)
}

// next returns the next decoded batch of at most max rows from the
// stream row sr.at (io.EOF at the end).
func (sr *stripeReader) next(limit int64) (arrow.RecordBatch, error) {
	if sr.rr == nil {
		n := min(limit, sr.p.Cfg.Arrow.batchRows(), sr.fr.total-sr.at)
		if n <= 0 {
			return nil, io.EOF
		}
		return array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, n), nil
	}
	if !sr.rr.Next() {
		if err := sr.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, io.EOF
	}
	rec := sr.rr.RecordBatch()
	if rec.NumRows() > limit {
		return rec.NewSlice(0, limit), nil
	}
	rec.Retain()
	return rec, nil
}

// readStripe emits the output batches of stripe s; false when emit asked
// to stop.
func (sr *stripeReader) readStripe(ctx context.Context, s stripe, emit func(arrow.RecordBatch) bool) (bool, error) {
	if s.from != sr.at && sr.rr != nil {
		if err := sr.rr.SeekToRow(s.from); err != nil {
			return false, fmt.Errorf("%w: seek to row %d: %v", parquetio.ErrCorrupt, s.from, err)
		}
	}
	sr.at = s.from
	end := s.from + s.n
	for sr.at < end {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		rec, err := sr.next(end - sr.at)
		if errors.Is(err, io.EOF) {
			if sr.rr != nil {
				return false, fmt.Errorf("%w: %d rows where %d were expected", parquetio.ErrCorrupt, sr.at, sr.fr.total)
			}
			break
		}
		if err != nil {
			return false, fmt.Errorf("%w: %v", parquetio.ErrCorrupt, err)
		}
		pos := sr.at
		sr.at += rec.NumRows()
		out, err := sr.batch(ctx, rec, pos)
		rec.Release()
		if err != nil {
			return false, err
		}
		if out != nil && !emit(out) {
			return false, nil
		}
	}
	return true, nil
}

// stripeMsg is one message of a stripe worker: a batch, the end of a
// stripe, or the error that ended the worker.
type stripeMsg struct {
	rec arrow.RecordBatch
	end bool
	err error
}

// readParallel decodes stripes on workers goroutines and emits their
// batches in stream order. It returns when every worker has ended.
func (cf *columnarFile) readParallel(ctx context.Context, p *Plan, f *File, fr *fileRead, outSch *arrow.Schema,
	stripes []stripe, workers int, emit func(arrow.RecordBatch) bool) (unitCounts, error) {
	workers = min(workers, len(stripes))
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	chans := make([]chan stripeMsg, workers)
	counts := make([]unitCounts, workers)
	for w := range workers {
		chans[w] = make(chan stripeMsg, p.Cfg.Arrow.stripeRows()/p.Cfg.Arrow.batchRows()+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(chans[w])
			counts[w] = cf.stripeWorker(ctx, p, f, fr, outSch, stripes, w, workers, chans[w])
		}()
	}
	defer func() {
		cancel()
		for _, ch := range chans {
			for m := range ch {
				if m.rec != nil {
					m.rec.Release()
				}
			}
		}
		wg.Wait()
	}()
	for i := range stripes {
		for m := range chans[i%workers] {
			if m.err != nil {
				return unitCounts{}, m.err
			}
			if m.end {
				break
			}
			if !emit(m.rec) {
				return unitCounts{}, nil
			}
		}
		if err := ctx.Err(); err != nil {
			return unitCounts{}, err
		}
	}
	wg.Wait()
	var total unitCounts
	for _, c := range counts {
		total.rows += c.rows
		total.deleted += c.deleted
		total.late += c.late
	}
	total.done = true
	return total, nil
}

// stripeWorker decodes stripes w, w+workers, ... onto ch, each followed by
// an end message; it returns its counts.
func (cf *columnarFile) stripeWorker(ctx context.Context, p *Plan, f *File, fr *fileRead, outSch *arrow.Schema,
	stripes []stripe, w, workers int, ch chan<- stripeMsg) unitCounts {
	send := func(m stripeMsg) bool { return sendBatch(ctx, ch, m, m.rec) }
	sr, err := cf.newStripeReader(ctx, p, f, fr, outSch)
	if err != nil {
		send(stripeMsg{err: err})
		return unitCounts{}
	}
	defer sr.close()
	for i := w; i < len(stripes); i += workers {
		ok, err := sr.readStripe(ctx, stripes[i], func(rec arrow.RecordBatch) bool { return send(stripeMsg{rec: rec}) })
		if err != nil {
			send(stripeMsg{err: err})
			return sr.counts
		}
		if !ok || !send(stripeMsg{end: true}) {
			return sr.counts
		}
	}
	return sr.counts
}
