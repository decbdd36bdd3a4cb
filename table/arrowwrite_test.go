package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// arrowReaderOf builds a RecordReader over rows of sch, in batches of at
// most batch rows.
func arrowReaderOf(t testing.TB, sch *schema.StructType, rows []value.Row, batch int) array.RecordReader {
	t.Helper()
	rb, err := arrowio.NewRecordBuilder(nil, sch)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Release()
	var recs []arrow.RecordBatch
	for i, r := range rows {
		if err := rb.Append(r); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if rb.Len() == batch {
			recs = append(recs, rb.NewRecordBatch())
		}
	}
	if rb.Len() > 0 {
		recs = append(recs, rb.NewRecordBatch())
	}
	rr, err := array.NewRecordReader(rb.Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Release()
	}
	t.Cleanup(rr.Release)
	return rr
}

// addStats returns the commit's adds as (partition values, stats JSON,
// numRecords), sorted, ignoring file names and sizes' exact bytes.
func addSummaries(t testing.TB, tbl *Table) []string {
	t.Helper()
	var out []string
	for a := range tbl.Snapshot().AllFiles() {
		pv, _ := json.Marshal(a.PartitionValues)
		out = append(out, string(pv)+" "+a.Stats)
	}
	slices.Sort(out)
	return out
}

// relax makes every column nullable (an Arrow stream's fields usually are),
// keeping NOT NULL where keep names the column.
func relax(s *schema.StructType, keep ...string) *schema.StructType {
	out := &schema.StructType{}
	for _, f := range s.Fields {
		g := *f
		g.Nullable = f.Nullable || !slices.Contains(keep, f.Name)
		out.Fields = append(out.Fields, &g)
	}
	return out
}

func TestAppendArrowStatsMatchRowPath(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		sch   *schema.StructType
		rows  []value.Row
		parts []string
	}{
		{"every type", interopTypesSchema(), interopTypesRows(0, 300), nil},
		{"partitioned", interopPartSchema(), append(interopPartRows(0), interopPartRows(10)...), []string{"p", "day", "n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var copts []Option
			if tc.parts != nil {
				copts = append(copts, WithPartitionColumns(tc.parts...))
			}
			viaRows := newMemTable(t, tc.sch, copts...)
			viaArrow := newMemTable(t, tc.sch, copts...)
			wr, err := viaRows.AppendRows(ctx, tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			// Arrow fields nullable as pyarrow makes them: the NOT NULL
			// columns are checked on the values.
			wa, err := viaArrow.AppendArrow(ctx, arrowReaderOf(t, relax(tc.sch), tc.rows, 64))
			if err != nil {
				t.Fatal(err)
			}
			if wa.Schema().String() != tc.sch.String() {
				t.Errorf("schema changed to %s", wa.Schema())
			}
			got, want := addSummaries(t, wa), addSummaries(t, wr)
			if len(got) == 0 || !slices.Equal(got, want) {
				t.Errorf("adds differ:\n arrow %v\n rows  %v", got, want)
			}
			assertRows(t, readAllRows(t, wa), readAllRows(t, wr))
			// Overwrite replaces them with the first half.
			half := tc.rows[:len(tc.rows)/2]
			wo, err := wa.OverwriteArrow(ctx, arrowReaderOf(t, tc.sch, half, 1000))
			if err != nil {
				t.Fatal(err)
			}
			ro, err := wr.OverwriteRows(ctx, half)
			if err != nil {
				t.Fatal(err)
			}
			assertRows(t, readAllRows(t, wo), readAllRows(t, ro))
			if got, want := addSummaries(t, wo), addSummaries(t, ro); !slices.Equal(got, want) {
				t.Errorf("overwrite adds differ:\n arrow %v\n rows  %v", got, want)
			}
		})
	}
}

func TestAppendArrowColumnsByNameAndEvolution(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", prim(schema.String), true))
	tbl := newMemTable(t, sch)
	// Columns in another order, s absent from the second write.
	in := schema.NewStruct(field("s", prim(schema.String), true), field("id", prim(schema.Long), true))
	tbl, err := tbl.AppendArrow(ctx, arrowReaderOf(t, in, []value.Row{{"a", int64(1)}, {nil, int64(2)}}, 1))
	if err != nil {
		t.Fatal(err)
	}
	// A new column: refused without evolution, added with it.
	wide := schema.NewStruct(field("id", prim(schema.Long), true), field("extra", prim(schema.Integer), true))
	if _, err := tbl.AppendArrow(ctx, arrowReaderOf(t, wide, []value.Row{{int64(3), int32(30)}}, 8)); !errors.Is(err, ErrSchemaMismatch) ||
		!strings.Contains(err.Error(), "extra") {
		t.Fatalf("new column without evolution: %v", err)
	}
	tbl, err = tbl.AppendArrow(ctx, arrowReaderOf(t, wide, []value.Row{{int64(3), int32(30)}}, 8), WithSchemaEvolution())
	if err != nil {
		t.Fatal(err)
	}
	if f := tbl.Schema().Field("extra"); f == nil || f.Type.String() != schema.Integer {
		t.Fatalf("schema after evolution: %s", tbl.Schema())
	}
	assertRows(t, readAllRows(t, tbl), []value.Row{{int64(1), "a", nil}, {int64(2), nil, nil}, {int64(3), nil, int32(30)}})
	// Input-only Arrow types: large_string, timestamp[ns, tz].
	tsch := schema.NewStruct(field("ts", prim(schema.Timestamp), true), field("name", prim(schema.String), true))
	tt := newMemTable(t, tsch)
	asch := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
	defer b.Release()
	// Whole microseconds: a nanosecond remainder is refused
	// (TestAppendArrowTimestampUnits).
	when := time.Date(2024, 3, 1, 12, 0, 0, 123456000, time.UTC)
	b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(when.UnixNano()))
	b.Field(1).(*array.LargeStringBuilder).Append("x")
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, _ := array.NewRecordReader(asch, []arrow.RecordBatch{rec})
	defer rr.Release()
	tt, err = tt.AppendArrow(ctx, rr)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, tt), []value.Row{{when, "x"}})
}

func TestAppendArrowRefusals(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", prim(schema.String), true),
		field("d", &schema.DecimalType{Precision: 4, Scale: 2}, true))
	rows := make([]value.Row, 10)
	for i := range rows {
		rows[i] = value.Row{int64(i + 1), "x", value.NewDecimal(int64(i), 2)}
	}
	nullAt7 := slices.Clone(rows)
	nullAt7[7] = value.Row{nil, "x", nil}
	uint32Schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Uint32}}, nil)
	tests := []struct {
		name   string
		reader func(t *testing.T) array.RecordReader
		is     error
		want   []string // substrings of the error
		row    int      // RowError.Row, -1 for none
	}{
		{"null in NOT NULL, third batch", func(t *testing.T) array.RecordReader {
			return arrowReaderOf(t, relax(sch), nullAt7, 3)
		}, errNotNull, []string{`column "id"`, "row 7"}, 7},
		{"type mismatch", func(t *testing.T) array.RecordReader {
			in := schema.NewStruct(field("id", prim(schema.String), true))
			return arrowReaderOf(t, in, []value.Row{{"1"}}, 8)
		}, ErrSchemaMismatch, []string{"id", "string"}, -1},
		{"decimal too wide", func(t *testing.T) array.RecordReader {
			in := schema.NewStruct(field("id", prim(schema.Long), false), field("d", &schema.DecimalType{Precision: 10, Scale: 2}, true))
			return arrowReaderOf(t, in, []value.Row{{int64(1), value.NewDecimal(1, 2)}, {int64(2), value.NewDecimal(123456, 2)}}, 8)
		}, ErrInvalidArgument, []string{`column "d"`, "1234.56"}, 1},
		{"unsupported arrow type", func(t *testing.T) array.RecordReader {
			b := array.NewRecordBuilder(memory.DefaultAllocator, uint32Schema)
			defer b.Release()
			b.Field(0).(*array.Uint32Builder).Append(1)
			rec := b.NewRecordBatch()
			defer rec.Release()
			rr, _ := array.NewRecordReader(uint32Schema, []arrow.RecordBatch{rec})
			t.Cleanup(rr.Release)
			return rr
		}, arrowio.ErrUnsupportedType, []string{"id", "uint32"}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl := newMemTable(t, sch)
			for _, write := range []func() (*Table, error){
				func() (*Table, error) { return tbl.AppendArrow(ctx, tc.reader(t)) },
				func() (*Table, error) { return tbl.OverwriteArrow(ctx, tc.reader(t)) },
			} {
				_, err := write()
				if !errors.Is(err, tc.is) {
					t.Fatalf("err %v, want %v", err, tc.is)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				var re *RowError
				if got := errors.As(err, &re); got != (tc.row >= 0) || got && re.Row != tc.row {
					t.Errorf("RowError %v, want row %d", re, tc.row)
				}
				if n := len(dataKeys(t, tbl.Store())); n != 0 {
					t.Errorf("%d data files written", n)
				}
				if nt, _ := tbl.Refresh(ctx); nt.Version() != tbl.Version() {
					t.Errorf("version %d after a refused write, was %d", nt.Version(), tbl.Version())
				}
			}
		})
	}
}

func TestAppendArrowCheckConstraints(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("s", prim(schema.String), true))
	dir := t.TempDir()
	tbl, err := Create(ctx, dir, sch, WithProperties(map[string]string{"delta.constraints.idpos": "id > 0"}))
	if err != nil {
		t.Fatal(err)
	}
	rows := []value.Row{{int64(1), "a"}, {int64(2), "b"}, {int64(-3), "c"}}
	before := countFiles(t, dir)
	_, err = tbl.AppendArrow(ctx, arrowReaderOf(t, sch, rows, 2))
	var cv *ConstraintViolationError
	if !errors.As(err, &cv) || cv.Name != "idpos" || cv.Row != 2 || !slices.Equal(cv.Values, []string{"id => -3"}) {
		t.Fatalf("append of a violating row: %v (%+v)", err, cv)
	}
	if n := countFiles(t, dir); n != before {
		t.Errorf("%d files after a refused write, %d before", n, before)
	}
	if _, err := tbl.AppendArrow(ctx, arrowReaderOf(t, sch, rows[:2], 2)); err != nil {
		t.Fatal(err)
	}
}

// The empty and nil readers commit a version without files, as AppendRows
// of no rows does; a reader's error fails the write naming it.
func TestAppendArrowEmptyAndFailingReader(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), true))
	tbl := newMemTable(t, sch)
	nt, err := tbl.AppendArrow(ctx, arrowReaderOf(t, sch, nil, 8))
	if err != nil || nt.Version() != tbl.Version()+1 || nt.Snapshot().NumFiles() != 0 {
		t.Fatalf("empty reader: %v, version %d", err, nt.Version())
	}
	boom := errors.New("boom")
	_, err = nt.AppendArrow(ctx, &failingReader{RecordReader: arrowReaderOf(t, sch, []value.Row{{int64(1)}}, 8), err: boom})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "reading batches") {
		t.Fatalf("failing reader: %v", err)
	}
	if n := len(dataKeys(t, tbl.Store())); n != 0 {
		t.Errorf("%d data files written", n)
	}
}

type failingReader struct {
	array.RecordReader
	err error
}

func (f *failingReader) Err() error { return f.err }

// delta-rs and pyarrow read an Arrow-written table to the rows deltakit
// wrote: delta-rs's to_pyarrow_table() goes back through an IPC file into
// arrowio.Rows and is compared cell by cell with Scan (nested types,
// partitions: the row path); pyarrow.parquet reads every data file with
// the add's numRecords. For the column-by-column writer (unpartitioned
// primitives with nulls, timestamps, dates, strings) and for decimals,
// delta-rs's read and pyarrow's read of the data files are compared with
// the input rows the batches were built from, not with deltakit's scan.
func TestAppendArrowInterop(t *testing.T) {
	py := testsupport.Python(t)
	ctx := context.Background()
	root := t.TempDir()
	cases := []struct {
		name  string
		sch   *schema.StructType
		rows  []value.Row
		parts []string
		// columnar: the column-by-column writer must take the batches;
		// delta-rs's read and pyarrow's read of the data files are then
		// compared with the input rows, not with deltakit's scan.
		columnar, rowPath bool
		batch             int
	}{
		{name: "types", sch: interopTypesSchema(), rows: interopTypesRows(0, 200), batch: 50},
		{name: "parts", sch: interopPartSchema(), rows: interopPartRows(0), parts: []string{"p", "n"}, batch: 50},
		{name: "columnar", sch: interopColumnarSchema(), rows: interopColumnarRows(2500), columnar: true, batch: 1000},
		// decimals are not primitives of the columnar writer: row path,
		// still compared with the input.
		{name: "decimal", sch: interopDecimalSchema(), rows: interopDecimalRows(300), rowPath: true, batch: 128},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, tc.name)
			var copts []Option
			if tc.parts != nil {
				copts = append(copts, WithPartitionColumns(tc.parts...))
			}
			tbl, err := Create(ctx, dir, tc.sch, copts...)
			if err != nil {
				t.Fatal(err)
			}
			in := relax(tc.sch)
			if tc.columnar || tc.rowPath {
				if taken := arrowColumnarTaken(t, tbl, arrowReaderOf(t, in, tc.rows, tc.batch)); taken != tc.columnar {
					t.Fatalf("columnar writer taken: %v, want %v", taken, tc.columnar)
				}
			}
			if tbl, err = tbl.AppendArrow(ctx, arrowReaderOf(t, in, tc.rows, tc.batch)); err != nil {
				t.Fatal(err)
			}
			ipcPath := filepath.Join(root, tc.name+".arrow")
			filesPath := filepath.Join(root, tc.name+"-files.arrow")
			out := testsupport.RunPython(t, py, `
import sys, json, pyarrow as pa, pyarrow.parquet as pq, os, urllib.parse
from deltalake import DeltaTable
d, out, files_out = sys.argv[1], sys.argv[2], sys.argv[3]
dt = DeltaTable(d)
t = dt.to_pyarrow_table()
def write(path, t):
    with pa.OSFile(path, "wb") as f:
        with pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t)
write(out, t)
probs, parts = [], []
for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist():
    p = os.path.join(d, urllib.parse.unquote(a["path"]))
    n = pq.read_metadata(p).num_rows
    if n != a["num_records"]:
        probs.append("%s: %d rows, stats say %s" % (a["path"], n, a["num_records"]))
    parts.append(pq.read_table(p))
write(files_out, pa.concat_tables(parts))
print(json.dumps({"rows": t.num_rows, "problems": probs}))
`, dir, ipcPath, filesPath)
			var res struct {
				Rows     int      `json:"rows"`
				Problems []string `json:"problems"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			for _, p := range res.Problems {
				t.Error(p)
			}
			got := readIPCFileRows(t, ipcPath, tc.sch)
			if len(got) != len(tc.rows) || res.Rows != len(tc.rows) {
				t.Fatalf("delta-rs read %d rows (%d), want %d", len(got), res.Rows, len(tc.rows))
			}
			if !tc.columnar && !tc.rowPath {
				assertRows(t, canonRows(got), canonRows(readAllRows(t, tbl)))
				return
			}
			assertRows(t, canonRows(got), canonRows(tc.rows))
			files := readIPCFileRows(t, filesPath, tc.sch)
			assertRows(t, canonRows(files), canonRows(tc.rows))
		})
	}
}

// readIPCFileRows reads the Arrow IPC file at path into rows with the
// columns of sch, in its order, matched by name (delta-rs orders columns
// as the schema, partition columns too; a column the file lacks is null).
func readIPCFileRows(t *testing.T, path string, sch *schema.StructType) []value.Row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fr, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	idx := map[string]int{}
	for i, fl := range fr.Schema().Fields() {
		idx[fl.Name] = i
	}
	var got []value.Row
	for i := 0; i < fr.NumRecords(); i++ {
		rec, err := fr.RecordBatchAt(i)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := arrowio.Rows(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			row := make(value.Row, len(sch.Fields))
			for c, fl := range sch.Fields {
				if j, ok := idx[fl.Name]; ok {
					row[c] = r[j]
				}
			}
			got = append(got, row)
		}
	}
	return got
}

// arrowColumnarTaken reports whether AppendArrow of rr's batches to tbl
// takes the column-by-column writer (arrowcolumns.go); rr is consumed.
func arrowColumnarTaken(t *testing.T, tbl *Table, rr array.RecordReader) bool {
	t.Helper()
	recs, dsch, err := readArrowBatches(context.Background(), rr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	target, _, err := mergeSchemas(tbl.Schema(), dsch, false)
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.PartitionColumns()) == 0 && newArrowColumns(recs, rr.Schema(), target) != nil
}

// interopColumnarSchema: unpartitioned, top-level primitives only, as the
// column-by-column Arrow writer takes them.
func interopColumnarSchema() *schema.StructType {
	return schema.NewStruct(field("id", prim(schema.Long), false), field("n", prim(schema.Integer), true),
		field("x", prim(schema.Double), true), field("ok", prim(schema.Boolean), true),
		field("s", prim(schema.String), true), field("bin", prim(schema.Binary), true),
		field("day", prim(schema.Date), true), field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true))
}

// interopColumnarRows: n rows of interopColumnarSchema, each nullable
// column null on its own stride, timestamps with microseconds, before and
// after 1970, strings with non-ASCII text and the empty string.
func interopColumnarRows(n int) []value.Row {
	base := time.Date(1969, 12, 31, 23, 59, 58, 999999000, time.UTC)
	rows := make([]value.Row, n)
	for i := range rows {
		r := value.Row{int64(i), int32(i*7 - 1000), float64(i) / 3, i%3 == 0,
			[]string{"", "Zürich", "東京", "sfo"}[i%4] + fmt.Sprint(i%11), []byte{byte(i), byte(i >> 8), 0},
			value.Date(-400 + i), base.Add(time.Duration(i) * 1234567 * time.Microsecond), base.Add(-time.Duration(i) * time.Hour)}
		for c := 1; c < len(r); c++ {
			if i%(c+4) == 0 {
				r[c] = nil
			}
		}
		rows[i] = r
	}
	return rows
}

// interopDecimalSchema: decimals of several precisions next to a key.
func interopDecimalSchema() *schema.StructType {
	return schema.NewStruct(field("id", prim(schema.Long), false),
		field("d5", &schema.DecimalType{Precision: 5, Scale: 2}, true),
		field("d18", &schema.DecimalType{Precision: 18, Scale: 6}, true),
		field("d38", &schema.DecimalType{Precision: 38, Scale: 10}, true))
}

// interopDecimalRows: n rows of interopDecimalSchema, negative values,
// the largest unscaled values of each precision and nulls.
func interopDecimalRows(n int) []value.Row {
	rows := make([]value.Row, n)
	for i := range rows {
		sign := ""
		if i%2 == 1 {
			sign = "-"
		}
		r := value.Row{int64(i),
			value.MustParseDecimal(fmt.Sprintf("%s%d.%02d", sign, i%1000, i%100)),
			value.MustParseDecimal(fmt.Sprintf("%s%d.%06d", sign, i*1000003, i)),
			value.MustParseDecimal(fmt.Sprintf("%s%d.%010d", sign, int64(i)*9876543210123, i))}
		switch i % 10 {
		case 3:
			r[1], r[2], r[3] = nil, nil, nil
		case 7:
			r[1] = value.MustParseDecimal(sign + "999.99")
			r[2] = value.MustParseDecimal(sign + "999999999999.999999")
			r[3] = value.MustParseDecimal(sign + "9999999999999999999999999999.9999999999")
		}
		rows[i] = r
	}
	return rows
}

// canonRows sorts rows by their canon form, for order-free comparison.
func canonRows(rows []value.Row) []value.Row {
	out := make([]value.Row, len(rows))
	keys := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r
		keys[i] = fmt.Sprintf("%#v", canon(r))
	}
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	sorted := make([]value.Row, len(rows))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

// The columnar Arrow write (arrowcolumns.go): every primitive type, nulls,
// a column the input lacks, batches whose boundaries fall inside
// WriteColumns blocks and files split by the target size give the adds
// (stats, numRecords) and rows of AppendRows; input that can fail takes
// the row path and fails as it does, naming column and row.
func TestAppendArrowColumnar(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("i", prim(schema.Integer), true),
		field("sh", prim(schema.Short), true), field("by", prim(schema.Byte), true), field("f", prim(schema.Float), true),
		field("d", prim(schema.Double), true), field("ok", prim(schema.Boolean), true), field("s", prim(schema.String), true),
		field("b", prim(schema.Binary), true), field("day", prim(schema.Date), true), field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true), field("absent", prim(schema.String), true))
	in := &schema.StructType{Fields: sch.Fields[:len(sch.Fields)-1]}
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	var rows, inRows []value.Row
	for i := range 10000 {
		r := value.Row{int64(i), int32(i * 3), int16(i % 3000), int8(i % 100), float32(i) / 4, float64(i) / 8, i%2 == 0,
			fmt.Sprintf("s%d", i%77), []byte{byte(i), byte(i >> 8)}, value.Date(19000 + i%400),
			base.Add(time.Duration(i) * time.Millisecond), base.Add(time.Duration(i) * time.Second), nil}
		if i%9 == 0 {
			for c := 1; c < len(r)-1; c++ {
				r[c] = nil
			}
		}
		if i%13 == 0 {
			r[8] = []byte{}
		}
		rows = append(rows, r)
		inRows = append(inRows, r[:len(r)-1])
	}
	for _, batch := range []int{777, 10000} {
		t.Run(fmt.Sprint(batch), func(t *testing.T) {
			opts := []WriteOption{WithTargetFileSize(64 << 10)}
			viaRows, viaArrow := newMemTable(t, sch), newMemTable(t, sch)
			wr, err := viaRows.AppendRows(ctx, rows, opts...)
			if err != nil {
				t.Fatal(err)
			}
			rr := arrowReaderOf(t, relax(in, "id"), inRows, batch)
			recs, dsch, err := readArrowBatches(ctx, rr)
			if err != nil {
				t.Fatal(err)
			}
			target, _, err := mergeSchemas(sch, dsch, false)
			if err != nil {
				t.Fatal(err)
			}
			if newArrowColumns(recs, rr.Schema(), target) == nil {
				t.Fatal("the columnar path refuses the input")
			}
			rec, err := array.NewRecordReader(rr.Schema(), recs)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				r.Release()
			}
			defer rec.Release()
			wa, err := viaArrow.AppendArrow(ctx, rec, opts...)
			if err != nil {
				t.Fatal(err)
			}
			got, want := addSummaries(t, wa), addSummaries(t, wr)
			if len(want) < 3 || !slices.Equal(got, want) {
				t.Errorf("adds differ (want several files):\n arrow %v\n rows  %v", got, want)
			}
			assertRows(t, readAllRows(t, wa), readAllRows(t, wr))
		})
	}
	// A null in the NOT NULL column id, in the third batch: the row
	// path's error, with the row counted across batches.
	bad := slices.Clone(inRows[:3000])
	bad[2500] = slices.Clone(bad[2500])
	bad[2500][0] = nil
	tbl := newMemTable(t, sch)
	_, err := tbl.AppendArrow(ctx, arrowReaderOf(t, relax(in), bad, 1000))
	var re *RowError
	if !errors.As(err, &re) || re.Row != 2500 || !strings.Contains(err.Error(), "id") {
		t.Fatalf("err = %v, want a RowError for row 2500 naming id", err)
	}
	if v := tbl.Snapshot().Version(); v != 0 {
		t.Errorf("table at version %d after the failed append", v)
	}
}

// TestAppendArrowTimestampUnits: timestamps of every unit are stored as
// the microseconds they are; a timestamp[ns] with a nanosecond remainder is
// refused (a RowError naming the column and the row across batches,
// nothing written), never truncated.
func TestAppendArrowTimestampUnits(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("ts", prim(schema.Timestamp), true), field("ntz", prim(schema.TimestampNTZ), true))
	for _, c := range testsupport.TimestampCases() {
		t.Run(c.Name, func(t *testing.T) {
			in, _ := c.Batches()
			reader := func() array.RecordReader {
				in, recs := c.Batches()
				rr, err := array.NewRecordReader(in, recs)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					r.Release()
				}
				t.Cleanup(rr.Release)
				return rr
			}
			tbl := newMemTable(t, sch)
			writes := []struct {
				name  string
				write func() error
			}{
				{"AppendArrow", func() error {
					nt, err := tbl.AppendArrow(ctx, reader())
					if err == nil {
						tbl = nt
					}
					return err
				}},
				{"OverwriteArrow", func() error {
					nt, err := tbl.OverwriteArrow(ctx, reader())
					if err == nil {
						tbl = nt
					}
					return err
				}},
				{"WriteFilesArrow", func() error {
					rr := reader()
					var recs []arrow.RecordBatch
					for rr.Next() {
						rec := rr.RecordBatch()
						rec.Retain()
						t.Cleanup(rec.Release)
						recs = append(recs, rec)
					}
					_, err := tbl.WriteFilesArrow(ctx, recs, in)
					return err
				}},
				{"RowsOfArrow", func() error { _, err := RowsOfArrow(ctx, sch, reader()); return err }},
				{"RowsOfBatches", func() error {
					_, recs := c.Batches()
					defer func() {
						for _, r := range recs {
							r.Release()
						}
					}()
					rows, err := RowsOfBatches(recs)
					if err == nil {
						if len(rows) != 4 || rows[3][0] != int64(3) || !rows[3][1].(time.Time).Equal(c.Want) {
							t.Errorf("RowsOfBatches: %v, want 4 rows, id 3 at %v", rows, c.Want)
						}
					}
					return err
				}},
			}
			for _, w := range writes {
				err := w.write()
				if !c.Want.IsZero() {
					if err != nil {
						t.Fatalf("%s: %v", w.name, err)
					}
					continue
				}
				var re *RowError
				if !errors.As(err, &re) || re.Row != 3 || !errors.Is(err, ErrInvalidArgument) ||
					!strings.Contains(err.Error(), fmt.Sprintf("column %q", c.Col)) || !strings.Contains(err.Error(), "1700000000123456789") {
					t.Fatalf("%s: err %v, want a RowError for row 3 naming column %s and the value", w.name, err, c.Col)
				}
				if n := len(dataKeys(t, tbl.Store())); n != 0 {
					t.Errorf("%s: %d data files written", w.name, n)
				}
				if nt, _ := tbl.Refresh(ctx); nt.Version() != tbl.Version() {
					t.Errorf("%s: version %d after a refused write, was %d", w.name, nt.Version(), tbl.Version())
				}
			}
			if c.Want.IsZero() {
				return
			}
			tbl, err := tbl.Refresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The overwrite left ids 0-3 once.
			rows := readAllRows(t, tbl)
			col := 1
			if c.Col == "ntz" {
				col = 2
			}
			if len(rows) != 4 {
				t.Fatalf("%d rows, want 4", len(rows))
			}
			for _, r := range rows {
				want := time.Unix(0, 0)
				if r[0] == int64(3) {
					want = c.Want
				}
				if got, ok := r[col].(time.Time); !ok || !got.Equal(want) {
					t.Errorf("id %v: %s = %v, want %v", r[0], c.Col, r[col], want)
				}
			}
		})
	}
}

func TestSchemaOfArrow(t *testing.T) {
	tests := []struct {
		name    string
		fields  []arrow.Field
		want    string // the result as encoding/json marshals it
		wantErr error
	}{
		{
			name: "input-only types map to their Delta type",
			fields: []arrow.Field{
				{Name: "id", Type: arrow.PrimitiveTypes.Int64},
				{Name: "s", Type: arrow.BinaryTypes.LargeString, Nullable: true},
				{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
			},
			want: `{"fields":[{"metadata":{},"name":"id","nullable":false,"type":"long"},{"metadata":{},"name":"s","nullable":true,"type":"string"},{"metadata":{},"name":"ts","nullable":true,"type":"timestamp"}],"type":"struct"}`,
		},
		{
			name:    "unsigned integers have no Delta type",
			fields:  []arrow.Field{{Name: "u", Type: arrow.PrimitiveTypes.Uint32}},
			wantErr: arrowio.ErrUnsupportedType,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SchemaOfArrow(arrow.NewSchema(tt.fields, nil))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.fields[0].Name) {
					t.Fatalf("err = %v, want %v naming %q", err, tt.wantErr, tt.fields[0].Name)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Fatalf("schema = %s\nwant     %s", b, tt.want)
			}
		})
	}
}
