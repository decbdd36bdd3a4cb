package bind

import (
	"fmt"
	"strings"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// BoundCol is a predicate column resolved against one table schema.
type BoundCol struct {
	Name      string // dotted logical path, for messages
	Top       int    // index of the top-level field in the table schema
	Sub       []int  // struct field indexes below the top-level field
	Type      schema.Type
	Kind      expr.Kind
	Partition bool   // a (top-level) partition column
	partKey   string // its partitionValues key: the physical name
	// StatsPath is the column's path of physical names in the stats JSON;
	// nil when the stats must not be used for it (type widening changed
	// its type, or a collation orders its strings differently).
	StatsPath []string
}

type PredKind uint8

const (
	PredTrue PredKind = iota
	PredFalse
	PredAnd
	PredOr
	PredCmp       // col op lit
	PredIn        // col IN lits
	PredNotIn     // col NOT IN lits (NULL col: not true)
	PredIsNull    // col IS NULL
	PredIsNotNull // col IS NOT NULL
	predColCmp    // col op col2 (a column compared with another, e.g. MERGE's target.id = source.id)
)

// Pred is a bound predicate in negation normal form: NOT has been pushed
// into the leaves (De Morgan; NOT a<b is a>=b, which has the same TRUE set
// under three-valued logic), so a row matches iff the tree evaluates to
// true with every leaf false on null.
type Pred struct {
	Kind PredKind
	Kids []*Pred
	Col  *BoundCol
	Op   expr.Op
	// NaNTrue is the value of a predCmp leaf on an unordered (NaN) float:
	// IEEE 754 makes NaN != x true and every other comparison false, and
	// NOT (x < y) is then "x >= y OR x is NaN".
	NaNTrue bool
	Lit     any       // canonical value (predCmp)
	Lits    []any     // canonical values (predIn, predNotIn)
	col2    *BoundCol // the right-hand column (predColCmp)
}

// Binder resolves expressions against a table schema.
type Binder struct {
	sch      *schema.StructType
	partCols map[string]bool
	mode     string // column mapping mode
	cols     map[string]*BoundCol
}

func NewBinder(sch *schema.StructType, partCols []string, mode string) *Binder {
	b := &Binder{sch: sch, partCols: map[string]bool{}, mode: mode, cols: map[string]*BoundCol{}}
	for _, c := range partCols {
		b.partCols[c] = true
	}
	return b
}

func Invalidf(format string, args ...any) error {
	return fmt.Errorf("table: %w: %s", objectstore.ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// Bind resolves e and converts it to negation normal form; neg says
// whether e sits under an odd number of NOTs.
func (b *Binder) Bind(e expr.Expr, neg bool) (*Pred, error) {
	switch e := e.(type) {
	case nil:
		return nil, Invalidf("nil predicate")
	case *expr.Comparison:
		col, err := b.Column(e.Col)
		if err != nil {
			return nil, err
		}
		if oc, ok := e.Value.(expr.Column); ok {
			return b.bindColCmp(e, col, oc, neg)
		}
		lit, err := ConvertLiteral(col, e.Value)
		if err != nil {
			return nil, err
		}
		op, nanTrue := e.Op, e.Op == expr.OpNe
		if neg {
			op, nanTrue = op.Negate(), !nanTrue
		}
		return &Pred{Kind: PredCmp, Col: col, Op: op, NaNTrue: nanTrue, Lit: lit}, nil
	case *expr.InList:
		col, err := b.Column(e.Col)
		if err != nil {
			return nil, err
		}
		lits := make([]any, 0, len(e.Values))
		for _, v := range e.Values {
			lit, err := ConvertLiteral(col, v)
			if err != nil {
				return nil, err
			}
			lits = append(lits, lit)
		}
		if len(lits) == 0 {
			// x IN () is false even for a null x, so NOT x IN () is true.
			if neg {
				return &Pred{Kind: PredTrue}, nil
			}
			return &Pred{Kind: PredFalse}, nil
		}
		if neg {
			return &Pred{Kind: PredNotIn, Col: col, Lits: lits}, nil
		}
		return &Pred{Kind: PredIn, Col: col, Lits: lits}, nil
	case *expr.NullTest:
		col, err := b.Column(e.Col)
		if err != nil {
			return nil, err
		}
		if e.Not != neg {
			return &Pred{Kind: PredIsNotNull, Col: col}, nil
		}
		return &Pred{Kind: PredIsNull, Col: col}, nil
	case *expr.Negation:
		return b.Bind(e.Term, !neg)
	case *expr.Logic:
		and := e.And != neg // De Morgan
		out := &Pred{Kind: PredOr}
		if and {
			out.Kind = PredAnd
		}
		for _, k := range e.Terms {
			p, err := b.Bind(k, neg)
			if err != nil {
				return nil, err
			}
			switch {
			case p.Kind == PredTrue && and, p.Kind == PredFalse && !and:
				continue // neutral element
			case p.Kind == PredFalse && and:
				return &Pred{Kind: PredFalse}, nil
			case p.Kind == PredTrue && !and:
				return &Pred{Kind: PredTrue}, nil
			case p.Kind == out.Kind:
				out.Kids = append(out.Kids, p.Kids...) // flatten
			default:
				out.Kids = append(out.Kids, p)
			}
		}
		switch len(out.Kids) {
		case 0:
			if and {
				return &Pred{Kind: PredTrue}, nil
			}
			return &Pred{Kind: PredFalse}, nil
		case 1:
			return out.Kids[0], nil
		}
		return out, nil
	}
	return nil, Invalidf("unknown predicate type %T", e)
}

// bindColCmp binds "col op other": both columns of one comparable kind
// (numbers of any width compare with each other).
func (b *Binder) bindColCmp(e *expr.Comparison, col *BoundCol, other expr.Column, neg bool) (*Pred, error) {
	col2, err := b.Column(other)
	if err != nil {
		return nil, err
	}
	if col.Kind == expr.KindUnsupported || col2.Kind == expr.KindUnsupported ||
		col.Kind != col2.Kind && !(col.Kind.IsNumber() && col2.Kind.IsNumber()) {
		return nil, Invalidf("%s: column %s of type %s cannot be compared with column %s of type %s", e, col.Name, col.Type, col2.Name, col2.Type)
	}
	op, nanTrue := e.Op, e.Op == expr.OpNe
	if neg {
		op, nanTrue = op.Negate(), !nanTrue
	}
	return &Pred{Kind: predColCmp, Col: col, col2: col2, Op: op, NaNTrue: nanTrue}, nil
}

// colCmpTrue evaluates a predColCmp leaf on a full-width row: false when
// either value is null.
func (p *Pred) colCmpTrue(row value.Row) bool {
	a, b := p.Col.Value(row), p.col2.Value(row)
	if a == nil || b == nil {
		return false
	}
	k := p.Col.Kind
	if k != p.col2.Kind {
		// mixed numbers compare as doubles
		a, b, k = expr.NumberAsFloat(a), expr.NumberAsFloat(b), expr.KindFloat64
	}
	lit, err := ConvertLiteral(&BoundCol{Kind: k, Name: p.col2.Name, Type: p.col2.Type}, b)
	if err != nil {
		return false
	}
	return expr.CompareTrue(k, a, p.Op, lit, p.NaNTrue)
}

// LookupField finds a field by exact name, else by the one name equal under
// case folding.
func LookupField(st *schema.StructType, name string) (int, error) {
	if i := st.FieldIndex(name); i >= 0 {
		return i, nil
	}
	found := -1
	for i, f := range st.Fields {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1, Invalidf("column name %q is ambiguous: %q and %q", name, st.Fields[found].Name, f.Name)
			}
			found = i
		}
	}
	if found < 0 {
		return -1, Invalidf("no column %q", name)
	}
	return found, nil
}

// Column resolves a column reference (memoized, so every leaf on one column
// shares one *boundCol).
func (b *Binder) Column(c expr.Column) (*BoundCol, error) {
	path := c.Path()
	if len(path) == 0 {
		return nil, Invalidf("empty column reference")
	}
	key := strings.Join(path, "\x00")
	if bc, ok := b.cols[key]; ok {
		return bc, nil
	}
	top, err := LookupField(b.sch, path[0])
	if err != nil {
		return nil, err
	}
	f := b.sch.Fields[top]
	bc := &BoundCol{Name: f.Name, Top: top, Type: f.Type, Partition: b.partCols[f.Name]}
	bc.partKey = f.PhysicalName(b.mode)
	statsOK := !fieldBlocksStats(f)
	bc.StatsPath = []string{f.PhysicalName(b.mode)}
	for _, name := range path[1:] {
		st, ok := bc.Type.(*schema.StructType)
		if !ok {
			return nil, Invalidf("column %s has type %s: it has no field %q", bc.Name, bc.Type, name)
		}
		i, err := LookupField(st, name)
		if err != nil {
			return nil, fmt.Errorf("in struct column %s: %w", bc.Name, err)
		}
		sf := st.Fields[i]
		bc.Sub = append(bc.Sub, i)
		bc.Type = sf.Type
		bc.Name += "." + sf.Name
		bc.StatsPath = append(bc.StatsPath, sf.PhysicalName(b.mode))
		statsOK = statsOK && !fieldBlocksStats(sf)
	}
	if !statsOK {
		bc.StatsPath = nil
	}
	bc.Kind = expr.KindOf(bc.Type)
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

// ConvertLiteral converts a predicate value to the canonical form of the
// column's kind (expr.Convert).
func ConvertLiteral(c *BoundCol, v any) (any, error) { return expr.Convert(c.Kind, c.Name, c.Type, v) }

// LeafTrue evaluates a leaf on the column's value v (nil for null).
func LeafTrue(p *Pred, v any) bool {
	switch p.Kind {
	case PredIsNull:
		return v == nil
	case PredIsNotNull:
		return v != nil
	}
	if v == nil {
		return false
	}
	switch p.Kind {
	case PredCmp:
		return expr.CompareTrue(p.Col.Kind, v, p.Op, p.Lit, p.NaNTrue)
	case PredIn:
		for _, lit := range p.Lits {
			if expr.CompareTrue(p.Col.Kind, v, expr.OpEq, lit, false) {
				return true
			}
		}
		return false
	case PredNotIn:
		for _, lit := range p.Lits {
			if !expr.CompareTrue(p.Col.Kind, v, expr.OpNe, lit, true) {
				return false
			}
		}
		return true
	}
	return false
}

// Value returns the value of c in a full-width table row (nil when
// the column or a struct above it is null).
func (c *BoundCol) Value(row value.Row) any {
	if c.Top >= len(row) {
		return nil
	}
	v := row[c.Top]
	for _, i := range c.Sub {
		r, ok := v.(value.Row)
		if !ok || i >= len(r) {
			return nil
		}
		v = r[i]
	}
	return v
}

// MatchRow evaluates p on a full-width table row (values in schema order).
func (p *Pred) MatchRow(row value.Row) bool {
	return p.eval(func(l *Pred) bool {
		if l.Kind == predColCmp {
			return l.colCmpTrue(row)
		}
		return LeafTrue(l, l.Col.Value(row))
	})
}

// eval evaluates the tree: constants, And and Or as they are, every leaf
// by leaf (a row's values in matchRow, a file's in fileEval).
func (p *Pred) eval(leaf func(*Pred) bool) bool {
	switch p.Kind {
	case PredTrue:
		return true
	case PredFalse:
		return false
	case PredAnd:
		for _, k := range p.Kids {
			if !k.eval(leaf) {
				return false
			}
		}
		return true
	case PredOr:
		for _, k := range p.Kids {
			if k.eval(leaf) {
				return true
			}
		}
		return false
	}
	return leaf(p)
}

// Columns calls fn for every column the predicate references.
func (p *Pred) Columns(fn func(*BoundCol)) {
	if p.Col != nil {
		fn(p.Col)
	}
	if p.col2 != nil {
		fn(p.col2)
	}
	for _, k := range p.Kids {
		k.Columns(fn)
	}
}

// Path returns the column's logical path below its top-level column (for a
// MERGE row: below the target or source struct).
func (c *BoundCol) Path() []string {
	return strings.Split(c.Name, ".")[1:]
}
