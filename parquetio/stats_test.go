package parquetio

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func statsJSON(t *testing.T, sch *schema.StructType, rows []value.Row, opts ...WriteOption) string {
	t.Helper()
	_, st := writeToBytes(t, sch, rows, opts...)
	js, err := st.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestStatsJSON(t *testing.T) {
	flat := schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("name", prim(schema.String), true),
		field("ok", prim(schema.Boolean), true),
		field("bin", prim(schema.Binary), true),
		field("b", prim(schema.Byte), true),
		field("sh", prim(schema.Short), true),
		field("i", prim(schema.Integer), true),
		field("f", prim(schema.Float), true),
		field("d", prim(schema.Double), true),
		field("day", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("dec", &schema.DecimalType{Precision: 5, Scale: 2}, true),
		field("big", &schema.DecimalType{Precision: 25, Scale: 3}, true),
	)
	ts := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return tm
	}
	nested := schema.NewStruct(
		field("a", prim(schema.Integer), true),
		field("s", schema.NewStruct(
			field("x", prim(schema.String), true),
			field("t", schema.NewStruct(field("y", prim(schema.Double), true), field("z", prim(schema.Boolean), true)), true),
		), true),
		field("arr", &schema.ArrayType{ElementType: prim(schema.Long), ContainsNull: true}, true),
		field("m", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Long), ValueContainsNull: true}, true),
		field("last", prim(schema.Long), true),
	)
	nestedRows := []value.Row{
		{int32(1), value.Row{"b", value.Row{1.5, true}}, []any{int64(1)}, []value.MapEntry{{Key: "k", Value: nil}}, int64(9)},
		{int32(-4), nil, nil, nil, nil},
		{nil, value.Row{nil, nil}, []any{}, []value.MapEntry{}, int64(3)},
		{int32(2), value.Row{"a", value.Row{-0.5, nil}}, []any{nil}, nil, int64(5)},
	}
	cases := []struct {
		name string
		sch  *schema.StructType
		rows []value.Row
		opts []WriteOption
		want string
	}{
		{
			name: "every primitive",
			sch:  flat,
			rows: []value.Row{
				{int64(3), "beta", true, []byte{1}, int8(-3), int16(300), int32(-70000), float32(0.1), 1e300, value.Date(0),
					ts("2024-01-02T03:04:05.123999Z"), ts("1969-12-31T23:59:59.999999Z"), dec("-12.50"), dec("123456789012345678901.250")},
				{int64(-7), "alpha<&>", false, nil, int8(100), int16(-1), int32(5), float32(-2.5), -0.000001, value.Date(-1),
					ts("1969-12-31T23:59:59.9995Z"), ts("2000-02-29T12:00:00Z"), dec("7"), dec("-0.001")},
				{int64(0), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
			},
			want: `{"numRecords":3,` +
				`"minValues":{"id":-7,"name":"alpha<&>","b":-3,"sh":-1,"i":-70000,"f":-2.5,"d":-0.000001,"day":"1969-12-31","ts":"1969-12-31T23:59:59.999Z","ntz":"1969-12-31T23:59:59.999","dec":-12.50,"big":-0.001},` +
				`"maxValues":{"id":3,"name":"beta","b":100,"sh":300,"i":5,"f":0.1,"d":1e+300,"day":"1970-01-01","ts":"2024-01-02T03:04:05.123Z","ntz":"2000-02-29T12:00:00.000","dec":7.00,"big":123456789012345678901.250},` +
				`"nullCount":{"id":0,"name":1,"ok":1,"bin":2,"b":1,"sh":1,"i":1,"f":1,"d":1,"day":1,"ts":1,"ntz":1,"dec":1,"big":1},` +
				`"tightBounds":true}`,
		},
		{
			name: "nested, arrays and maps",
			sch:  nested,
			rows: nestedRows,
			want: `{"numRecords":4,"minValues":{"a":-4,"s":{"x":"a","t":{"y":-0.5}},"last":3},"maxValues":{"a":2,"s":{"x":"b","t":{"y":1.5}},"last":9},` +
				`"nullCount":{"a":1,"s":{"x":2,"t":{"y":2,"z":3}},"arr":1,"m":2,"last":1},"tightBounds":true}`,
		},
		{
			name: "first 3 leaf columns, nested fields counted",
			sch:  nested,
			rows: nestedRows,
			opts: []WriteOption{WithNumIndexedCols(3), WithTightBounds(false)},
			want: `{"numRecords":4,"minValues":{"a":-4,"s":{"x":"a","t":{"y":-0.5}}},"maxValues":{"a":2,"s":{"x":"b","t":{"y":1.5}}},"nullCount":{"a":1,"s":{"x":2,"t":{"y":2}}}}`,
		},
		{
			name: "no indexed columns",
			sch:  nested,
			rows: nestedRows,
			opts: []WriteOption{WithNumIndexedCols(0)},
			want: `{"numRecords":4,"tightBounds":true}`,
		},
		{
			name: "all columns",
			sch:  nested,
			rows: nestedRows[:1],
			opts: []WriteOption{WithNumIndexedCols(-1), WithTightBounds(false)},
			want: `{"numRecords":1,"minValues":{"a":1,"s":{"x":"b","t":{"y":1.5}},"last":9},"maxValues":{"a":1,"s":{"x":"b","t":{"y":1.5}},"last":9},"nullCount":{"a":0,"s":{"x":0,"t":{"y":0,"z":0}},"arr":0,"m":0,"last":0}}`,
		},
		{
			name: "stats columns override, case-insensitive, nested path and whole struct",
			sch:  nested,
			rows: nestedRows,
			opts: []WriteOption{WithNumIndexedCols(1), WithStatsColumns(ParseStatsColumns("LAST, s.T, nope, a.b")), WithTightBounds(false)},
			want: `{"numRecords":4,"minValues":{"s":{"t":{"y":-0.5}},"last":3},"maxValues":{"s":{"t":{"y":1.5}},"last":9},"nullCount":{"s":{"t":{"y":2,"z":3}},"last":1}}`,
		},
		{
			name: "all null and empty file",
			sch:  schema.NewStruct(field("x", prim(schema.String), true)),
			rows: []value.Row{{nil}, {nil}},
			opts: []WriteOption{WithTightBounds(false)},
			want: `{"numRecords":2,"nullCount":{"x":2}}`,
		},
		{
			name: "no rows",
			sch:  schema.NewStruct(field("x", prim(schema.String), true)),
			opts: []WriteOption{WithTightBounds(false)},
			want: `{"numRecords":0,"nullCount":{"x":0}}`,
		},
		{
			name: "NaN drops min and max, infinities drop their bound",
			sch:  schema.NewStruct(field("n", prim(schema.Double), true), field("inf", prim(schema.Float), true), field("ninf", prim(schema.Double), true)),
			rows: []value.Row{{math.NaN(), float32(math.Inf(1)), math.Inf(-1)}, {1.0, float32(2), 3.0}},
			opts: []WriteOption{WithTightBounds(false)},
			want: `{"numRecords":2,"minValues":{"inf":2},"maxValues":{"ninf":3},"nullCount":{"n":0,"inf":0,"ninf":0}}`,
		},
		{
			name: "column mapping uses physical names",
			sch: schema.NewStruct(&schema.StructField{Name: "Logical", Type: prim(schema.Long), Nullable: true,
				Metadata: map[string]any{schema.MetaColumnMappingName: "col-1", schema.MetaColumnMappingID: float64(1)}}),
			rows: []value.Row{{int64(5)}},
			opts: []WriteOption{WithWriteColumnMapping("name"), WithTightBounds(false)},
			want: `{"numRecords":1,"minValues":{"col-1":5},"maxValues":{"col-1":5},"nullCount":{"col-1":0}}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := statsJSON(t, c.sch, c.rows, c.opts...); got != c.want {
				t.Errorf("stats\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestStatsStringTruncation(t *testing.T) {
	a31 := strings.Repeat("a", 31)
	a32 := strings.Repeat("a", 32)
	cases := []struct {
		name     string
		in       string
		min, max string
		noMax    bool
	}{
		{name: "short", in: "abc", min: "abc", max: "abc"},
		{name: "exactly 32", in: a32, min: a32, max: a32},
		{name: "ascii cut", in: a32 + "bcd", min: a32, max: a32 + "\x7f"},
		{name: "next char above DEL", in: a32 + "é", min: a32, max: a32 + "\U0010FFFF"},
		{name: "next char is DEL", in: a32 + "\x7f", min: a32, max: a32 + "\U0010FFFF"},
		{name: "multi-byte chars count as one", in: strings.Repeat("é", 40), min: strings.Repeat("é", 32), max: strings.Repeat("é", 32) + "\U0010FFFF"},
		{name: "3-byte chars", in: strings.Repeat("€", 33) + "a", min: strings.Repeat("€", 32), max: strings.Repeat("€", 32) + "\U0010FFFF"},
		// A supplementary character is two UTF-16 units; a pair straddling
		// the cut is kept whole (33 units).
		{name: "surrogate pair at the cut", in: a31 + "😀😀", min: a31 + "😀", max: a31 + "😀\U0010FFFF"},
		{name: "surrogate pairs", in: strings.Repeat("😀", 20), min: strings.Repeat("😀", 16), max: strings.Repeat("😀", 16) + "\U0010FFFF"},
		{name: "max chars skipped", in: a32 + "\U0010FFFF\U0010FFFFb", min: a32, max: a32 + "\U0010FFFF\U0010FFFF\x7f"},
		{name: "max chars to the end", in: a32 + "\U0010FFFF", min: a32, max: a32 + "\U0010FFFF"},
		{name: "no max fits", in: a32 + strings.Repeat("\U0010FFFF", 20), min: a32, noMax: true},
	}
	sch := schema.NewStruct(field("s", prim(schema.String), true))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, st := writeToBytes(t, sch, []value.Row{{c.in}})
			lo, _ := st.Lookup("minValues", "s")
			hi, ok := st.Lookup("maxValues", "s")
			if lo != c.min {
				t.Errorf("min %q, want %q", lo, c.min)
			}
			if c.noMax {
				if ok {
					t.Errorf("max %q, want none", hi)
				}
			} else if hi != c.max {
				t.Errorf("max %q, want %q", hi, c.max)
			}
			if hi, ok := hi.(string); ok && hi < c.in {
				t.Errorf("max %q sorts below the value", hi)
			}
		})
	}
	// The prefix length is an option.
	_, st := writeToBytes(t, sch, []value.Row{{"abcdef"}, {"abd"}}, withStringPrefixLength(2))
	if lo, _ := st.Lookup("minValues", "s"); lo != "ab" {
		t.Errorf("min %q", lo)
	}
	if hi, _ := st.Lookup("maxValues", "s"); hi != "ab\x7f" {
		t.Errorf("max %q", hi)
	}
	// JSON keeps the characters as they are (DEL and U+10FFFF unescaped).
	js, _ := st.JSON()
	if !strings.Contains(js, "\"ab\x7f\"") {
		t.Errorf("json %q", js)
	}
}

func TestParseStatsColumns(t *testing.T) {
	got := ParseStatsColumns(" a, b.c ,`d,e`.f,, `g``h` ")
	want := []string{"a", "b.c", "`d,e`.f", "`g``h`"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ParseStatsColumns = %q", got)
	}
	for in, want := range map[string]string{"a.b": "a|b", "`a.b`.c": "a.b|c", "`g``h`": "g`h"} {
		parts, err := splitColumnPath(in)
		if err != nil || strings.Join(parts, "|") != want {
			t.Errorf("splitColumnPath(%q) = %q, %v", in, parts, err)
		}
	}
	if _, err := splitColumnPath("`open"); err == nil {
		t.Error("unterminated backquote accepted")
	}
}
