package table

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
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

// exprRows are rows as parquetio reads them (Go types of the value model).
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

// TestExprMatchRows evaluates predicates row by row with SQL's
// three-valued logic: the want lists hold the indexes of exprRows for which
// the predicate is TRUE.
func TestExprMatchRows(t *testing.T) {
	cest := time.FixedZone("CEST", 2*3600)
	tests := []struct {
		e    Expr
		want []int
	}{
		{Col("i").Eq(1), []int{0}},
		{Col("i").Eq(int8(1)), []int{0}},
		{Not(Col("i").Eq(1)), []int{1, 3}}, // null is neither = nor !=
		{Col("i").Ne(1), []int{1, 3}},
		{Col("i").Lt(2), []int{0}},
		{Col("i").Le(2), []int{0, 1}},
		{Col("i").Gt(2), []int{3}},
		{Col("i").Ge(2), []int{1, 3}},
		{Col("i").In(1, 3), []int{0, 3}},
		{Not(Col("i").In(1, 3)), []int{1}},
		{Col("i").In(), nil},
		{Not(Col("i").In()), []int{0, 1, 2, 3}},
		{Col("i").IsNull(), []int{2}},
		{Col("i").IsNotNull(), []int{0, 1, 3}},
		{Not(Col("i").IsNull()), []int{0, 1, 3}},
		{Not(Not(Col("i").Eq(2))), []int{1}},
		{Or(Col("i").Eq(1), Col("s").Eq("b")), []int{0, 1}},
		{And(Col("i").Ge(1), Col("s").Lt("b")), []int{0, 3}},
		{Not(And(Col("i").Eq(1), Col("s").Eq("x"))), []int{0, 1, 3}},
		{Not(Or(Col("i").Eq(1), Col("s").Eq("b"))), []int{3}},
		{And(), []int{0, 1, 2, 3}},
		{Or(), nil},
		{Not(And()), nil},
		{Col("I").Eq(3), []int{3}}, // case-insensitive fallback
		{Col("sh").Gt(100), []int{3}},
		// floats: float columns compare as float32; NaN per IEEE 754
		{Col("f").Eq(0.1), []int{0}},
		{Col("f").Eq(float32(0.1)), []int{0}},
		{Col("f").Gt(1), []int{3}},
		{Col("f").Ne(2.5), []int{0, 1}},
		{Not(Col("f").Gt(1)), []int{0, 1}}, // NOT (NaN > 1) is true
		{Not(Col("f").Ne(2.5)), []int{3}},
		{Col("f").Le(1), []int{0}},
		{Col("d").Eq(math.NaN()), nil},
		{Not(Col("d").Eq(math.NaN())), []int{0, 1, 3}},
		{Col("d").Eq(0), []int{3}}, // -0.0 = 0.0
		{Col("d").In(1.5, math.NaN()), []int{0}},
		{Not(Col("d").In(1.5)), []int{1, 3}},
		// strings and binary compare byte-wise
		{Col("s").Lt("b"), []int{0, 3}},
		{Col("s").Gt("a"), []int{1, 3}},
		{Col("s").Eq([]byte("ab")), []int{3}},
		{Col("bin").Eq([]byte{1, 2}), []int{0}},
		{Col("bin").Lt([]byte{2}), []int{0, 3}},
		{Col("bin").Eq(""), []int{3}},
		{Col("b").Eq(true), []int{0, 3}},
		{Col("b").Lt(true), []int{1}},
		// dates, timestamps
		{Col("dt").Ge("2024-01-01"), []int{0, 1}},
		{Col("dt").Eq(time.Date(2024, 1, 2, 23, 59, 0, 0, time.UTC)), []int{1}},
		{Col("dt").Lt(value.DateOf(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))), []int{3}},
		{Col("ts").Eq(time.Date(2024, 1, 1, 2, 0, 0, 0, cest)), []int{0}}, // same instant
		{Col("ts").Gt(time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC)), []int{1}},
		{Col("ts").Gt(time.Date(2024, 1, 1, 1, 0, 0, 999, time.UTC)), []int{1}},
		{Col("ts").Le("2024-01-01 00:00:00"), []int{0, 3}},
		{Col("ntz").Eq(time.Date(2024, 1, 1, 12, 0, 0, 0, cest)), []int{0}}, // wall clock
		{Col("ntz").Lt(time.Date(2024, 1, 1, 0, 0, 0, 0, cest)), []int{3}},
		// decimals compare by value, whatever the scale
		{Col("dec").Eq("1.5"), []int{0}},
		{Col("dec").Eq(2), []int{1}},
		{Col("dec").Lt(value.NewDecimal(0, 0)), []int{3}},
		{Col("dec").Ge(value.MustParseDecimal("1.500")), []int{0, 1}},
		// nested fields; a null struct makes its fields null
		{Col("st").Field("x").Eq(1), []int{0}},
		{Col("st").Field("x").IsNull(), []int{1, 2}},
		{Col("st").Field("y").IsNull(), []int{2, 3}},
		{Col("st").IsNull(), []int{2}},
		{Col("arr").IsNull(), []int{1, 2}},
		{Col("arr").IsNotNull(), []int{0, 3}},
	}
	sch := exprSchema()
	rows := exprRows()
	for _, tc := range tests {
		t.Run(tc.e.String(), func(t *testing.T) {
			p, err := bind.NewBinder(sch, nil, "none").Bind(tc.e, false)
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

// TestExprNegationNormalForm checks that NOT is pushed into the leaves.
func TestExprNegationNormalForm(t *testing.T) {
	sch := exprSchema()
	p, err := bind.NewBinder(sch, nil, "none").Bind(Not(And(Col("i").Lt(1), Or(Col("s").IsNull(), Not(Col("d").Ge(2))), And())), false)
	if err != nil {
		t.Fatal(err)
	}
	// NOT (i < 1 AND (s IS NULL OR NOT d >= 2) AND TRUE)
	//   = i >= 1 OR (s IS NOT NULL AND d >= 2)
	if p.Kind != bind.PredOr || len(p.Kids) != 2 {
		t.Fatalf("top: kind %d with %d kids, want OR of 2", p.Kind, len(p.Kids))
	}
	a, b := p.Kids[0], p.Kids[1]
	if a.Kind != bind.PredCmp || a.Op != bind.OpGe || a.Col.Name != "i" {
		t.Errorf("first: %+v, want i >= 1", a)
	}
	if b.Kind != bind.PredAnd || len(b.Kids) != 2 || b.Kids[0].Kind != bind.PredIsNotNull || b.Kids[1].Kind != bind.PredCmp ||
		b.Kids[1].Op != bind.OpGe || b.Kids[1].NaNTrue {
		t.Errorf("second: %+v, want s IS NOT NULL AND d >= 2", b)
	}
	p, err = bind.NewBinder(sch, nil, "none").Bind(Not(Col("d").Lt(2)), false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Op != bind.OpGe || !p.NaNTrue {
		t.Errorf("NOT d < 2 = %+v, want d >= 2 OR NaN", p)
	}
}

func TestExprString(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 1000, time.UTC)
	tests := []struct {
		e    Expr
		want string
	}{
		{Col("a").Eq(1), "a = 1"},
		{Col("a b").Ne("it's"), "`a b` != 'it''s'"},
		{Col("st").Field("x.y").Lt(1.5), "st.`x.y` < 1.5"},
		{Col("t").Ge(ts), "t >= TIMESTAMP '2024-05-06T07:08:09.000001Z'"},
		{Col("d").Gt(value.Date(0)), "d > DATE '1970-01-01'"},
		{Col("m").Le(value.NewDecimal(-5, 2)), "m <= -0.05"},
		{Col("bin").Eq([]byte{0xab}), "bin = X'ab'"},
		{Col("a").In(1, "x"), "a IN (1, 'x')"},
		{Col("a").IsNull(), "a IS NULL"},
		{Not(Col("a").IsNotNull()), "NOT a IS NOT NULL"},
		{And(Col("a").Eq(1), Or(Col("b").Eq(2), Col("c").Eq(nil))), "(a = 1 AND (b = 2 OR c = NULL))"},
		{And(), "TRUE"},
		{Or(), "FALSE"},
		{Not(nil), "NOT <nil>"},
	}
	for _, tc := range tests {
		if got := tc.e.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// ParsePredicate (expr.Parse) reads back what String writes, and its syntax
// errors are *expr.SyntaxError naming position and token.
func TestParsePredicateRoundTrip(t *testing.T) {
	for _, e := range []Expr{
		Col("a b").Ne("it's"),
		Col("st").Field("x.y").Lt(1.5),
		Col("t").Ge(time.Date(2024, 5, 6, 7, 8, 9, 1000, time.UTC)),
		Col("d").Gt(value.Date(0)),
		Col("bin").Eq([]byte{0xab}),
		Col("a").In(1, "x"),
		Not(Col("a").IsNotNull()),
		And(Col("a").Eq(1), Or(Col("b").Eq(2), Col("c").Lt(Col("d")))),
		And(),
		Or(),
	} {
		got, err := ParsePredicate(e.String(), nil)
		if err != nil || got.String() != e.String() {
			t.Errorf("ParsePredicate(%q) = %v, %v", e, got, err)
		}
	}
	_, err := ParsePredicate("a = 1 AND b IN 2", nil)
	var se *expr.SyntaxError
	if !errors.As(err, &se) || se.Pos != 16 || se.Token != `"2"` {
		t.Errorf("syntax error: %v (%+v)", err, se)
	}
}

func TestExprBindErrors(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("Name", schema.Primitive(schema.String), true),
		schema.NewField("NAME", schema.Primitive(schema.String), true),
		schema.NewField("n", schema.Primitive(schema.Integer), true),
	)
	for _, e := range []Expr{
		Col("name").Eq("x"), // two columns fold to "name"
		Col("n").Eq(1.0),
		Col("n").Eq(true),
		Col("").IsNull(),
		Column{}.IsNull(),
	} {
		if _, err := bind.NewBinder(sch, nil, "none").Bind(e, false); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("bind(%s) = %v, want ErrInvalidArgument", e, err)
		}
	}
	if _, err := bind.NewBinder(sch, nil, "none").Bind(Col("Name").Eq("x"), false); err != nil {
		t.Errorf("exact name: %v", err)
	}
}
