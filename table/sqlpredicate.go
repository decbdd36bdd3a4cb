package table

import (
	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
)

// ParsePredicate parses a predicate in the SQL-like text form of package
// expr (a WHERE clause: "country = 'NL' AND delay > 10", IN, BETWEEN, IS
// [NOT] NULL, DATE '...', TIMESTAMP '...'); shorthand for expr.Parse.
// sch, when not nil, types numeric literals: a number compared with a
// decimal column stays exact. Errors (*expr.SyntaxError) name the position
// (1-based, in runes) and the token; they do not wrap ErrInvalidArgument,
// callers add their context. deltactl's --where and the CHECK constraints
// of writes (delta.constraints.*) use it.
func ParsePredicate(s string, sch *schema.StructType) (Expr, error) { return expr.Parse(s, sch) }
