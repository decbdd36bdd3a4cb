package table

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/value"
)

func withArrowTuning(tu scan.ArrowTuning) ScanOption {
	return func(c *scan.Config) { c.Arrow = tu }
}

// arrowBatches returns every batch of ScanArrow (retained; release them
// with releaseBatches).
func arrowBatchList(t *testing.T, tbl *Table, opts ...ScanOption) []arrow.RecordBatch {
	t.Helper()
	rr, err := tbl.ScanArrow(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var out []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	if err := rr.Err(); err != nil {
		releaseBatches(out)
		t.Fatal(err)
	}
	return out
}

func releaseBatches(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// sameBatches checks that got holds the batches of want: same count, same
// row counts, same values (NaNs equal), in order.
func sameBatches(t *testing.T, got, want []arrow.RecordBatch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d batches, sequential gives %d", len(got), len(want))
	}
	for i := range want {
		if got[i].NumRows() != want[i].NumRows() {
			t.Fatalf("batch %d: %d rows, sequential %d", i, got[i].NumRows(), want[i].NumRows())
		}
		if !array.RecordApproxEqual(got[i], want[i], array.WithNaNsEqual(true)) {
			t.Fatalf("batch %d differs from the sequential scan's", i)
		}
	}
}

// TestScanArrowStripesMatchSequential: with files decoded in stripes by
// several goroutines (small batches, stripes of 2 batches, 3 workers
// per file), every corpus table yields the batches of one goroutine per
// file, in the same order, with the same ScanStats.
func TestScanArrowStripesMatchSequential(t *testing.T) {
	dir := testsupport.CorpusDir(t)
	var striped int
	for _, exp := range testsupport.CorpusTables(t, dir) {
		if exp.Expect != "read" {
			continue
		}
		root := filepath.Join(dir, exp.Table, exp.Root)
		var openOpts []Option
		if exp.Table == "spark__table-with-dv-large" {
			store, err := objectstore.NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			openOpts = append(openOpts, WithStore(&dvPrefixStore{Store: store, prefix: "test%dv%prefix-"}))
		}
		tbl, err := Open(context.Background(), root, openOpts...)
		if err != nil || (tbl.Snapshot().NumFiles() > 0 && logOnly(t, root)) {
			continue
		}
		t.Run(exp.Table, func(t *testing.T) {
			// Batches of 3 rows, or of a twentieth of a large table.
			var all ScanStats
			releaseBatches(arrowBatchList(t, tbl, WithColumns(), WithScanStats(&all)))
			batch := max(3, int(all.RowsReturned/20))
			var seqSt, parSt ScanStats
			seq := arrowBatchList(t, tbl, withArrowTuning(scan.ArrowTuning{Batch: batch, Stripe: 2, Workers: 1}), WithScanStats(&seqSt))
			defer releaseBatches(seq)
			par := arrowBatchList(t, tbl, withArrowTuning(scan.ArrowTuning{Batch: batch, Stripe: 2, Workers: 3}), WithScanStats(&parSt))
			defer releaseBatches(par)
			sameBatches(t, par, seq)
			if parSt != seqSt {
				t.Errorf("stats %+v, sequential %+v", parSt, seqSt)
			}
			if seqSt.FilesColumnar > 0 && seqSt.RowsReturned > int64(2*batch) {
				striped++
			}
		})
	}
	if striped == 0 {
		t.Error("no corpus table read in stripes")
	}
}

// stripeTable is a 1-file table of 10,000 rows in row groups of 2,500:
// id, a string, a nullable int and a date, with a deletion vector.
func stripeTable(t *testing.T) *Table {
	t.Helper()
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", prim(schema.String), true),
		field("n", prim(schema.Integer), true), field("day", prim(schema.Date), true))
	tbl, err := Create(ctx, t.TempDir(), sch, WithProperties(dvProps))
	if err != nil {
		t.Fatal(err)
	}
	var rows []value.Row
	for i := range 10000 {
		var n any = int32(i % 13)
		if i%5 == 0 {
			n = nil
		}
		rows = append(rows, value.Row{int64(i), fmt.Sprintf("s%d", i%17), n, value.Date(i / 50)})
	}
	if tbl, err = tbl.AppendRows(ctx, rows, WithParquetOptions(parquetio.WithRowGroupRows(2500))); err != nil {
		t.Fatal(err)
	}
	if tbl, _, err = tbl.Delete(ctx, Col("id").Lt(int64(40))); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestScanArrowStripesFiltersAndSeeks: stripes that start inside row
// groups and pages (seeks), with a deletion vector, a row filter with
// late columns, a projection and a limit: the same batches as one
// goroutine, for several stripe sizes and worker counts.
func TestScanArrowStripesFiltersAndSeeks(t *testing.T) {
	tbl := stripeTable(t)
	filters := []struct {
		name string
		opts []ScanOption
	}{
		{"all", nil},
		{"filter", []ScanOption{WithFilter(And(Col("n").Gt(int64(6)), Col("s").Eq("s3")))}},
		{"date", []ScanOption{WithFilter(Col("day").Ge(value.Date(120)))}},
		{"projection+limit", []ScanOption{WithColumns("day", "id"), WithLimit(4321)}},
		{"count", []ScanOption{WithColumns()}},
	}
	for _, fc := range filters {
		for _, tu := range []scan.ArrowTuning{{Batch: 100, Stripe: 3}, {Batch: 1000, Stripe: 1}, {Batch: 64, Stripe: 5}} {
			t.Run(fmt.Sprintf("%s/batch%d/stripe%d", fc.name, tu.Batch, tu.Stripe), func(t *testing.T) {
				seqTu, parTu := tu, tu
				seqTu.Workers, parTu.Workers = 1, 3
				var seqSt, parSt ScanStats
				seq := arrowBatchList(t, tbl, append(fc.opts, withArrowTuning(seqTu), WithScanStats(&seqSt))...)
				defer releaseBatches(seq)
				par := arrowBatchList(t, tbl, append(fc.opts, withArrowTuning(parTu), WithScanStats(&parSt))...)
				defer releaseBatches(par)
				sameBatches(t, par, seq)
				if parSt != seqSt {
					t.Errorf("stats %+v, sequential %+v", parSt, seqSt)
				}
				if len(fc.opts) == 0 && seqSt.RowsReturned != 10000-40 {
					t.Errorf("%d rows, want %d", seqSt.RowsReturned, 10000-40)
				}
			})
		}
	}
	// The default tuning gives the rows of Scan.
	checkArrowMatchesScan(t, tbl, withArrowTuning(scan.ArrowTuning{Batch: 100, Workers: 2}))
}

// TestScanArrowStripesCancel: cancelling the context in the middle of a
// striped scan ends the stream with the context's error, and Release
// leaves no goroutine behind.
func TestScanArrowStripesCancel(t *testing.T) {
	tbl := stripeTable(t)
	before := runtime.NumGoroutine()
	for _, at := range []int{1, 5, 20} {
		ctx, cancel := context.WithCancel(context.Background())
		rr, err := tbl.ScanArrow(ctx, withArrowTuning(scan.ArrowTuning{Batch: 100, Stripe: 2, Workers: 3}))
		if err != nil {
			t.Fatal(err)
		}
		var batches, rows int
		for rr.Next() {
			batches++
			rows += int(rr.RecordBatch().NumRows())
			if batches == at {
				cancel()
			}
		}
		if !errors.Is(rr.Err(), context.Canceled) || rows >= 10000-40 {
			t.Errorf("cancel after %d batches: %d rows, Err() = %v; want fewer rows and context.Canceled", at, rows, rr.Err())
		}
		rr.Release()
		cancel()
	}
	// Goroutines end asynchronously after Release returns at most for
	// the runtime's own bookkeeping: wait a little.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the cancelled scans, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
