package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/value"
)

// refUpdate applies f to the rows match selects and renders all rows as
// maintScan does.
func refUpdate(rows []value.Row, match func(value.Row) bool, f func(value.Row) value.Row) []string {
	var out []string
	for _, r := range rows {
		if match(r) {
			r = f(slices.Clone(r))
		}
		out = append(out, fmt.Sprint(r...))
	}
	slices.Sort(out)
	return out
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	input := slices.Concat(maintRowsFor(0, 30, "ams", "ber"), maintRowsFor(30, 30, "cph"))
	cases := []struct {
		name  string
		where Expr
		set   map[string]Value
		match func(value.Row) bool
		apply func(value.Row) value.Row
	}{
		{"literal", Col("id").Lt(5), map[string]Value{"v": Lit(-1.5)},
			func(r value.Row) bool { return r[0].(int64) < 5 },
			func(r value.Row) value.Row { r[2] = -1.5; return r }},
		{"arithmetic on own column", Col("city").Eq("cph"), map[string]Value{"v": Times(Col("v"), 2), "id": Plus(Col("id"), 1000)},
			func(r value.Row) bool { return r[1] == "cph" },
			func(r value.Row) value.Row { r[2] = r[2].(float64) * 2; r[0] = r[0].(int64) + 1000; return r }},
		{"move partition", Col("id").Ge(50), map[string]Value{"city": Lit("ams")},
			func(r value.Row) bool { return r[0].(int64) >= 50 },
			func(r value.Row) value.Row { r[1] = "ams"; return r }},
		{"set null, all rows", nil, map[string]Value{"v": Lit(nil)},
			func(value.Row) bool { return true },
			func(r value.Row) value.Row { r[2] = nil; return r }},
		{"no match", Col("id").Gt(1000), map[string]Value{"v": Lit(0.0)},
			func(value.Row) bool { return false }, nil},
	}
	for _, partitioned := range []bool{false, true} {
		for _, dv := range []bool{false, true} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/partitioned=%v/dv=%v", c.name, partitioned, dv), func(t *testing.T) {
					var props map[string]string
					if dv {
						props = dvProps
					}
					tbl, _ := maintTable(t, partitioned, props)
					tbl = maintAppend(t, tbl, input[:30])
					tbl = maintAppend(t, tbl, input[30:])
					before := tbl.Version()
					nt, res, err := tbl.Update(ctx, c.where, c.set)
					if err != nil {
						t.Fatal(err)
					}
					var n int64
					for _, r := range input {
						if c.match(r) {
							n++
						}
					}
					if res.UpdatedRows != n {
						t.Errorf("UpdatedRows = %d, want %d", res.UpdatedRows, n)
					}
					if n == 0 {
						if res.Committed || nt.Version() != before {
							t.Fatalf("no match but committed version %d", nt.Version())
						}
						return
					}
					want := refUpdate(input, c.match, c.apply)
					re, err := Open(ctx, "", WithStore(nt.Store()))
					if err != nil {
						t.Fatal(err)
					}
					if got := maintScan(t, re); !slices.Equal(got, want) {
						t.Fatalf("rows after update:\n got %v\nwant %v", got, want)
					}
					ci := lastCommitInfo(t, re)
					if ci.Operation != "UPDATE" || ci.OperationMetrics["numUpdatedRows"] != fmt.Sprint(n) {
						t.Errorf("commitInfo %s metrics %v", ci.Operation, ci.OperationMetrics)
					}
					maintAssertLive(t, re)
				})
			}
		}
	}
}

func TestUpdateBadInput(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		props map[string]string
		where Expr
		set   map[string]Value
		want  error
		msg   string
	}{
		{"missing column in predicate", nil, Col("nope").Eq(1), map[string]Value{"v": Lit(1.0)}, ErrInvalidArgument, "nope"},
		{"missing SET column", nil, nil, map[string]Value{"nope": Lit(1)}, ErrInvalidArgument, "nope"},
		{"type mismatch in SET", nil, nil, map[string]Value{"id": Lit("abc")}, ErrInvalidArgument, "id"},
		{"column of other type", nil, nil, map[string]Value{"id": Col("city")}, ErrInvalidArgument, "city"},
		{"partition column wrong type", nil, nil, map[string]Value{"city": Lit(12)}, ErrInvalidArgument, "city"},
		{"null into NOT NULL", nil, nil, map[string]Value{"id": Lit(nil)}, ErrInvalidArgument, "NOT NULL"},
		{"arithmetic on strings", nil, nil, map[string]Value{"v": Plus(Col("city"), 1)}, ErrInvalidArgument, "city"},
		{"no SET", nil, nil, nil, ErrInvalidArgument, "SET"},
		{"append-only", map[string]string{"delta.appendOnly": "true"}, nil, map[string]Value{"v": Lit(1.0)}, ErrAppendOnly, "append-only"},
		{"violates CHECK", map[string]string{"delta.constraints.vpos": "v >= 0"}, Col("id").Eq(3), map[string]Value{"v": Lit(-1.0)}, ErrConstraintViolation, "vpos"},
		{"overflow", nil, nil, map[string]Value{"id": Times(Col("id"), int64(1)<<62)}, ErrInvalidArgument, "overflow"},
		// Division by zero is an error, as in Spark's default ANSI mode
		// (DIVIDE_BY_ZERO): refused when bound for a literal zero, at the
		// row otherwise; it named the double result's type instead.
		{"division by literal zero into a long", nil, nil, map[string]Value{"id": Div(Col("id"), 0)}, expr.ErrDivideByZero, "(id / 0): division by zero"},
		{"division by literal zero into a double", nil, nil, map[string]Value{"v": Div(Col("v"), 0.0)}, expr.ErrDivideByZero, "(v / 0): division by zero"},
		{"division by a zero value", nil, nil, map[string]Value{"v": Div(Col("v"), Minus(Col("id"), Col("id")))}, expr.ErrDivideByZero, "(v / (id - id)): division by zero for 0 / 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, mem := maintTable(t, true, c.props)
			tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
			keys := maintKeys(t, mem)
			_, _, err := tbl.Update(ctx, c.where, c.set)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v naming %q", err, c.want, c.msg)
			}
			if got := maintKeys(t, mem); !slices.Equal(got, keys) {
				t.Fatalf("store changed:\n got %v\nwant %v", got, keys)
			}
		})
	}
}
