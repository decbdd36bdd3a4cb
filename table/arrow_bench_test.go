package table

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
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
		rr, err := ScanArrow(ctx, tbl)
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
