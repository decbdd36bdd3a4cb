package table

// mustMatch reports whether every row of a file matches p, by its partition
// values and stats alone, so that a DELETE can remove the file without
// reading it (Spark's metadata-only delete, extended to stats). It is
// conservative: false whenever the stats cannot prove it. A data leaf is
// proven only for exact kinds (integers, dates; no truncated strings,
// millisecond timestamps or NaN-prone floats), with bounds present and a
// null count of 0 (comparisons are never true on null). part and stats are
// as for mayMatch; stats may not be nil.
func (p *pred) mustMatch(part func(*boundCol) any, stats func(*boundCol) *colBounds) bool {
	return p.fileEval(part, func(l *pred) bool { return l.mustMatchBounds(stats(l.col)) })
}

// mustMatchBounds reports whether every row satisfies the data leaf p,
// given its column's bounds b (nil: unknown).
func (p *pred) mustMatchBounds(b *colBounds) bool {
	if b == nil {
		return false
	}
	switch p.kind {
	case predIsNull:
		return b.AllNull()
	case predIsNotNull:
		return b.NullCount == 0
	case predCmp:
		return b.MustCompare(p.op, p.lit)
	}
	return false
}
