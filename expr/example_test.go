package expr_test

import (
	"fmt"

	"github.com/deltakit/deltakit/expr"
)

// A predicate built in Go and the same predicate parsed from its text.
func Example() {
	e := expr.And(expr.Col("country").Eq("NL"), expr.Not(expr.Col("delay").In(1, 2)))
	fmt.Println(e)

	p, err := expr.Parse("country = 'NL' AND NOT delay IN (1, 2)", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.String() == e.String())

	_, err = expr.Parse("delay >> 3", nil)
	fmt.Println(err)

	set, _ := expr.ParseAssignments("delay = delay * 2 + 1", nil)
	fmt.Println(set["delay"])
	// Output:
	// (country = 'NL' AND NOT delay IN (1, 2))
	// true
	// expected a value at position 8, found ">"
	// ((delay * 2) + 1)
}
