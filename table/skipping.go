package table

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

// mayMatch reports whether a file may hold a row matching p: part returns the parsed value of a
// partition column (by top-level index); stats returns the bounds of a data
// column, or nil when the caller wants data columns assumed to match (the
// partition-only pass).
func (p *pred) mayMatch(part func(*boundCol) any, stats func(*boundCol) *colBounds) bool {
	return p.fileEval(part, func(l *pred) bool {
		if stats == nil {
			return true
		}
		b := stats(l.col)
		return b == nil || boundsMayMatch(b, l)
	})
}

// fileEval evaluates p for a whole file: And, Or and constants as they
// are, a top-level partition column's leaf exactly on its value (part),
// every other leaf by data (the bounds test of mayMatch or mustMatch).
func (p *pred) fileEval(part func(*boundCol) any, data func(leaf *pred) bool) bool {
	return p.eval(func(l *pred) bool {
		if l.col.partition && len(l.col.sub) == 0 && l.kind != predColCmp {
			return leafTrue(l, part(l.col))
		}
		return data(l)
	})
}

// hasDataLeaf reports whether p references a column that is not a
// partition column (so file stats can help).
func (p *pred) hasDataLeaf() bool {
	found := false
	p.columns(func(c *boundCol) {
		if !c.partition || len(c.sub) > 0 {
			found = true
		}
	})
	return found
}

// colBounds is what a file's stats say about one column (expr.Bounds).
type colBounds = expr.Bounds

// boundsMayMatch evaluates a data leaf against its column's bounds.
func boundsMayMatch(b *colBounds, p *pred) bool {
	switch p.kind {
	case predIsNull:
		return b.MayNull(false)
	case predIsNotNull:
		return b.MayNull(true)
	case predCmp:
		return b.MayCompare(p.op, p.lit, p.nanTrue)
	case predIn:
		return b.MayIn(p.lits, false)
	case predNotIn:
		return b.MayIn(p.lits, true)
	}
	return true
}

// fileStats is the parsed add.stats JSON of one file (expr.Stats).
type fileStats struct {
	st         *expr.Stats
	numRecords int64 // -1 when absent
}

// parseFileStats parses add.stats; it returns nil for absent or malformed
// stats (the file then may match anything).
func parseFileStats(s string) *fileStats {
	st := expr.ParseStats(s)
	if st == nil {
		return nil
	}
	return &fileStats{st: st, numRecords: st.NumRecords}
}

// bounds returns the stats of column c, or nil when the file has no stats
// or c's stats must not be used.
func (fs *fileStats) bounds(c *boundCol) *colBounds {
	if fs == nil || c.statsPath == nil {
		return nil
	}
	return fs.st.Bounds(c.kind, c.statsPath)
}
