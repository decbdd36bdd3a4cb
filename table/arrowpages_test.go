package table

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// pageTable is a 1-file table of 40,000 rows in two row groups, written
// with pages of about 1 KiB (page indexes): id and s sorted, n null in
// rows [20000, 30000) and set elsewhere, day sorted; a deletion vector
// deletes ids below 40 and every id ≡ 3 (mod 100) in [5000, 6000).
func pageTable(t *testing.T) *Table {
	t.Helper()
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", prim(schema.String), true),
		field("n", prim(schema.Integer), true), field("day", prim(schema.Date), true), field("x", prim(schema.Double), true))
	tbl, err := Create(ctx, t.TempDir(), sch, WithProperties(dvProps))
	if err != nil {
		t.Fatal(err)
	}
	var rows []value.Row
	for i := range 40000 {
		var n any = int32(i % 100)
		if i >= 20000 && i < 30000 {
			n = nil
		}
		rows = append(rows, value.Row{int64(i), fmt.Sprintf("k%06d", i), n, value.Date(i / 400), float64(i%1000) / 10})
	}
	if tbl, err = tbl.AppendRows(ctx, rows, WithParquetOptions(parquetio.WithRowGroupRows(20000), parquetio.WithPageSize(1024))); err != nil {
		t.Fatal(err)
	}
	del := Or(Col("id").Lt(int64(40)), And(Col("id").Ge(int64(5000)), Col("id").Lt(int64(6000)), Col("n").Eq(int32(3))))
	if tbl, _, err = tbl.Delete(ctx, del); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestScanArrowPageIndex: filters whose page statistics rule out most
// pages of a sorted column skip them (PagesSkipped > 0) and yield the rows
// of Scan and of ScanArrow with page skipping off, with the same RowsRead
// and RowsDeleted (the deletion vector applied by file row), sequentially
// and in stripes; filters no page can disprove skip nothing.
func TestScanArrowPageIndex(t *testing.T) {
	tbl := pageTable(t)
	cases := []struct {
		filter   string
		cols     []string
		wantRows int
		wantSkip bool
	}{
		{"id >= 5000 AND id < 5300", nil, 300 - 3, true},
		{"id < 1000", []string{"s", "x"}, 960, true},
		{"id < 100 OR id > 39900", []string{"id"}, 60 + 99, true},
		{"s = 'k012345'", []string{"id", "n"}, 1, true},
		{"s >= 'k039990' AND x > 95", nil, 10, true},
		{"day = DATE '1970-01-31'", []string{"id", "day"}, 400, true},
		{"n IS NULL", []string{"id"}, 10000, true},
		{"n IS NOT NULL AND id >= 19990 AND id < 30010", []string{"id", "n"}, 20, true},
		{"n IS NULL AND n = 3", nil, 0, true},
		{"id >= 0", []string{"id"}, 40000 - 50, false},
		{"x > 50", []string{"id"}, -1, false}, // a double: no trusted bounds
		{"n = 7", []string{"id"}, 299, true},  // the nulls-only pages
	}
	for _, c := range cases {
		t.Run(c.filter, func(t *testing.T) {
			e, err := ParsePredicate(c.filter, tbl.Schema())
			if err != nil {
				t.Fatal(err)
			}
			opts := []ScanOption{WithFilter(e)}
			if c.cols != nil {
				opts = append(opts, WithColumns(c.cols...))
			}
			n := checkArrowMatchesScan(t, tbl, opts...)
			if c.wantRows >= 0 && n != c.wantRows {
				t.Errorf("%d rows, want %d", n, c.wantRows)
			}
			var on, off, rst ScanStats
			seq := arrowBatchList(t, tbl, append(opts, WithScanStats(&on), withArrowTuning(scan.ArrowTuning{Batch: 256, Stripe: 2, Workers: 1}))...)
			defer releaseBatches(seq)
			par := arrowBatchList(t, tbl, append(opts, withArrowTuning(scan.ArrowTuning{Batch: 256, Stripe: 2, Workers: 3}))...)
			defer releaseBatches(par)
			sameBatches(t, par, seq)
			all := arrowBatchList(t, tbl, append(opts, WithScanStats(&off), withArrowTuning(scan.ArrowTuning{Batch: 256, Stripe: 2, Workers: 1, NoPageIndex: true}))...)
			defer releaseBatches(all)
			if rowsOf(t, seq) != rowsOf(t, all) {
				t.Errorf("rows with page skipping differ from the rows without")
			}
			for _, err := range tbl.Scan(context.Background(), append(opts, WithScanStats(&rst))...) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if (on.PagesSkipped > 0) != c.wantSkip || (on.RowsPageSkipped > 0) != c.wantSkip || off.PagesSkipped != 0 || on.FilesColumnar != 1 {
				t.Errorf("stats %+v: want pages skipped %v, one columnar file; with skipping off %+v", on, c.wantSkip, off)
			}
			if on.RowsRead != rst.RowsRead || on.RowsDeleted != rst.RowsDeleted || on.RowsReturned != rst.RowsReturned ||
				off.RowsRead != rst.RowsRead || off.RowsDeleted != rst.RowsDeleted {
				t.Errorf("rows read/deleted/returned %d/%d/%d (skipping off %d/%d), Scan %d/%d/%d",
					on.RowsRead, on.RowsDeleted, on.RowsReturned, off.RowsRead, off.RowsDeleted, rst.RowsRead, rst.RowsDeleted, rst.RowsReturned)
			}
		})
	}
}

// TestScanArrowPageIndexLimit: a limit ending the scan inside the kept
// spans yields Scan's rows.
func TestScanArrowPageIndexLimit(t *testing.T) {
	tbl := pageTable(t)
	for _, limit := range []int64{1, 150, 1000} {
		filter := Or(Col("id").Lt(int64(300)), And(Col("id").Ge(int64(5000)), Col("id").Lt(int64(5500))))
		opts := []ScanOption{WithFilter(filter), WithLimit(limit), withArrowTuning(scan.ArrowTuning{Batch: 100, Stripe: 2, Workers: 2})}
		if n := checkArrowMatchesScan(t, tbl, opts...); int64(n) != min(limit, 260+495) {
			t.Errorf("limit %d: %d rows", limit, n)
		}
	}
}

// rowsOf renders batches' rows as text, for comparison.
func rowsOf(t *testing.T, recs []arrow.RecordBatch) string {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			for c := 0; c < int(r.NumCols()); c++ {
				fmt.Fprintf(&buf, "%v,", r.Column(c).GetOneForMarshal(i))
			}
			buf.WriteByte('\n')
		}
	}
	return buf.String()
}

// TestScanArrowNoPageIndex: a file written without page indexes (arrow-go's
// default), in small pages, reads through the columnar path as before,
// with row groups skipped by their statistics and no page skipped.
func TestScanArrowNoPageIndex(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("s", prim(schema.String), true))
	f := newScanFixture(t, sch, nil, nil, nil)
	asch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 5000 {
		ib.Append(int64(i))
		sb.Append(fmt.Sprintf("k%05d", i))
	}
	ids, ss := ib.NewArray(), sb.NewArray()
	rec := array.NewRecordBatch(asch, []arrow.Array{ids, ss}, 5000)
	ids.Release()
	ss.Release()
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithDataPageSize(512), parquet.WithBatchSize(64), parquet.WithMaxRowGroupLength(1000))
	w, err := pqarrow.NewFileWriter(asch, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rdr, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if cc, err := rdr.MetaData().RowGroup(0).ColumnChunk(0); err != nil || cc.GetColumnIndexLocation() != nil || cc.GetOffsetIndexLocation() != nil {
		t.Fatalf("the file has a page index (%v): the test needs none", err)
	}
	if err := f.store.PutIfAbsent(ctx, "part-0.parquet", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	f.commit(&txlog.Add{Path: "part-0.parquet", PartitionValues: map[string]string{}, Size: int64(buf.Len()),
		ModificationTime: 1, DataChange: true})
	tbl := f.open()
	for _, c := range []struct {
		filter string
		rows   int
		rg     int
	}{
		{"id >= 1500 AND id < 1600", 100, 4},
		{"s = 'k04321'", 1, 4},
	} {
		e, err := ParsePredicate(c.filter, tbl.Schema())
		if err != nil {
			t.Fatal(err)
		}
		n := checkArrowMatchesScan(t, tbl, WithFilter(e))
		var st ScanStats
		releaseBatches(arrowBatchList(t, tbl, WithFilter(e), WithScanStats(&st)))
		if n != c.rows || st.RowGroupsSkipped != c.rg || st.PagesSkipped != 0 || st.RowsPageSkipped != 0 || st.FilesColumnar != 1 {
			t.Errorf("%s: %d rows, stats %+v; want %d rows, %d row groups skipped, no page", c.filter, n, st, c.rows, c.rg)
		}
	}
}
