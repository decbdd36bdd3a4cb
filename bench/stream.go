package bench

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// streamDistinct is how many different epochs of rows P6 cycles through.
const streamDistinct = 8

// streamBench is the state of P6: a streaming sink into a flights table on
// S3, and a floor prefix where each epoch's data file and the sink's commit
// bytes are written directly.
type streamBench struct {
	sink    *streamsink.Sink
	typed   *streamsink.Sink // a second table written with WriteEpochOf[Flight]
	nextT   int64            // next typed epoch id
	rec     *recordingStore
	reqs    *countingStore     // under rec: the GETs and PUTs of the sink's table
	lists   *listCountingStore // under reqs: its LISTs and HEADs
	floor   objectstore.Store
	rows    [][]value.Row
	flights [][]Flight
	next    int64 // next epoch id
	floorN  int64
}

func newStreamBench(ctx context.Context, s3 *testenv.MinIO, rowsPerEpoch int) (*streamBench, error) {
	stores, err := storesAt(ctx, s3, "p6", "table", "floor", "typed")
	if err != nil {
		return nil, err
	}
	store, floor := stores[0], stores[1]
	lists := &listCountingStore{Store: store}
	reqs := &countingStore{Store: lists}
	s := &streamBench{rec: &recordingStore{Store: reqs}, reqs: reqs, lists: lists, floor: floor}
	tbl, err := table.Create(ctx, "", FlightsSchema(), table.WithStore(s.rec))
	if err != nil {
		return nil, err
	}
	if s.sink, err = streamsink.New(tbl, "deltabench-query"); err != nil {
		return nil, err
	}
	ttbl, err := table.Create(ctx, "", FlightsSchema(), table.WithStore(stores[2]))
	if err != nil {
		return nil, err
	}
	if s.typed, err = streamsink.New(ttbl, "deltabench-query"); err != nil {
		return nil, err
	}
	for i := range streamDistinct {
		f, r := GenerateFlights(i*rowsPerEpoch, rowsPerEpoch)
		s.flights, s.rows = append(s.flights, f), append(s.rows, r)
	}
	return s, nil
}

// epoch writes the next epoch through the sink.
func (s *streamBench) epoch(ctx context.Context) error {
	res, err := s.sink.WriteEpoch(ctx, s.next, s.rows[s.next%streamDistinct])
	return wroteNewEpoch(res, err, "", &s.next)
}

// typedEpoch writes the next epoch of the typed table through
// streamsink.WriteEpochOf from the floor's own []Flight.
func (s *streamBench) typedEpoch(ctx context.Context) error {
	res, err := streamsink.WriteEpochOf(ctx, s.typed, s.nextT, s.flights[s.nextT%streamDistinct])
	return wroteNewEpoch(res, err, "typed ", &s.nextT)
}

// wroteNewEpoch checks the outcome (res, err) of writing the new epoch
// *next, which the sink must not skip (kind names the sink in the error:
// "" or "typed "), and then advances *next.
func wroteNewEpoch(res *streamsink.Result, err error, kind string, next *int64) error {
	if err != nil {
		return err
	}
	if res.Skipped {
		return fmt.Errorf("bench: new %sepoch %d skipped", kind, *next)
	}
	*next++
	return nil
}

// skipped writes the latest committed epoch again: the sink must skip it.
func (s *streamBench) skipped(ctx context.Context) error {
	e := s.next - 1
	res, err := s.sink.WriteEpoch(ctx, e, s.rows[e%streamDistinct])
	if err != nil {
		return err
	}
	if !res.Skipped {
		return fmt.Errorf("bench: committed epoch %d written again", e)
	}
	return nil
}

// floorEpoch writes what an epoch minimally costs: the rows as one Parquet
// file with parquet-go (snappy) and Put, then the bytes of the sink's
// latest commit with PutIfAbsent to a fresh key.
func (s *streamBench) floorEpoch(ctx context.Context) error {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Flight](&buf, parquet.Compression(&parquet.Snappy),
		parquet.DataPageVersion(1), parquet.PageBufferSize(1<<20))
	if _, err := w.Write(s.flights[s.floorN%streamDistinct]); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	s.floorN++
	if err := s.floor.Put(ctx, fmt.Sprintf("part-%05d-floor-c000.snappy.parquet", s.floorN), buf.Bytes()); err != nil {
		return err
	}
	return s.floor.PutIfAbsent(ctx, txlog.CommitKey(s.floorN), s.rec.lastPutIfAbsent())
}

// floorList lists the log after the latest commit: the one request a
// refresh that finds nothing new needs.
func (s *streamBench) floorList(ctx context.Context) error {
	latest := s.sink.Table().Version()
	for _, err := range s.rec.List(ctx, txlog.LogPrefix, txlog.CommitKey(latest)) {
		if err != nil {
			return err
		}
	}
	return nil
}

// StreamFigure measures P6: epochs of Config.StreamRows flights rows
// written through streamsink.Sink.WriteEpoch on MinIO, interleaved with the
// floor of the same work done directly (parquet-go file + Put, commit bytes
// + PutIfAbsent); and the cost of an epoch that is already committed
// (refresh, then skip) vs one bare LIST of the log after the latest commit.
func StreamFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P6", Title: "streaming sink epochs",
		Setup: fmt.Sprintf("MinIO on localhost; %d rounds, in rotating order, of three sides each writing one epoch of %d flights rows: "+
			"the row sink (Sink.WriteEpoch of prebuilt []table.Row; building them is not timed), "+
			"the typed sink on a second table (streamsink.WriteEpochOf of the floor's own []Flight), "+
			"and the floor (parquet.GenericWriter[Flight] of that []Flight, snappy, + Put, then the row sink's latest commit bytes + PutIfAbsent); "+
			"each sink epoch refreshes (one LIST, overlapped with encoding the file in memory), PUTs one file and commits (Append, default checkpoint interval 10, checkpoints in the background); "+
			"ratio_epoch_typed and ratio_epoch_rows are total sink time over total floor time; "+
			"then %d skipped epochs (already committed) interleaved with a bare LIST of the log after the latest commit",
			cfg.StreamEpochs, cfg.StreamRows, cfg.StreamSkipped)}
	if env.skipWithoutS3(fig) {
		return fig, nil
	}
	s, err := newStreamBench(ctx, env.S3, cfg.StreamRows)
	if err != nil {
		return fig, err
	}
	if err := s.epoch(ctx); err != nil { // warm-up, and commit bytes for the floor
		return fig, err
	}
	if err := s.typedEpoch(ctx); err != nil { // warm-up
		return fig, err
	}
	var ep, ty, fl, sk, ls []time.Duration
	timed := func(ds *[]time.Duration, fn func(context.Context) error) error {
		t0 := time.Now()
		err := fn(ctx)
		*ds = append(*ds, time.Since(t0))
		return err
	}
	// The row sink's requests in its timed epochs (a background
	// checkpoint's are counted in the epoch it overlaps).
	var req counts
	var nlists, nstats int64
	rowEpoch := func(ctx context.Context) error {
		c0, l0, h0 := s.reqs.snapshot(), s.lists.lists.Load(), s.lists.stats.Load()
		err := s.epoch(ctx)
		d := s.reqs.snapshot().sub(c0)
		req.gets += d.gets
		req.puts += d.puts
		req.logPuts += d.logPuts
		nlists += s.lists.lists.Load() - l0
		nstats += s.lists.stats.Load() - h0
		return err
	}
	sides := []struct {
		ds *[]time.Duration
		fn func(context.Context) error
	}{{&ep, rowEpoch}, {&ty, s.typedEpoch}, {&fl, s.floorEpoch}}
	for i := range cfg.StreamEpochs {
		for j := range sides { // rotating order
			side := sides[(i+j)%len(sides)]
			if err := timed(side.ds, side.fn); err != nil {
				return fig, err
			}
		}
	}
	for range cfg.StreamSkipped {
		if err := timed(&sk, s.skipped); err != nil {
			return fig, err
		}
		if err := timed(&ls, s.floorList); err != nil {
			return fig, err
		}
	}
	epTotal, tyTotal, flTotal := sum(ep), sum(ty), sum(fl)
	fig.add("epochs_per_s", float64(len(ep))/epTotal.Seconds(), "epochs/s")
	fig.add("typed_epochs_per_s", float64(len(ty))/tyTotal.Seconds(), "epochs/s")
	fig.add("floor_epochs_per_s", float64(len(fl))/flTotal.Seconds(), "epochs/s")
	fig.add("epoch_p50", ms(median(ep)), "ms")
	fig.add("epoch_p99", ms(quantile(ep, 0.99)), "ms")
	fig.add("typed_epoch_p50", ms(median(ty)), "ms")
	fig.add("typed_epoch_p99", ms(quantile(ty, 0.99)), "ms")
	fig.add("floor_epoch_p50", ms(median(fl)), "ms")
	typedRatio := fig.add("ratio_epoch_typed", ratio(tyTotal, flTotal), "x")
	if cfg.Mode == "full" {
		typedRatio.goal("<=", 1.15) // issue 17: epochs <= 1.15x the floor
	}
	fig.add("ratio_epoch_rows", ratio(epTotal, flTotal), "x")
	n := float64(len(ep))
	fig.add("epoch_lists", float64(nlists)/n, "per epoch")
	fig.add("epoch_gets", float64(req.gets)/n, "per epoch")
	fig.add("epoch_heads", float64(nstats)/n, "per epoch")
	fig.add("epoch_data_puts", float64(req.puts)/n, "per epoch")
	fig.add("epoch_log_puts", float64(req.logPuts)/n, "per epoch")
	fig.add("skipped_epoch_p50", ms(median(sk)), "ms")
	fig.add("skipped_epoch_p99", ms(quantile(sk, 0.99)), "ms")
	fig.add("bare_list_p50", ms(median(ls)), "ms")
	fig.add("ratio_skipped", ratio(median(sk), median(ls)), "x")
	return fig, nil
}

// listCountingStore counts the listings and Stats made through it (the
// requests delete.go's countingStore does not count).
type listCountingStore struct {
	objectstore.Store
	lists, stats atomic.Int64
}

func (c *listCountingStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[objectstore.ObjectInfo, error] {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix, startAfter)
}

func (c *listCountingStore) Stat(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	c.stats.Add(1)
	return c.Store.Stat(ctx, key)
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}
