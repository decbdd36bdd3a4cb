package parquetio

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// writeFooter writes rows of sch with opts and returns the file and its
// footer.
func writeFooter(t *testing.T, sch *schema.StructType, rows []value.Row, opts ...WriteOption) ([]byte, *format.FileMetaData) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, sch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return data, pf.Metadata()
}

// dataPageEncodings returns the encodings of the data pages of a column
// chunk, from its encoding stats.
func dataPageEncodings(m format.ColumnMetaData) map[format.Encoding]bool {
	out := map[format.Encoding]bool{}
	for _, x := range m.EncodingStats {
		if (x.PageType == format.DataPage || x.PageType == format.DataPageV2) && x.Count > 0 {
			out[x.Encoding] = true
		}
	}
	return out
}

// TestWriteDictionaryModes: each DictionaryMode dictionary-encodes the
// columns its documentation names, top-level and nested, and only those;
// every page is data page v1; every value reads back. The values repeat
// (five distinct a column), so no dictionary fills up.
func TestWriteDictionaryModes(t *testing.T) {
	// kind of each column: "num" for long, integer, short, byte, float,
	// double, date, INT32/INT64 decimals; "str" for string and binary;
	// "plain" for boolean, timestamps and FIXED_LEN_BYTE_ARRAY decimals.
	cols := []struct {
		name, kind string
		typ        schema.Type
		val        func(i int) any
	}{
		{"long", "num", prim(schema.Long), func(i int) any { return int64(i%5) * 1_000_000_007 }},
		{"int", "num", prim(schema.Integer), func(i int) any { return int32(i%5 - 2) }},
		{"short", "num", prim(schema.Short), func(i int) any { return int16(i % 5 * 300) }},
		{"byte", "num", prim(schema.Byte), func(i int) any { return int8(-(i % 5)) }},
		{"float", "num", prim(schema.Float), func(i int) any { return float32(i%5) / 4 }},
		{"double", "num", prim(schema.Double), func(i int) any { return float64(i%5) * math.Pi }},
		{"date", "num", prim(schema.Date), func(i int) any { return value.Date(19000 + i%5) }},
		{"dec9", "num", &schema.DecimalType{Precision: 9, Scale: 2}, func(i int) any { return value.NewDecimal(int64(i%5*-12345), 2) }},
		{"dec18", "num", &schema.DecimalType{Precision: 18, Scale: 2}, func(i int) any { return value.NewDecimal(int64(i%5)*1e15, 2) }},
		{"string", "str", prim(schema.String), func(i int) any { return []string{"ATL", "ORD", "DFW", "DEN", "LAX"}[i%5] }},
		{"binary", "str", prim(schema.Binary), func(i int) any { return []byte{byte(i % 5), 0} }},
		{"bool", "plain", prim(schema.Boolean), func(i int) any { return i%5 == 0 }},
		{"ts", "plain", prim(schema.Timestamp), func(i int) any { return time.UnixMicro(int64(i%5) * 3_600_000_000).UTC() }},
		{"ntz", "plain", prim(schema.TimestampNTZ), func(i int) any { return time.UnixMicro(int64(i%5) * 60_000_000).UTC() }},
		{"dec38", "plain", &schema.DecimalType{Precision: 38, Scale: 2}, func(i int) any { return value.NewDecimal(int64(i%5-2), 2) }},
	}
	var fields []*schema.StructField
	for _, c := range cols {
		fields = append(fields, field(c.name, c.typ, true))
	}
	// Nested leaves follow the same rule: an integer in a struct and a
	// long in a list are "num", a string map key "str".
	fields = append(fields,
		field("nested", schema.NewStruct(field("n", prim(schema.Integer), true)), true),
		field("list", &schema.ArrayType{ElementType: prim(schema.Long), ContainsNull: true}, true),
		field("map", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Boolean), ValueContainsNull: true}, true),
	)
	nestedKinds := map[string]string{"nested.n": "num", "list.list.element": "num", "map.key_value.key": "str", "map.key_value.value": "plain"}
	sch := schema.NewStruct(fields...)
	const n = 3000
	rows := make([]value.Row, n)
	for i := range rows {
		row := make(value.Row, 0, len(fields))
		for _, c := range cols {
			if i%11 == 4 {
				row = append(row, nil)
				continue
			}
			row = append(row, c.val(i))
		}
		row = append(row, value.Row{int32(i % 5)}, []any{int64(i % 5), nil}, []value.MapEntry{{Key: []string{"a", "b"}[i%2], Value: i%3 == 0}})
		rows[i] = row
	}
	for _, tc := range []struct {
		name string
		opts []WriteOption
		dict map[string]bool // kinds dictionary-encoded
	}{
		{"default", nil, map[string]bool{"num": true, "str": true}},
		{"WithDictionary(true)", []WriteOption{WithDictionary(true)}, map[string]bool{"num": true, "str": true}},
		{"DictionaryStrings", []WriteOption{WithDictionaryMode(DictionaryStrings)}, map[string]bool{"str": true}},
		{"WithDictionary(false)", []WriteOption{WithDictionary(false)}, map[string]bool{}},
		{"DictionaryOff", []WriteOption{WithDictionaryMode(DictionaryOff)}, map[string]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, md := writeFooter(t, sch, rows, tc.opts...)
			kinds := map[string]string{}
			for _, c := range cols {
				kinds[c.name] = c.kind
			}
			for k, v := range nestedKinds {
				kinds[k] = v
			}
			seen := 0
			for _, rg := range md.RowGroups {
				for _, cc := range rg.Columns {
					m := cc.MetaData
					path := strings.Join(m.PathInSchema, ".")
					kind, ok := kinds[path]
					if !ok {
						t.Fatalf("unexpected column %s", path)
					}
					seen++
					enc := dataPageEncodings(m)
					want := format.Plain
					if tc.dict[kind] {
						want = format.RLEDictionary
					}
					if len(enc) != 1 || !enc[want] {
						t.Errorf("%s (%s): data page encodings %v, want only %v", path, kind, enc, want)
					}
					if hasDict := m.DictionaryPageOffset != 0; hasDict != tc.dict[kind] {
						t.Errorf("%s (%s): dictionary page %v, want %v", path, kind, hasDict, tc.dict[kind])
					}
					for _, x := range m.EncodingStats {
						if x.PageType == format.DataPageV2 {
							t.Errorf("%s: data page v2, want v1", path)
						}
					}
				}
			}
			if seen != len(kinds) {
				t.Errorf("%d column chunks, want %d", seen, len(kinds))
			}
			i := 0
			for row, err := range ReadReaderAt(context.Background(), bytes.NewReader(data), int64(len(data)), "x", sch) {
				if err != nil {
					t.Fatal(err)
				}
				if !valuesEqual(row, rows[i]) {
					t.Fatalf("row %d: %v, want %v", i, row, rows[i])
				}
				i++
			}
			if i != n {
				t.Fatalf("read %d rows, want %d", i, n)
			}
		})
	}
}

// TestWriteDictionaryFloatBits: dictionary-encoded float and double
// columns keep -0 apart from +0, NaN, ±Inf and the smallest subnormal:
// the dictionary is keyed by the values' bits, not by ==.
func TestWriteDictionaryFloatBits(t *testing.T) {
	sch := schema.NewStruct(field("f", prim(schema.Float), true), field("d", prim(schema.Double), true))
	negZero := math.Copysign(0, -1)
	specials := []float64{0, negZero, math.NaN(), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, 1.5}
	specials32 := []float32{0, float32(negZero), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32, 1.5}
	rows := make([]value.Row, 700)
	for i := range rows {
		rows[i] = value.Row{specials32[i%len(specials32)], specials[i%len(specials)]}
	}
	data, md := writeFooter(t, sch, rows)
	for _, cc := range md.RowGroups[0].Columns {
		if enc := dataPageEncodings(cc.MetaData); !enc[format.RLEDictionary] {
			t.Fatalf("%v: data page encodings %v, want RLE_DICTIONARY", cc.MetaData.PathInSchema, enc)
		}
	}
	i := 0
	for row, err := range ReadReaderAt(context.Background(), bytes.NewReader(data), int64(len(data)), "x", sch) {
		if err != nil {
			t.Fatal(err)
		}
		f, d := row[0].(float32), row[1].(float64)
		wf, wd := specials32[i%len(specials32)], specials[i%len(specials)]
		okF := math.Float32bits(f) == math.Float32bits(wf) || (f != f && wf != wf)
		okD := math.Float64bits(d) == math.Float64bits(wd) || (math.IsNaN(d) && math.IsNaN(wd))
		if !okF || !okD || math.Signbit(float64(f)) != math.Signbit(float64(wf)) || math.Signbit(d) != math.Signbit(wd) {
			t.Fatalf("row %d: %v, %v; want %v, %v", i, f, d, wf, wd)
		}
		i++
	}
	if i != len(rows) {
		t.Fatalf("read %d rows, want %d", i, len(rows))
	}
}

// TestWriteDictionaryDistinctNumbers: a top-level number column whose
// first values are nearly all distinct is written PLAIN from the start,
// through Write and through WriteColumns, while a column of few values
// beside it stays dictionary encoded; when the first call brings too few
// rows to judge, the column starts with a dictionary that falls back to
// PLAIN once it passes dictMaxBytes, its dictionary page within the first
// page's values (parquet-go checks the dictionary when it cuts a page:
// about 1 MiB of 4-byte indexes, 2 MiB of longs).
func TestWriteDictionaryDistinctNumbers(t *testing.T) {
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("k", prim(schema.Long), true), field("x", prim(schema.Double), true))
	const n = 400_000
	rows := make([]value.Row, n)
	cols := []Column{{Int64: make([]int64, n)}, {Int64: make([]int64, n)}, {Float64: make([]float64, n)}}
	for i := range rows {
		id, k, x := int64(i)*7919, int64(i%3), float64(i%5)/2
		rows[i] = value.Row{id, k, x}
		cols[0].Int64[i], cols[1].Int64[i], cols[2].Float64[i] = id, k, x
	}
	for _, tc := range []struct {
		name   string
		write  func(w *Writer) error
		idDict bool // id starts with a dictionary page (then falls back)
	}{
		{"one Write", func(w *Writer) error { return w.Write(rows) }, false},
		{"one WriteColumns", func(w *Writer) error { return w.WriteColumns(n, cols) }, false},
		{"small first Write", func(w *Writer) error {
			if err := w.Write(rows[:sampleMin-1]); err != nil {
				return err
			}
			return w.Write(rows[sampleMin-1:])
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, sch)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.write(w); err != nil {
				t.Fatal(err)
			}
			st, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			if st.NumRecords != n {
				t.Errorf("stats: %d records, want %d", st.NumRecords, n)
			}
			// The stats come through the plan rebuilt for the PLAIN id.
			if len(st.MinValues) != 3 || len(st.MaxValues) != 3 ||
				fmt.Sprintf("%v %v %v %v", st.MinValues[0].Value, st.MaxValues[0].Value, st.MaxValues[1].Value, st.MaxValues[2].Value) != fmt.Sprintf("0 %d 2 2", (n-1)*7919) {
				t.Errorf("stats min %+v max %+v, want id 0..%d, k max 2, x max 2", st.MinValues, st.MaxValues, (n-1)*7919)
			}
			data := buf.Bytes()
			pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			md := pf.Metadata()
			if len(md.RowGroups) != 1 {
				t.Fatalf("%d row groups, want 1", len(md.RowGroups))
			}
			cc := md.RowGroups[0].Columns
			id := cc[0].MetaData
			if hasDict := id.DictionaryPageOffset != 0; hasDict != tc.idDict {
				t.Errorf("id: dictionary page %v, want %v", hasDict, tc.idDict)
			}
			if tc.idDict {
				if got, limit := id.DataPageOffset-id.DictionaryPageOffset, int64(2<<20+64<<10); got > limit {
					t.Errorf("id dictionary page: %d bytes, want at most %d", got, limit)
				}
			}
			if enc := dataPageEncodings(id); !enc[format.Plain] || (!tc.idDict && len(enc) != 1) {
				t.Errorf("id data page encodings %v: want PLAIN pages (only, without a dictionary page)", enc)
			}
			for c, name := range []string{"k", "x"} {
				if enc := dataPageEncodings(cc[c+1].MetaData); len(enc) != 1 || !enc[format.RLEDictionary] {
					t.Errorf("%s data page encodings %v: want RLE_DICTIONARY only", name, enc)
				}
			}
			i := 0
			for row, err := range ReadReaderAt(context.Background(), bytes.NewReader(data), int64(len(data)), "x", sch) {
				if err != nil {
					t.Fatal(err)
				}
				if !valuesEqual(row, rows[i]) {
					t.Fatalf("row %d: %v, want %v", i, row, rows[i])
				}
				i++
			}
			if i != n {
				t.Fatalf("read %d rows, want %d", i, n)
			}
		})
	}
}
