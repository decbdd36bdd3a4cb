package table

import (
	"fmt"
	"strings"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// The expression language (types, text form, parser, kinds, comparison,
// stats reasoning) is package expr; this file keeps only its binding to a
// snapshot (pred, boundCol, binder), because that binding is Delta table
// semantics, not language: column mapping physical names, partition
// columns and their partitionValues keys, and the field metadata (type
// widening, collations) that makes a column's stats unusable. Its result
// is read field by field by table's evaluators (scan.go, skipping.go,
// dml*.go, merge*.go, changes.go, the Arrow filter), so moving it out would
// turn those internals into another package's exported API.

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

// cmpOp is a comparison operator (the bound predicate's name for expr.Op).
type cmpOp = expr.Op

// The operators, as the bound predicate names them.
const opEq, opNe, opLt, opLe, opGt, opGe = expr.OpEq, expr.OpNe, expr.OpLt, expr.OpLe, expr.OpGt, expr.OpGe

// formatLiteral renders a predicate value (expr.FormatLiteral).
func formatLiteral(v any) string { return expr.FormatLiteral(v) }

// valueKind is how a column's values compare (expr.Kind).
type valueKind = expr.Kind

// The kinds, as the bound predicate and the evaluators name them.
const (
	kindUnsupported, kindInt, kindFloat32, kindFloat64 = expr.KindUnsupported, expr.KindInt, expr.KindFloat32, expr.KindFloat64
	kindBool, kindString, kindBinary, kindDate         = expr.KindBool, expr.KindString, expr.KindBinary, expr.KindDate
	kindTimestamp, kindTimestampNTZ, kindDecimal       = expr.KindTimestamp, expr.KindTimestampNTZ, expr.KindDecimal
)

func kindOf(t schema.Type) valueKind { return expr.KindOf(t) }

// boundCol is a predicate column resolved against one table schema.
type boundCol struct {
	name      string // dotted logical path, for messages
	top       int    // index of the top-level field in the table schema
	sub       []int  // struct field indexes below the top-level field
	typ       schema.Type
	kind      valueKind
	partition bool   // a (top-level) partition column
	partKey   string // its partitionValues key: the physical name
	// statsPath is the column's path of physical names in the stats JSON;
	// nil when the stats must not be used for it (type widening changed
	// its type, or a collation orders its strings differently).
	statsPath []string
}

type predKind uint8

const (
	predTrue predKind = iota
	predFalse
	predAnd
	predOr
	predCmp       // col op lit
	predIn        // col IN lits
	predNotIn     // col NOT IN lits (NULL col: not true)
	predIsNull    // col IS NULL
	predIsNotNull // col IS NOT NULL
	predColCmp    // col op col2 (a column compared with another, e.g. MERGE's target.id = source.id)
)

// pred is a bound predicate in negation normal form: NOT has been pushed
// into the leaves (De Morgan; NOT a<b is a>=b, which has the same TRUE set
// under three-valued logic), so a row matches iff the tree evaluates to
// true with every leaf false on null.
type pred struct {
	kind predKind
	kids []*pred
	col  *boundCol
	op   cmpOp
	// nanTrue is the value of a predCmp leaf on an unordered (NaN) float:
	// IEEE 754 makes NaN != x true and every other comparison false, and
	// NOT (x < y) is then "x >= y OR x is NaN".
	nanTrue bool
	lit     any       // canonical value (predCmp)
	lits    []any     // canonical values (predIn, predNotIn)
	col2    *boundCol // the right-hand column (predColCmp)
}

// binder resolves expressions against a table schema.
type binder struct {
	sch      *schema.StructType
	partCols map[string]bool
	mode     string // column mapping mode
	cols     map[string]*boundCol
}

func newBinder(sch *schema.StructType, partCols []string, mode string) *binder {
	b := &binder{sch: sch, partCols: map[string]bool{}, mode: mode, cols: map[string]*boundCol{}}
	for _, c := range partCols {
		b.partCols[c] = true
	}
	return b
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("table: %w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// bindExpr resolves e and converts it to negation normal form; neg says
// whether e sits under an odd number of NOTs.
func (b *binder) bind(e Expr, neg bool) (*pred, error) {
	switch e := e.(type) {
	case nil:
		return nil, invalidf("nil predicate")
	case *expr.Comparison:
		col, err := b.column(e.Col)
		if err != nil {
			return nil, err
		}
		if oc, ok := e.Value.(expr.Column); ok {
			return b.bindColCmp(e, col, oc, neg)
		}
		lit, err := convertLiteral(col, e.Value)
		if err != nil {
			return nil, err
		}
		op, nanTrue := e.Op, e.Op == opNe
		if neg {
			op, nanTrue = op.Negate(), !nanTrue
		}
		return &pred{kind: predCmp, col: col, op: op, nanTrue: nanTrue, lit: lit}, nil
	case *expr.InList:
		col, err := b.column(e.Col)
		if err != nil {
			return nil, err
		}
		lits := make([]any, 0, len(e.Values))
		for _, v := range e.Values {
			lit, err := convertLiteral(col, v)
			if err != nil {
				return nil, err
			}
			lits = append(lits, lit)
		}
		if len(lits) == 0 {
			// x IN () is false even for a null x, so NOT x IN () is true.
			if neg {
				return &pred{kind: predTrue}, nil
			}
			return &pred{kind: predFalse}, nil
		}
		if neg {
			return &pred{kind: predNotIn, col: col, lits: lits}, nil
		}
		return &pred{kind: predIn, col: col, lits: lits}, nil
	case *expr.NullTest:
		col, err := b.column(e.Col)
		if err != nil {
			return nil, err
		}
		if e.Not != neg {
			return &pred{kind: predIsNotNull, col: col}, nil
		}
		return &pred{kind: predIsNull, col: col}, nil
	case *expr.Negation:
		return b.bind(e.Term, !neg)
	case *expr.Logic:
		and := e.And != neg // De Morgan
		out := &pred{kind: predOr}
		if and {
			out.kind = predAnd
		}
		for _, k := range e.Terms {
			p, err := b.bind(k, neg)
			if err != nil {
				return nil, err
			}
			switch {
			case p.kind == predTrue && and, p.kind == predFalse && !and:
				continue // neutral element
			case p.kind == predFalse && and:
				return &pred{kind: predFalse}, nil
			case p.kind == predTrue && !and:
				return &pred{kind: predTrue}, nil
			case p.kind == out.kind:
				out.kids = append(out.kids, p.kids...) // flatten
			default:
				out.kids = append(out.kids, p)
			}
		}
		switch len(out.kids) {
		case 0:
			if and {
				return &pred{kind: predTrue}, nil
			}
			return &pred{kind: predFalse}, nil
		case 1:
			return out.kids[0], nil
		}
		return out, nil
	}
	return nil, invalidf("unknown predicate type %T", e)
}

// bindColCmp binds "col op other": both columns of one comparable kind
// (numbers of any width compare with each other).
func (b *binder) bindColCmp(e *expr.Comparison, col *boundCol, other expr.Column, neg bool) (*pred, error) {
	col2, err := b.column(other)
	if err != nil {
		return nil, err
	}
	if col.kind == kindUnsupported || col2.kind == kindUnsupported ||
		col.kind != col2.kind && !(col.kind.IsNumber() && col2.kind.IsNumber()) {
		return nil, invalidf("%s: column %s of type %s cannot be compared with column %s of type %s", e, col.name, col.typ, col2.name, col2.typ)
	}
	op, nanTrue := e.Op, e.Op == opNe
	if neg {
		op, nanTrue = op.Negate(), !nanTrue
	}
	return &pred{kind: predColCmp, col: col, col2: col2, op: op, nanTrue: nanTrue}, nil
}

// colCmpTrue evaluates a predColCmp leaf on a full-width row: false when
// either value is null.
func (p *pred) colCmpTrue(row value.Row) bool {
	a, b := p.col.value(row), p.col2.value(row)
	if a == nil || b == nil {
		return false
	}
	k := p.col.kind
	if k != p.col2.kind {
		// mixed numbers compare as doubles
		a, b, k = expr.NumberAsFloat(a), expr.NumberAsFloat(b), kindFloat64
	}
	lit, err := convertLiteral(&boundCol{kind: k, name: p.col2.name, typ: p.col2.typ}, b)
	if err != nil {
		return false
	}
	return expr.CompareTrue(k, a, p.op, lit, p.nanTrue)
}

// lookupField finds a field by exact name, else by the one name equal under
// case folding.
func lookupField(st *schema.StructType, name string) (int, error) {
	if i := st.FieldIndex(name); i >= 0 {
		return i, nil
	}
	found := -1
	for i, f := range st.Fields {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1, invalidf("column name %q is ambiguous: %q and %q", name, st.Fields[found].Name, f.Name)
			}
			found = i
		}
	}
	if found < 0 {
		return -1, invalidf("no column %q", name)
	}
	return found, nil
}

// column resolves a column reference (memoized, so every leaf on one column
// shares one *boundCol).
func (b *binder) column(c expr.Column) (*boundCol, error) {
	path := c.Path()
	if len(path) == 0 {
		return nil, invalidf("empty column reference")
	}
	key := strings.Join(path, "\x00")
	if bc, ok := b.cols[key]; ok {
		return bc, nil
	}
	top, err := lookupField(b.sch, path[0])
	if err != nil {
		return nil, err
	}
	f := b.sch.Fields[top]
	bc := &boundCol{name: f.Name, top: top, typ: f.Type, partition: b.partCols[f.Name]}
	bc.partKey = f.PhysicalName(b.mode)
	statsOK := !fieldBlocksStats(f)
	bc.statsPath = []string{f.PhysicalName(b.mode)}
	for _, name := range path[1:] {
		st, ok := bc.typ.(*schema.StructType)
		if !ok {
			return nil, invalidf("column %s has type %s: it has no field %q", bc.name, bc.typ, name)
		}
		i, err := lookupField(st, name)
		if err != nil {
			return nil, fmt.Errorf("in struct column %s: %w", bc.name, err)
		}
		sf := st.Fields[i]
		bc.sub = append(bc.sub, i)
		bc.typ = sf.Type
		bc.name += "." + sf.Name
		bc.statsPath = append(bc.statsPath, sf.PhysicalName(b.mode))
		statsOK = statsOK && !fieldBlocksStats(sf)
	}
	if !statsOK {
		bc.statsPath = nil
	}
	bc.kind = kindOf(bc.typ)
	b.cols[key] = bc
	return bc, nil
}

// fieldBlocksStats reports whether a field's metadata makes its stats
// unusable for skipping: a type change (type widening: files written before
// it carry stats of the old type) or a non-default collation.
func fieldBlocksStats(f *schema.StructField) bool {
	_, widened := f.Metadata["delta.typeChanges"]
	_, collated := f.Metadata["__COLLATIONS"]
	return widened || collated
}

// convertLiteral converts a predicate value to the canonical form of the
// column's kind (expr.Convert).
func convertLiteral(c *boundCol, v any) (any, error) { return expr.Convert(c.kind, c.name, c.typ, v) }

// wallClockUTC returns t's wall clock in its own location as a UTC time.
func wallClockUTC(t time.Time) time.Time { return expr.WallClockUTC(t) }

// compareValue compares a value with a canonical value lit of kind k
// (expr.Compare).
func compareValue(k valueKind, v, lit any) (c int, ok bool) { return expr.Compare(k, v, lit) }

// leafTrue evaluates a leaf on the column's value v (nil for null).
func leafTrue(p *pred, v any) bool {
	switch p.kind {
	case predIsNull:
		return v == nil
	case predIsNotNull:
		return v != nil
	}
	if v == nil {
		return false
	}
	switch p.kind {
	case predCmp:
		return expr.CompareTrue(p.col.kind, v, p.op, p.lit, p.nanTrue)
	case predIn:
		for _, lit := range p.lits {
			if expr.CompareTrue(p.col.kind, v, opEq, lit, false) {
				return true
			}
		}
		return false
	case predNotIn:
		for _, lit := range p.lits {
			if !expr.CompareTrue(p.col.kind, v, opNe, lit, true) {
				return false
			}
		}
		return true
	}
	return false
}

// columnValue returns the value of c in a full-width table row (nil when
// the column or a struct above it is null).
func (c *boundCol) value(row value.Row) any {
	if c.top >= len(row) {
		return nil
	}
	v := row[c.top]
	for _, i := range c.sub {
		r, ok := v.(value.Row)
		if !ok || i >= len(r) {
			return nil
		}
		v = r[i]
	}
	return v
}

// matchRow evaluates p on a full-width table row (values in schema order).
func (p *pred) matchRow(row value.Row) bool {
	return p.eval(func(l *pred) bool {
		if l.kind == predColCmp {
			return l.colCmpTrue(row)
		}
		return leafTrue(l, l.col.value(row))
	})
}

// eval evaluates the tree: constants, And and Or as they are, every leaf
// by leaf (a row's values in matchRow, a file's in fileEval).
func (p *pred) eval(leaf func(*pred) bool) bool {
	switch p.kind {
	case predTrue:
		return true
	case predFalse:
		return false
	case predAnd:
		for _, k := range p.kids {
			if !k.eval(leaf) {
				return false
			}
		}
		return true
	case predOr:
		for _, k := range p.kids {
			if k.eval(leaf) {
				return true
			}
		}
		return false
	}
	return leaf(p)
}

// columns calls fn for every column the predicate references.
func (p *pred) columns(fn func(*boundCol)) {
	if p.col != nil {
		fn(p.col)
	}
	if p.col2 != nil {
		fn(p.col2)
	}
	for _, k := range p.kids {
		k.columns(fn)
	}
}
