package bind

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func exprSchema() *schema.StructType {
	p := schema.Primitive
	return schema.NewStruct(
		schema.NewField("i", p(schema.Long), true),
		schema.NewField("f", p(schema.Float), true),
		schema.NewField("d", p(schema.Double), true),
		schema.NewField("s", p(schema.String), true),
		schema.NewField("bin", p(schema.Binary), true),
		schema.NewField("b", p(schema.Boolean), true),
		schema.NewField("dt", p(schema.Date), true),
		schema.NewField("ts", p(schema.Timestamp), true),
		schema.NewField("ntz", p(schema.TimestampNTZ), true),
		schema.NewField("dec", &schema.DecimalType{Precision: 5, Scale: 2}, true),
		schema.NewField("st", schema.NewStruct(
			schema.NewField("x", p(schema.Integer), true),
			schema.NewField("y", p(schema.String), true)), true),
		schema.NewField("arr", &schema.ArrayType{ElementType: p(schema.Integer), ContainsNull: true}, true),
		schema.NewField("sh", p(schema.Short), true),
	)
}

func exprRows() []value.Row {
	day := func(y int, m time.Month, d int) value.Date {
		return value.DateOf(time.Date(y, m, d, 0, 0, 0, 0, time.UTC))
	}
	return []value.Row{
		{int64(1), float32(0.1), 1.5, "a", []byte{1, 2}, true, day(2024, 1, 1),
			time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC),
			value.NewDecimal(150, 2), value.Row{int32(1), "p"}, []any{int32(1)}, int16(-1)},
		{int64(2), float32(math.NaN()), math.NaN(), "b", []byte{3}, false, day(2024, 1, 2),
			time.Date(2024, 1, 1, 1, 0, 0, 1000, time.UTC), time.Date(2024, 1, 2, 12, 0, 0, 0, time.UTC),
			value.NewDecimal(200, 2), value.Row{nil, "q"}, nil, int16(7)},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(3), float32(2.5), math.Copysign(0, -1), "ab", []byte{}, true, day(2023, 12, 31),
			time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC), time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC),
			value.NewDecimal(-125, 2), value.Row{int32(3), nil}, []any{}, int16(300)},
	}
}

func TestExprMatchRows(t *testing.T) {
	cest := time.FixedZone("CEST", 2*3600)
	tests := []struct {
		e    expr.Expr
		want []int
	}{
		{expr.Col("i").Eq(1), []int{0}},
		{expr.Col("i").Eq(int8(1)), []int{0}},
		{expr.Not(expr.Col("i").Eq(1)), []int{1, 3}}, // null is neither = nor !=
		{expr.Col("i").Ne(1), []int{1, 3}},
		{expr.Col("i").Lt(2), []int{0}},
		{expr.Col("i").Le(2), []int{0, 1}},
		{expr.Col("i").Gt(2), []int{3}},
		{expr.Col("i").Ge(2), []int{1, 3}},
		{expr.Col("i").In(1, 3), []int{0, 3}},
		{expr.Not(expr.Col("i").In(1, 3)), []int{1}},
		{expr.Col("i").In(), nil},
		{expr.Not(expr.Col("i").In()), []int{0, 1, 2, 3}},
		{expr.Col("i").IsNull(), []int{2}},
		{expr.Col("i").IsNotNull(), []int{0, 1, 3}},
		{expr.Not(expr.Col("i").IsNull()), []int{0, 1, 3}},
		{expr.Not(expr.Not(expr.Col("i").Eq(2))), []int{1}},
		{expr.Or(expr.Col("i").Eq(1), expr.Col("s").Eq("b")), []int{0, 1}},
		{expr.And(expr.Col("i").Ge(1), expr.Col("s").Lt("b")), []int{0, 3}},
		{expr.Not(expr.And(expr.Col("i").Eq(1), expr.Col("s").Eq("x"))), []int{0, 1, 3}},
		{expr.Not(expr.Or(expr.Col("i").Eq(1), expr.Col("s").Eq("b"))), []int{3}},
		{expr.And(), []int{0, 1, 2, 3}},
		{expr.Or(), nil},
		{expr.Not(expr.And()), nil},
		{expr.Col("I").Eq(3), []int{3}}, // case-insensitive fallback
		{expr.Col("sh").Gt(100), []int{3}},
		// floats: float columns compare as float32; NaN per IEEE 754
		{expr.Col("f").Eq(0.1), []int{0}},
		{expr.Col("f").Eq(float32(0.1)), []int{0}},
		{expr.Col("f").Gt(1), []int{3}},
		{expr.Col("f").Ne(2.5), []int{0, 1}},
		{expr.Not(expr.Col("f").Gt(1)), []int{0, 1}}, // NOT (NaN > 1) is true
		{expr.Not(expr.Col("f").Ne(2.5)), []int{3}},
		{expr.Col("f").Le(1), []int{0}},
		{expr.Col("d").Eq(math.NaN()), nil},
		{expr.Not(expr.Col("d").Eq(math.NaN())), []int{0, 1, 3}},
		{expr.Col("d").Eq(0), []int{3}}, // -0.0 = 0.0
		{expr.Col("d").In(1.5, math.NaN()), []int{0}},
		{expr.Not(expr.Col("d").In(1.5)), []int{1, 3}},
		// strings and binary compare byte-wise
		{expr.Col("s").Lt("b"), []int{0, 3}},
		{expr.Col("s").Gt("a"), []int{1, 3}},
		{expr.Col("s").Eq([]byte("ab")), []int{3}},
		{expr.Col("bin").Eq([]byte{1, 2}), []int{0}},
		{expr.Col("bin").Lt([]byte{2}), []int{0, 3}},
		{expr.Col("bin").Eq(""), []int{3}},
		{expr.Col("b").Eq(true), []int{0, 3}},
		{expr.Col("b").Lt(true), []int{1}},
		// dates, timestamps
		{expr.Col("dt").Ge("2024-01-01"), []int{0, 1}},
		{expr.Col("dt").Eq(time.Date(2024, 1, 2, 23, 59, 0, 0, time.UTC)), []int{1}},
		{expr.Col("dt").Lt(value.DateOf(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))), []int{3}},
		{expr.Col("ts").Eq(time.Date(2024, 1, 1, 2, 0, 0, 0, cest)), []int{0}}, // same instant
		{expr.Col("ts").Gt(time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC)), []int{1}},
		{expr.Col("ts").Gt(time.Date(2024, 1, 1, 1, 0, 0, 999, time.UTC)), []int{1}},
		{expr.Col("ts").Le("2024-01-01 00:00:00"), []int{0, 3}},
		{expr.Col("ntz").Eq(time.Date(2024, 1, 1, 12, 0, 0, 0, cest)), []int{0}}, // wall clock
		{expr.Col("ntz").Lt(time.Date(2024, 1, 1, 0, 0, 0, 0, cest)), []int{3}},
		// decimals compare by value, whatever the scale
		{expr.Col("dec").Eq("1.5"), []int{0}},
		{expr.Col("dec").Eq(2), []int{1}},
		{expr.Col("dec").Lt(value.NewDecimal(0, 0)), []int{3}},
		{expr.Col("dec").Ge(value.MustParseDecimal("1.500")), []int{0, 1}},
		// nested fields; a null struct makes its fields null
		{expr.Col("st").Field("x").Eq(1), []int{0}},
		{expr.Col("st").Field("x").IsNull(), []int{1, 2}},
		{expr.Col("st").Field("y").IsNull(), []int{2, 3}},
		{expr.Col("st").IsNull(), []int{2}},
		{expr.Col("arr").IsNull(), []int{1, 2}},
		{expr.Col("arr").IsNotNull(), []int{0, 3}},
	}
	sch := exprSchema()
	rows := exprRows()
	for _, tc := range tests {
		t.Run(tc.e.String(), func(t *testing.T) {
			p, err := NewBinder(sch, nil, "none").Bind(tc.e, false)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for i, r := range rows {
				if p.MatchRow(r) {
					got = append(got, i)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s matches rows %v, want %v", tc.e, got, tc.want)
			}
		})
	}
}

func TestExprNegationNormalForm(t *testing.T) {
	sch := exprSchema()
	p, err := NewBinder(sch, nil, "none").Bind(expr.Not(expr.And(expr.Col("i").Lt(1), expr.Or(expr.Col("s").IsNull(), expr.Not(expr.Col("d").Ge(2))), expr.And())), false)
	if err != nil {
		t.Fatal(err)
	}
	// NOT (i < 1 AND (s IS NULL OR NOT d >= 2) AND TRUE)
	//   = i >= 1 OR (s IS NOT NULL AND d >= 2)
	if p.Kind != PredOr || len(p.Kids) != 2 {
		t.Fatalf("top: kind %d with %d kids, want OR of 2", p.Kind, len(p.Kids))
	}
	a, b := p.Kids[0], p.Kids[1]
	if a.Kind != PredCmp || a.Op != expr.OpGe || a.Col.Name != "i" {
		t.Errorf("first: %+v, want i >= 1", a)
	}
	if b.Kind != PredAnd || len(b.Kids) != 2 || b.Kids[0].Kind != PredIsNotNull || b.Kids[1].Kind != PredCmp ||
		b.Kids[1].Op != expr.OpGe || b.Kids[1].NaNTrue {
		t.Errorf("second: %+v, want s IS NOT NULL AND d >= 2", b)
	}
	p, err = NewBinder(sch, nil, "none").Bind(expr.Not(expr.Col("d").Lt(2)), false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Op != expr.OpGe || !p.NaNTrue {
		t.Errorf("NOT d < 2 = %+v, want d >= 2 OR NaN", p)
	}
}

func TestExprBindErrors(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("Name", schema.Primitive(schema.String), true),
		schema.NewField("NAME", schema.Primitive(schema.String), true),
		schema.NewField("n", schema.Primitive(schema.Integer), true),
	)
	for _, e := range []expr.Expr{
		expr.Col("name").Eq("x"), // two columns fold to "name"
		expr.Col("n").Eq(1.0),
		expr.Col("n").Eq(true),
		expr.Col("").IsNull(),
		expr.Column{}.IsNull(),
	} {
		if _, err := NewBinder(sch, nil, "none").Bind(e, false); !errors.Is(err, objectstore.ErrInvalidArgument) {
			t.Errorf("bind(%s) = %v, want objectstore.ErrInvalidArgument", e, err)
		}
	}
	if _, err := NewBinder(sch, nil, "none").Bind(expr.Col("Name").Eq("x"), false); err != nil {
		t.Errorf("exact name: %v", err)
	}
}
