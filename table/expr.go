package table

import "github.com/deltakit/deltakit/expr"

// The public names of the expression language (package expr). Binding an
// expression to a snapshot's schema and evaluating it per row and per file
// is package table/internal/bind.

// Expr is a boolean predicate over a table's columns, for WithFilter and
// the DML conditions; shorthand for expr.Expr (see package expr for the
// text form and the NULL semantics). Build one from Col and its comparison
// methods, And, Or and Not:
//
//	table.And(table.Col("country").Eq("NL"), table.Col("ts").Ge(since))
//
// Column names are logical names (as in Table.Schema), matched exactly or,
// failing that, case-insensitively when only one column matches. A scan
// with a filter returns exactly the rows for which the predicate is TRUE
// under SQL's three-valued logic: a comparison with a null value is not
// true, so a row whose column is null matches neither Col(c).Eq(v) nor
// Not(Col(c).Eq(v)); use IsNull and IsNotNull for nulls.
//
// Values are given in the value model (package value) and converted by the
// column's type when the scan starts (see Column.Eq). A value that
// does not fit the column type, an unknown column, or a comparison on a
// struct, array or map column makes the scan fail with ErrInvalidArgument.
//
// Floating-point comparisons follow IEEE 754: on a NaN, Eq, Lt, Le, Gt, Ge
// and In are false and Ne is true, and Not turns each of them around (so
// Not(Col("x").Gt(1.0)) matches NaN; -0.0 equals 0.0).
// Strings and binary values compare byte-wise (UTF-8 code unit order, as
// Spark's default collation). Expr values are immutable and may be shared.
type Expr = expr.Expr

// Col returns the top-level column with this logical name; shorthand for
// expr.Col.
func Col(name string) Column { return Column{expr.Col(name)} }

// And is true where every predicate is true (And() is true for every row);
// shorthand for expr.And.
func And(es ...Expr) Expr { return expr.And(es...) }

// Or is true where at least one predicate is true (Or() is true for no
// row); shorthand for expr.Or.
func Or(es ...Expr) Expr { return expr.Or(es...) }

// Not is true where e is false (not where e is unknown); shorthand for
// expr.Not.
func Not(e Expr) Expr { return expr.Not(e) }
