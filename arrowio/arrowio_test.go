package arrowio

import (
	"errors"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func TestTypeMapping(t *testing.T) {
	p := schema.Primitive
	cases := []struct {
		delta schema.Type
		arrow string
	}{
		{p(schema.Long), "int64"},
		{p(schema.Integer), "int32"},
		{p(schema.Short), "int16"},
		{p(schema.Byte), "int8"},
		{p(schema.Float), "float32"},
		{p(schema.Double), "float64"},
		{p(schema.Boolean), "bool"},
		{p(schema.String), "utf8"},
		{p(schema.Binary), "binary"},
		{p(schema.Date), "date32"},
		{p(schema.Timestamp), "timestamp[us, tz=UTC]"},
		{p(schema.TimestampNTZ), "timestamp[us]"},
		{p(schema.Void), "null"},
		{&schema.DecimalType{Precision: 38, Scale: 10}, "decimal(38, 10)"},
		{&schema.ArrayType{ElementType: p(schema.Integer), ContainsNull: true}, "list<element: int32, nullable>"},
		{&schema.MapType{KeyType: p(schema.String), ValueType: p(schema.Long)}, "map<utf8, int64, items_non_nullable>"},
		{schema.NewStruct(schema.NewField("a", p(schema.Long), false)), "struct<a: int64>"},
	}
	for _, c := range cases {
		got, err := Type(c.delta)
		if err != nil {
			t.Fatalf("Type(%s): %v", c.delta, err)
		}
		if got.String() != c.arrow {
			t.Errorf("Type(%s) = %s, want %s", c.delta, got, c.arrow)
		}
		back, err := DeltaType(got)
		if err != nil {
			t.Fatalf("DeltaType(%s): %v", got, err)
		}
		if back.String() != c.delta.String() {
			t.Errorf("DeltaType(%s) = %s, want %s", got, back, c.delta)
		}
	}
	m, _ := Type(&schema.MapType{KeyType: p(schema.String), ValueType: p(schema.Long), ValueContainsNull: true})
	mt := m.(*arrow.MapType)
	if mt.Elem().(*arrow.StructType).Field(0).Nullable || !mt.ItemField().Nullable || mt.ElemField().Name != "entries" {
		t.Errorf("map type %s: want entries<key not null, value nullable>", mt)
	}
	if _, err := Type(p(schema.Variant)); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("Type(variant) = %v, want ErrUnsupportedType", err)
	}
	in := map[string]arrow.DataType{
		"string":        arrow.BinaryTypes.LargeString,
		"binary":        arrow.BinaryTypes.LargeBinary,
		"date":          arrow.FixedWidthTypes.Date64,
		"timestamp":     &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"},
		"timestamp_ntz": &arrow.TimestampType{Unit: arrow.Millisecond},
		"array<long>":   arrow.LargeListOf(arrow.PrimitiveTypes.Int64),
	}
	for want, at := range in {
		got, err := DeltaType(at)
		if err != nil || got.String() != want {
			t.Errorf("DeltaType(%s) = %v, %v; want %s", at, got, err, want)
		}
	}
	_, err := DeltaSchema(arrow.NewSchema([]arrow.Field{{Name: "u", Type: arrow.PrimitiveTypes.Uint32}}, nil))
	if !errors.Is(err, ErrUnsupportedType) || err.Error() != "arrowio: column u: type has no Delta/Arrow mapping: Arrow type uint32" {
		t.Errorf("DeltaSchema(uint32) = %v", err)
	}
}

func allTypes() *schema.StructType {
	p := schema.Primitive
	return schema.NewStruct(
		schema.NewField("l", p(schema.Long), true),
		schema.NewField("i", p(schema.Integer), true),
		schema.NewField("s", p(schema.Short), true),
		schema.NewField("b", p(schema.Byte), true),
		schema.NewField("f", p(schema.Float), true),
		schema.NewField("d", p(schema.Double), true),
		schema.NewField("bo", p(schema.Boolean), true),
		schema.NewField("str", p(schema.String), false),
		schema.NewField("bin", p(schema.Binary), true),
		schema.NewField("dt", p(schema.Date), true),
		schema.NewField("ts", p(schema.Timestamp), true),
		schema.NewField("ntz", p(schema.TimestampNTZ), true),
		schema.NewField("dec", &schema.DecimalType{Precision: 38, Scale: 2}, true),
		schema.NewField("dec5", &schema.DecimalType{Precision: 5, Scale: 2}, true),
		schema.NewField("st", schema.NewStruct(schema.NewField("x", p(schema.Integer), true),
			schema.NewField("y", &schema.ArrayType{ElementType: p(schema.String), ContainsNull: true}, true)), true),
		schema.NewField("m", &schema.MapType{KeyType: p(schema.String), ValueType: p(schema.Long), ValueContainsNull: true}, true),
		schema.NewField("v", p(schema.Void), true),
	)
}

func TestRoundTrip(t *testing.T) {
	sch := allTypes()
	big38, _ := new(big.Int).SetString("-99999999999999999999999999999999999999", 10)
	ts := time.Date(2024, 2, 29, 23, 59, 59, 123456000, time.UTC)
	rows := []value.Row{
		{int64(-1), int32(2), int16(-3), int8(4), float32(1.5), 2.25, true, "héllo", []byte{0, 1}, value.Date(-1), ts, ts,
			value.Decimal{Unscaled: big38, Scale: 2}, value.NewDecimal(-99999, 2),
			value.Row{int32(7), []any{"a", nil}}, []value.MapEntry{{Key: "k", Value: int64(1)}, {Key: "n", Value: nil}}, nil},
		{nil, nil, nil, nil, nil, nil, nil, "", nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{nil, nil, nil, nil, nil, nil, nil, "x", []byte{}, nil, nil, nil, nil, nil,
			value.Row{nil, []any{}}, []value.MapEntry{}, nil},
	}
	rb, err := NewRecordBuilder(memory.NewGoAllocator(), sch)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Release()
	for _, r := range rows {
		if err := rb.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	if rec.NumRows() != 3 {
		t.Fatalf("rows = %d", rec.NumRows())
	}
	got, err := Rows(rec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		for c := range rows[i] {
			if !reflect.DeepEqual(norm(got[i][c]), norm(rows[i][c])) {
				t.Errorf("row %d column %s: got %#v, want %#v", i, sch.Fields[c].Name, got[i][c], rows[i][c])
			}
		}
	}
	if s := rec.Column(10).(*array.Timestamp).Value(0); int64(s) != ts.UnixMicro() {
		t.Errorf("timestamp micros = %d, want %d", s, ts.UnixMicro())
	}
}

// norm makes decimals comparable with DeepEqual.
func norm(v any) any {
	if d, ok := v.(value.Decimal); ok {
		return d.String()
	}
	return v
}

func TestNTZWallClock(t *testing.T) {
	sch := schema.NewStruct(schema.NewField("ntz", schema.Primitive(schema.TimestampNTZ), true))
	rb, _ := NewRecordBuilder(nil, sch)
	defer rb.Release()
	loc := time.FixedZone("X", 5*3600)
	if err := rb.Append(value.Row{time.Date(2024, 1, 2, 3, 4, 5, 0, loc)}); err != nil {
		t.Fatal(err)
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	got := rec.Column(0).(*array.Timestamp).Value(0)
	want := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMicro()
	if int64(got) != want {
		t.Errorf("ntz = %d, want %d (wall clock as UTC)", got, want)
	}
}

func TestAppendErrors(t *testing.T) {
	sch := allTypes()
	base := func() value.Row { return make(value.Row, len(sch.Fields)) }
	cases := []struct {
		name string
		col  int
		v    any
		msg  string
	}{
		{"null in non-nullable", 7, nil, "arrowio: column str: invalid value for the Delta type: null in a non-nullable field"},
		{"wrong Go type", 1, int64(3), "arrowio: column i: invalid value for the Delta type: int64 for integer"},
		{"decimal too wide", 13, value.NewDecimal(100000, 2), "arrowio: column dec5: invalid value for the Delta type: 1000.00 does not fit decimal(5,2)"},
		{"decimal inexact scale", 13, value.NewDecimal(1234, 3), "arrowio: column dec5: invalid value for the Delta type: 1.234 does not fit decimal(5,2)"},
		{"nested wrong type", 14, value.Row{"x", nil}, "arrowio: column st.x: invalid value for the Delta type: string for integer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rb, err := NewRecordBuilder(nil, sch)
			if err != nil {
				t.Fatal(err)
			}
			defer rb.Release()
			r := base()
			r[7] = "s"
			r[c.col] = c.v
			err = rb.Append(r)
			if !errors.Is(err, ErrInvalidValue) || err.Error() != c.msg {
				t.Errorf("Append = %v, want %q", err, c.msg)
			}
		})
	}
}

// TestValueInputOnlyTypes reads the input-only string and binary layouts
// as string and a copied []byte.
func TestValueInputOnlyTypes(t *testing.T) {
	mem := memory.NewGoAllocator()
	ls := array.NewLargeStringBuilder(mem)
	ls.Append("large")
	sv := array.NewStringViewBuilder(mem)
	sv.Append("view")
	bv := array.NewBinaryViewBuilder(mem)
	bv.Append([]byte{7, 8})
	fb := array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 2})
	fb.Append([]byte{9, 10})
	for _, c := range []struct {
		arr  arrow.Array
		want any
	}{
		{ls.NewArray(), "large"}, {sv.NewArray(), "view"}, {bv.NewArray(), []byte{7, 8}}, {fb.NewArray(), []byte{9, 10}},
	} {
		got, err := Value(c.arr, 0)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Value(%s) = %#v, %v; want %#v", c.arr.DataType(), got, err, c.want)
		}
	}
}

// TestTimestampUnits reads timestamps of every unit, with and without a
// zone: whole microseconds convert exactly, a nanosecond remainder is a
// *ValueError naming the column and the row across batches, as pyarrow
// refuses the lossy cast.
func TestTimestampUnits(t *testing.T) {
	cases := append(testsupport.TimestampCases(), testsupport.TimestampCase{
		Name: "ns lossy negative", Col: "ts", Unit: arrow.Nanosecond, Value: -1})
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			_, recs := c.Batches()
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			rows, err := RowsOf(recs)
			if c.Want.IsZero() {
				var ve *ValueError
				if !errors.As(err, &ve) || ve.Column != c.Col || ve.Row != 3 || !errors.Is(err, ErrInvalidValue) {
					t.Fatalf("RowsOf: rows %v, err %v; want a ValueError for column %s row 3", rows, err, c.Col)
				}
				if _, err := Rows(recs[1]); !errors.As(err, &ve) || ve.Row != 1 {
					t.Errorf("Rows of the second batch: err %v, want row 1", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rows[3][1].(time.Time); !got.Equal(c.Want) || got.Location() != time.UTC {
				t.Errorf("value %v, want %v", got, c.Want)
			}
			if got := rows[0][1].(time.Time); !got.Equal(time.Unix(0, 0)) {
				t.Errorf("row 0 %v, want the epoch", got)
			}
		})
	}
}
