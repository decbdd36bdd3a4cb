package table

import "github.com/deltakit/deltakit/expr"

// Column names a column in a predicate or a value: a top-level column (Col),
// a field of a struct column (Column.Field), or a column of a MERGE's
// target or source (Target, Source). Its comparison methods (Eq, Ne, Lt,
// Le, Gt, Ge, Between, In, IsNull, IsNotNull) build the Expr that
// WithFilter, Delete, Update and Merge take; a Column is a Value too, for
// the SET of Update and the clauses of Merge.
//
// A Column is package expr's column (the embedded expr.Column) under
// table's name: the Exprs and Values it builds are expr's, and a Column
// given where an expression takes a value (Col("a").Lt(Col("b"))) is
// passed on as its expr.Column.
type Column struct {
	// Column is the column in package expr's terms, for code that builds
	// expressions with package expr directly.
	expr.Column
}

// Field returns the field with this logical name of struct column c, e.g.
// Col("address").Field("city"). Fields of arrays and maps cannot be named.
func (c Column) Field(name string) Column { return Column{c.Column.Field(name)} }

// Path returns a copy of the column's path of logical names (top-level
// column first).
func (c Column) Path() []string { return c.Column.Path() }

// Len returns the number of names in the column's path (1 for a top-level
// column).
func (c Column) Len() int { return c.Column.Len() }

// Name returns the i-th name of the column's path (0: the top-level column).
func (c Column) Name(i int) string { return c.Column.Name(i) }

// String returns the column's dotted path, with backquotes around names
// that are empty or contain dots, spaces or backquotes.
func (c Column) String() string { return c.Column.String() }

// Eq is true where the column is not null and equals v. v is a Go value,
// converted by the column's type when the scan or DML starts:
// byte/short/integer/long take any Go integer; float and double take
// floats and integers (a float column compares as float32); decimal takes
// Decimal, a string ("12.34") or an integer; string and binary take string
// or []byte; boolean takes bool; date takes Date, time.Time (its calendar
// day) or "YYYY-MM-DD"; timestamp takes time.Time (an instant) or a
// partition-value style string; timestamp_ntz takes time.Time, whose wall
// clock is compared (expr.Column.Eq). nil is refused: use IsNull. v may be another Column
// (Col("a").Lt(Col("b")), MERGE's Target("id").Eq(Source("id"))): the two
// are compared row by row, not true where either is null.
func (c Column) Eq(v any) Expr { return c.Column.Eq(exprArg(v)) }

// Ne is true where the column is not null and differs from v (see Eq).
func (c Column) Ne(v any) Expr { return c.Column.Ne(exprArg(v)) }

// Lt is true where the column is less than v (see Eq).
func (c Column) Lt(v any) Expr { return c.Column.Lt(exprArg(v)) }

// Le is true where the column is less than or equal to v (see Eq).
func (c Column) Le(v any) Expr { return c.Column.Le(exprArg(v)) }

// Gt is true where the column is greater than v (see Eq).
func (c Column) Gt(v any) Expr { return c.Column.Gt(exprArg(v)) }

// Ge is true where the column is greater than or equal to v (see Eq).
func (c Column) Ge(v any) Expr { return c.Column.Ge(exprArg(v)) }

// Between is true where lo <= column <= hi: And(c.Ge(lo), c.Le(hi)).
func (c Column) Between(lo, hi any) Expr { return c.Column.Between(exprArg(lo), exprArg(hi)) }

// In is true where the column equals one of vs. In with no values matches
// no row; Not(In(...)) with no values matches every row. nil values are
// refused, as for Eq.
func (c Column) In(vs ...any) Expr {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = exprArg(v)
	}
	return c.Column.In(args...)
}

// IsNull is true where the column is null. For a field of a struct column,
// a null struct makes the field null.
func (c Column) IsNull() Expr { return c.Column.IsNull() }

// IsNotNull is true where the column is not null.
func (c Column) IsNotNull() Expr { return c.Column.IsNotNull() }

// exprArg returns v with every table Column in it (v itself, or an operand
// of arithmetic) replaced by its expr.Column, the form package expr and
// table's binders know.
func exprArg(v any) any {
	if x, ok := v.(Value); ok {
		return exprValue(x)
	}
	return v
}

// exprValue is exprArg for a Value.
func exprValue(v Value) Value {
	switch x := v.(type) {
	case Column:
		return x.Column
	case *expr.Arith:
		return &expr.Arith{Op: x.Op, L: exprValue(x.L), R: exprValue(x.R)}
	}
	return v
}

// exprSet is exprValue applied to every value of an UPDATE's SET or a
// MERGE clause's assignments (nil stays nil).
func exprSet(set map[string]Value) map[string]Value {
	if set == nil {
		return nil
	}
	out := make(map[string]Value, len(set))
	for k, v := range set {
		out[k] = exprValue(v)
	}
	return out
}
