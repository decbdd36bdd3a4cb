package table

import (
	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
)

// ParseAssignments parses the SET list of a SQL UPDATE ("a = 1, b = b * 2")
// into the map Update takes; shorthand for expr.ParseAssignments (the
// grammar is in package expr). A literal is typed by the column it is
// assigned to, so '2024-01-02' sets a date; only top-level columns can be
// assigned. Errors name the position (1-based, in runes) and wrap
// ErrInvalidArgument.
func ParseAssignments(s string, sch *schema.StructType) (map[string]Value, error) {
	return expr.ParseAssignments(s, sch)
}
