package table

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/value"
)

// The columnar path with row groups skipped by their Parquet statistics
// in a file with a deletion vector, a partition column, a projection and
// limits: the rows and the ScanStats (RowsRead and RowsDeleted count the
// skipped row groups as the row scan does) are Scan's.
func TestScanArrowRowGroupsAndDeletionVectors(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", prim(schema.String), true),
		field("p", prim(schema.Integer), true), field("day", prim(schema.Date), true))
	tbl, err := Create(ctx, t.TempDir(), sch, WithPartitionColumns("p"), WithProperties(dvProps))
	if err != nil {
		t.Fatal(err)
	}
	var rows []value.Row
	for i := range 10000 {
		var s any = fmt.Sprintf("s%05d", i)
		if i%7 == 0 {
			s = nil
		}
		rows = append(rows, value.Row{int64(i), s, int32(i % 2), value.Date(i / 100)})
	}
	// Row groups of 1,000 rows, sorted by id: the filter on id rules
	// most of them out by their min/max.
	if tbl, err = tbl.AppendRows(ctx, rows, WithParquetOptions(parquetio.WithRowGroupRows(1000))); err != nil {
		t.Fatal(err)
	}
	if tbl, _, err = tbl.Delete(ctx, Or(Col("id").Lt(int64(300)), Col("id").Gt(int64(9500)))); err != nil {
		t.Fatal(err)
	}
	for a := range tbl.Snapshot().AllFiles() {
		if a.DeletionVector == nil {
			t.Fatalf("file %s has no deletion vector: the test needs one", a.Path)
		}
	}
	cases := []struct {
		filter   string
		cols     []string
		limit    int64
		wantRG   int
		wantRows int
	}{
		// Two files (p = 0, 1) of five row groups each.
		{"id >= 4100 AND id < 4300", nil, 0, 8, 200},
		{"id > 9000", []string{"s", "p"}, 0, 8, 500},
		{"s = 's05000'", []string{"id"}, 0, 8, 1},
		{"day = DATE '1970-01-31'", nil, 0, 8, 100},
		{"id < 2000 AND p = 1", nil, 30, 0, 30}, // the limit ends the first file: not counted
		{"s IS NULL", nil, 0, 0, 1315},
		{"", []string{"day", "id"}, 0, 0, 9201},
	}
	for _, c := range cases {
		t.Run(c.filter, func(t *testing.T) {
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
			var ast, rst ScanStats
			n := checkArrowMatchesScan(t, tbl, opts...)
			if _, err := arrowRows(t, tbl, append(opts, WithScanStats(&ast))...); err != nil {
				t.Fatal(err)
			}
			for _, err := range tbl.Scan(ctx, append(opts, WithScanStats(&rst))...) {
				if err != nil {
					t.Fatal(err)
				}
			}
			if n != c.wantRows || ast.RowGroupsSkipped != c.wantRG || ast.FilesColumnar != ast.FilesRead {
				t.Errorf("%d rows, %d row groups skipped, %d of %d files columnar; want %d rows, %d skipped, all",
					n, ast.RowGroupsSkipped, ast.FilesColumnar, ast.FilesRead, c.wantRows, c.wantRG)
			}
			if ast != rst {
				t.Errorf("ScanArrow stats %+v, Scan stats %+v", ast, rst)
			}
		})
	}
}

// The filter is evaluated on its own columns first and the other columns
// are decoded only for the span of rows it keeps (seeking with the page
// index), in files of many pages and dictionary-encoded strings; the typed
// filter loops agree with the row scan on nulls, NaN, IN, NOT IN, OR,
// timestamps with a sub-microsecond literal and bytes.
func TestScanArrowLateColumns(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", prim(schema.String), true),
		field("f", prim(schema.Double), true), field("ts", prim(schema.Timestamp), true),
		field("b", prim(schema.Binary), true), field("n", prim(schema.Integer), true), field("ok", prim(schema.Boolean), true))
	tbl, err := Create(ctx, t.TempDir(), sch)
	if err != nil {
		t.Fatal(err)
	}
	var rows []value.Row
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 150000 {
		var f any = float64(i % 1000)
		switch {
		case i%997 == 0:
			f = math.NaN()
		case i%13 == 0:
			f = nil
		}
		var n any = int32(i % 50)
		if i%11 == 0 {
			n = nil
		}
		rows = append(rows, value.Row{int64(i), fmt.Sprintf("v%02d", i%40), f, base.Add(time.Duration(i) * time.Second),
			[]byte{byte(i % 256)}, n, i%3 == 0})
	}
	if tbl, err = tbl.AppendRows(ctx, rows, WithParquetOptions(parquetio.WithPageSize(4096), parquetio.WithDictionary(true))); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		filter   string
		cols     []string
		wantRows int
		wantLate bool // some rows' other columns were not decoded
	}{
		{"id = 7 OR id = 149999", nil, 2, true},
		{"id IN (5, 70000, 140001)", []string{"s", "ts"}, 3, true},
		{"s = 'v07' AND id > 149000", nil, 25, true},
		{"f > 998.5", []string{"id", "s"}, 139, true},
		{"f != 1", []string{"id"}, -1, false},
		{"NOT f < 999", []string{"id"}, -1, true},
		{"n IS NULL AND id < 100", []string{"id", "s", "ts", "b", "n", "ok"}, 10, true},
		{"n NOT IN (1, 2, 3) AND id < 60", []string{"id", "s"}, -1, true},
		{"ts > TIMESTAMP '2024-01-01T00:00:10.0000001Z' AND ts <= TIMESTAMP '2024-01-01T00:00:20Z'", nil, 10, true},
		{"b = 7", []string{"id", "b"}, -1, true},
		{"s >= 'v39'", []string{"id", "ok"}, 3750, true},
	}
	for _, c := range cases {
		t.Run(c.filter, func(t *testing.T) {
			e, err := ParsePredicate(c.filter, tbl.Schema())
			if c.filter == "b = 7" {
				e, err = And(Col("b").Eq([]byte{7}), Col("ok").Eq(true)), nil
			}
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
			var st ScanStats
			if _, err := arrowRows(t, tbl, append(opts, WithScanStats(&st))...); err != nil {
				t.Fatal(err)
			}
			if (st.RowsLateSkipped > 0) != c.wantLate || st.FilesColumnar != 1 {
				t.Errorf("stats %+v: want late-skipped rows %v, one columnar file", st, c.wantLate)
			}
		})
	}
}

// Struct, array and map columns take the columnar path when pqarrow's
// Arrow type is the scan's, with a filter on a struct field (evaluated
// boxed) and the other columns decoded late; the rows are Scan's.
func TestScanArrowNestedColumnar(t *testing.T) {
	ctx := context.Background()
	st := schema.NewStruct(field("x", prim(schema.Long), true), field("y", prim(schema.String), true))
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("st", st, true),
		field("arr", &schema.ArrayType{ElementType: prim(schema.Integer), ContainsNull: true}, true),
		field("m", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Double), ValueContainsNull: true}, true))
	tbl, err := Create(ctx, t.TempDir(), sch)
	if err != nil {
		t.Fatal(err)
	}
	var rows []value.Row
	for i := range 5000 {
		var s, arr, m any = value.Row{int64(i), fmt.Sprintf("y%d", i%10)}, []any{int32(i), nil, int32(-i)},
			[]value.MapEntry{{Key: "a", Value: float64(i)}, {Key: "b", Value: nil}}
		if i%7 == 0 {
			s, arr, m = nil, nil, nil
		}
		rows = append(rows, value.Row{int64(i), s, arr, m})
	}
	if tbl, err = tbl.AppendRows(ctx, rows, WithParquetOptions(parquetio.WithPageSize(2048))); err != nil {
		t.Fatal(err)
	}
	for _, filter := range []string{"", "st.x > 4990", "id < 20 AND st IS NULL"} {
		t.Run(filter, func(t *testing.T) {
			var opts []ScanOption
			if filter != "" {
				e, err := ParsePredicate(filter, tbl.Schema())
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, WithFilter(e))
			}
			checkArrowMatchesScan(t, tbl, opts...)
			var ss ScanStats
			if _, err := arrowRows(t, tbl, append(opts, WithScanStats(&ss))...); err != nil {
				t.Fatal(err)
			}
			if ss.FilesColumnar != 1 {
				t.Errorf("stats %+v: want the file read column by column", ss)
			}
		})
	}
}

// countingStore counts a store's Gets.
type countingStore struct {
	objectstore.Store
	gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key, r)
}

// TestTailReaderAtWholeSmallObject: an object of at most wholeObject bytes
// is read by one Get whatever ranges are read of it (footer, chunks); a
// larger one's chunks are ranged Gets besides the tail's; the bytes are
// the object's either way, and reads past the end say io.EOF.
func TestTailReaderAtWholeSmallObject(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		size     int
		wantGets int64
	}{{1000, 1}, {scan.WholeObject, 1}, {scan.WholeObject + 1, 3}} {
		st := &countingStore{Store: objectstore.NewMem("t")}
		data := make([]byte, tc.size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		if err := st.Put(ctx, "f", data); err != nil {
			t.Fatal(err)
		}
		ra := scan.NewTailReaderAt(ctx, st, "f", int64(tc.size))
		for _, r := range []struct{ off, n int }{{tc.size - 8, 8}, {0, 100}, {tc.size / 2, 50}, {tc.size - 200, 100}} {
			p := make([]byte, r.n)
			if n, err := ra.ReadAt(p, int64(r.off)); n != r.n || err != nil {
				t.Fatalf("size %d: ReadAt(%d, %d) = %d, %v", tc.size, r.off, r.n, n, err)
			}
			if !bytes.Equal(p, data[r.off:r.off+r.n]) {
				t.Fatalf("size %d: ReadAt(%d, %d): wrong bytes", tc.size, r.off, r.n)
			}
		}
		if n, err := ra.ReadAt(make([]byte, 10), int64(tc.size-4)); n != 4 || err != io.EOF {
			t.Errorf("size %d: ReadAt past the end = %d, %v; want 4, EOF", tc.size, n, err)
		}
		if got := st.gets.Load(); got != tc.wantGets {
			t.Errorf("size %d: %d Gets, want %d", tc.size, got, tc.wantGets)
		}
	}
}
