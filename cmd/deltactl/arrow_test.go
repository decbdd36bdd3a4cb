package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// compareArrowScript reads the file argv[1] with pyarrow, as an Arrow IPC
// stream, or with pyarrow.parquet.read_table when argv[3] is "parquet",
// and the Delta table argv[2] with deltalake's to_pyarrow_table(), and
// prints "ok <rows>" when schemas (names, types, nullability; metadata
// aside) and values (as multisets of rows) agree.
const compareArrowScript = `
import sys, pyarrow as pa, pyarrow.ipc as ipc, pyarrow.parquet as pq, deltalake
if len(sys.argv) > 3 and sys.argv[3] == "parquet":
    got = pq.read_table(sys.argv[1])
else:
    with open(sys.argv[1], "rb") as f:
        got = ipc.open_stream(f).read_all()
want = deltalake.DeltaTable(sys.argv[2]).to_pyarrow_table()
if not got.schema.equals(want.schema, check_metadata=False):
    print("schema differs:\n--- deltactl\n%s\n--- delta-rs\n%s" % (got.schema, want.schema))
    sys.exit(0)
key = lambda r: repr(sorted(r.items()))
g = sorted(got.to_pylist(), key=key)
w = sorted(want.to_pylist(), key=key)
if g != w:
    for a, b in zip(g, w):
        if a != b:
            print("row differs:\n deltactl %r\n delta-rs %r" % (a, b))
            break
    print("rows: deltactl %d, delta-rs %d" % (len(g), len(w)))
    sys.exit(0)
print("ok %d" % len(g))
`

// TestCatArrowPyarrow: `deltactl cat -o arrow` is an Arrow IPC stream, and
// `deltactl cat --format parquet` a Parquet file, that pyarrow reads to the
// same table as delta-rs's to_pyarrow_table(), for a deltakit-written table
// with every Delta type and for corpus tables (partition values of every
// type, timestamp_ntz, decimals, maps, structs). TestCatArrowDeltaRS
// checks -o arrow on every corpus table, filtered too; the corpus tables
// here are kept for --format parquet.
func TestCatArrowPyarrow(t *testing.T) {
	py := testsupport.Python(t)
	dir := t.TempDir()
	written := writeAllTypes(t, filepath.Join(dir, "alltypes"))
	tables := []string{written}
	if corpus, err := testsupport.LookupCorpus(); err == nil {
		for _, name := range []string{
			"deltars__delta-0.8.0-partitioned", "golden__data-reader-partition-values", // delta-rs 1.x reads no deletion vectors
			"golden__data-reader-timestamp_ntz", "golden__decimal-various-scale-precision",
			"golden__data-reader-map", "golden__data-reader-nested-struct",
			"golden__data-reader-array-primitives",
		} {
			tables = append(tables, filepath.Join(corpus, name))
		}
	}
	for i, tbl := range tables {
		for _, c := range []struct{ format, ext string }{{"arrow", ".arrows"}, {"parquet", ".parquet"}} {
			t.Run(filepath.Base(tbl)+"/"+c.format, func(t *testing.T) {
				if _, err := os.Stat(tbl); err != nil {
					testsupport.Absent(t, "table %s: %v", tbl, err)
				}
				out := mustRun(t, "cat", tbl, "-o", c.format)
				file := filepath.Join(dir, "out"+string(rune('a'+i))+c.ext)
				if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				res := strings.TrimSpace(string(testsupport.RunPython(t, py, compareArrowScript, file, tbl, c.format)))
				if !strings.HasPrefix(res, "ok ") || res == "ok 0" {
					t.Fatalf("pyarrow (%s) vs delta-rs: %s", c.format, res)
				}
				t.Log(res)
			})
		}
	}
}

// writeAllTypes writes a partitioned deltakit table with every Delta type
// the mapping covers, nulls included, and returns its path.
func writeAllTypes(t *testing.T, path string) string {
	t.Helper()
	p := schema.Primitive
	sch := schema.NewStruct(
		schema.NewField("id", p(schema.Long), false),
		schema.NewField("part", p(schema.String), true),
		schema.NewField("i", p(schema.Integer), true),
		schema.NewField("s", p(schema.Short), true),
		schema.NewField("b", p(schema.Byte), true),
		schema.NewField("f", p(schema.Float), true),
		schema.NewField("d", p(schema.Double), true),
		schema.NewField("ok", p(schema.Boolean), true),
		schema.NewField("bin", p(schema.Binary), true),
		schema.NewField("day", p(schema.Date), true),
		schema.NewField("ts", p(schema.Timestamp), true),
		schema.NewField("ntz", p(schema.TimestampNTZ), true),
		schema.NewField("dec", &schema.DecimalType{Precision: 38, Scale: 6}, true),
		schema.NewField("st", schema.NewStruct(schema.NewField("x", p(schema.Integer), true),
			schema.NewField("y", p(schema.String), true)), true),
		schema.NewField("arr", &schema.ArrayType{ElementType: p(schema.Long), ContainsNull: true}, true),
		schema.NewField("m", &schema.MapType{KeyType: p(schema.String), ValueType: p(schema.Double), ValueContainsNull: true}, true),
	)
	ctx := context.Background()
	tbl, err := table.Create(ctx, path, sch, table.WithPartitionColumns("part"))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2024, 2, 29, 13, 14, 15, 123456000, time.UTC)
	var rows []value.Row
	for k := range 50 {
		part := any([]string{"a", "b"}[k%2])
		if k%7 == 0 {
			part = nil
		}
		rows = append(rows, value.Row{int64(k), part, int32(k * 1000), int16(-k), int8(k), float32(k) / 4, float64(k) * 1.5,
			k%3 == 0, []byte{byte(k), 0}, value.Date(19000 + k), ts.Add(time.Duration(k) * time.Hour), ts.Add(-time.Duration(k) * time.Minute),
			value.MustParseDecimal("-12345678901234567890.123456"), value.Row{int32(k), "y"},
			[]any{int64(k), nil}, []value.MapEntry{{Key: "k", Value: float64(k)}, {Key: "n", Value: nil}}})
		rows = append(rows, value.Row{int64(1000 + k), part, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil})
	}
	if _, err := tbl.AppendRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestArrowOutputUsage: -o arrow and -o parquet are for cat only, and
// conflict with another --format; both hold every row unless --limit is
// given, and honour --where and --columns.
func TestArrowOutputUsage(t *testing.T) {
	tbl := writeAllTypes(t, filepath.Join(t.TempDir(), "t"))
	for _, args := range [][]string{
		{"files", tbl, "-o", "arrow"},
		{"files", tbl, "-o", "parquet"},
		{"cat", tbl, "-o", "arrow", "--format", "csv"},
		{"cat", tbl, "-o", "parquet", "--format", "arrow"},
		{"cat", tbl, "-o", "parquet", "--format", "jsonl"},
		{"cat", tbl, "--format", "orc"},
		{"cat", tbl, "--format", "parquet", "--limit", "-1"},
	} {
		out, errs, code := runCLI(t, args...)
		if code != 2 || out != "" {
			t.Errorf("deltactl %s: exit %d, stdout %q, stderr %q; want exit 2 and no output", strings.Join(args, " "), code, out, errs)
		}
	}
	// An Arrow stream holds every row unless --limit is given.
	for _, c := range []struct {
		args   []string
		rows   int64
		fields int
	}{
		{[]string{"cat", tbl, "-o", "arrow"}, 100, 16},
		{[]string{"cat", tbl, "--format", "arrow", "--limit", "3"}, 3, 16},
		// even k in 12..48 but not multiples of 7 (null partition)
		{[]string{"cat", tbl, "-o", "arrow", "--where", "part = 'a' AND i > 10000", "--columns", "ntz,id"}, 16, 2},
		{[]string{"cat", tbl, "-o", "parquet"}, 100, 16},
		{[]string{"cat", tbl, "--format", "parquet", "--limit", "3"}, 3, 16},
		{[]string{"cat", tbl, "--format", "parquet", "--where", "part = 'a' AND i > 10000", "--columns", "ntz,id"}, 16, 2},
		{[]string{"cat", tbl, "--format", "parquet", "--where", "id < 0"}, 0, 16},
	} {
		out := mustRun(t, c.args...)
		var (
			sch *arrow.Schema
			n   int64
		)
		if slices.Contains(c.args, "parquet") {
			tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader([]byte(out)), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
			if err != nil {
				t.Fatalf("deltactl %s: %v", strings.Join(c.args[2:], " "), err)
			}
			sch, n = tbl.Schema(), tbl.NumRows()
			tbl.Release()
		} else {
			r, err := ipc.NewReader(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			for r.Next() {
				n += r.RecordBatch().NumRows()
			}
			if r.Err() != nil {
				t.Errorf("deltactl %s: %v", strings.Join(c.args[2:], " "), r.Err())
			}
			sch = r.Schema()
			r.Release()
		}
		if n != c.rows {
			t.Errorf("deltactl %s: %d rows, want %d", strings.Join(c.args[2:], " "), n, c.rows)
		}
		if f := sch.Fields(); len(f) != c.fields || c.fields == 2 && (f[0].Name != "ntz" || f[0].Type.String() != "timestamp[us]" || f[1].Type.String() != "int64" || f[1].Nullable) {
			t.Errorf("deltactl %s: schema %s", strings.Join(c.args[2:], " "), sch)
		}
	}
}

// TestCatTextFormatsArrow: cat's table, csv and jsonl output, now printed
// from ScanArrow's batches, is byte for byte what the row scan (t.Scan)
// printed, for every Delta type, nested values, deletion vectors and
// column mapping.
func TestCatTextFormatsArrow(t *testing.T) {
	tables := []string{writeAllTypes(t, filepath.Join(t.TempDir(), "alltypes"))}
	if corpus, err := testsupport.LookupCorpus(); err == nil {
		for _, name := range []string{
			"deltars__delta-0.8.0-partitioned", "golden__data-reader-partition-values", "deltars__table-with-dv-small",
			"golden__data-reader-timestamp_ntz", "golden__decimal-various-scale-precision", "golden__data-reader-map",
			"golden__data-reader-nested-struct", "golden__data-reader-array-complex-objects", "golden__table-with-columnmapping-mode-name",
			"golden__type-widening", "golden__parquet-all-types", "deltars__table_with_edge_timestamps", "golden__kernel-timestamp-INT96",
		} {
			tables = append(tables, filepath.Join(corpus, name))
		}
	}
	ctx := context.Background()
	for _, path := range tables {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := os.Stat(path); err != nil {
				testsupport.Absent(t, "table %s: %v", path, err)
			}
			tbl, err := table.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			sch, err := tbl.ScanSchema()
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"table", "csv", "jsonl"} {
				var want bytes.Buffer
				if err := printRows(newRowWriter(format, &want, sch), tbl.Scan(ctx)); err != nil {
					t.Fatal(err)
				}
				got := mustRun(t, "cat", path, "--format", format, "--limit", "0")
				if got != want.String() {
					t.Errorf("--format %s through Arrow:\n%s\nrow scan:\n%s", format, got, want.String())
				}
				if strings.Count(got, "\n") < 2 {
					t.Errorf("--format %s: %q, want rows", format, got)
				}
			}
		})
	}
}

// TestTableCellNull: --format table tells SQL NULL from the strings "null"
// and "NULL" (NULL as DuckDB's CLI prints it).
func TestTableCellNull(t *testing.T) {
	str := schema.Primitive(schema.String)
	st := &schema.StructType{Fields: []*schema.StructField{{Name: "a", Type: str, Nullable: true}}}
	for _, tc := range []struct {
		name string
		t    schema.Type
		v    any
		want string
	}{
		{"sql null", str, nil, "NULL"},
		{"string null", str, "null", "null"},
		{"string NULL", str, "NULL", `"NULL"`},
		{"string NULL in quotes", str, `"NULL"`, `"""NULL"""`},
		{"string quoted", str, `"x"`, `"x"`},
		{"string with tab", str, "a\tb\nc", "a b c"},
		{"empty string", str, "", ""},
		{"long null", schema.Primitive(schema.Long), nil, "NULL"},
		{"null in struct", st, table.Row{nil}, `{"a":null}`},
		{"string null in struct", st, table.Row{"null"}, `{"a":"null"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tableCell(tc.t, tc.v); got != tc.want {
				t.Errorf("tableCell(%v) = %q, want %q", tc.v, got, tc.want)
			}
		})
	}
}

// TestCSVNullEmpty: --format csv writes NULL as an empty field and the
// empty string (or binary) as "", as PostgreSQL's COPY ... CSV and DuckDB
// do, and quotes fields as encoding/csv does.
func TestCSVNullEmpty(t *testing.T) {
	sch := &schema.StructType{Fields: []*schema.StructField{
		{Name: "s", Type: schema.Primitive(schema.String), Nullable: true},
		{Name: "b", Type: schema.Primitive(schema.Binary), Nullable: true},
		{Name: "n", Type: schema.Primitive(schema.Long), Nullable: true},
	}}
	rows := []table.Row{
		{nil, nil, nil},
		{"", []byte{}, int64(1)},
		{"NULL", []byte("x"), nil},
		{`a,"b"`, nil, int64(2)},
		{" lead", nil, nil},
		{"line\nbreak", nil, nil},
		{`\.`, nil, nil},
	}
	want := "s,b,n\n" +
		",,\n" +
		`"","",1` + "\n" +
		"NULL,eA==,\n" +
		`"a,""b""",,2` + "\n" +
		`" lead",,` + "\n" +
		"\"line\nbreak\",,\n" +
		`"\.",,` + "\n"
	var got bytes.Buffer
	seq := func(yield func(table.Row, error) bool) {
		for _, r := range rows {
			if !yield(r, nil) {
				return
			}
		}
	}
	if err := printRows(newRowWriter("csv", &got, sch), seq); err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("csv:\n%s\nwant:\n%s", got.String(), want)
	}
	var empty bytes.Buffer
	if err := printRows(newRowWriter("csv", &empty, sch), func(func(table.Row, error) bool) {}); err != nil || empty.String() != "s,b,n\n" {
		t.Errorf("no rows: %q, %v; want the header", empty.String(), err)
	}
}

// TestOutputRowFormatRefused: a row format given to -o of a command that
// prints no rows (or, for arrow and parquet, other rows than cat's) is a
// usage error naming the commands that take it and what this one takes.
func TestOutputRowFormatRefused(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "t")
	mustRun(t, "create", tbl, "--schema", "id long", "--property", "delta.enableChangeDataFeed=true")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", tbl, "-o", "csv"}, "-o csv is for cat and changes only; deltactl history takes -o table or json"},
		{[]string{"schema", tbl, "-o", "jsonl"}, "-o jsonl is for cat and changes only; deltactl schema takes -o table or json"},
		{[]string{"changes", tbl, "--from", "0", "-o", "arrow"}, "-o arrow is for cat only (the rows as an Arrow IPC stream); deltactl changes takes -o table, json, csv or jsonl"},
		{[]string{"history", tbl, "-o", "yaml"}, `invalid value "yaml" for -o/--output`},
		{[]string{"cat", tbl, "--format", "yaml"}, `invalid --format "yaml": want table, csv, jsonl, arrow or parquet (json is jsonl)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no output, stderr containing %q", code, out, errs, tc.want)
			}
		})
	}
}

// TestCatFormatOutputAliases: -o and --format of cat and changes are
// aliases (-o json is --format jsonl): equal values are accepted and give
// that format, conflicting ones are refused with a usage error (exit 2,
// nothing printed) naming both.
func TestCatFormatOutputAliases(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string", "--property", "delta.enableChangeDataFeed=true")
	mustRun(t, "ingest", writeCSV(t, filepath.Join(dir, "in.csv"), 0, 2), tbl)
	for _, tc := range []struct {
		args []string
		want string // a prefix of stdout; "" for a usage error
	}{
		{[]string{"cat", tbl, "--format", "csv"}, "id,v\n"},
		{[]string{"cat", tbl, "-o", "json"}, `{"id":`},
		{[]string{"cat", tbl, "-o", "json", "--format", "jsonl"}, `{"id":`},
		{[]string{"cat", tbl, "-o", "table", "--format", "table"}, "id  v\n"},
		{[]string{"cat", tbl, "-o", "arrow", "--format", "arrow"}, "\xff\xff\xff\xff"},
		{[]string{"cat", tbl, "-o", "parquet", "--format", "parquet"}, "PAR1"},
		{[]string{"cat", tbl, "--format", "arrow"}, "\xff\xff\xff\xff"},
		{[]string{"cat", tbl, "-o", "json", "--format", "arrow"}, ""},
		{[]string{"cat", tbl, "-o", "json", "--format", "csv"}, ""},
		{[]string{"cat", tbl, "-o", "json", "--format", "table"}, ""},
		{[]string{"cat", tbl, "-o", "table", "--format", "csv"}, ""},
		{[]string{"cat", tbl, "--format", "csv", "-o", "arrow"}, ""},
		{[]string{"cat", tbl, "-o", "parquet", "--format", "jsonl"}, ""},
		{[]string{"changes", tbl, "--from", "1", "-o", "json", "--format", "jsonl"}, `{"id":`},
		{[]string{"changes", tbl, "--from", "1", "--format", "csv"}, "id,v,_change_type"},
		{[]string{"changes", tbl, "--from", "1", "-o", "json", "--format", "csv"}, ""},
		{[]string{"changes", tbl, "--from", "1", "-o", "table", "--format", "jsonl"}, ""},
		// -o takes every --format name of the command, and --format takes json.
		{[]string{"cat", tbl, "-o", "csv"}, "id,v\n"},
		{[]string{"cat", tbl, "-o", "jsonl"}, `{"id":`},
		{[]string{"cat", tbl, "--format", "json"}, `{"id":`},
		{[]string{"cat", tbl, "-o", "jsonl", "--format", "json"}, `{"id":`},
		{[]string{"cat", tbl, "-o", "csv", "--format", "csv"}, "id,v\n"},
		{[]string{"changes", tbl, "--from", "1", "-o", "csv"}, "id,v,_change_type"},
		{[]string{"changes", tbl, "--from", "1", "-o", "jsonl"}, `{"id":`},
		{[]string{"cat", tbl, "-o", "csv", "--format", "jsonl"}, ""},
		{[]string{"cat", tbl, "-o", "jsonl", "--format", "arrow"}, ""},
		{[]string{"changes", tbl, "--from", "1", "-o", "csv", "--format", "table"}, ""},
	} {
		name := strings.Join(tc.args[2:], " ")
		t.Run(tc.args[0]+" "+name, func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			if tc.want == "" {
				o, f := tc.args[slices.Index(tc.args, "-o")+1], tc.args[slices.Index(tc.args, "--format")+1]
				if code != 2 || out != "" || !strings.Contains(errs, "conflict") ||
					!strings.Contains(errs, "-o "+o) || !strings.Contains(errs, "--format "+f) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no output, a conflict naming -o %s and --format %s", code, out, errs, o, f)
				}
				return
			}
			if code != 0 || !strings.HasPrefix(out, tc.want) {
				t.Errorf("exit %d, stdout %.40q, stderr %q; want exit 0 and stdout starting %q", code, out, errs, tc.want)
			}
		})
	}
}
