package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readAll(t *testing.T, s *Source, skip int64) []string {
	t.Helper()
	var out []string
	for r, err := range s.Rows(context.Background(), skip) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(r...))
	}
	return out
}

func TestCSVInference(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, csv, schema string
	}{
		{"types", "a,b,c,d,e,f,g,h\n1,1.5,true,2024-01-02,2024-01-02 03:04:05,2024-01-02T03:04:05Z,x,\n-7,2,FALSE,2024-12-31,2024-01-02T03:04:05.123,2024-01-02T03:04:05+02:00,,\n",
			"struct<a:long,b:double,c:boolean,d:date,e:timestamp_ntz,f:timestamp,g:string,h:string>"},
		{"widening", "a,b,c\n1,2024-01-02,1\n2.5,x,true\n", "struct<a:double,b:string,c:string>"},
		{"huge int is double", "a\n99999999999999999999\n", "struct<a:double>"},
		{"hex and inf are strings", "a,b\n0x1F,Inf\n", "struct<a:string,b:string>"},
		{"blank header", "a,,a2\n1,2,3\n", "struct<a:long,_c1:long,a2:long>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name+".csv", tc.csv)
			s, err := Open(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Schema().String(); got != tc.schema {
				t.Errorf("schema %s, want %s", got, tc.schema)
			}
			if s.Format() != CSV || s.NumRows() != int64(strings.Count(tc.csv, "\n")-1) {
				t.Errorf("format %s rows %d", s.Format(), s.NumRows())
			}
			readAll(t, s, 0)
		})
	}
}

func TestCSVValues(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "v.csv", "id,ts,day,name\n1,2024-01-02 03:04:05.5,2024-01-02,\"a, b\"\n2,,2024-01-03,\n")
	s, err := Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var rows []value.Row
	for r, err := range s.Rows(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	want0 := value.Row{int64(1), time.Date(2024, 1, 2, 3, 4, 5, 5e8, time.UTC), value.DateOf(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)), "a, b"}
	if fmt.Sprint(rows[0]) != fmt.Sprint(want0) {
		t.Errorf("row 0 = %v, want %v", rows[0], want0)
	}
	if rows[1][1] != nil || rows[1][3] != nil {
		t.Errorf("empty fields should be null: %v", rows[1])
	}
	if got := readAll(t, s, 1); len(got) != 1 || !strings.HasPrefix(got[0], "2 ") {
		t.Errorf("skip 1: %v", got)
	}
}

func TestTargetSchemaAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "t.csv", "ID,v\n1,10\n2,x\n")
	target := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Integer), false), schema.NewField("v", schema.Primitive(schema.Short), true))
	s, err := Open(context.Background(), p, WithTargetSchema(target))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Schema().String(); got != "struct<ID:integer,v:short>" {
		t.Errorf("schema %s", got)
	}
	var n int
	var rowErr error
	for r, err := range s.Rows(context.Background(), 0) {
		if err != nil {
			rowErr = err
			break
		}
		if _, ok := r[0].(int32); !ok {
			t.Errorf("id is %T, want int32", r[0])
		}
		n++
	}
	if n != 1 || rowErr == nil || !strings.Contains(rowErr.Error(), "t.csv:3: column v") {
		t.Errorf("rows %d, err %v", n, rowErr)
	}
	// Unknown extension, mixed formats, empty directory.
	writeFile(t, dir, "x.txt", "a")
	if _, err := Open(context.Background(), filepath.Join(dir, "x.txt")); !errors.Is(err, ErrUnsupported) {
		t.Errorf("txt: %v", err)
	}
	writeFile(t, dir, "y.ndjson", "{\"a\":1}\n")
	if _, err := Open(context.Background(), dir); !errors.Is(err, ErrUnsupported) {
		t.Errorf("mixed dir: %v", err)
	}
	if _, err := Open(context.Background(), t.TempDir()); !errors.Is(err, ErrUnsupported) {
		t.Errorf("empty dir: %v", err)
	}
	bad := writeFile(t, t.TempDir(), "bad.json", "{\"a\":1}\n[1]\n")
	if _, err := Open(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "bad.json:2") {
		t.Errorf("non-object line: %v", err)
	}
}

func TestNDJSON(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "e.ndjson", `{"id":1,"u":{"n":"a","tags":["x"]},"v":1,"at":"2024-01-02T03:04:05Z","m":{"k":1}}
{"id":2,"u":{"n":"b","z":true},"v":2.5,"at":null,"m":"text"}

{"id":3,"extra":[1,2.5]}
`)
	s, err := Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := "struct<id:long,u:struct<n:string,tags:array<string>,z:boolean>,v:double,at:timestamp,m:string,extra:array<double>>"
	if got := s.Schema().String(); got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	rows := readAll(t, s, 0)
	if len(rows) != 3 {
		t.Fatalf("rows %v", rows)
	}
	if !strings.Contains(rows[0], `{"k":1}`) || !strings.Contains(rows[1], "text") || !strings.Contains(rows[2], "[1 2.5]") {
		t.Errorf("rows %q", rows)
	}
}

func TestParquetSchema(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("ts", schema.Primitive(schema.TimestampNTZ), true),
		schema.NewField("tz", schema.Primitive(schema.Timestamp), true),
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("i", schema.Primitive(schema.Integer), true),
		schema.NewField("sh", schema.Primitive(schema.Short), true),
		schema.NewField("b", schema.Primitive(schema.Byte), true),
		schema.NewField("d", schema.Primitive(schema.Date), true),
		schema.NewField("s", schema.Primitive(schema.String), true),
		schema.NewField("bin", schema.Primitive(schema.Binary), true),
		schema.NewField("dec", &schema.DecimalType{Precision: 12, Scale: 3}, true),
		schema.NewField("f", schema.Primitive(schema.Float), true),
		schema.NewField("arr", &schema.ArrayType{ElementType: schema.Primitive(schema.String), ContainsNull: true}, true),
		schema.NewField("m", &schema.MapType{KeyType: schema.Primitive(schema.String), ValueType: schema.Primitive(schema.Long), ValueContainsNull: true}, true),
		schema.NewField("st", schema.NewStruct(schema.NewField("x", schema.Primitive(schema.Double), true)), true),
	)
	var buf bytes.Buffer
	w, err := parquetio.NewWriter(&buf, sch)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2001, 1, 1, 0, 1, 0, 0, time.UTC)
	rows := []value.Row{
		{ts, ts, int64(1), int32(2), int16(3), int8(4), value.Date(5), "x", []byte("y"), value.NewDecimal(1234, 3), float32(1.5),
			[]any{"a", nil}, []value.MapEntry{{Key: "k", Value: int64(1)}}, value.Row{2.5}},
		{nil, nil, int64(2), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "a.parquet")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.parquet"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Schema().String(), sch.String(); got != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	if s.Schema().Fields[2].Nullable || !s.Schema().Fields[0].Nullable {
		t.Errorf("nullability lost")
	}
	if s.NumRows() != 4 || len(s.Files()) != 2 {
		t.Errorf("rows %d files %v", s.NumRows(), s.Files())
	}
	got := readAll(t, s, 1)
	if len(got) != 3 || !strings.HasPrefix(got[0], "<nil> <nil> 2") || !strings.HasPrefix(got[1], "2001-01-01 00:01:00 +0000 UTC") {
		t.Errorf("rows after skipping 1: %q", got)
	}
	if got := readAll(t, s, 3); len(got) != 1 {
		t.Errorf("skip 3 of 4: %d rows", len(got))
	}
	// Not parquet.
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	if err := os.WriteFile(bad, []byte("definitely not a parquet file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), bad); err == nil {
		t.Error("no error for a bad parquet file")
	}
}

// TestBinaryIsBase64: a binary column's text (CSV field, JSON string) is
// base64, as deltactl cat writes it; anything else is an error naming the
// value, never its raw bytes stored as the value.
func TestBinaryIsBase64(t *testing.T) {
	sch := schema.NewStruct(schema.NewField("b", schema.Primitive(schema.Binary), true))
	for _, c := range []struct {
		name, json string
		want       []byte // nil: null
		err        string
	}{
		{"text", `{"b":"aGk="}`, []byte("hi"), ""},
		{"one zero byte", `{"b":"AA=="}`, []byte{0}, ""},
		{"spaces around", `{"b":" aGk= "}`, []byte("hi"), ""},
		{"null", `{"b":null}`, nil, ""},
		{"not base64", `{"b":"hi!"}`, nil, `column b: "hi!" is not base64`},
		{"unpadded", `{"b":"aGk"}`, nil, `"aGk" is not base64`},
	} {
		t.Run("json "+c.name, func(t *testing.T) {
			row, err := JSONRow(sch, []byte(c.json))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := row[0].([]byte)
			if (row[0] == nil) != (c.want == nil) || !bytes.Equal(got, c.want) {
				t.Errorf("b = %#v, want %#v", row[0], c.want)
			}
		})
	}
	p := writeFile(t, t.TempDir(), "b.csv", "b\naGk=\n\n!!\n")
	s, err := Open(context.Background(), p, WithTargetSchema(sch))
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	var rowErr error
	for r, err := range s.Rows(context.Background(), 0) {
		if err != nil {
			rowErr = err
			break
		}
		got = append(got, r[0])
	}
	if len(got) != 1 || !bytes.Equal(got[0].([]byte), []byte("hi")) {
		t.Errorf("csv rows %#v", got)
	}
	if rowErr == nil || !strings.Contains(rowErr.Error(), `"!!" is not base64`) {
		t.Errorf("csv error %v", rowErr)
	}
}
