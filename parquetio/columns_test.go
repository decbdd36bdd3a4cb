package parquetio

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// columnsSchema has a field of every type WriteColumns takes.
func columnsSchema() *schema.StructType {
	return schema.NewStruct(
		field("long", prim(schema.Long), false),
		field("int", prim(schema.Integer), true),
		field("short", prim(schema.Short), true),
		field("byte", prim(schema.Byte), true),
		field("float", prim(schema.Float), true),
		field("double", prim(schema.Double), true),
		field("bool", prim(schema.Boolean), true),
		field("string", prim(schema.String), true),
		field("binary", prim(schema.Binary), true),
		field("date", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("strbytes", prim(schema.String), true), // given as Bytes
		field("nulls", prim(schema.Long), true),      // every row null
	)
}

// columnsData returns n rows of columnsSchema both as columns and as rows
// of the value model: nulls, edge values, unicode, repeated strings.
func columnsData(n int) ([]Column, []value.Row) {
	cols := make([]Column, 14)
	for j := 1; j < len(cols); j++ {
		cols[j].Null = make([]bool, n)
	}
	rows := make([]value.Row, n)
	words := []string{"ATL", "Zürich", "東京😀" + strings.Repeat("x", 40), "", "ORD"}
	for i := range n {
		null := func(j int) bool { cols[j].Null[i] = i%(j+3) == 1; return cols[j].Null[i] }
		r := make(value.Row, len(cols))
		x := int64(i)*7919 - 5000
		switch i {
		case 3:
			x = math.MinInt64
		case 4:
			x = math.MaxInt64
		}
		cols[0].Int64 = append(cols[0].Int64, x)
		r[0] = x
		cols[1].Int32 = append(cols[1].Int32, int32(x))
		if !null(1) {
			r[1] = int32(x)
		}
		cols[2].Int32 = append(cols[2].Int32, int32(int16(x)))
		if !null(2) {
			r[2] = int16(x)
		}
		cols[3].Int32 = append(cols[3].Int32, int32(int8(x)))
		if !null(3) {
			r[3] = int8(x)
		}
		f := float64(x) / 3
		if i == 5 {
			f = math.NaN()
		}
		cols[4].Float32 = append(cols[4].Float32, float32(f))
		if !null(4) {
			r[4] = float32(f)
		}
		cols[5].Float64 = append(cols[5].Float64, f)
		if !null(5) {
			r[5] = f
		}
		cols[6].Bool = append(cols[6].Bool, i%2 == 0)
		if !null(6) {
			r[6] = i%2 == 0
		}
		w := words[i%len(words)]
		cols[7].String = append(cols[7].String, w)
		if !null(7) {
			r[7] = w
		}
		b := []byte(w)
		if i%7 == 0 {
			b = nil // an empty binary, not a null
		}
		cols[8].Bytes = append(cols[8].Bytes, b)
		if !null(8) {
			r[8] = b
		}
		cols[9].Int32 = append(cols[9].Int32, int32(x%100000))
		if !null(9) {
			r[9] = value.Date(x % 100000)
		}
		us := x % 4e17
		cols[10].Int64 = append(cols[10].Int64, us)
		if !null(10) {
			r[10] = time.UnixMicro(us)
		}
		cols[11].Int64 = append(cols[11].Int64, -us)
		if !null(11) {
			r[11] = time.UnixMicro(-us).UTC()
		}
		cols[12].Bytes = append(cols[12].Bytes, []byte(words[(i+2)%len(words)]))
		if !null(12) {
			r[12] = words[(i+2)%len(words)]
		}
		cols[13].Null[i] = true
		rows[i] = r
	}
	return cols, rows
}

// columnsOutcome writes cols with WriteColumns in calls of at most chunk
// rows and renders the file and stats as writeOutcome does.
func columnsOutcome(sch *schema.StructType, n, chunk int, cols []Column, opts ...WriteOption) string {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, sch, opts...)
	if err != nil {
		return "new: " + err.Error()
	}
	for start := 0; start < n; start += chunk {
		end := min(n, start+chunk)
		part := make([]Column, len(cols))
		for j, c := range cols {
			part[j] = sliceColumn(c, start, end)
		}
		if err := w.WriteColumns(end-start, part); err != nil {
			return "write: " + strings.SplitN(err.Error(), "\n", 2)[0]
		}
	}
	st, err := w.Close()
	if err != nil {
		return "close: " + err.Error()
	}
	js, err := st.JSON()
	if err != nil {
		return "json: " + err.Error()
	}
	return fmt.Sprintf("%q\n%s", buf.Bytes(), js)
}

func sliceColumn(c Column, a, b int) Column {
	cut := func(n int) (int, int) { return min(a, n), min(b, n) }
	var out Column
	if c.Null != nil {
		x, y := cut(len(c.Null))
		out.Null = c.Null[x:y]
	}
	x, y := cut(len(c.Int64))
	out.Int64 = c.Int64[x:y]
	x, y = cut(len(c.Int32))
	out.Int32 = c.Int32[x:y]
	x, y = cut(len(c.Float32))
	out.Float32 = c.Float32[x:y]
	x, y = cut(len(c.Float64))
	out.Float64 = c.Float64[x:y]
	x, y = cut(len(c.Bool))
	out.Bool = c.Bool[x:y]
	if c.String != nil {
		x, y = cut(len(c.String))
		out.String = c.String[x:y]
	}
	if c.Bytes != nil {
		x, y = cut(len(c.Bytes))
		out.Bytes = c.Bytes[x:y]
	}
	return out
}

// TestWriteColumnsMatchesWrite checks that WriteColumns writes the bytes
// and stats Write writes for the same rows given in writeOutcome's calls of
// 1000 rows (page and row group breaks depend on the calls' row counts).
func TestWriteColumnsMatchesWrite(t *testing.T) {
	cols, rows := columnsData(5000)
	sch := columnsSchema()
	for _, tc := range []struct {
		name string
		opts []WriteOption
	}{
		{"defaults", nil},
		{"small row groups and pages", []WriteOption{WithRowGroupSize(30_000), WithPageSize(4096)}},
		{"row group rows", []WriteOption{WithRowGroupRows(700)}},
		{"plain, 3 stats columns, prefix 2", []WriteOption{WithDictionary(false), WithNumIndexedCols(3), withStringPrefixLength(2)}},
		{"stats columns, no tight bounds", []WriteOption{WithStatsColumns([]string{"string", "ntz", "float", "strbytes"}), WithTightBounds(false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := writeOutcome(sch, rows, tc.opts...)
			if strings.HasPrefix(want, "write") {
				t.Fatal(want)
			}
			if got := columnsOutcome(sch, len(rows), 1000, cols, tc.opts...); got != want {
				t.Errorf("WriteColumns and Write differ:\n%.400s\nvs\n%.400s", got, want)
			}
		})
	}
	// Row groups close after the batch that reaches the size: the batches'
	// sizes must be counted as Write counts them.
	for size := int64(10_000); size <= 200_000; size += 7_000 {
		opt := WithRowGroupSize(size)
		if got, want := columnsOutcome(sch, len(rows), 1000, cols, opt), writeOutcome(sch, rows, opt); got != want {
			t.Errorf("row groups of %d B: WriteColumns and Write differ", size)
		}
	}
	// Empty input.
	if got, want := columnsOutcome(sch, 0, 1000, make([]Column, 14)), writeOutcome(sch, nil); got != want {
		t.Errorf("empty: %.200s\nvs\n%.200s", got, want)
	}
}

func TestWriteColumnsErrors(t *testing.T) {
	sch := columnsSchema()
	cols, _ := columnsData(600)
	with := func(j int, c Column) []Column {
		out := append([]Column(nil), cols...)
		out[j] = c
		return out
	}
	short := make([]int32, 600)
	short[300] = 40000
	tiny := make([]int32, 600)
	tiny[599] = -129
	required := make([]bool, 600)
	required[257] = true
	farTimes := make([]int64, 600)
	farTimes[450] = math.MaxInt64
	earlyTimes := make([]int64, 600)
	earlyTimes[3] = math.MinInt64
	for _, tc := range []struct {
		name string
		sch  *schema.StructType
		cols []Column
		want string
	}{
		{"too few columns", sch, cols[:3], "3 columns, schema has 14 fields"},
		{"wrong slice", sch, with(1, Column{Int64: make([]int64, 600)}), "field int: invalid value for the Delta type: Int32 holds 0 values for 600 rows"},
		{"short slice", sch, with(7, Column{String: make([]string, 599)}), "field string: invalid value for the Delta type: String holds 599 values for 600 rows"},
		{"short String beside long Bytes", sch, with(7, Column{String: make([]string, 10), Bytes: make([][]byte, 600)}), "field string: invalid value for the Delta type: String holds 10 values for 600 rows"},
		{"timestamp past year 290000", sch, with(10, Column{Int64: farTimes}), "row 450: field ts: invalid value for the Delta type: int64 (9223372036854775807) for microseconds of a time in the years -290000 to 290000"},
		{"timestamp_ntz before year -290000", sch, with(11, Column{Int64: earlyTimes}), "row 3: field ntz: invalid value for the Delta type: int64 (-9223372036854775808)"},
		{"short nulls", sch, with(7, Column{String: make([]string, 600), Null: make([]bool, 10)}), "field string: invalid value for the Delta type: 10 null flags for 600 rows"},
		{"short out of range", sch, with(2, Column{Int32: short}), "row 300: field short: invalid value for the Delta type: int32 (40000) for an integer in [-32768, 32767]"},
		{"byte out of range", sch, with(3, Column{Int32: tiny}), "row 599: field byte: invalid value for the Delta type: int32 (-129) for an integer in [-128, 127]"},
		{"null in required field", sch, with(0, Column{Int64: make([]int64, 600), Null: required}), "row 257: invalid value for the Delta type: null in non-nullable field long"},
		{"nested schema", schema.NewStruct(field("s", schema.NewStruct(field("x", prim(schema.Long), true)), true)), []Column{{}},
			"field s of type struct<x:long> cannot be written as a column"},
		{"decimal", schema.NewStruct(field("d", &schema.DecimalType{Precision: 5, Scale: 2}, true)), []Column{{}}, "cannot be written as a column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(&bytes.Buffer{}, tc.sch)
			if err != nil {
				t.Fatal(err)
			}
			err = w.WriteColumns(600, tc.cols)
			if err == nil || !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want ErrInvalidValue containing %q", err, tc.want)
			}
			if _, err2 := w.Close(); err2 == nil {
				t.Error("Close after a failed WriteColumns succeeded")
			}
		})
	}
	if !CanWriteColumns(sch) || CanWriteColumns(allTypesSchema()) || CanWriteColumns(nil) {
		t.Error("CanWriteColumns")
	}
}

// TestWriteColumnsDictionaryPages checks that WriteColumns cuts the pages
// of a dictionary-encoded column of large distinct values as Write does
// (dictFlushBytes): the two once went through separate column writers and
// WriteColumns never cut them, so its dictionary grew to the whole column.
func TestWriteColumnsDictionaryPages(t *testing.T) {
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("payload", prim(schema.String), true))
	const n = 6000 // 6,000 values of 1,000 bytes: 6 MB, three dictFlushBytes
	ids := make([]int64, n)
	payloads := make([]string, n)
	rows := make([]value.Row, n)
	for i := range n {
		ids[i] = int64(i)
		payloads[i] = fmt.Sprintf("%08d", i) + strings.Repeat("x", 992)
		rows[i] = value.Row{ids[i], payloads[i]}
	}
	cols := []Column{{Int64: ids}, {String: payloads}}
	want := writeOutcome(sch, rows)
	if strings.HasPrefix(want, "write") {
		t.Fatal(want)
	}
	if got := columnsOutcome(sch, n, 1000, cols); got != want {
		t.Errorf("WriteColumns and Write differ: %d and %d bytes of outcome", len(got), len(want))
	}
}
