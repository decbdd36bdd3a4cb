package expr_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func testSchema() *schema.StructType {
	return &schema.StructType{Fields: []*schema.StructField{
		{Name: "id", Type: schema.Primitive(schema.Long)},
		{Name: "price", Type: &schema.DecimalType{Precision: 10, Scale: 2}},
		{Name: "ratio", Type: schema.Primitive(schema.Double)},
		{Name: "s", Type: &schema.StructType{Fields: []*schema.StructField{{Name: "x", Type: schema.Primitive(schema.Integer)}}}},
	}}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want expr.Expr
	}{
		{"id = 1", expr.Col("id").Eq(int64(1))},
		{"id == -2", expr.Col("id").Eq(int64(-2))},
		{"id <> 3", expr.Col("id").Ne(int64(3))},
		{"ratio < 1", expr.Col("ratio").Lt(1.0)},
		{"price >= 12.50", expr.Col("price").Ge(value.Decimal{Unscaled: value.NewDecimal(1250, 2).Unscaled, Scale: 2})},
		{"a = 'it''s'", expr.Col("a").Eq("it's")},
		{"a = b", expr.Col("a").Eq(expr.Col("b"))},
		{"a = x", expr.Col("a").Eq(expr.Col("x"))},
		{"b = X'00ff'", expr.Col("b").Eq([]byte{0, 0xff})},
		{"d >= DATE '2024-01-31'", expr.Col("d").Ge(value.DateOf(time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC)))},
		{"ts < TIMESTAMP '2024-01-31 10:11:12.5'", expr.Col("ts").Lt(time.Date(2024, 1, 31, 10, 11, 12, 5e8, time.UTC))},
		{"ts < timestamp '2024-01-31T10:11:12+01:00'", expr.Col("ts").Lt(time.Date(2024, 1, 31, 9, 11, 12, 0, time.UTC))},
		{"flag = TRUE", expr.Col("flag").Eq(true)},
		{"s.x IS NOT NULL", expr.Col("s").Field("x").IsNotNull()},
		{"`odd name`.\"f\" IS NULL", expr.Col("odd name").Field("f").IsNull()},
		{"id NOT IN (1, 2)", expr.Not(expr.Col("id").In(int64(1), int64(2)))},
		{"id BETWEEN 1 AND 5", expr.Col("id").Between(int64(1), int64(5))},
		{"NOT (a = 1 OR b = 2) AND c = 3", expr.And(expr.Not(expr.Or(expr.Col("a").Eq(int64(1)), expr.Col("b").Eq(int64(2)))), expr.Col("c").Eq(int64(3)))},
		{"TRUE", expr.And()},
		{"false OR a = 1", expr.Or(expr.Or(), expr.Col("a").Eq(int64(1)))},
		{"true = 1", expr.Col("true").Eq(int64(1))},
	} {
		got, err := expr.Parse(tc.in, testSchema())
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %#v (%s), want %#v (%s)", tc.in, got, got, tc.want, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in    string
		pos   int
		token string
		msg   string
	}{
		{"", 1, "end of input", "expected a column name at position 1, found end of input"},
		{"delay >", 8, "end of input", "expected a value at position 8, found end of input"},
		{"delay > 1 AND", 14, "end of input", "expected a column name at position 14, found end of input"},
		{"(delay > 1", 11, "end of input", "expected ')' at position 11, found end of input"},
		{"delay = NULL", 9, `"NULL"`, "comparison with NULL at position 9: use IS NULL or IS NOT NULL"},
		{"delay ! 1", 7, `"!"`, "unexpected '!' at position 7"},
		{"'x' = 1", 1, "'x'", "expected a column name at position 1, found 'x'"},
		{"delay IN ()", 11, `")"`, `expected a value at position 11, found ")"`},
		{"delay > 1 extra", 11, `"extra"`, `unexpected "extra" at position 11`},
		{"a = 'unterminated", 5, "'unterminated'", "unterminated ' at position 5"},
		{"delay NOT 5", 11, `"5"`, `expected IN or BETWEEN after NOT at position 11, found "5"`},
		{"a IS 5", 6, `"5"`, `expected NULL at position 6, found "5"`},
		{"d = DATE '2024-13-01'", 10, "'2024-13-01'", "bad date '2024-13-01' at position 10 (want 'yyyy-mm-dd')"},
		{"b = X'0g'", 6, "'0g'", "bad hex string '0g' at position 6"},
		{"東京 = 1 ;", 8, `";"`, `unexpected ';' at position 8`},
	} {
		_, err := expr.Parse(tc.in, nil)
		var se *expr.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: error %v is not a *SyntaxError", tc.in, err)
			continue
		}
		if se.Pos != tc.pos || se.Token != tc.token || err.Error() != tc.msg {
			t.Errorf("%q: got pos %d token %s %q, want pos %d token %s %q", tc.in, se.Pos, se.Token, err, tc.pos, tc.token, tc.msg)
		}
		if errors.Is(err, expr.ErrInvalidArgument) {
			t.Errorf("%q: Parse error wraps ErrInvalidArgument; callers add it", tc.in)
		}
	}
}

// String, then Parse, gives the predicate back: the same text and, for
// literals of the canonical Go types, the same tree.
func TestStringRoundTrip(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	for _, e := range []expr.Expr{
		expr.Col("id").Eq(int64(7)),
		expr.Col("id").Ne(int64(-7)),
		expr.Col("ratio").Gt(2.5),
		expr.Col("ratio").Le(1e+20),
		expr.Col("name").Eq("O'Brien"),
		expr.Col("b").Eq([]byte("hi")),
		expr.Col("d").Eq(value.Date(19000)),
		expr.Col("ts").Ge(ts),
		expr.Col("flag").Eq(false),
		expr.Col("a").Lt(expr.Col("b").Field("c")),
		expr.Col("odd name").Field("we`ird").IsNull(),
		expr.Col("and").IsNotNull(),
		expr.Col("東京").Eq("x"),
		expr.Col("id").In(int64(1), int64(2), int64(3)),
		expr.Not(expr.Col("id").In(int64(1))),
		expr.And(expr.Col("a").Eq(int64(1)), expr.Or(expr.Col("b").Eq(int64(2)), expr.Not(expr.Col("c").IsNull()))),
		expr.And(),
		expr.Or(),
		expr.Col("x").Between(int64(1), int64(9)),
	} {
		text := e.String()
		got, err := expr.Parse(text, nil)
		if err != nil {
			t.Errorf("%s: %v", text, err)
			continue
		}
		if got.String() != text {
			t.Errorf("round trip: %s became %s", text, got)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("round trip of %s: got %#v, want %#v", text, got, e)
		}
	}
	// Decimals need the schema to stay exact.
	d := expr.Col("price").Eq(value.NewDecimal(1250, 2))
	got, err := expr.Parse(d.String(), testSchema())
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Errorf("decimal round trip of %s: got %v, %v", d, got, err)
	}
	if s := expr.Col("r").Eq(math.NaN()).String(); s != "r = NaN" {
		t.Errorf("NaN literal: %s", s)
	}
}

func TestParseAssignments(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]expr.Value
	}{
		{"id = 1", map[string]expr.Value{"id": expr.Lit(int64(1))}},
		{"id = id-1, ratio = NULL", map[string]expr.Value{"id": expr.Minus(expr.Col("id"), int64(1)), "ratio": expr.Lit(nil)}},
		{"id = (id + 2) * 3 / id", map[string]expr.Value{"id": expr.Div(expr.Times(expr.Plus(expr.Col("id"), int64(2)), int64(3)), expr.Col("id"))}},
		{"price = 1.5", map[string]expr.Value{"price": expr.Lit(value.NewDecimal(15, 1))}},
		{"ratio = 2", map[string]expr.Value{"ratio": expr.Lit(2.0)}},
	} {
		got, err := expr.ParseAssignments(tc.in, testSchema())
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %v, want %v", tc.in, got, tc.want)
		}
		for k, v := range got { // String round trip
			again, err := expr.ParseAssignments(k+" = "+v.String(), testSchema())
			if err != nil || again[k].String() != v.String() {
				t.Errorf("%q: %s = %s parses back as %v, %v", tc.in, k, v, again, err)
			}
		}
	}
	for _, tc := range []struct{ in, msg string }{
		{"s.x = 1", "invalid argument: SET s.x = 1: only top-level columns can be set, not s.x (position 1)"},
		{"id 1", `invalid argument: SET id 1: expected '=' at position 4, found "1"`},
		{"id = 1, id = 2", "invalid argument: SET id = 1, id = 2: column id is set twice"},
		{"id = 1 2", `invalid argument: SET id = 1 2: unexpected "2" at position 8`},
		{"id = (1", "invalid argument: SET id = (1: expected ')' at position 8, found end of input"},
	} {
		_, err := expr.ParseAssignments(tc.in, testSchema())
		if !errors.Is(err, expr.ErrInvalidArgument) || err.Error() != tc.msg {
			t.Errorf("%q: got %v, want %s wrapping ErrInvalidArgument", tc.in, err, tc.msg)
		}
	}
}

func TestOpHoldsAndNegate(t *testing.T) {
	for _, op := range []expr.Op{expr.OpEq, expr.OpNe, expr.OpLt, expr.OpLe, expr.OpGt, expr.OpGe} {
		for _, c := range []int{-1, 0, 1} {
			if op.Holds(c) == op.Negate().Holds(c) {
				t.Errorf("%s and its negation %s agree on %d", op, op.Negate(), c)
			}
		}
	}
	if !expr.OpLe.Holds(0) || expr.OpLt.Holds(0) || !expr.OpGt.Holds(3) {
		t.Error("Holds is wrong")
	}
}

func TestMapColumnsAndConjuncts(t *testing.T) {
	e := expr.And(expr.Col("a").Eq(expr.Col("b")), expr.And(expr.Col("c").In(int64(1)), expr.Not(expr.Col("d").IsNull())))
	if n := len(expr.Conjuncts(e)); n != 3 {
		t.Fatalf("Conjuncts: %d terms", n)
	}
	m, err := expr.MapColumns(e, func(c expr.Column) (expr.Column, error) {
		return expr.ColPath(append([]string{"t"}, c.Path()...)...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.String(), "(t.a = t.b AND (t.c IN (1) AND NOT t.d IS NULL))"; got != want {
		t.Errorf("MapColumns: %s, want %s", got, want)
	}
	if e.String() != "(a = b AND (c IN (1) AND NOT d IS NULL))" {
		t.Errorf("MapColumns changed its input: %s", e)
	}
	if _, err := expr.MapColumns(nil, nil); !errors.Is(err, expr.ErrInvalidArgument) {
		t.Errorf("nil Expr: %v", err)
	}
}
