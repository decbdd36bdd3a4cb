package table

import (
	"fmt"
	"math"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/value"
)

// Value is a value expression, the right-hand side of an Update's SET: a
// literal (Lit), a column (a Column is a Value), or arithmetic over values
// (Plus, Minus, Times, Div), evaluated per row with SQL semantics
// (arithmetic with a null operand is null); shorthand for expr.Value.
type Value = expr.Value

// Lit returns the literal v, in the value model (package value) (see Expr);
// Lit(nil) is the SQL NULL. Shorthand for expr.Lit.
func Lit(v any) Value { return expr.Lit(v) }

// Plus returns a + b (Values or Go literals); integer arithmetic is done in
// 64 bits and fails on overflow, with a float or double operand it is done
// in double. Shorthand for expr.Plus.
func Plus(a, b any) Value { return expr.Plus(exprArg(a), exprArg(b)) }

// Minus returns a - b; shorthand for expr.Minus.
func Minus(a, b any) Value { return expr.Minus(exprArg(a), exprArg(b)) }

// Times returns a * b; shorthand for expr.Times.
func Times(a, b any) Value { return expr.Times(exprArg(a), exprArg(b)) }

// Div returns a / b, always a double, as in Spark SQL; division by zero is
// an error wrapping expr.ErrDivideByZero (Spark's DIVIDE_BY_ZERO in its
// default ANSI mode), refused before anything is written when the divisor
// is a literal zero. Shorthand for expr.Div.
func Div(a, b any) Value { return expr.Div(exprArg(a), exprArg(b)) }

// boundValue evaluates a Value on a full table row (schema order).
type boundValue struct {
	kind expr.Kind // kindInt or kindFloat64 for arithmetic results
	typ  schema.Type
	eval func(value.Row) (any, error)
}

// bindValue resolves v against sch for assignment to column target: the
// value's type must fit the column's (numbers widen from integer to
// floating point, never the other way).
func bindValue(sch *schema.StructType, partCols []string, v Value, target *bind.BoundCol) (*boundValue, error) {
	if lv, ok := v.(*expr.Literal); ok && lv.V != nil {
		// A literal converts to the column type as a filter literal does
		// ("2024-01-02" into a date, 3 into a double), then must fit it.
		x, err := bind.ConvertLiteral(target, lv.V)
		if err != nil {
			return nil, bind.Invalidf("SET %s = %s: %v", target.Name, v, err)
		}
		if target.Kind == expr.KindDate {
			x = value.Date(x.(int64))
		}
		if _, err := checkValue(target.Type, x); err != nil {
			return nil, bind.Invalidf("SET %s = %s: %v", target.Name, v, err)
		}
		return &boundValue{kind: target.Kind, typ: target.Type, eval: func(value.Row) (any, error) { return x, nil }}, nil
	}
	b, err := bindValueExpr(sch, partCols, v)
	if err != nil {
		return nil, err
	}
	if b.typ == nil { // NULL
		return b, nil
	}
	if b.kind == target.Kind && (b.kind != expr.KindUnsupported && b.kind != expr.KindDecimal || b.typ.String() == target.Type.String()) {
		return b, nil
	}
	if b.kind == expr.KindInt && (target.Kind == expr.KindFloat32 || target.Kind == expr.KindFloat64) {
		return &boundValue{kind: target.Kind, typ: target.Type, eval: func(r value.Row) (any, error) {
			x, err := b.eval(r)
			if x == nil || err != nil {
				return nil, err
			}
			n, _ := value.ToInt64(x)
			return float64(n), nil
		}}, nil
	}
	if b.kind == expr.KindFloat32 && target.Kind == expr.KindFloat64 || b.kind == expr.KindFloat64 && target.Kind == expr.KindFloat32 {
		return b, nil
	}
	return nil, bind.Invalidf("SET %s = %s: a %s value does not fit column %s of type %s", target.Name, v, b.typ, target.Name, target.Type)
}

func bindValueExpr(sch *schema.StructType, partCols []string, v Value) (*boundValue, error) {
	switch x := v.(type) {
	case nil:
		return nil, bind.Invalidf("nil Value: use Lit(nil) for NULL")
	case *expr.Literal:
		if x.V == nil {
			return &boundValue{eval: func(value.Row) (any, error) { return nil, nil }}, nil
		}
		typ, err := literalType(x.V)
		if err != nil {
			return nil, err
		}
		lit := x.V
		return &boundValue{kind: expr.KindOf(typ), typ: typ, eval: func(value.Row) (any, error) { return lit, nil }}, nil
	case expr.Column:
		c, err := bind.NewBinder(sch, partCols, "none").Column(x)
		if err != nil {
			return nil, err
		}
		return &boundValue{kind: c.Kind, typ: c.Type, eval: func(r value.Row) (any, error) { return c.Value(r), nil }}, nil
	case *expr.Arith:
		return bindArith(sch, partCols, x)
	}
	return nil, bind.Invalidf("unsupported Value %T", v)
}

// literalType is the Delta type a Go literal stands for in SET
// (expr.LiteralType).
func literalType(v any) (schema.Type, error) {
	if t, ok := expr.LiteralType(v); ok {
		return t, nil
	}
	return nil, bind.Invalidf("literal %v of Go type %T has no Delta type", v, v)
}

func bindArith(sch *schema.StructType, partCols []string, a *expr.Arith) (*boundValue, error) {
	l, err := bindValueExpr(sch, partCols, a.L)
	if err != nil {
		return nil, err
	}
	r, err := bindValueExpr(sch, partCols, a.R)
	if err != nil {
		return nil, err
	}
	numeric := func(b *boundValue) bool {
		return b.typ == nil || b.kind == expr.KindInt || b.kind == expr.KindFloat32 || b.kind == expr.KindFloat64
	}
	if !numeric(l) || !numeric(r) {
		bad := l
		if numeric(l) {
			bad = r
		}
		return nil, bind.Invalidf("%s: arithmetic needs numbers, %s is %s", a, pickString(bad == l, a.L, a.R), bad.typ)
	}
	if lit, ok := a.R.(*expr.Literal); ok && a.Op == '/' && lit.V != nil && expr.NumberAsFloat(lit.V) == 0 {
		// Spark's ANSI mode (its default) fails the statement with
		// DIVIDE_BY_ZERO; nothing is evaluated or written here.
		return nil, fmt.Errorf("table: %w: %s: %w (Spark: DIVIDE_BY_ZERO)", ErrInvalidArgument, a, expr.ErrDivideByZero)
	}
	asFloat := a.Op == '/' || l.kind == expr.KindFloat32 || l.kind == expr.KindFloat64 || r.kind == expr.KindFloat32 || r.kind == expr.KindFloat64
	out := &boundValue{kind: expr.KindInt, typ: schema.Primitive(schema.Long)}
	if asFloat {
		out.kind, out.typ = expr.KindFloat64, schema.Primitive(schema.Double)
	}
	text := a.String()
	out.eval = func(row value.Row) (any, error) {
		x, err := l.eval(row)
		if err != nil || x == nil {
			return nil, err
		}
		y, err := r.eval(row)
		if err != nil || y == nil {
			return nil, err
		}
		if asFloat {
			f, g := expr.NumberAsFloat(x), expr.NumberAsFloat(y)
			switch a.Op {
			case '+':
				return f + g, nil
			case '-':
				return f - g, nil
			case '*':
				return f * g, nil
			}
			if g == 0 {
				return nil, fmt.Errorf("%w: %s: %w for %v / %v (Spark: DIVIDE_BY_ZERO)", ErrInvalidArgument, text, expr.ErrDivideByZero, x, y)
			}
			return f / g, nil
		}
		m, _ := value.ToInt64(x)
		n, _ := value.ToInt64(y)
		var res int64
		ok := true
		switch a.Op {
		case '+':
			res = m + n
			ok = (res > m) == (n > 0) || n == 0
		case '-':
			res = m - n
			ok = (res < m) == (n > 0) || n == 0
		case '*':
			res = m * n
			ok = m == 0 || (res/m == n && !(m == -1 && n == math.MinInt64) && !(n == -1 && m == math.MinInt64))
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s overflows a long for %d %c %d", ErrInvalidArgument, text, m, a.Op, n)
		}
		return res, nil
	}
	return out, nil
}

func pickString(first bool, a, b Value) string {
	if first {
		return a.String()
	}
	return b.String()
}

// setClause is one bound "column = value" of an Update.
type setClause struct {
	top int // top-level column index
	val *boundValue
}

// bindSet resolves Update's SET map against the table schema: top-level
// columns only, each named once (names match as in predicates).
func bindSet(sch *schema.StructType, partCols []string, set map[string]Value) ([]setClause, error) {
	set = exprSet(set)
	if len(set) == 0 {
		return nil, bind.Invalidf("update needs at least one SET column")
	}
	b := bind.NewBinder(sch, partCols, "none")
	seen := map[int]string{}
	var out []setClause
	for name, v := range set {
		c, err := b.Column(expr.Col(name))
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[c.Top]; dup {
			return nil, bind.Invalidf("SET names column %s twice (%q and %q)", c.Name, prev, name)
		}
		seen[c.Top] = name
		if v == nil {
			return nil, bind.Invalidf("SET %s: nil Value (use Lit(nil) for NULL)", name)
		}
		bv, err := bindValue(sch, partCols, v, c)
		if err != nil {
			return nil, err
		}
		if bv.typ == nil && !sch.Fields[c.Top].Nullable {
			return nil, bind.Invalidf("SET %s = NULL: column %s is NOT NULL", name, c.Name)
		}
		out = append(out, setClause{top: c.Top, val: bv})
	}
	return out, nil
}
