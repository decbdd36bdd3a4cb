package main

import (
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// parseWhere parses a --where predicate with table.ParsePredicate, the one
// parser of the text form (package expr); sch, when given, types numeric
// literals.
func parseWhere(s string, sch ...*schema.StructType) (table.Expr, error) {
	var st *schema.StructType
	if len(sch) > 0 {
		st = sch[0]
	}
	return table.ParsePredicate(s, st)
}
