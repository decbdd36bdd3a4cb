package table

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/value"
)

// canon turns a parquetio value into one DeepEqual compares by value:
// decimals as their exact text, times as UTC microseconds.
func canon(v any) any {
	switch x := v.(type) {
	case value.Decimal:
		return "decimal " + x.String()
	case time.Time:
		return fmt.Sprintf("time %d", x.UnixMicro())
	case []any: // value.Row too
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canon(e)
		}
		return out
	case []value.MapEntry:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = [2]any{canon(e.Key), canon(e.Value)}
		}
		return out
	}
	return v
}

// arrowRows reads a whole ScanArrow into rows through arrowio.Rows, checking
// the reader's schema against the scan schema.
func arrowRows(t *testing.T, tbl *Table, opts ...ScanOption) ([]value.Row, error) {
	t.Helper()
	rr, err := tbl.ScanArrow(context.Background(), opts...)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	ssch, err := tbl.ScanSchema(opts...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := arrowio.Schema(ssch)
	if err != nil {
		t.Fatal(err)
	}
	if !rr.Schema().Equal(want) {
		t.Fatalf("ScanArrow schema\n%s\nwant\n%s", rr.Schema(), want)
	}
	var rows []value.Row
	for rr.Next() {
		rec := rr.RecordBatch()
		if !rec.Schema().Equal(want) {
			t.Fatalf("batch schema %s, want %s", rec.Schema(), want)
		}
		rs, err := arrowio.Rows(rec)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rs...)
	}
	return rows, rr.Err()
}

// checkArrowMatchesScan asserts that ScanArrow yields Scan's rows, cell by
// cell, and returns their number.
func checkArrowMatchesScan(t *testing.T, tbl *Table, opts ...ScanOption) int {
	t.Helper()
	var want []value.Row
	for r, err := range tbl.Scan(context.Background(), opts...) {
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
		want = append(want, r)
	}
	got, err := arrowRows(t, tbl, opts...)
	if err != nil {
		t.Fatalf("ScanArrow: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("ScanArrow yields %d rows, Scan %d", len(got), len(want))
	}
	sch, _ := tbl.ScanSchema(opts...)
	bad := 0
	for i := range want {
		for c := range want[i] {
			if g, w := canon(got[i][c]), canon(want[i][c]); !reflect.DeepEqual(g, w) {
				t.Errorf("row %d column %s: Arrow %v, Scan %v", i, sch.Fields[c].Name, g, w)
				if bad++; bad > 10 {
					t.FailNow()
				}
			}
		}
	}
	return len(want)
}

// TestScanArrowSameAsScanCorpus scans every corpus table deltakit reads
// through ScanArrow and compares every cell with Scan's, whole, projected
// in reverse with a limit, and with one file at a time; it checks the row
// count against expected.json. It checks that the two APIs give the same
// values (Arrow batches turned to rows by arrowio.Rows against Scan's row
// boxing, batches kept by the caller after release, projections), not
// that the values are right: Scan reads files with ScanArrow's columnar
// reader, so a wrong value of that reader is wrong in both.
// TestCatArrowDeltaRS (cmd/deltactl) compares the values, filtered too,
// with delta-rs.
func TestScanArrowSameAsScanCorpus(t *testing.T) {
	dir := testsupport.CorpusDir(t)
	for _, exp := range testsupport.CorpusTables(t, dir) {
		if exp.Expect != "read" {
			continue
		}
		t.Run(exp.Table, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			root := filepath.Join(dir, exp.Table, exp.Root)
			var openOpts []Option
			if exp.Table == "spark__table-with-dv-large" {
				store, err := objectstore.NewLocal(root)
				if err != nil {
					t.Fatal(err)
				}
				openOpts = append(openOpts, WithStore(&dvPrefixStore{Store: store, prefix: "test%dv%prefix-"}))
			}
			tbl, err := Open(ctx, root, openOpts...)
			if err != nil {
				t.Skipf("Open: %v (TestCorpusScan checks the refusal)", err)
			}
			if tbl.Snapshot().NumFiles() > 0 && logOnly(t, root) {
				_, err := arrowRows(t, tbl)
				if !errors.Is(err, objectstore.ErrNotExist) {
					t.Errorf("ScanArrow of a table without data files = %v, want ErrNotExist", err)
				}
				return
			}
			n := checkArrowMatchesScan(t, tbl)
			var st ScanStats
			if _, err := arrowRows(t, tbl, WithScanStats(&st)); err != nil {
				t.Fatal(err)
			}
			t.Logf("columnar: %d of %d files", st.FilesColumnar, st.FilesRead)
			if exp.RowsLatest != nil && int64(n) != *exp.RowsLatest {
				t.Errorf("%d rows, expected.json says %d", n, *exp.RowsLatest)
			}
			// A projection in reverse order and a limit.
			sch := tbl.Schema()
			var rev []string
			for i := len(sch.Fields) - 1; i >= 0; i-- {
				rev = append(rev, sch.Fields[i].Name)
			}
			checkArrowMatchesScan(t, tbl, WithColumns(rev...), WithLimit(3))
			checkArrowMatchesScan(t, tbl, WithScanConcurrency(1))
		})
	}
}

// TestScanArrowOptions checks filters (partition pruning, statistics
// skipping, row filter), projections and limits on partitioned, deletion
// vector and column-mapping tables: same rows and same ScanStats as Scan.
func TestScanArrowOptions(t *testing.T) {
	cases := []struct {
		table, filter string
		cols          []string
		limit         int64
		wantRows      int
		// wantRowGroupsSkipped: the table has no file stats, the Parquet
		// statistics of a row group rule it out.
		wantRowGroupsSkipped int
	}{
		{"deltars__delta-0.8.0-partitioned", "year = '2021' AND value > '5'", nil, 0, 2, 1},
		{"deltars__delta-0.8.0-partitioned", "month = '12'", []string{"day", "value"}, 0, 3, 0},
		{"deltars__delta-0.8.0-partitioned", "", []string{"year"}, 4, 4, 0},
		{"golden__data-reader-partition-values", "as_int = 1", nil, 0, 1, 0},
		{"golden__data-reader-partition-values", "as_string IS NULL", []string{"as_timestamp", "as_big_decimal", "as_date"}, 0, 1, 0},
		{"deltars__table-with-dv-small", "value > 3", nil, 0, 5, 0},
		{"golden__table-with-columnmapping-mode-name", "IntegerType > 1", []string{"StringType", "IntegerType"}, 0, -1, 0},
		{"kernel__basic-dv-no-checkpoint", "", nil, 0, -1, 0},
	}
	for _, c := range cases {
		t.Run(c.table+"/"+c.filter, func(t *testing.T) {
			tbl := openCorpus(t, c.table)
			var opts []ScanOption
			if c.filter != "" {
				e, err := ParsePredicate(c.filter, tbl.Schema())
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, WithFilter(e))
			}
			if c.cols != nil {
				opts = append(opts, WithColumns(c.cols...))
			}
			if c.limit > 0 {
				opts = append(opts, WithLimit(c.limit))
			}
			var st ScanStats
			n := checkArrowMatchesScan(t, tbl, append(opts, WithScanStats(&st))...)
			if c.wantRows >= 0 && n != c.wantRows {
				t.Errorf("%d rows, want %d", n, c.wantRows)
			}
			var ast, rst ScanStats
			if _, err := arrowRows(t, tbl, append(opts, WithScanStats(&ast))...); err != nil {
				t.Fatal(err)
			}
			for _, err := range tbl.Scan(context.Background(), append(opts, WithScanStats(&rst))...) {
				if err != nil {
					t.Fatal(err)
				}
			}
			// Only ScanArrow's columnar path skips row groups.
			st, rg := rst, ast.RowGroupsSkipped
			plan, err := scan.NewPlan(tbl.scanSource(), newScanConfig(opts))
			if err != nil {
				t.Fatal(err)
			}
			if plan.ColumnarPlan() && ast.FilesColumnar != ast.FilesRead {
				t.Errorf("%d of %d files read column by column, want all", ast.FilesColumnar, ast.FilesRead)
			}
			if ast != st || rg != c.wantRowGroupsSkipped {
				t.Errorf("row groups skipped %d, want %d", rg, c.wantRowGroupsSkipped)
				t.Errorf("ScanArrow stats %+v, Scan stats %+v", ast, st)
			}
			t.Logf("%d rows; stats %+v", n, st)
		})
	}
}

// TestScanArrowErrors: planning errors come back at once; read errors end
// the stream through Err, naming the data file.
func TestScanArrowErrors(t *testing.T) {
	tbl := openCorpus(t, "deltars__simple_table")
	if _, err := tbl.ScanArrow(context.Background(), WithColumns("nope")); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unknown column: %v, want ErrInvalidArgument", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rr, err := tbl.ScanArrow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	for rr.Next() {
		t.Fatal("a batch from a cancelled scan")
	}
	if !errors.Is(rr.Err(), context.Canceled) {
		t.Errorf("Err() = %v, want context.Canceled", rr.Err())
	}
}

// TestScanArrowCancelMidStream: cancelling the caller's context after the
// first batch ends the stream with the context's error, never a short
// stream that looks complete; releasing early stops the producer.
func TestScanArrowCancelMidStream(t *testing.T) {
	ctx := context.Background()
	tbl, err := Create(ctx, t.TempDir(), schema.NewStruct(field("id", prim(schema.Long), false)))
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]value.Row, 3*scan.ArrowBatchRows)
	for i := range rows {
		rows[i] = value.Row{int64(i)}
	}
	if tbl, err = tbl.AppendRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rr, err := tbl.ScanArrow(cctx, WithScanConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for rr.Next() {
		n += rr.RecordBatch().NumRows()
		cancel()
	}
	// The producer may have queued every batch before the cancel: the
	// stream may hold all rows, but it must end with the context's error.
	if !errors.Is(rr.Err(), context.Canceled) || n > int64(len(rows)) {
		t.Errorf("after cancel: %d rows, Err() = %v; want at most %d rows and context.Canceled", n, rr.Err(), len(rows))
	}
	rr.Release()
	// Full read, then an early release.
	var st ScanStats
	rr, err = tbl.ScanArrow(ctx, WithScanStats(&st))
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for rr.Next() {
		if got := rr.RecordBatch().NumRows(); got != scan.ArrowBatchRows {
			t.Errorf("batch of %d rows, want %d", got, scan.ArrowBatchRows)
		}
		n += rr.RecordBatch().NumRows()
	}
	rr.Release()
	if rr.Err() != nil || n != int64(len(rows)) || st.RowsReturned != n {
		t.Errorf("full read: %d rows, Err %v, stats %+v", n, rr.Err(), st)
	}
	rr, _ = tbl.ScanArrow(ctx)
	if !rr.Next() {
		t.Fatal(rr.Err())
	}
	rr.Release() // must not hang or leak the producer
}
