package table

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/value"
)

// flightsEnv names a flights table (the demo's, see scripts/demo.sh) for the
// scan benchmarks; they skip without it.
const flightsEnv = "DELTAKIT_BENCH_FLIGHTS"

type scanFlight struct {
	Date        time.Time `delta:"date"`
	Delay       *int64    `delta:"delay"`
	Distance    *int64    `delta:"distance"`
	Origin      string    `delta:"origin"`
	Destination string    `delta:"destination"`
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchScan runs scan b.N times over the table of $DELTAKIT_BENCH_FLIGHTS,
// reporting rows/op and CPU seconds per op next to wall time.
func benchScan(b *testing.B, scan func(ctx context.Context, tbl *Table) (int64, error)) {
	dir := os.Getenv(flightsEnv)
	if dir == "" {
		b.Skipf("set %s to a flights table", flightsEnv)
	}
	ctx := context.Background()
	tbl, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	c0 := cpuTime()
	var n int64
	for b.Loop() {
		n, err = scan(ctx, tbl)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "rows/op")
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
}

func BenchmarkFlightsScan(b *testing.B) {
	benchScan(b, func(ctx context.Context, tbl *Table) (int64, error) {
		var n int64
		for _, err := range tbl.Scan(ctx) {
			if err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	})
}

func BenchmarkFlightsScanAs(b *testing.B) {
	benchScan(b, func(ctx context.Context, tbl *Table) (int64, error) {
		var n int64
		for _, err := range ScanAs[scanFlight](ctx, tbl) {
			if err != nil {
				return n, err
			}
			n++
		}
		return n, nil
	})
}

func BenchmarkFlightsScanArrow(b *testing.B) {
	benchScan(b, func(ctx context.Context, tbl *Table) (int64, error) {
		rr, err := tbl.ScanArrow(ctx)
		if err != nil {
			return 0, err
		}
		defer rr.Release()
		var n int64
		for rr.Next() {
			n += rr.RecordBatch().NumRows()
		}
		return n, rr.Err()
	})
}

// BenchmarkFlightsScanArrowSelective is P8's selective scan: delay > 300
// AND origin = 'SFO', reporting the files and row groups skipped.
func BenchmarkFlightsScanArrowSelective(b *testing.B) {
	var st ScanStats
	benchScan(b, func(ctx context.Context, tbl *Table) (int64, error) {
		e, err := ParsePredicate("delay > 300 AND origin = 'SFO'", tbl.Schema())
		if err != nil {
			return 0, err
		}
		rr, err := tbl.ScanArrow(ctx, WithFilter(e), WithScanStats(&st))
		if err != nil {
			return 0, err
		}
		defer rr.Release()
		var n int64
		for rr.Next() {
			n += rr.RecordBatch().NumRows()
		}
		return n, rr.Err()
	})
	b.ReportMetric(float64(st.FilesSkipped+st.FilesPruned), "files-skipped")
	b.ReportMetric(float64(st.FilesPlanned), "files-planned")
	b.ReportMetric(float64(st.RowGroupsSkipped), "rowgroups-skipped")
}

// benchAppend reads the flights table into record batches once, then
// times write(batches) per op into fresh in-memory tables.
func benchAppend(b *testing.B, write func(ctx context.Context, tbl *Table, recs []arrow.RecordBatch, rows []value.Row) error) {
	dir := os.Getenv(flightsEnv)
	if dir == "" {
		b.Skipf("set %s to a flights table", flightsEnv)
	}
	ctx := context.Background()
	src, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	rr, err := src.ScanArrow(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var recs []arrow.RecordBatch
	var rows []value.Row
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
		rs, err := arrowio.Rows(rec)
		if err != nil {
			b.Fatal(err)
		}
		rows = append(rows, rs...)
	}
	rr.Release()
	b.ReportAllocs()
	c0 := cpuTime()
	for b.Loop() {
		tbl, err := Create(ctx, "", src.Schema(), WithStore(objectstore.NewMem("bench")))
		if err != nil {
			b.Fatal(err)
		}
		if err := write(ctx, tbl, recs, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows)), "rows/op")
	b.ReportMetric((cpuTime()-c0).Seconds()/float64(b.N), "cpu-s/op")
}

func BenchmarkFlightsAppendArrow(b *testing.B) {
	benchAppend(b, func(ctx context.Context, tbl *Table, recs []arrow.RecordBatch, _ []value.Row) error {
		rr, err := array.NewRecordReader(recs[0].Schema(), recs)
		if err != nil {
			return err
		}
		defer rr.Release()
		_, err = tbl.AppendArrow(ctx, rr)
		return err
	})
}

func BenchmarkFlightsAppendRows(b *testing.B) {
	benchAppend(b, func(ctx context.Context, tbl *Table, _ []arrow.RecordBatch, rows []value.Row) error {
		_, err := tbl.AppendRows(ctx, rows)
		return err
	})
}

// BenchmarkFlightsParquetWrite is the floor: parquetio's writer (parquet-go
// underneath) writing the rows to one buffer, no table, no validation.
func BenchmarkFlightsParquetWrite(b *testing.B) {
	benchAppend(b, func(_ context.Context, tbl *Table, _ []arrow.RecordBatch, rows []value.Row) error {
		var buf bytes.Buffer
		w, err := parquetio.NewWriter(&buf, tbl.Schema())
		if err != nil {
			return err
		}
		for len(rows) > 0 {
			n := min(len(rows), 4096)
			if err := w.Write(rows[:n]); err != nil {
				return err
			}
			rows = rows[n:]
		}
		_, err = w.Close()
		return err
	})
}
