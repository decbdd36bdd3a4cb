package bind

import "github.com/deltakit/deltakit/expr"

// MustMatch reports whether every row of a file matches p, by its partition
// values and stats alone, so that a DELETE can remove the file without
// reading it (Spark's metadata-only delete, extended to stats). It is
// conservative: false whenever the stats cannot prove it. A data leaf is
// proven only for exact kinds (integers, dates; no truncated strings,
// millisecond timestamps or NaN-prone floats), with bounds present and a
// null count of 0 (comparisons are never true on null). part and stats are
// as for mayMatch; stats may not be nil.
func (p *Pred) MustMatch(part func(*BoundCol) any, stats func(*BoundCol) *expr.Bounds) bool {
	return p.fileEval(part, func(l *Pred) bool { return l.mustMatchBounds(stats(l.Col)) })
}

// mustMatchBounds reports whether every row satisfies the data leaf p,
// given its column's bounds b (nil: unknown).
func (p *Pred) mustMatchBounds(b *expr.Bounds) bool {
	if b == nil {
		return false
	}
	switch p.Kind {
	case PredIsNull:
		return b.AllNull()
	case PredIsNotNull:
		return b.NullCount == 0
	case PredCmp:
		return b.MustCompare(p.Op, p.Lit)
	}
	return false
}
