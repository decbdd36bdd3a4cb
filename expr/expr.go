package expr

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/deltakit/deltakit/value"
)

// Expr is a boolean predicate over a table's columns. Build one from Col
// and its comparison methods, And, Or and Not, or parse one with Parse:
//
//	expr.And(expr.Col("country").Eq("NL"), expr.Col("ts").Ge(since))
//
// Its dynamic type is one of *Comparison, *InList, *NullTest, *Logic and
// *Negation; a caller that evaluates predicates switches on them. Expr
// values are immutable and may be shared.
type Expr interface {
	// String returns the predicate in the text form Parse reads back.
	String() string
	isExpr()
}

// Column names a column in a predicate or value: a top-level column (Col)
// or a field of a struct column (Column.Field). A Column is also a Value.
type Column struct {
	path []string
}

// Col returns the top-level column with this logical name.
func Col(name string) Column { return Column{path: []string{name}} }

// ColPath returns the column with this path of logical names: ColPath("a",
// "b") is Col("a").Field("b"). ColPath() is the empty reference, which
// binding refuses.
func ColPath(names ...string) Column { return Column{path: append([]string(nil), names...)} }

// Field returns the field with this logical name of struct column c, e.g.
// Col("address").Field("city"). Fields of arrays and maps cannot be named.
func (c Column) Field(name string) Column {
	p := make([]string, len(c.path), len(c.path)+1)
	copy(p, c.path)
	return Column{path: append(p, name)}
}

// Path returns a copy of the column's path of logical names (top-level
// column first).
func (c Column) Path() []string { return append([]string(nil), c.path...) }

// Len returns the number of names in the column's path (1 for a top-level
// column).
func (c Column) Len() int { return len(c.path) }

// Name returns the i-th name of the column's path (0: the top-level column).
func (c Column) Name(i int) string { return c.path[i] }

// String returns the column's dotted path, with backquotes around names
// that are empty or contain dots, spaces or backquotes.
func (c Column) String() string {
	parts := make([]string, len(c.path))
	for i, p := range c.path {
		if p == "" || strings.ContainsAny(p, ". `") || !isPlainName(p) {
			parts[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
		} else {
			parts[i] = p
		}
	}
	return strings.Join(parts, ".")
}

// Eq is true where the column equals v. v is a Go value of the parquetio
// value model, converted by the column's type when the predicate is bound:
// byte/short/integer/long take any Go integer; float and double take floats
// and integers (a float column compares as float32, so 0.1 means
// float32(0.1)); decimal takes value.Decimal, a string ("12.34") or an
// integer; string takes string or []byte; binary takes []byte or string;
// boolean takes bool; date takes value.Date, time.Time (its calendar
// day) or "YYYY-MM-DD"; timestamp takes time.Time (an instant, any
// location) or a partition-value style string; timestamp_ntz takes
// time.Time, whose wall clock is compared. nil is refused: use IsNull.
//
// v may be another Column (Col("a").Lt(Col("b")), MERGE's
// target.id = source.id): the two columns are compared row by row (not
// true where either is null); they must be of one kind (numbers of any
// width compare with each other, as doubles when one is floating point).
func (c Column) Eq(v any) Expr { return &Comparison{Col: c, Op: OpEq, Value: v} }

// Ne is true where the column is not null and differs from v.
func (c Column) Ne(v any) Expr { return &Comparison{Col: c, Op: OpNe, Value: v} }

// Lt is true where the column is less than v.
func (c Column) Lt(v any) Expr { return &Comparison{Col: c, Op: OpLt, Value: v} }

// Le is true where the column is less than or equal to v.
func (c Column) Le(v any) Expr { return &Comparison{Col: c, Op: OpLe, Value: v} }

// Gt is true where the column is greater than v.
func (c Column) Gt(v any) Expr { return &Comparison{Col: c, Op: OpGt, Value: v} }

// Ge is true where the column is greater than or equal to v.
func (c Column) Ge(v any) Expr { return &Comparison{Col: c, Op: OpGe, Value: v} }

// Between is true where lo <= column <= hi: And(c.Ge(lo), c.Le(hi)).
func (c Column) Between(lo, hi any) Expr { return And(c.Ge(lo), c.Le(hi)) }

// In is true where the column equals one of vs. In with no values matches
// no row; Not(In(...)) with no values matches every row. nil values are
// refused, as for Eq.
func (c Column) In(vs ...any) Expr {
	return &InList{Col: c, Values: append([]any(nil), vs...)}
}

// IsNull is true where the column is null. For a field of a struct column,
// a null struct makes the field null.
func (c Column) IsNull() Expr { return &NullTest{Col: c} }

// IsNotNull is true where the column is not null.
func (c Column) IsNotNull() Expr { return &NullTest{Col: c, Not: true} }

// And is true where every predicate is true. And() with no arguments is
// true for every row.
func And(es ...Expr) Expr { return &Logic{And: true, Terms: append([]Expr(nil), es...)} }

// Or is true where at least one predicate is true. Or() with no arguments is
// true for no row.
func Or(es ...Expr) Expr { return &Logic{Terms: append([]Expr(nil), es...)} }

// Not is true where e is false (not where e is unknown: Not(Col("x").Eq(1))
// does not match rows where x is null).
func Not(e Expr) Expr { return &Negation{Term: e} }

// Op is a comparison operator.
type Op uint8

// The comparison operators.
const (
	OpEq Op = iota // =
	OpNe           // !=
	OpLt           // <
	OpLe           // <=
	OpGt           // >
	OpGe           // >=
)

var opText = [...]string{OpEq: "=", OpNe: "!=", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">="}

// String returns the operator's SQL text ("=", "!=", "<", ...).
func (op Op) String() string {
	if int(op) < len(opText) {
		return opText[op]
	}
	return fmt.Sprintf("Op(%d)", uint8(op))
}

// Negate returns the operator whose TRUE set is the FALSE set of op (on
// ordered values): NOT a<b is a>=b.
func (op Op) Negate() Op {
	switch op {
	case OpEq:
		return OpNe
	case OpNe:
		return OpEq
	case OpLt:
		return OpGe
	case OpLe:
		return OpGt
	case OpGt:
		return OpLe
	default:
		return OpLt
	}
}

// Holds reports whether "a op b" is true given c, the result of comparing
// a with b (negative, zero or positive, as cmp.Compare returns).
func (op Op) Holds(c int) bool {
	switch op {
	case OpEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	default:
		return c >= 0
	}
}

// Comparison is "Col Op Value" (Column.Eq, Lt, ...). Value is a Go value
// of the value model (package value) or a Column.
type Comparison struct {
	Col   Column
	Op    Op
	Value any
}

func (*Comparison) isExpr() {}

// String returns "col op literal".
func (e *Comparison) String() string {
	return e.Col.String() + " " + e.Op.String() + " " + FormatLiteral(e.Value)
}

// InList is "Col IN (Values...)" (Column.In).
type InList struct {
	Col    Column
	Values []any
}

func (*InList) isExpr() {}

// String returns "col IN (v1, v2, ...)".
func (e *InList) String() string {
	parts := make([]string, len(e.Values))
	for i, v := range e.Values {
		parts[i] = FormatLiteral(v)
	}
	return e.Col.String() + " IN (" + strings.Join(parts, ", ") + ")"
}

// NullTest is "Col IS NULL", or "Col IS NOT NULL" when Not is set.
type NullTest struct {
	Col Column
	Not bool
}

func (*NullTest) isExpr() {}

// String returns "col IS [NOT] NULL".
func (e *NullTest) String() string {
	if e.Not {
		return e.Col.String() + " IS NOT NULL"
	}
	return e.Col.String() + " IS NULL"
}

// Logic is the conjunction (And set) or disjunction of Terms (And, Or).
type Logic struct {
	And   bool
	Terms []Expr
}

func (*Logic) isExpr() {}

// String returns "(a AND b ...)" or "(a OR b ...)"; TRUE and FALSE for no
// terms.
func (e *Logic) String() string {
	if len(e.Terms) == 0 {
		if e.And {
			return "TRUE"
		}
		return "FALSE"
	}
	sep := " OR "
	if e.And {
		sep = " AND "
	}
	parts := make([]string, len(e.Terms))
	for i, k := range e.Terms {
		if k == nil {
			parts[i] = "<nil>"
		} else {
			parts[i] = k.String()
		}
	}
	return "(" + strings.Join(parts, sep) + ")"
}

// Negation is "NOT Term" (Not).
type Negation struct{ Term Expr }

func (*Negation) isExpr() {}

// String returns "NOT term".
func (e *Negation) String() string {
	if e.Term == nil {
		return "NOT <nil>"
	}
	return "NOT " + e.Term.String()
}

// FormatLiteral renders a value of the value model (package value) (or a Column)
// in the text form: 'text' (a quote doubled), X'00ff', DATE '2024-01-02', TIMESTAMP
// '2024-01-02T03:04:05Z', 12.34, NULL for nil.
func FormatLiteral(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case []byte:
		return "X'" + hex.EncodeToString(x) + "'"
	case time.Time:
		return "TIMESTAMP '" + x.Format(time.RFC3339Nano) + "'"
	case value.Date:
		return "DATE '" + x.String() + "'"
	case value.Decimal:
		return x.String()
	case Column:
		return x.String()
	}
	return fmt.Sprint(v)
}
