package ingest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// arrowCases are the schemas of the columnar read tests, with a row
// maker (i: the row's index in the file) that puts nulls in nullable
// columns.
var arrowCases = []struct {
	name string
	sch  *schema.StructType
	row  func(i int) value.Row
	ok   bool // ArrowSchema's ok
}{
	{"primitives with nulls", schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("i", schema.Primitive(schema.Integer), true),
		schema.NewField("sh", schema.Primitive(schema.Short), true),
		schema.NewField("b", schema.Primitive(schema.Byte), true),
		schema.NewField("ok", schema.Primitive(schema.Boolean), true),
		schema.NewField("f", schema.Primitive(schema.Float), true),
		schema.NewField("x", schema.Primitive(schema.Double), true),
		schema.NewField("s", schema.Primitive(schema.String), true),
		schema.NewField("bin", schema.Primitive(schema.Binary), true),
	), func(i int) value.Row {
		if i%3 == 1 {
			return value.Row{int64(i), nil, nil, nil, nil, nil, nil, nil, nil}
		}
		return value.Row{int64(i), int32(i * 7), int16(i), int8(i % 100), i%2 == 0, float32(i) / 2, float64(i) / 3, fmt.Sprintf("s%04d", i%37), []byte{byte(i), 0, 1}}
	}, true},
	{"timestamps and dates", schema.NewStruct(
		schema.NewField("ts", schema.Primitive(schema.Timestamp), true),
		schema.NewField("ntz", schema.Primitive(schema.TimestampNTZ), true),
		schema.NewField("d", schema.Primitive(schema.Date), true),
	), func(i int) value.Row {
		if i%5 == 0 {
			return value.Row{nil, nil, nil}
		}
		ts := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 1001 * time.Microsecond * 1000)
		return value.Row{ts, ts.Add(-time.Hour), value.Date(11000 + i)}
	}, true},
	{"decimals", schema.NewStruct(
		schema.NewField("small", &schema.DecimalType{Precision: 9, Scale: 2}, true),
		schema.NewField("mid", &schema.DecimalType{Precision: 18, Scale: 4}, true),
		schema.NewField("big", &schema.DecimalType{Precision: 38, Scale: 10}, false),
	), func(i int) value.Row {
		if i%4 == 3 {
			return value.Row{nil, nil, value.NewDecimal(int64(-i), 10)}
		}
		return value.Row{value.NewDecimal(int64(i*101), 2), value.NewDecimal(int64(i)*1_000_003, 4), value.NewDecimal(int64(i)*99_999_999_999, 10)}
	}, true},
	{"nested (rows only)", schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("tags", &schema.ArrayType{ElementType: schema.Primitive(schema.String), ContainsNull: true}, true),
	), func(i int) value.Row { return value.Row{int64(i), []any{"a"}} }, false},
}

// writeParquet writes n rows of row to path, in row groups of 50 rows,
// with arrow-go's writer (pages without CRC checksums, as pyarrow and
// Polars write them by default).
func writeParquet(t *testing.T, path string, sch *schema.StructType, from, n int, row func(int) value.Row) {
	t.Helper()
	rb, err := arrowio.NewRecordBuilder(memory.DefaultAllocator, sch)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Release()
	for i := range n {
		if err := rb.Append(row(from + i)); err != nil {
			t.Fatal(err)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(50)), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeChecksummed writes rows as parquetio does (pages with CRCs).
func writeChecksummed(t *testing.T, path string, sch *schema.StructType, rows []value.Row) {
	t.Helper()
	var buf bytes.Buffer
	w, err := parquetio.NewWriter(&buf, sch)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestArrowSchemaRefusesChecksummedPages: pqarrow does not verify page
// CRCs, so a file that has them is read with Rows (which does).
func TestArrowSchemaRefusesChecksummedPages(t *testing.T) {
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	dir := t.TempDir()
	writeChecksummed(t, filepath.Join(dir, "a.parquet"), sch, []value.Row{{int64(1)}, {nil}})
	src, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.ArrowSchema(); ok {
		t.Error("ArrowSchema ok for a file with page checksums")
	}
	writeParquet(t, filepath.Join(dir, "a.parquet"), sch, 0, 2, func(i int) value.Row { return value.Row{int64(i)} })
	if src, err = Open(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if _, ok := src.ArrowSchema(); !ok {
		t.Error("ArrowSchema not ok for a file without page checksums")
	}
}

// TestArrowBatchesMatchRows: the columnar read of Parquet files yields the
// values Rows yields, in groups of exactly n rows, across row groups and
// files, after skip and up to limit; sources it cannot read exactly say
// so.
func TestArrowBatchesMatchRows(t *testing.T) {
	ctx := context.Background()
	for _, tc := range arrowCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeParquet(t, filepath.Join(dir, "a.parquet"), tc.sch, 0, 130, tc.row)
			writeParquet(t, filepath.Join(dir, "b.parquet"), tc.sch, 130, 70, tc.row)
			src, err := Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			asch, ok := src.ArrowSchema()
			if ok != tc.ok {
				t.Fatalf("ArrowSchema ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if got, err := arrowio.DeltaSchema(asch); err != nil || got.String() != src.Schema().String() {
				t.Fatalf("Arrow schema %s is Delta %v (%v), want %s", asch, got, err, src.Schema())
			}
			for _, c := range []struct {
				skip, limit int64
				n           int
			}{{0, 0, 1000}, {0, 0, 64}, {0, 0, 1}, {49, 0, 33}, {130, 0, 50}, {131, 0, 7}, {10, 150, 40}, {0, 200, 200}, {200, 0, 10}, {5, 5, 10}} {
				var want []string
				for r, err := range src.Rows(ctx, c.skip) {
					if err != nil {
						t.Fatal(err)
					}
					if c.limit > 0 && int64(len(want))+c.skip >= c.limit {
						break
					}
					want = append(want, fmt.Sprintf("%#v", r))
				}
				var got []string
				var sizes []int
				for recs, err := range src.ArrowBatches(ctx, c.skip, c.limit, c.n) {
					if err != nil {
						t.Fatal(err)
					}
					size := 0
					for _, rec := range recs {
						if !rec.Schema().Equal(asch) {
							t.Fatalf("batch schema %s, want %s", rec.Schema(), asch)
						}
						rows, err := arrowio.Rows(rec)
						if err != nil {
							t.Fatal(err)
						}
						for _, r := range rows {
							got = append(got, fmt.Sprintf("%#v", r))
						}
						size += int(rec.NumRows())
					}
					sizes = append(sizes, size)
				}
				for k, s := range sizes {
					if s != c.n && (k != len(sizes)-1 || s > c.n || s == 0) {
						t.Errorf("%+v: group sizes %v, want groups of %d", c, sizes, c.n)
						break
					}
				}
				if len(got) != len(want) {
					t.Fatalf("%+v: %d rows column-wise, %d row by row", c, len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%+v: row %d column-wise %s, row by row %s", c, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// ArrowBatches resumes inside a file whose column chunks do not list their
// dictionary page (vega-datasets' flights-3m.parquet, written by Polars):
// the rows after skip are the row reader's, wherever skip falls.
func TestArrowBatchesResumeUnlistedDictionary(t *testing.T) {
	path := os.Getenv("DELTAKIT_FLIGHTS_PARQUET")
	if path == "" {
		testsupport.Absent(t, "set DELTAKIT_FLIGHTS_PARQUET to vega-datasets' data/flights-3m.parquet (scripts/test.sh does, after scripts/fetch-demo-data.sh)")
	}
	ctx := context.Background()
	src, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, ok := src.ArrowSchema(); !ok {
		t.Fatal("no Arrow schema for the flights file")
	}
	const n = 3000
	for _, skip := range []int64{1, 100_000, 1_048_575, 1_048_576, 2_000_001, 2_999_000} {
		var want []string
		for r, err := range src.Rows(ctx, skip) {
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == n {
				break
			}
			want = append(want, fmt.Sprintf("%#v", r))
		}
		var got []string
		for recs, err := range src.ArrowBatches(ctx, skip, skip+n, 1000) {
			if err != nil {
				t.Fatalf("skip %d: %v", skip, err)
			}
			for _, rec := range recs {
				rows, err := arrowio.Rows(rec)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					got = append(got, fmt.Sprintf("%#v", r))
				}
			}
		}
		if len(want) != min(n, 3_000_000-int(skip)) || !slices.Equal(got, want) {
			t.Errorf("skip %d: %d rows, want %d; first got %.80q, want %.80q", skip, len(got), len(want), first(got), first(want))
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
