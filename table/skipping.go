package table

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/parquetio"
)

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
		return b == nil || b.mayMatch(l)
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

// colBounds is what a file's stats say about one column.
type colBounds struct {
	kind       valueKind
	min, max   any   // canonical values (see valueKind); nil when unknown
	nullCount  int64 // -1 when unknown or, with wide bounds, uninformative
	numRecords int64 // -1 when unknown
}

func (b *colBounds) allNull() bool {
	return b.nullCount >= 0 && b.numRecords >= 0 && b.nullCount == b.numRecords
}

// mayMatch evaluates a leaf against the bounds.
func (b *colBounds) mayMatch(p *pred) bool {
	switch p.kind {
	case predIsNull:
		return b.nullCount != 0
	case predIsNotNull:
		return !b.allNull()
	}
	if b.allNull() {
		return false // comparisons are never true on null
	}
	switch p.kind {
	case predCmp:
		if p.nanTrue && (b.kind == kindFloat32 || b.kind == kindFloat64) {
			return true // NaN matches, and stats may leave NaN out
		}
		return b.cmpMayMatch(p.op, p.lit)
	case predIn:
		for _, lit := range p.lits {
			if b.cmpMayMatch(opEq, lit) {
				return true
			}
		}
		return false
	case predNotIn:
		for _, lit := range p.lits {
			if !b.cmpMayMatch(opNe, lit) {
				return false
			}
		}
		return true
	}
	return true
}

// cmpMayMatch says whether some non-null value v in [min, max] may make
// "v op lit" true.
func (b *colBounds) cmpMayMatch(op cmpOp, lit any) bool {
	switch op {
	case opEq:
		return !b.belowMin(lit, true) && b.maxMayReach(lit, true)
	case opNe:
		// Skip only when every value provably equals lit: exact kinds
		// (no truncation, no NaN) with min = max = lit.
		switch b.kind {
		case kindInt, kindBool, kindDate, kindDecimal:
		default:
			return true
		}
		if b.min == nil || b.max == nil {
			return true
		}
		c1, ok1 := compareValue(b.kind, b.min, lit)
		c2, ok2 := compareValue(b.kind, b.max, lit)
		return !(ok1 && ok2 && c1 == 0 && c2 == 0)
	case opLt:
		return !b.belowMin(lit, false)
	case opLe:
		return !b.belowMin(lit, true)
	case opGt:
		return b.maxMayReach(lit, false)
	default: // opGe
		return b.maxMayReach(lit, true)
	}
}

// belowMin reports whether no value can satisfy "v <= lit" (orEqual) or
// "v < lit": min > lit, or min >= lit.
func (b *colBounds) belowMin(lit any, orEqual bool) bool {
	if b.min == nil {
		return false
	}
	c, ok := compareValue(b.kind, b.min, lit)
	if !ok {
		return false
	}
	if orEqual {
		return c > 0
	}
	return c >= 0
}

// maxMayReach reports whether some value may be >= lit (orEqual) or > lit.
func (b *colBounds) maxMayReach(lit any, orEqual bool) bool {
	if b.max == nil {
		return true
	}
	c, ok := compareValue(b.kind, b.max, lit)
	if !ok {
		return true
	}
	if c > 0 || (orEqual && c == 0) {
		return true
	}
	// A string max may be a truncated prefix of the real max: every string
	// that starts with it may be in the file.
	if b.kind == kindString {
		if s, ok := b.max.(string); ok && strings.HasPrefix(lit.(string), s) {
			return true
		}
	}
	return false
}

// fileStats is the parsed add.stats JSON of one file.
type fileStats struct {
	numRecords int64 // -1 when absent
	tight      bool
	min, max   map[string]any
	nulls      map[string]any
}

// parseFileStats parses add.stats; it returns nil for absent or malformed
// stats (the file then may match anything).
func parseFileStats(s string) *fileStats {
	if s == "" {
		return nil
	}
	var raw struct {
		NumRecords  json.Number    `json:"numRecords"`
		TightBounds *bool          `json:"tightBounds"`
		MinValues   map[string]any `json:"minValues"`
		MaxValues   map[string]any `json:"maxValues"`
		NullCount   map[string]any `json:"nullCount"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil
	}
	fs := &fileStats{numRecords: -1, tight: raw.TightBounds == nil || *raw.TightBounds,
		min: raw.MinValues, max: raw.MaxValues, nulls: raw.NullCount}
	if n, err := raw.NumRecords.Int64(); err == nil && n >= 0 {
		fs.numRecords = n
	}
	return fs
}

// lookupStat walks a nested stats section along a physical path.
func lookupStat(m map[string]any, path []string) (any, bool) {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// bounds returns the stats of column c, or nil when the file has no stats
// or c's stats must not be used.
func (fs *fileStats) bounds(c *boundCol) *colBounds {
	if fs == nil || c.statsPath == nil {
		return nil
	}
	b := &colBounds{kind: c.kind, nullCount: -1, numRecords: fs.numRecords}
	if v, ok := lookupStat(fs.nulls, c.statsPath); ok {
		if n, ok := v.(json.Number); ok {
			if x, err := n.Int64(); err == nil && x >= 0 {
				b.nullCount = x
			}
		}
	}
	if !fs.tight && b.nullCount != 0 && b.nullCount != b.numRecords {
		b.nullCount = -1 // spec: any other value carries no information
	}
	if v, ok := lookupStat(fs.min, c.statsPath); ok {
		b.min = statValue(c.kind, v, -time.Millisecond)
	}
	if v, ok := lookupStat(fs.max, c.statsPath); ok {
		b.max = statValue(c.kind, v, time.Millisecond)
	}
	return b
}

// statTimeLayouts are the forms timestamps take in stats: ISO-8601 with a
// zone (timestamp) or without (timestamp_ntz), with any fraction.
var statTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

// statValue converts a min/max stats value to the canonical form of kind k,
// or nil when it cannot be used. Timestamps are widened by widen (±1 ms)
// since stats keep milliseconds only.
func statValue(k valueKind, v any, widen time.Duration) any {
	switch k {
	case kindInt:
		if n, ok := v.(json.Number); ok {
			if x, err := strconv.ParseInt(string(n), 10, 64); err == nil {
				return x
			}
		}
	case kindFloat32, kindFloat64:
		var f float64
		switch x := v.(type) {
		case json.Number:
			var err error
			if f, err = strconv.ParseFloat(string(x), 64); err != nil {
				return nil
			}
		case string: // Spark writes the non-JSON floats as strings
			switch x {
			case "Infinity", "+Infinity", "inf", "+inf":
				f = math.Inf(1)
			case "-Infinity", "-inf":
				f = math.Inf(-1)
			default: // "NaN" and anything else: no usable bound
				return nil
			}
		default:
			return nil
		}
		if math.IsNaN(f) {
			return nil
		}
		if k == kindFloat32 && !math.IsInf(f, 0) {
			f = float64(float32(f))
		}
		return f
	case kindBool:
		if b, ok := v.(bool); ok {
			return b
		}
	case kindString:
		if s, ok := v.(string); ok {
			return s
		}
	case kindDate:
		if s, ok := v.(string); ok {
			if d, err := time.Parse(time.DateOnly, s); err == nil {
				return int64(parquetio.DateOf(d))
			}
		}
	case kindTimestamp, kindTimestampNTZ:
		s, ok := v.(string)
		if !ok {
			return nil
		}
		for _, layout := range statTimeLayouts {
			if ts, err := time.Parse(layout, s); err == nil {
				return ts.UTC().Add(widen)
			}
		}
	case kindDecimal:
		if n, ok := v.(json.Number); ok {
			if d, ok := parseStatDecimal(string(n)); ok {
				return d
			}
		}
	}
	return nil
}

// parseStatDecimal parses a JSON number as an exact decimal, also in
// exponent form ("1.5E-3", "0E-10" as Java prints some BigDecimals).
func parseStatDecimal(s string) (parquetio.Decimal, bool) {
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		var err error
		if exp, err = strconv.ParseInt(s[i+1:], 10, 32); err != nil {
			return parquetio.Decimal{}, false
		}
		mant = s[:i]
	}
	d, err := parquetio.ParseDecimal(mant)
	if err != nil {
		return parquetio.Decimal{}, false
	}
	sc := int64(d.Scale) - exp
	if sc < -1000 || sc > 1000 {
		return parquetio.Decimal{}, false
	}
	d.Scale = int32(sc)
	return d, true
}
