package bind

import "github.com/deltakit/deltakit/expr"

// File skipping (spec "Per-file Statistics", "Partition Value
// Serialization"). A file is kept unless the predicate provably matches
// none of its rows:
//
//   - partition columns are compared exactly with the file's parsed
//     partitionValues;
//   - other columns are checked against minValues, maxValues and nullCount
//     of add.stats, read only for files that survive the partition check.
//     Anything missing, unparsable or unordered (NaN) counts as "may match".
//     String maxima may be truncated prefixes (Spark keeps 32 characters),
//     so a value that starts with the max may still exceed it; timestamp
//     bounds are cut to milliseconds, so they are widened by 1 ms. With
//     tightBounds false (deletion vectors), bounds still enclose every live
//     value, and nullCount is used only when it is 0 or numRecords, as the
//     spec allows.

// MayMatch reports whether a file may hold a row matching p: part returns the parsed value of a
// partition column (by top-level index); stats returns the bounds of a data
// column, or nil when the caller wants data columns assumed to match (the
// partition-only pass).
func (p *Pred) MayMatch(part func(*BoundCol) any, stats func(*BoundCol) *expr.Bounds) bool {
	return p.fileEval(part, func(l *Pred) bool {
		if stats == nil {
			return true
		}
		b := stats(l.Col)
		return b == nil || boundsMayMatch(b, l)
	})
}

// fileEval evaluates p for a whole file: And, Or and constants as they
// are, a top-level partition column's leaf exactly on its value (part),
// every other leaf by data (the bounds test of mayMatch or mustMatch).
func (p *Pred) fileEval(part func(*BoundCol) any, data func(leaf *Pred) bool) bool {
	return p.eval(func(l *Pred) bool {
		if l.Col.Partition && len(l.Col.Sub) == 0 && l.Kind != predColCmp {
			return LeafTrue(l, part(l.Col))
		}
		return data(l)
	})
}

// HasDataLeaf reports whether p references a column that is not a
// partition column (so file stats can help).
func (p *Pred) HasDataLeaf() bool {
	found := false
	p.Columns(func(c *BoundCol) {
		if !c.Partition || len(c.Sub) > 0 {
			found = true
		}
	})
	return found
}

// boundsMayMatch evaluates a data leaf against its column's bounds.
func boundsMayMatch(b *expr.Bounds, p *Pred) bool {
	switch p.Kind {
	case PredIsNull:
		return b.MayNull(false)
	case PredIsNotNull:
		return b.MayNull(true)
	case PredCmp:
		return b.MayCompare(p.Op, p.Lit, p.NaNTrue)
	case PredIn:
		return b.MayIn(p.Lits, false)
	case PredNotIn:
		return b.MayIn(p.Lits, true)
	}
	return true
}

// fileStats is the parsed add.stats JSON of one file (expr.Stats).
type fileStats struct {
	st         *expr.Stats
	NumRecords int64 // -1 when absent
}

// ParseFileStats parses add.stats; it returns nil for absent or malformed
// stats (the file then may match anything).
func ParseFileStats(s string) *fileStats {
	st := expr.ParseStats(s)
	if st == nil {
		return nil
	}
	return &fileStats{st: st, NumRecords: st.NumRecords}
}

// Bounds returns the stats of column c, or nil when the file has no stats
// or c's stats must not be used.
func (fs *fileStats) Bounds(c *BoundCol) *expr.Bounds {
	if fs == nil || c.StatsPath == nil {
		return nil
	}
	return fs.st.Bounds(c.Kind, c.StatsPath)
}
