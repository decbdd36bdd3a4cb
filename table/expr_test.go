package table

import (
	"errors"
	"testing"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/value"
)

// exprRows are rows as parquetio reads them (Go types of the value model).
// TestExprMatchRows evaluates predicates row by row with SQL's
// three-valued logic: the want lists hold the indexes of exprRows for which
// the predicate is TRUE.
// TestExprNegationNormalForm checks that NOT is pushed into the leaves.
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
