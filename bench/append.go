package bench

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
)

// appendBench is the state of P2: a flights table on S3 that each deltakit
// step appends the same rows to, and a raw prefix where each raw step
// writes the same rows with parquet-go's GenericWriter and Put.
type appendBench struct {
	tbl     *table.Table
	raw     objectstore.Store
	flights []Flight
	rows    []parquetio.Row
	rawN    int
}

func newAppendBench(ctx context.Context, s3 *testenv.MinIO, n int) (*appendBench, error) {
	prefix := uniquePrefix("p2")
	store, err := s3.StoreAt(ctx, prefix+"/table")
	if err != nil {
		return nil, err
	}
	raw, err := s3.StoreAt(ctx, prefix+"/raw")
	if err != nil {
		return nil, err
	}
	tbl, err := table.Create(ctx, "", FlightsSchema(), table.WithStore(store))
	if err != nil {
		return nil, err
	}
	a := &appendBench{tbl: tbl, raw: raw}
	a.flights, a.rows = GenerateFlights(0, n)
	return a, nil
}

// deltakit appends the rows with table.AppendRows and returns the bytes of
// data files written.
func (a *appendBench) deltakit(ctx context.Context) (int64, error) {
	tbl, err := a.tbl.AppendRows(ctx, a.rows)
	if err != nil {
		return 0, err
	}
	a.tbl = tbl
	var n int64
	if ci := tbl.Snapshot().CommitInfo(); ci != nil {
		n, _ = strconv.ParseInt(fmt.Sprint(ci.OperationMetrics["numOutputBytes"]), 10, 64)
	}
	return n, nil
}

// rawWrite writes the rows with parquet-go's GenericWriter (snappy, data
// page v1, 1 MiB pages, dictionary strings: deltakit's layout) into memory
// and stores the file with Put, as deltakit does. It returns the file size.
func (a *appendBench) rawWrite(ctx context.Context) (int64, error) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Flight](&buf, parquet.Compression(&parquet.Snappy),
		parquet.DataPageVersion(1), parquet.PageBufferSize(1<<20))
	if _, err := w.Write(a.flights); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	a.rawN++
	key := fmt.Sprintf("part-%05d-raw-c000.snappy.parquet", a.rawN)
	if err := a.raw.Put(ctx, key, buf.Bytes()); err != nil {
		return 0, err
	}
	return int64(buf.Len()), nil
}

// AppendFigure measures P2: appending rows of the flights schema with
// table.AppendRows (validation, Parquet encoding with stats, Put, commit)
// vs the raw floor of parquet-go's GenericWriter of Go structs + Put of the
// file, to the same MinIO server, alternating which goes first.
func AppendFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P2", Title: "append vs raw parquet-go",
		Setup: fmt.Sprintf("MinIO on localhost; %d flights rows {date timestamp_ntz, delay long, distance long, origin string, destination string}, "+
			"%d repetitions per side, alternating order, median counted: table.AppendRows (one file, snappy, stats, commit) vs "+
			"parquet.NewGenericWriter[Flight] (snappy) + Put", cfg.AppendRows, cfg.AppendReps)}
	if env.S3 == nil {
		fig.Skipped = "no MinIO server"
		return fig, nil
	}
	a, err := newAppendBench(ctx, env.S3, cfg.AppendRows)
	if err != nil {
		return fig, err
	}
	var dk, raw, dkCPU, rawCPU []time.Duration
	var dkBytes, rawBytes int64
	step := func(deltakit bool) error {
		runtime.GC() // neither side pays for the other's garbage
		t0, c0 := time.Now(), cpuTime()
		var err error
		if deltakit {
			dkBytes, err = a.deltakit(ctx)
			dk, dkCPU = append(dk, time.Since(t0)), append(dkCPU, cpuTime()-c0)
		} else {
			rawBytes, err = a.rawWrite(ctx)
			raw, rawCPU = append(raw, time.Since(t0)), append(rawCPU, cpuTime()-c0)
		}
		return err
	}
	for i := range cfg.AppendReps {
		first := i%2 == 0
		if err := step(first); err != nil {
			return fig, err
		}
		if err := step(!first); err != nil {
			return fig, err
		}
	}
	rows := float64(cfg.AppendRows)
	fig.add("deltakit_append", median(dk).Seconds(), "s")
	fig.add("raw_parquet_go", median(raw).Seconds(), "s")
	fig.add("deltakit_rows_per_s", rows/median(dk).Seconds(), "rows/s")
	fig.add("raw_rows_per_s", rows/median(raw).Seconds(), "rows/s")
	fig.add("deltakit_file_bytes", float64(dkBytes), "B")
	fig.add("raw_file_bytes", float64(rawBytes), "B")
	fig.add("deltakit_cpu", median(dkCPU).Seconds(), "s")
	fig.add("raw_cpu", median(rawCPU).Seconds(), "s")
	fig.add("ratio", ratio(median(dk), median(raw)), "x").goal("<=", 1.10)
	fig.add("ratio_cpu", ratio(median(dkCPU), median(rawCPU)), "x").goal("<=", 1.10)
	fig.note("ratio is wall time; ratio_cpu is this process's user+system CPU time (getrusage) and holds up better on a busy machine; " +
		"neither includes MinIO's CPU")
	return fig, nil
}
