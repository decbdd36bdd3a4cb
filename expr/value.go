package expr

import (
	"errors"
	"fmt"
)

// Value is a value expression, the right-hand side of an UPDATE's SET: a
// literal (Lit), a column (a Column is a Value), or arithmetic over values
// (Plus, Minus, Times, Div). Its dynamic type is one of *Literal, Column
// and *Arith. It is evaluated per row with SQL semantics: arithmetic with a
// null operand is null. Values are immutable and may be shared.
type Value interface {
	// String renders the value in the text form ParseAssignments reads
	// back (as commitInfo records it).
	String() string
	isValue()
}

// Lit returns the literal v, in the value model (package value) (see Column.Eq);
// Lit(nil) is the SQL NULL.
func Lit(v any) Value { return &Literal{V: v} }

// Literal is a constant Value (Lit). V nil is NULL.
type Literal struct{ V any }

func (*Literal) isValue() {}

// String returns the literal's text form (FormatLiteral).
func (l *Literal) String() string { return FormatLiteral(l.V) }

func (Column) isValue() {}

// Arith is "L Op R" with Op one of '+', '-', '*', '/' (Plus, Minus, Times,
// Div).
type Arith struct {
	Op   byte
	L, R Value
}

func (*Arith) isValue() {}

// String returns "(l op r)".
func (a *Arith) String() string {
	return "(" + a.L.String() + " " + string(a.Op) + " " + a.R.String() + ")"
}

// asValue turns a Go literal into Lit(v); Values stay as they are.
func asValue(v any) Value {
	if x, ok := v.(Value); ok {
		return x
	}
	return Lit(v)
}

// Plus returns a + b. Operands are Values or Go literals (Lit). Integer
// arithmetic (byte, short, integer, long operands) is done in 64 bits and
// fails on overflow; with a float or double operand it is done in double.
func Plus(a, b any) Value { return &Arith{Op: '+', L: asValue(a), R: asValue(b)} }

// Minus returns a - b; see Plus.
func Minus(a, b any) Value { return &Arith{Op: '-', L: asValue(a), R: asValue(b)} }

// Times returns a * b; see Plus.
func Times(a, b any) Value { return &Arith{Op: '*', L: asValue(a), R: asValue(b)} }

// Div returns a / b, which is always a double, as in Spark SQL (integer
// operands are converted first). Division by zero is an error wrapping
// ErrDivideByZero, as in Spark's default ANSI mode (DIVIDE_BY_ZERO), the
// mode whose overflow errors Plus, Minus and Times follow too; a literal
// zero divisor is refused when the expression is bound, before anything is
// written.
func Div(a, b any) Value { return &Arith{Op: '/', L: asValue(a), R: asValue(b)} }

// ErrDivideByZero is wrapped by the error of a division whose divisor is
// zero (Div; Spark's DIVIDE_BY_ZERO error class in ANSI mode, its default
// since Spark 4.0; with spark.sql.ansi.enabled=false Spark returns NULL).
var ErrDivideByZero = errors.New("division by zero")

// MapColumns returns e with every column reference (also a Column compared
// with) replaced by fn's; the first error of fn is returned. A nil or
// unknown Expr is an error wrapping ErrInvalidArgument.
func MapColumns(e Expr, fn func(Column) (Column, error)) (Expr, error) {
	switch x := e.(type) {
	case nil:
		return nil, invalidf("nil predicate")
	case *Comparison:
		c, err := fn(x.Col)
		if err != nil {
			return nil, err
		}
		n := *x
		n.Col = c
		if oc, ok := x.Value.(Column); ok {
			if n.Value, err = fn(oc); err != nil {
				return nil, err
			}
		}
		return &n, nil
	case *InList:
		c, err := fn(x.Col)
		if err != nil {
			return nil, err
		}
		return &InList{Col: c, Values: x.Values}, nil
	case *NullTest:
		c, err := fn(x.Col)
		if err != nil {
			return nil, err
		}
		return &NullTest{Col: c, Not: x.Not}, nil
	case *Negation:
		k, err := MapColumns(x.Term, fn)
		if err != nil {
			return nil, err
		}
		return Not(k), nil
	case *Logic:
		terms := make([]Expr, len(x.Terms))
		for i, k := range x.Terms {
			var err error
			if terms[i], err = MapColumns(k, fn); err != nil {
				return nil, err
			}
		}
		return &Logic{And: x.And, Terms: terms}, nil
	}
	return nil, invalidf("unknown predicate type %T", e)
}

// MapValueColumns returns v with every column reference replaced by fn's.
func MapValueColumns(v Value, fn func(Column) (Column, error)) (Value, error) {
	switch x := v.(type) {
	case Column:
		return fn(x)
	case *Arith:
		l, err := MapValueColumns(x.L, fn)
		if err != nil {
			return nil, err
		}
		r, err := MapValueColumns(x.R, fn)
		if err != nil {
			return nil, err
		}
		return &Arith{Op: x.Op, L: l, R: r}, nil
	}
	return v, nil
}

// Conjuncts flattens the top-level ANDs of e: Conjuncts(And(a, And(b, c)))
// is [a b c]; any other e is [e].
func Conjuncts(e Expr) []Expr {
	if l, ok := e.(*Logic); ok && l.And {
		var out []Expr
		for _, k := range l.Terms {
			out = append(out, Conjuncts(k)...)
		}
		return out
	}
	return []Expr{e}
}

// Columns calls fn for every column reference of e, in text order.
func Columns(e Expr, fn func(Column)) {
	_, _ = MapColumns(e, func(c Column) (Column, error) { fn(c); return c, nil })
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("expr: %w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
