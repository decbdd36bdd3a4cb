package expr_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func TestBoundsMayCompare(t *testing.T) {
	ints := &expr.Bounds{Kind: expr.KindInt, Min: int64(10), Max: int64(20), NullCount: 0, NumRecords: 5}
	strs := &expr.Bounds{Kind: expr.KindString, Min: "apple", Max: "melon", NullCount: -1, NumRecords: -1}
	floats := &expr.Bounds{Kind: expr.KindFloat64, Min: 1.0, Max: 2.0, NullCount: 0, NumRecords: 3}
	allNull := &expr.Bounds{Kind: expr.KindInt, NullCount: 4, NumRecords: 4}
	for _, tc := range []struct {
		name    string
		b       *expr.Bounds
		op      expr.Op
		lit     any
		nanTrue bool
		want    bool
	}{
		{"eq inside", ints, expr.OpEq, int64(15), false, true},
		{"eq below", ints, expr.OpEq, int64(9), false, false},
		{"eq above", ints, expr.OpEq, int64(21), false, false},
		{"lt min", ints, expr.OpLt, int64(10), false, false},
		{"le min", ints, expr.OpLe, int64(10), false, true},
		{"gt max", ints, expr.OpGt, int64(20), false, false},
		{"ge max", ints, expr.OpGe, int64(20), false, true},
		{"ne range", ints, expr.OpNe, int64(15), false, true},
		{"ne min=max=lit", &expr.Bounds{Kind: expr.KindInt, Min: int64(3), Max: int64(3), NullCount: 0, NumRecords: 2}, expr.OpNe, int64(3), false, false},
		{"string max is a truncated prefix", strs, expr.OpEq, "melons", false, true},
		{"string beyond max", strs, expr.OpGt, "zebra", false, false},
		{"string ne never skips", &expr.Bounds{Kind: expr.KindString, Min: "a", Max: "a", NullCount: 0, NumRecords: 1}, expr.OpNe, "a", false, true},
		{"float outside but NaN may match", floats, expr.OpNe, 5.0, true, true},
		{"float outside", floats, expr.OpGt, 5.0, false, false},
		{"all null", allNull, expr.OpEq, int64(1), false, false},
		{"unknown bounds", &expr.Bounds{Kind: expr.KindInt, NullCount: -1, NumRecords: -1}, expr.OpEq, int64(1), false, true},
	} {
		if got := tc.b.MayCompare(tc.op, tc.lit, tc.nanTrue); got != tc.want {
			t.Errorf("%s: MayCompare(%s, %v) = %v, want %v", tc.name, tc.op, tc.lit, got, tc.want)
		}
	}
	if ints.MayIn([]any{int64(1), int64(30)}, false) || !ints.MayIn([]any{int64(1), int64(12)}, false) {
		t.Error("MayIn")
	}
	one := &expr.Bounds{Kind: expr.KindInt, Min: int64(7), Max: int64(7), NullCount: 0, NumRecords: 1}
	if one.MayIn([]any{int64(7)}, true) || !ints.MayIn([]any{int64(7)}, true) {
		t.Error("MayIn NOT")
	}
	if allNull.MayNull(true) || !allNull.MayNull(false) || ints.MayNull(false) || !ints.MayNull(true) {
		t.Error("MayNull")
	}
}

func TestBoundsMustCompare(t *testing.T) {
	b := &expr.Bounds{Kind: expr.KindInt, Min: int64(10), Max: int64(20), NullCount: 0, NumRecords: 5}
	for _, tc := range []struct {
		op   expr.Op
		lit  int64
		want bool
	}{
		{expr.OpGe, 10, true}, {expr.OpGt, 10, false}, {expr.OpLt, 21, true}, {expr.OpLe, 19, false},
		{expr.OpNe, 9, true}, {expr.OpNe, 15, false}, {expr.OpEq, 15, false},
	} {
		if got := b.MustCompare(tc.op, tc.lit); got != tc.want {
			t.Errorf("[10,20] %s %d: MustCompare = %v, want %v", tc.op, tc.lit, got, tc.want)
		}
	}
	withNull := *b
	withNull.NullCount = 1
	if withNull.MustCompare(expr.OpGe, 0) {
		t.Error("MustCompare with nulls")
	}
	str := &expr.Bounds{Kind: expr.KindString, Min: "a", Max: "b", NullCount: 0, NumRecords: 1}
	if str.MustCompare(expr.OpGe, "a") {
		t.Error("MustCompare on a (truncatable) string")
	}
}

func TestParseStats(t *testing.T) {
	st := expr.ParseStats(`{"numRecords":4,"tightBounds":false,"minValues":{"a":1,"s":{"x":"2024-01-02T03:04:05.000Z"},"f":"-Infinity","d":1.5E-3},` +
		`"maxValues":{"a":9,"f":"NaN","d":"x"},"nullCount":{"a":0,"s":{"x":2}}}`)
	if st == nil || st.NumRecords != 4 || st.Tight {
		t.Fatalf("ParseStats: %+v", st)
	}
	a := st.Bounds(expr.KindInt, []string{"a"})
	if a.Min != int64(1) || a.Max != int64(9) || a.NullCount != 0 {
		t.Errorf("a: %+v", a)
	}
	x := st.Bounds(expr.KindTimestamp, []string{"s", "x"})
	if want := time.Date(2024, 1, 2, 3, 4, 4, 999e6, time.UTC); x.Min != want || x.NullCount != -1 {
		t.Errorf("s.x: %+v (min widened by -1 ms to %v; a null count of 2 of 4 with wide bounds says nothing)", x, want)
	}
	f := st.Bounds(expr.KindFloat64, []string{"f"})
	if f.Min != math.Inf(-1) || f.Max != nil {
		t.Errorf("f: %+v", f)
	}
	d := st.Bounds(expr.KindDecimal, []string{"d"})
	if !same(d.Min, value.NewDecimal(15, 4)) || d.Max != nil {
		t.Errorf("d: %+v", d)
	}
	for _, bad := range []string{"", "{", `{"numRecords":"x"`} {
		if st := expr.ParseStats(bad); st != nil {
			t.Errorf("ParseStats(%q) = %+v, want nil", bad, st)
		}
	}
}

func TestConvertAndCompare(t *testing.T) {
	dec := &schema.DecimalType{Precision: 10, Scale: 2}
	for _, tc := range []struct {
		k    expr.Kind
		typ  schema.Type
		v    any
		want any
	}{
		{expr.KindInt, schema.Primitive(schema.Integer), int8(-3), int64(-3)},
		{expr.KindFloat32, schema.Primitive(schema.Float), 0.1, float64(float32(0.1))},
		{expr.KindFloat64, schema.Primitive(schema.Double), 2, 2.0},
		{expr.KindString, schema.Primitive(schema.String), []byte("hi"), "hi"},
		{expr.KindDate, schema.Primitive(schema.Date), "1970-01-03", int64(2)},
		{expr.KindTimestampNTZ, schema.Primitive(schema.TimestampNTZ), time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{expr.KindDecimal, dec, "12.34", value.NewDecimal(1234, 2)},
	} {
		got, err := expr.Convert(tc.k, "c", tc.typ, tc.v)
		if err != nil || !same(got, tc.want) {
			t.Errorf("Convert(%s, %v) = %v, %v; want %v", tc.typ, tc.v, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		k   expr.Kind
		typ schema.Type
		v   any
	}{
		{expr.KindInt, schema.Primitive(schema.Long), 2.5},
		{expr.KindInt, schema.Primitive(schema.Long), nil},
		{expr.KindDate, schema.Primitive(schema.Date), "2024-13-01"},
		{expr.KindUnsupported, &schema.StructType{}, 1},
	} {
		if _, err := expr.Convert(bad.k, "c", bad.typ, bad.v); !errors.Is(err, expr.ErrInvalidArgument) {
			t.Errorf("Convert(%s, %v): %v, want ErrInvalidArgument", bad.typ, bad.v, err)
		}
	}
	if expr.CompareTrue(expr.KindFloat64, math.NaN(), expr.OpEq, 1.0, false) || !expr.CompareTrue(expr.KindFloat64, math.NaN(), expr.OpNe, 1.0, true) {
		t.Error("NaN comparisons")
	}
	if !expr.CompareTrue(expr.KindFloat64, math.Copysign(0, -1), expr.OpEq, 0.0, false) {
		t.Error("-0.0 = 0.0")
	}
	if c, ok := expr.Compare(expr.KindBinary, []byte{1}, []byte{1, 0}); !ok || c >= 0 {
		t.Error("binary compare")
	}
}

// same compares canonical values; decimals by value.
func same(a, b any) bool {
	if x, ok := a.(value.Decimal); ok {
		y, ok := b.(value.Decimal)
		return ok && x.Cmp(y) == 0 && x.Scale == y.Scale
	}
	return a == b
}

func TestStatValue(t *testing.T) {
	ms := time.Millisecond
	ts := time.Date(2024, 3, 1, 12, 30, 0, 123_000_000, time.UTC)
	for _, c := range []struct {
		k     expr.Kind
		v     any
		widen time.Duration
		want  any
	}{
		{expr.KindInt, json.Number("-42"), 0, int64(-42)},
		{expr.KindInt, json.Number("1.5"), 0, nil},
		{expr.KindInt, json.Number("9223372036854775808"), 0, nil},
		{expr.KindInt, "7", 0, nil},
		{expr.KindString, "héllo", 0, "héllo"},
		{expr.KindString, json.Number("3"), 0, nil},
		{expr.KindDate, "2024-03-01", 0, int64(19783)},
		{expr.KindDate, "2024-13-01", 0, nil},
		{expr.KindTimestamp, "2024-03-01T12:30:00.123Z", -ms, ts.Add(-ms)},
		{expr.KindTimestamp, "2024-03-01T13:30:00.123+01:00", ms, ts.Add(ms)},
		{expr.KindTimestampNTZ, "2024-03-01T12:30:00.123", 0, ts},
		{expr.KindTimestamp, json.Number("1"), 0, nil},
		{expr.KindFloat64, json.Number("2.5"), 0, 2.5},
		{expr.KindFloat64, "-inf", 0, math.Inf(-1)},
		{expr.KindFloat64, "NaN", 0, nil},
		{expr.KindFloat32, json.Number("0.1"), 0, float64(float32(0.1))},
		{expr.KindBool, true, 0, true},
		{expr.KindDecimal, json.Number("1.5E-3"), 0, value.Decimal{Unscaled: big.NewInt(15), Scale: 4}},
	} {
		got := expr.StatValue(c.k, c.v, c.widen)
		if d, ok := got.(value.Decimal); ok {
			if w, ok := c.want.(value.Decimal); !ok || d.Cmp(w) != 0 || d.Scale != w.Scale {
				t.Errorf("StatValue(%v, %#v) = %v, want %v", c.k, c.v, got, c.want)
			}
			continue
		}
		if tm, ok := got.(time.Time); ok {
			if w, ok := c.want.(time.Time); !ok || !tm.Equal(w) {
				t.Errorf("StatValue(%v, %#v) = %v, want %v", c.k, c.v, got, c.want)
			}
			continue
		}
		if got != c.want {
			t.Errorf("StatValue(%v, %#v) = %#v, want %#v", c.k, c.v, got, c.want)
		}
	}
}
