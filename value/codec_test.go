package value

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/schema"
)

func prim(name string) schema.Type { return schema.Primitive(name) }

var dec52 = &schema.DecimalType{Precision: 5, Scale: 2}

func TestCheck(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, c := range []struct {
		typ  schema.Type
		v    any
		size int64
		want error // nil: accepted
	}{
		{prim(schema.Long), int64(7), 8, nil},
		{prim(schema.Long), 7, 8, nil},
		{prim(schema.Long), uint32(7), 8, nil},
		{prim(schema.Long), uint64(math.MaxInt64), 8, nil},
		{prim(schema.Long), uint64(math.MaxInt64 + 1), 0, ErrOutOfRange},
		{prim(schema.Long), uint(math.MaxUint), 0, ErrOutOfRange},
		{prim(schema.Long), "7", 0, ErrTypeMismatch},
		{prim(schema.Long), 7.0, 0, ErrTypeMismatch},
		{prim(schema.Integer), int32(-7), 4, nil},
		{prim(schema.Integer), int64(math.MaxInt32), 4, nil},
		{prim(schema.Integer), int64(math.MaxInt32 + 1), 0, ErrOutOfRange},
		{prim(schema.Integer), uint64(1), 0, ErrTypeMismatch},
		{prim(schema.Short), int16(-7), 4, nil},
		{prim(schema.Short), 40000, 0, ErrOutOfRange},
		{prim(schema.Byte), int8(7), 4, nil},
		{prim(schema.Byte), 127, 4, nil},
		{prim(schema.Byte), 128, 0, ErrOutOfRange},
		{prim(schema.Byte), -129, 0, ErrOutOfRange},
		{prim(schema.Float), float32(1.5), 8, nil},
		{prim(schema.Float), 1.5, 8, nil},
		{prim(schema.Float), 1, 0, ErrTypeMismatch},
		{prim(schema.Double), math.NaN(), 8, nil},
		{prim(schema.Double), "1", 0, ErrTypeMismatch},
		{prim(schema.Boolean), true, 1, nil},
		{prim(schema.Boolean), 1, 0, ErrTypeMismatch},
		{prim(schema.String), "héllo", 10, nil},
		{prim(schema.String), []byte("ab"), 6, nil},
		{prim(schema.String), 'a', 0, ErrTypeMismatch},
		{prim(schema.Binary), []byte{0, 1, 2}, 7, nil},
		{prim(schema.Binary), "", 4, nil},
		{prim(schema.Date), Date(19000), 4, nil},
		{prim(schema.Date), ts, 4, nil},
		{prim(schema.Date), time.Date(6000000, 1, 1, 0, 0, 0, 0, time.UTC), 0, ErrOutOfRange},
		{prim(schema.Date), "2024-01-02", 0, ErrTypeMismatch},
		{prim(schema.Timestamp), ts, 8, nil},
		{prim(schema.Timestamp), time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC), 0, ErrOutOfRange},
		{prim(schema.TimestampNTZ), ts, 8, nil},
		{prim(schema.TimestampNTZ), ts.Unix(), 0, ErrTypeMismatch},
		{dec52, MustParseDecimal("123.45"), 16, nil},
		{dec52, MustParseDecimal("-999.9"), 16, nil},
		{dec52, MustParseDecimal("1000.00"), 0, ErrOutOfRange},
		{dec52, MustParseDecimal("1.234"), 0, ErrOutOfRange},
		{dec52, MustParseDecimal("1.230"), 16, nil},
		{dec52, "12.3", 16, nil},
		{dec52, "12,3", 0, ErrSyntax},
		{dec52, 999, 16, nil},
		{dec52, int8(9), 16, nil},
		{dec52, (*Decimal)(nil), 0, ErrTypeMismatch},
		{dec52, 1.5, 0, ErrTypeMismatch},
		{prim(schema.Variant), "x", 0, ErrUnsupported},
	} {
		name := fmt.Sprintf("%s/%T(%v)", c.typ, c.v, c.v)
		n, err := Check(c.typ, c.v)
		if c.want == nil {
			if err != nil || n != c.size {
				t.Errorf("%s: size %d err %v, want %d nil", name, n, err, c.size)
			}
			continue
		}
		var ve *Error
		if !errors.Is(err, c.want) || !errors.As(err, &ve) || ve.Type.String() != c.typ.String() {
			t.Errorf("%s: err %v, want a *Error wrapping %v", name, err, c.want)
		}
	}
}

func TestCheckNested(t *testing.T) {
	st := schema.NewStruct(schema.NewField("a", prim(schema.Long), false), schema.NewField("b", prim(schema.String), true))
	arr := &schema.ArrayType{ElementType: prim(schema.Integer), ContainsNull: false}
	mt := &schema.MapType{KeyType: prim(schema.String), ValueType: st, ValueContainsNull: true}
	for _, c := range []struct {
		typ    schema.Type
		v      any
		size   int64
		want   error
		column string
	}{
		{st, Row{int64(1), "xy"}, 14, nil, ""},
		{st, Row{int64(1)}, 0, ErrOutOfRange, ""},
		{st, Row{nil, "x"}, 0, ErrNull, `column "a"`},
		{st, Row{"1", "x"}, 0, ErrTypeMismatch, `column "a"`},
		{st, map[string]any{"a": int64(1)}, 0, ErrTypeMismatch, ""},
		{arr, []any{int32(1), int32(2)}, 12, nil, ""},
		{arr, []any{int32(1), nil}, 0, ErrNull, "element 1"},
		{arr, []any{int32(1), int64(1) << 40}, 0, ErrOutOfRange, "element 1"},
		{mt, []MapEntry{{Key: "k", Value: Row{int64(1), nil}}, {Key: "n"}}, 4 + 5 + 8 + 5, nil, ""},
		{mt, []MapEntry{{Key: nil, Value: nil}}, 0, ErrNull, "entry 0"},
		{mt, []MapEntry{{Key: 1, Value: nil}}, 0, ErrTypeMismatch, "key of entry 0"},
		{mt, []MapEntry{{Key: "k", Value: Row{nil, nil}}}, 0, ErrNull, `value of entry 0: column "a"`},
	} {
		n, err := Check(c.typ, c.v)
		if c.want == nil {
			if err != nil || n != c.size {
				t.Errorf("%s %v: size %d err %v, want %d", c.typ, c.v, n, err, c.size)
			}
			continue
		}
		var ve *Error
		if !errors.Is(err, c.want) || !errors.As(err, &ve) || ve.Column != c.column {
			t.Errorf("%s %v: err %v, want %v at %q", c.typ, c.v, err, c.want, c.column)
		}
	}
	f := schema.NewField("x", prim(schema.Long), false)
	if _, err := CheckField(f, nil); !errors.Is(err, ErrNull) {
		t.Errorf("null in a non-nullable field: %v", err)
	}
	f.Nullable = true
	if n, err := CheckField(f, nil); err != nil || n != 0 {
		t.Errorf("null in a nullable field: %d %v", n, err)
	}
}

func TestNormalize(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	local := time.Date(2024, 1, 2, 3, 4, 5, 0, berlin)
	for _, c := range []struct {
		typ      schema.Type
		in, want any
	}{
		{prim(schema.Long), int32(5), int64(5)},
		{prim(schema.Integer), 5, int32(5)},
		{prim(schema.Short), int64(5), int16(5)},
		{prim(schema.Byte), uint8(5), int8(5)},
		{prim(schema.Float), 0.5, float32(0.5)},
		{prim(schema.Double), float32(0.5), 0.5},
		{prim(schema.String), []byte("ab"), "ab"},
		{prim(schema.Binary), "ab", []byte("ab")},
		{prim(schema.Date), local, Date(19724)},
		{prim(schema.Timestamp), local, time.Date(2024, 1, 2, 2, 4, 5, 0, time.UTC)},
		{prim(schema.TimestampNTZ), local, time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{dec52, "1.5", Decimal{Unscaled: MustParseDecimal("150").Unscaled, Scale: 2}},
	} {
		got, err := CodecOf(c.typ).Normalize(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Normalize(%T %v) = %T %v, %v; want %T %v", c.typ, c.in, c.in, got, got, err, c.want, c.want)
		}
	}
}

func TestPartitionRoundTrip(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, c := range []struct {
		typ  schema.Type
		in   any
		s    string
		null bool
		back any // nil: in
	}{
		{prim(schema.String), "a b/c=d%", "a b/c=d%", false, nil},
		{prim(schema.String), "", "", true, nil},
		{prim(schema.String), "__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__", false, nil},
		{prim(schema.Binary), []byte{}, "", true, nil},
		{prim(schema.Binary), []byte("x\x00"), "x\x00", false, nil},
		{prim(schema.Boolean), false, "false", false, nil},
		{prim(schema.Long), int64(-9223372036854775808), "-9223372036854775808", false, nil},
		{prim(schema.Integer), int32(-5), "-5", false, nil},
		{prim(schema.Short), int16(300), "300", false, nil},
		{prim(schema.Byte), int8(-128), "-128", false, nil},
		{prim(schema.Float), float32(0.1), "0.1", false, nil},
		{prim(schema.Double), math.Inf(-1), "-Infinity", false, nil},
		{prim(schema.Double), 1e21, "1e+21", false, nil},
		{prim(schema.Date), Date(-1), "1969-12-31", false, nil},
		{prim(schema.Timestamp), ts, "2024-01-02T03:04:05.123456Z", false, ts.Truncate(time.Microsecond)},
		{prim(schema.Timestamp), ts.In(time.FixedZone("X", -7200)), "2024-01-02T03:04:05.123456Z", false, ts.Truncate(time.Microsecond)},
		{prim(schema.TimestampNTZ), ts, "2024-01-02 03:04:05.123456", false, ts.Truncate(time.Microsecond)},
		{dec52, MustParseDecimal("-1.5"), "-1.50", false, MustParseDecimal("-1.50")},
		{dec52, nil, "", true, nil},
	} {
		cd := CodecOf(c.typ)
		s, ok, err := cd.FormatPartition(c.in)
		if err != nil || ok == c.null || s != c.s {
			t.Errorf("%s: FormatPartition(%v) = %q %v %v, want %q null=%v", c.typ, c.in, s, ok, err, c.s, c.null)
			continue
		}
		if c.null {
			continue
		}
		back, err := cd.ParsePartition(s)
		want := c.back
		if want == nil {
			want = c.in
		}
		if err != nil || !reflect.DeepEqual(back, want) {
			t.Errorf("%s: ParsePartition(%q) = %T %v, %v; want %T %v", c.typ, s, back, back, err, want, want)
		}
	}
	// NaN does not DeepEqual itself.
	if v, err := CodecOf(prim(schema.Double)).ParsePartition("NaN"); err != nil || !math.IsNaN(v.(float64)) {
		t.Errorf("NaN: %v %v", v, err)
	}
	// Other timestamp forms Spark and delta-rs write.
	for _, s := range []string{"2024-01-02 03:04:05", "2024-01-02T03:04:05Z", "2024-01-02T03:04:05.000000", "2024-01-02 05:04:05+02:00"} {
		v, err := CodecOf(prim(schema.Timestamp)).ParsePartition(s)
		if err != nil || !v.(time.Time).Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Errorf("ParsePartition(%q) = %v, %v", s, v, err)
		}
	}
}

func TestPartitionRejects(t *testing.T) {
	for _, c := range []struct {
		typ  schema.Type
		in   any
		want error
	}{
		{prim(schema.Integer), int64(1) << 40, ErrOutOfRange},
		{prim(schema.Byte), 200, ErrOutOfRange},
		{prim(schema.Long), "1", ErrTypeMismatch},
		{dec52, MustParseDecimal("0.001"), ErrOutOfRange},
		{dec52, MustParseDecimal("1000"), ErrOutOfRange},
		{prim(schema.Variant), "x", ErrUnsupported},
	} {
		if _, _, err := CodecOf(c.typ).FormatPartition(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: FormatPartition(%v) err %v, want %v", c.typ, c.in, err, c.want)
		}
	}
	for _, c := range []struct {
		typ  schema.Type
		s    string
		want error
	}{
		{prim(schema.Integer), "2147483648", ErrSyntax},
		{prim(schema.Byte), "x", ErrSyntax},
		{prim(schema.Boolean), "yes", ErrSyntax},
		{prim(schema.Date), "2024-13-01", ErrSyntax},
		{prim(schema.Timestamp), "yesterday", ErrSyntax},
		{dec52, "1e3", ErrSyntax},
		{dec52, "0.001", ErrOutOfRange},
		{prim(schema.Variant), "x", ErrUnsupported},
	} {
		if v, err := CodecOf(c.typ).ParsePartition(c.s); !errors.Is(err, c.want) {
			t.Errorf("%s: ParsePartition(%q) = %v, %v; want %v", c.typ, c.s, v, err, c.want)
		}
	}
}

func TestStatsRoundTrip(t *testing.T) {
	ts := time.Date(2024, 1, 2, 3, 4, 5, 123999000, time.UTC)
	for _, c := range []struct {
		typ  schema.Type
		in   any
		lit  any // nil: no literal (ok false)
		back any // nil: in
	}{
		{prim(schema.Long), int64(-42), json.Number("-42"), nil},
		{prim(schema.Integer), int32(7), json.Number("7"), nil},
		{prim(schema.Short), int16(7), json.Number("7"), nil},
		{prim(schema.Byte), int8(-7), json.Number("-7"), nil},
		{prim(schema.Double), 0.1, json.Number("0.1"), nil},
		{prim(schema.Double), 1e-7, json.Number("1e-7"), nil},
		{prim(schema.Double), 1e21, json.Number("1e+21"), nil},
		{prim(schema.Double), math.Copysign(0, -1), json.Number("-0"), nil},
		{prim(schema.Float), float32(0.1), json.Number("0.1"), nil},
		{prim(schema.Float), float32(16777216), json.Number("16777216"), nil},
		{prim(schema.Double), math.NaN(), nil, nil},
		{prim(schema.Double), math.Inf(1), nil, nil},
		{prim(schema.Float), float32(math.Inf(-1)), nil, nil},
		{dec52, MustParseDecimal("-0.5"), json.Number("-0.50"), MustParseDecimal("-0.50")},
		{dec52, MustParseDecimal("999.99"), json.Number("999.99"), nil},
		{prim(schema.String), "ü\"x", "ü\"x", nil},
		{prim(schema.Date), Date(0), "1970-01-01", nil},
		{prim(schema.Timestamp), ts, "2024-01-02T03:04:05.123Z", ts.Truncate(time.Millisecond)},
		{prim(schema.Timestamp), time.UnixMicro(-1).UTC(), "1969-12-31T23:59:59.999Z", time.UnixMilli(-1).UTC()},
		{prim(schema.TimestampNTZ), ts, "2024-01-02T03:04:05.123", ts.Truncate(time.Millisecond)},
		{prim(schema.Boolean), true, nil, nil},
		{prim(schema.Binary), []byte("x"), nil, nil},
	} {
		cd := CodecOf(c.typ)
		lit, ok, err := cd.FormatStats(c.in)
		if err != nil || ok != (c.lit != nil) || !reflect.DeepEqual(lit, c.lit) {
			t.Errorf("%s: FormatStats(%v) = %T %v %v %v, want %T %v", c.typ, c.in, lit, lit, ok, err, c.lit, c.lit)
			continue
		}
		if !ok {
			continue
		}
		back, err := cd.ParseStats(lit)
		want := c.back
		if want == nil {
			want = c.in
		}
		if err != nil || !reflect.DeepEqual(back, want) {
			t.Errorf("%s: ParseStats(%v) = %T %v, %v; want %T %v", c.typ, lit, back, back, err, want, want)
		}
	}
	// The non-JSON floats Spark writes as strings, and float64 literals from
	// a decode without UseNumber.
	for _, c := range []struct {
		lit  any
		want float64
	}{{"Infinity", math.Inf(1)}, {"-Infinity", math.Inf(-1)}, {2.5, 2.5}} {
		if v, err := CodecOf(prim(schema.Double)).ParseStats(c.lit); err != nil || v != c.want {
			t.Errorf("ParseStats(%v) = %v, %v", c.lit, v, err)
		}
	}
	if v, err := CodecOf(prim(schema.Double)).ParseStats("NaN"); err != nil || !math.IsNaN(v.(float64)) {
		t.Errorf("ParseStats(NaN) = %v, %v", v, err)
	}
	for _, c := range []struct {
		typ schema.Type
		lit any
	}{
		{prim(schema.Long), "1"}, {prim(schema.Long), json.Number("1.5")}, {prim(schema.Byte), json.Number("300")},
		{prim(schema.String), json.Number("1")}, {prim(schema.Date), "2024-02-30"}, {prim(schema.Timestamp), "x"},
		{dec52, json.Number("1e2")}, {prim(schema.Boolean), true}, {prim(schema.Binary), "x"},
	} {
		if v, err := CodecOf(c.typ).ParseStats(c.lit); err == nil {
			t.Errorf("%s: ParseStats(%v) = %v, want an error", c.typ, c.lit, v)
		}
	}
}

func TestArrowType(t *testing.T) {
	for _, c := range []struct {
		typ  schema.Type
		want arrow.DataType
	}{
		{prim(schema.Long), arrow.PrimitiveTypes.Int64},
		{prim(schema.Integer), arrow.PrimitiveTypes.Int32},
		{prim(schema.Short), arrow.PrimitiveTypes.Int16},
		{prim(schema.Byte), arrow.PrimitiveTypes.Int8},
		{prim(schema.Float), arrow.PrimitiveTypes.Float32},
		{prim(schema.Double), arrow.PrimitiveTypes.Float64},
		{prim(schema.Boolean), arrow.FixedWidthTypes.Boolean},
		{prim(schema.String), arrow.BinaryTypes.String},
		{prim(schema.Binary), arrow.BinaryTypes.Binary},
		{prim(schema.Date), arrow.FixedWidthTypes.Date32},
		{prim(schema.Timestamp), &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{prim(schema.TimestampNTZ), &arrow.TimestampType{Unit: arrow.Microsecond}},
		{dec52, &arrow.Decimal128Type{Precision: 5, Scale: 2}},
		{&schema.DecimalType{Precision: 39, Scale: 0}, nil},
		{prim(schema.Variant), nil},
	} {
		got := CodecOf(c.typ).ArrowType()
		if (got == nil) != (c.want == nil) || got != nil && !arrow.TypeEqual(got, c.want) {
			t.Errorf("%s: ArrowType %v, want %v", c.typ, got, c.want)
		}
	}
	for _, nt := range []schema.Type{prim(schema.Void), schema.NewStruct(), &schema.ArrayType{ElementType: prim(schema.Long)}} {
		if c := CodecOf(nt); c != nil {
			t.Errorf("CodecOf(%s) = %v, want nil", nt, c)
		}
	}
}

// TestColumnCheckerOf: the column check adds each cell's size (8 for a
// long or timestamp, length + 4 for a string, other's answer for the rest,
// nil included) to the row's size, and stops at the first row other
// refuses, whatever the column's type.
func TestColumnCheckerOf(t *testing.T) {
	ts := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	far := time.Date(290001, 1, 1, 0, 0, 0, 0, time.UTC) // out of range: goes to other
	errBad := errors.New("refused")
	other := func(v any) (int64, error) {
		switch x := v.(type) {
		case nil:
			return 1, nil
		case int32:
			return 100 + int64(x), nil
		case time.Time:
			return 200, nil
		}
		return 0, errBad
	}
	for _, tc := range []struct {
		name  string
		typ   schema.Type
		cells []any
		sizes []int64 // added to a starting size of 1000
		bad   int     // -1: no error
	}{
		{"long", prim(schema.Long), []any{int64(5), 7, nil, int32(3)}, []int64{8, 8, 1, 103}, -1},
		{"long refused", prim(schema.Long), []any{int64(5), "x", int64(1)}, []int64{8, 0, 0}, 1},
		{"string", prim(schema.String), []any{"", "abc", nil}, []int64{4, 7, 1}, -1},
		{"string refused", prim(schema.String), []any{"abc", []byte("x")}, []int64{7, 0}, 1},
		{"timestamp", prim(schema.Timestamp), []any{ts, far, nil}, []int64{8, 200, 1}, -1},
		{"timestamp_ntz refused", prim(schema.TimestampNTZ), []any{ts, int64(1)}, []int64{8, 0}, 1},
		{"other type", prim(schema.Integer), []any{int32(2), nil, "x"}, []int64{102, 1, 0}, 2},
		{"decimal", &schema.DecimalType{Precision: 5, Scale: 2}, []any{int32(1)}, []int64{101}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := make([]Row, len(tc.cells))
			sizes := make([]int64, len(tc.cells))
			for i, v := range tc.cells {
				rows[i] = Row{"pad", v}
				sizes[i] = 1000
			}
			bad, err := ColumnCheckerOf(tc.typ, other)(rows, 1, sizes)
			if tc.bad < 0 {
				if err != nil {
					t.Fatalf("err %v", err)
				}
			} else if !errors.Is(err, errBad) || bad != tc.bad {
				t.Fatalf("bad %d, err %v; want row %d refused", bad, err, tc.bad)
			}
			for i, want := range tc.sizes {
				if sizes[i] != 1000+want {
					t.Errorf("size of row %d = %d, want %d", i, sizes[i], 1000+want)
				}
			}
		})
	}
}
