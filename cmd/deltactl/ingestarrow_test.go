package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/ingest"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// writeParquetInput writes n rows of row (from index from) to path as a
// Parquet file of schema sch, in row groups of 40 rows: with arrow-go's
// writer (no page checksums, as pyarrow and Polars write by default), or
// with parquetio's (page CRCs: read row by row) when crc is true.
func writeParquetInput(t *testing.T, path string, sch *schema.StructType, from, n int, row func(int) value.Row, crc bool) {
	t.Helper()
	if crc {
		var buf bytes.Buffer
		w, err := parquetio.NewWriter(&buf, sch, parquetio.WithRowGroupRows(40))
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]value.Row, n)
		for i := range rows {
			rows[i] = row(from + i)
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
		return
	}
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
	w, err := pqarrow.NewFileWriter(rec.Schema(), f, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(40)), pqarrow.NewArrowWriterProperties())
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

// tableSummary is what must not depend on the ingest path: every commit's
// actions (a data file's path replaced by its partition values and a hash
// of its bytes; commitInfo without its random txnId) and the CLI output
// (without the table's directory).
func tableSummary(t *testing.T, dir, out string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "_delta_log", "*.json"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no commits in %s (%v)", dir, err)
	}
	slices.Sort(logs)
	var b strings.Builder
	for _, p := range logs {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var a map[string]map[string]any
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatal(err)
			}
			if ci := a["commitInfo"]; ci != nil {
				delete(ci, "txnId")
			}
			if md := a["metaData"]; md != nil {
				delete(md, "id")
			}
			if add := a["add"]; add != nil {
				path, _ := add["path"].(string)
				data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(data)
				add["path"] = hex.EncodeToString(sum[:8])
			}
			enc, _ := json.Marshal(a)
			lines = append(lines, string(enc))
		}
		slices.Sort(lines) // the order of a commit's add actions is the writers'
		fmt.Fprintf(&b, "%s:\n%s\n", filepath.Base(p), strings.Join(lines, "\n"))
	}
	fmt.Fprintf(&b, "output:\n%s", strings.ReplaceAll(out, dir, "<table>"))
	return b.String()
}

// TestIngestArrowPathMatchesRowPath ingests Parquet files column-wise (the
// default) and with --row-path: the tables (every commit, every data
// file's bytes and stats), the output and the errors are the same, in
// batch mode, into existing tables, partitioned, and as epochs stopped and
// resumed.
func TestIngestArrowPathMatchesRowPath(t *testing.T) {
	flat := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("n", schema.Primitive(schema.Integer), true),
		schema.NewField("x", schema.Primitive(schema.Double), true),
		schema.NewField("s", schema.Primitive(schema.String), true),
		schema.NewField("ok", schema.Primitive(schema.Boolean), true),
	)
	flatRow := func(i int) value.Row {
		if i%4 == 2 {
			return value.Row{int64(i), nil, nil, nil, nil}
		}
		return value.Row{int64(i), int32(i * 3), float64(i) / 7, fmt.Sprintf("k%d", i%5), i%2 == 0}
	}
	times := schema.NewStruct(
		schema.NewField("ts", schema.Primitive(schema.Timestamp), true),
		schema.NewField("ntz", schema.Primitive(schema.TimestampNTZ), true),
		schema.NewField("d", schema.Primitive(schema.Date), true),
		schema.NewField("dec", &schema.DecimalType{Precision: 12, Scale: 3}, true),
		schema.NewField("big", &schema.DecimalType{Precision: 30, Scale: 2}, true),
	)
	timesRow := func(i int) value.Row {
		if i%6 == 5 {
			return value.Row{nil, nil, nil, nil, nil}
		}
		ts := time.Date(2020, 2, 29, 23, 0, 0, 0, time.UTC).Add(time.Duration(i) * 90 * time.Minute)
		return value.Row{ts, ts.Add(time.Microsecond), value.Date(18000 + i), value.NewDecimal(int64(i)*1001, 3), value.NewDecimal(-int64(i)*12345678901, 2)}
	}
	// A nullable id: into a table whose id is NOT NULL.
	nullable := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("n", schema.Primitive(schema.Integer), true),
		schema.NewField("x", schema.Primitive(schema.Double), true),
		schema.NewField("s", schema.Primitive(schema.String), true),
		schema.NewField("ok", schema.Primitive(schema.Boolean), true),
	)
	nullRow := func(i int) value.Row {
		r := flatRow(i)
		if i == 57 {
			r[0] = nil
		}
		return r
	}
	type input struct {
		sch  *schema.StructType
		row  func(int) value.Row
		rows []int // rows per file
		crc  bool  // written with page checksums (read row by row)
	}
	cases := []struct {
		name     string
		before   *input // ingested first (both paths), creating the table
		in       input
		args     []string
		runs     [][]string // extra args of each run (default: one run)
		wantCode int
		corrupt  bool // overwrite the middle of the last input file
	}{
		{name: "flat with nulls", in: input{flat, flatRow, []int{150}, false}, args: []string{"--batch-rows", "64"}},
		{name: "two files, one batch", in: input{flat, flatRow, []int{90, 35}, false}},
		{name: "timestamps and decimals", in: input{times, timesRow, []int{100, 20}, false}, args: []string{"--batch-rows", "50"}},
		{name: "max rows", in: input{times, timesRow, []int{100}, false}, args: []string{"--max-rows", "77", "--batch-rows", "30"}},
		{name: "partitioned", in: input{flat, flatRow, []int{120}, false}, args: []string{"--partition-by", "s", "--batch-rows", "70"}},
		{name: "into an existing table", before: &input{flat, flatRow, []int{30}, false}, in: input{flat, flatRow, []int{100}, false}},
		{name: "null into NOT NULL", before: &input{flat, flatRow, []int{30}, false}, in: input{nullable, nullRow, []int{100}, false}, wantCode: 1},
		{name: "nullable input, no null", before: &input{flat, flatRow, []int{30}, false}, in: input{nullable, flatRow, []int{60}, false}},
		{name: "epochs stopped and resumed", in: input{flat, flatRow, []int{100, 45}, false},
			args: []string{"--epoch-rows", "20", "--query-id", "q"}, runs: [][]string{{"--max-epochs", "3"}, {"--max-epochs", "2"}, nil}},
		{name: "epochs replayed", in: input{times, timesRow, []int{100}, false},
			args: []string{"--epoch-rows", "30", "--query-id", "q"}, runs: [][]string{{"--max-epochs", "2"}, {"--from-epoch", "1"}}},
		{name: "epochs partitioned", in: input{flat, flatRow, []int{70}, false}, args: []string{"--epoch-rows", "25", "--query-id", "q", "--partition-by", "ok"}},
		{name: "epochs null into NOT NULL", before: &input{flat, flatRow, []int{10}, false}, in: input{nullable, nullRow, []int{100}, false},
			args: []string{"--epoch-rows", "20", "--query-id", "q"}, wantCode: 1},
		{name: "epochs over a corrupt file", in: input{flat, flatRow, []int{60, 200}, true},
			args: []string{"--epoch-rows", "20", "--query-id", "q"}, wantCode: 1, corrupt: true},
	}
	write := func(t *testing.T, dir string, in input) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		from := 0
		for k, n := range in.rows {
			writeParquetInput(t, filepath.Join(dir, fmt.Sprintf("part-%d.parquet", k)), in.sch, from, n, in.row, in.crc)
			from += n
		}
		return dir
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			input := write(t, filepath.Join(root, "in"), tc.in)
			if tc.corrupt {
				last := filepath.Join(input, fmt.Sprintf("part-%d.parquet", len(tc.in.rows)-1))
				data, err := os.ReadFile(last)
				if err != nil {
					t.Fatal(err)
				}
				for i := len(data) / 3; i < len(data)/3+64; i++ {
					data[i] = 0xff
				}
				if err := os.WriteFile(last, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if src, err := ingest.Open(context.Background(), input); err != nil {
				t.Fatal(err)
			} else if _, ok := src.ArrowSchema(); ok == tc.in.crc {
				t.Fatalf("%s: ArrowSchema ok = %v, want %v (without it the test compares the row path with itself)", input, ok, !tc.in.crc)
			}
			var before string
			if tc.before != nil {
				before = write(t, filepath.Join(root, "before"), *tc.before)
			}
			runs := tc.runs
			if runs == nil {
				runs = [][]string{nil}
			}
			summary := map[string]string{}
			for _, path := range []string{"arrow", "rows"} {
				tbl := filepath.Join(root, path)
				var out strings.Builder
				if before != "" {
					mustRun(t, "ingest", before, tbl)
				}
				for _, extra := range runs {
					args := append([]string{"-o", "json", "ingest", input, tbl}, tc.args...)
					args = append(args, extra...)
					if path == "rows" {
						args = append(args, "--row-path")
					}
					stdout, stderr, code := runCLI(t, args...)
					if code != tc.wantCode {
						t.Fatalf("%s: %v: exit %d, want %d: %s", path, args, code, tc.wantCode, stderr)
					}
					fmt.Fprintf(&out, "%s\nstderr: %s\n", stdout, strings.ReplaceAll(strings.ReplaceAll(stderr, input, "<in>"), tbl, "<table>"))
				}
				summary[path] = tableSummary(t, tbl, out.String())
			}
			if summary["arrow"] != summary["rows"] {
				t.Errorf("column-wise:\n%s\nrow by row:\n%s", summary["arrow"], summary["rows"])
			}
			if tc.wantCode != 0 && !tc.corrupt && !strings.Contains(summary["rows"], `: column "id": NOT NULL`) {
				t.Errorf("the error does not name the row and column:\n%s", summary["rows"])
			}
		})
	}
}
