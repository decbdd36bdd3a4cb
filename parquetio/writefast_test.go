package parquetio

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// withRowShred turns the typed column loops off: every value goes through
// the generic value-by-value shredding.
func withRowShred() WriteOption { return func(c *writeConfig) { c.rowShred = true } }

// writeOutcome writes rows in calls of 1000 and returns the file bytes and
// stats JSON, or the first error.
func writeOutcome(sch *schema.StructType, rows []value.Row, opts ...WriteOption) string {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, sch, opts...)
	if err != nil {
		return "new: " + err.Error()
	}
	for len(rows) > 0 {
		n := min(len(rows), 1000)
		if err := w.Write(rows[:n]); err != nil {
			return "write: " + strings.SplitN(err.Error(), "\n", 2)[0]
		}
		rows = rows[n:]
	}
	st, err := w.Close()
	if err != nil {
		return "close: " + strings.SplitN(err.Error(), "\n", 2)[0]
	}
	js, err := st.JSON()
	if err != nil {
		return "json: " + err.Error()
	}
	return fmt.Sprintf("%q\n%s", buf.Bytes(), js)
}

func primitivesSchema() *schema.StructType {
	return schema.NewStruct(
		field("long", prim(schema.Long), false),
		field("int", prim(schema.Integer), true),
		field("short", prim(schema.Short), true),
		field("byte", prim(schema.Byte), true),
		field("float", prim(schema.Float), true),
		field("double", prim(schema.Double), true),
		field("bool", prim(schema.Boolean), false),
		field("string", prim(schema.String), true),
		field("binary", prim(schema.Binary), true),
		field("date", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("dec", &schema.DecimalType{Precision: 9, Scale: 2}, true),
	)
}

// primitivesRows mixes every Go type each primitive accepts, nulls, NaN,
// empty and nil byte slices, zones and far dates.
func primitivesRows(n int) []value.Row {
	loc := time.FixedZone("x", 5*3600+1800)
	var rs []value.Row
	for i := range n {
		f := float64(i) - 1000.5
		switch i % 5 {
		case 0:
			rs = append(rs, value.Row{int64(i), int32(i), int16(i), int8(i % 100), float32(f), f, true, "a" + fmt.Sprint(i), []byte("b"), value.Date(i), time.UnixMicro(int64(i) * 1e9), time.UnixMicro(int64(i) * 1e9).In(loc), value.NewDecimal(int64(i), 1)})
		case 1:
			rs = append(rs, value.Row{i, i, i % 1000, i % 100, f, float32(f), false, []byte("c" + fmt.Sprint(i)), "bin", time.Date(2020, 1, i%28+1, 23, 0, 0, 0, loc), time.UnixMicro(int64(-i) * 1e9).In(loc), time.UnixMicro(int64(-i) * 1e9), "1.5"})
		case 2:
			rs = append(rs, value.Row{uint32(i), int64(i), int32(i % 1000), int16(i % 100), nil, nil, true, nil, nil, nil, nil, nil, nil})
		case 3:
			zero := 0.0
			rs = append(rs, value.Row{uint8(3), uint16(4), int8(5), uint8(6), float32(f), zero / zero * float64(i%2), true, "", []byte(nil), value.Date(-i), time.Time{}, time.Time{}, int64(i)})
		default:
			rs = append(rs, value.Row{int16(-5), int8(-3), int64(-7), int32(-8), float32(1) / 3, 1e300, false, "é😀" + strings.Repeat("z", i%40), []byte{}, value.Date(0),
				time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), nil})
		}
	}
	return rs
}

// TestWriteTypedColumnsMatchValueByValue checks that the typed column loops
// of top-level primitive fields write the same bytes, stats and errors as
// shredding value by value.
func TestWriteTypedColumnsMatchValueByValue(t *testing.T) {
	_, fl := flights(20_000)
	prims := primitivesRows(3000)
	check := func(name string, sch *schema.StructType, rows []value.Row, opts ...WriteOption) {
		t.Helper()
		got := writeOutcome(sch, rows, opts...)
		want := writeOutcome(sch, rows, append(opts, withRowShred())...)
		if got != want {
			t.Errorf("%s: typed columns and value-by-value differ:\n%.300s\nvs\n%.300s", name, got, want)
		}
	}
	check("flights", flightsSchema(), fl)
	check("flights small row groups", flightsSchema(), fl, WithRowGroupSize(50_000), WithPageSize(8<<10))
	check("flights plain, 2 stats columns", flightsSchema(), fl, WithDictionary(false), WithNumIndexedCols(2), withStringPrefixLength(1))
	check("primitives", primitivesSchema(), prims)
	check("primitives small row groups", primitivesSchema(), prims, WithRowGroupSize(7000))
	check("primitives stats columns", primitivesSchema(), prims, WithStatsColumns([]string{"ts", "string", "float"}))
	check("all types", allTypesSchema(), allTypesRows(700), WithNumIndexedCols(-1))

	good := prims[0]
	with := func(j int, v any) value.Row { r := append(value.Row(nil), good...); r[j] = v; return r }
	bad := func(at map[int]value.Row) []value.Row {
		rows := append([]value.Row(nil), prims[:600]...)
		for i, r := range at {
			rows[i] = r
		}
		return rows
	}
	for k, at := range []map[int]value.Row{
		{5: with(0, nil)}, {300: with(1, int64(1<<40))}, {257: with(2, "x")}, {10: with(3, 300)},
		{511: with(4, "f")}, {512: with(5, 1)}, {513: with(6, nil)}, {514: with(6, 1)}, {0: with(7, 5)},
		{1: with(8, 5)}, {2: with(9, "2020")}, {3: with(10, 5)}, {4: with(11, time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC))},
		{6: with(10, time.Date(-300000, 1, 1, 0, 0, 0, 0, time.UTC))}, {7: {1, 2}}, {8: with(0, uint64(1<<63))},
		{9: with(1, int32(-1<<31))}, {11: with(12, "x")},
		// the first bad row wins, then the first bad field in it
		{100: with(5, "x"), 50: with(3, "x"), 40: with(9, "x")},
		{100: {1}, 120: with(0, "x"), 90: with(12, "1.234")},
		{30: func() value.Row { r := with(11, "x"); r[2] = "y"; return r }()},
		{300: with(3, "x"), 299: func() value.Row { r := with(12, "x"); r[9] = "y"; return r }()},
	} {
		check(fmt.Sprintf("errors %d", k), primitivesSchema(), bad(at))
	}
	at := allTypesRows(300)
	at[200] = append(value.Row(nil), at[200]...)
	at[200][20] = []any{value.Row{"x", nil}}
	at[250] = append(value.Row(nil), at[250]...)
	at[250][0] = "x"
	check("nested error", allTypesSchema(), at)
}
