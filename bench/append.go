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
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/value"
)

// appendBench is the state of P2: two flights tables on S3 that each
// deltakit step appends the same rows to (as Go structs with table.Append,
// as parquetio rows with AppendRows), and a raw prefix where each raw step
// writes the same structs with parquet-go's GenericWriter and Put.
type appendBench struct {
	tbl     *table.Table // Append[Flight]
	rowsTbl *table.Table // AppendRows
	raw     objectstore.Store
	flights []Flight
	rows    []value.Row
	rawN    int
}

func newAppendBench(ctx context.Context, s3 *testenv.MinIO, n int) (*appendBench, error) {
	stores, err := storesAt(ctx, s3, "p2", "table", "raw", "rows-table")
	if err != nil {
		return nil, err
	}
	store, raw, rowsStore := stores[0], stores[1], stores[2]
	tbl, err := table.Create(ctx, "", FlightsSchema(), table.WithStore(store))
	if err != nil {
		return nil, err
	}
	rowsTbl, err := table.Create(ctx, "", FlightsSchema(), table.WithStore(rowsStore))
	if err != nil {
		return nil, err
	}
	a := &appendBench{tbl: tbl, rowsTbl: rowsTbl, raw: raw}
	a.flights, a.rows = GenerateFlights(0, n)
	return a, nil
}

// deltakit appends the flights with table.Append[Flight], the same structs
// the raw side writes, and returns the bytes of data files written.
func (a *appendBench) deltakit(ctx context.Context) (int64, error) {
	tbl, err := table.Append(ctx, a.tbl, a.flights)
	if err != nil {
		return 0, err
	}
	a.tbl = tbl
	return outputBytes(tbl), nil
}

// deltakitRows appends the same rows as parquetio rows (one []any per row,
// built beforehand) with table.AppendRows and returns the bytes of data
// files written.
func (a *appendBench) deltakitRows(ctx context.Context) (int64, error) {
	tbl, err := a.rowsTbl.AppendRows(ctx, a.rows)
	if err != nil {
		return 0, err
	}
	a.rowsTbl = tbl
	return outputBytes(tbl), nil
}

// outputBytes returns numOutputBytes of the table's last commit.
func outputBytes(tbl *table.Table) int64 {
	var n int64
	if ci := tbl.Snapshot().CommitInfo(); ci != nil {
		n, _ = strconv.ParseInt(fmt.Sprint(ci.OperationMetrics["numOutputBytes"]), 10, 64)
	}
	return n
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
// table.Append[Flight] (Parquet encoding with stats straight from the
// structs, Put, commit) vs the raw floor of parquet-go's GenericWriter of
// the same structs + Put of the file, to the same MinIO server; and, as a
// secondary metric, table.AppendRows of the same rows as parquetio rows
// (validation of boxed values, encoding, Put, commit). The three sides run
// in rotating order.
func AppendFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P2", Title: "append vs raw parquet-go",
		Setup: fmt.Sprintf("MinIO on localhost; %d flights rows {date timestamp_ntz, delay long, distance long, origin string, destination string}, "+
			"%d repetitions per side, rotating order, median counted: table.Append[Flight] (one file, snappy, stats, commit) vs "+
			"parquet.NewGenericWriter[Flight] (snappy) + Put of the same []Flight; also table.AppendRows of the rows as []value.Row",
			cfg.AppendRows, cfg.AppendReps)}
	if env.skipWithoutS3(fig) {
		return fig, nil
	}
	a, err := newAppendBench(ctx, env.S3, cfg.AppendRows)
	if err != nil {
		return fig, err
	}
	type side struct {
		run       func(context.Context) (int64, error)
		wall, cpu []time.Duration
		bytes     int64
	}
	typed, raw, rowsSide := &side{run: a.deltakit}, &side{run: a.rawWrite}, &side{run: a.deltakitRows}
	order := []*side{typed, raw, rowsSide}
	for i := range cfg.AppendReps {
		for j := range order {
			s := order[(i+j)%len(order)]
			runtime.GC() // no side pays for another's garbage
			t0, c0 := time.Now(), cpuTime()
			n, err := s.run(ctx)
			s.wall, s.cpu = append(s.wall, time.Since(t0)), append(s.cpu, cpuTime()-c0)
			if err != nil {
				return fig, err
			}
			s.bytes = n
		}
	}
	rows := float64(cfg.AppendRows)
	fig.add("deltakit_append", median(typed.wall).Seconds(), "s")
	fig.add("raw_parquet_go", median(raw.wall).Seconds(), "s")
	fig.add("deltakit_rows_per_s", rows/median(typed.wall).Seconds(), "rows/s")
	fig.add("raw_rows_per_s", rows/median(raw.wall).Seconds(), "rows/s")
	fig.add("deltakit_file_bytes", float64(typed.bytes), "B")
	fig.add("raw_file_bytes", float64(raw.bytes), "B")
	fig.add("deltakit_cpu", median(typed.cpu).Seconds(), "s")
	fig.add("raw_cpu", median(raw.cpu).Seconds(), "s")
	fig.goalFull(cfg, fig.add("ratio", ratio(median(typed.wall), median(raw.wall)), "x"), "<=", 1.10)
	fig.goalFull(cfg, fig.add("ratio_cpu", ratio(median(typed.cpu), median(raw.cpu)), "x"), "<=", 1.10)
	fig.add("append_rows", median(rowsSide.wall).Seconds(), "s")
	fig.add("append_rows_cpu", median(rowsSide.cpu).Seconds(), "s")
	fig.add("append_rows_file_bytes", float64(rowsSide.bytes), "B")
	fig.add("ratio_append_rows", ratio(median(rowsSide.wall), median(raw.wall)), "x")
	fig.add("ratio_cpu_append_rows", ratio(median(rowsSide.cpu), median(raw.cpu)), "x")
	fig.note("deltakit_* and ratio* are table.Append[Flight] of the floor's own []Flight; append_rows* are table.AppendRows of " +
		"prebuilt []value.Row (building them is not timed). ratio is wall time; ratio_cpu is this process's user+system CPU " +
		"time (getrusage) and holds up better on a busy machine; neither includes MinIO's CPU")
	return fig, nil
}
