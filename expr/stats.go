package expr

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Bounds is what a file's (or a row group's) statistics say about one
// column (spec "Per-file Statistics"). Anything missing, unparsable or
// unordered (NaN) counts as "may match". String maxima may be truncated
// prefixes (Spark keeps 32 characters), so a value that starts with the
// max may still exceed it. With tightBounds false (deletion vectors), bounds
// still enclose every live value, and NullCount is set only when it is 0 or
// NumRecords, as the spec allows.
type Bounds struct {
	Kind       Kind
	Min, Max   any   // canonical values of Kind (see Convert); nil when unknown
	NullCount  int64 // -1 when unknown or, with wide bounds, uninformative
	NumRecords int64 // -1 when unknown
}

// AllNull reports whether every value is null.
func (b *Bounds) AllNull() bool {
	return b.NullCount >= 0 && b.NumRecords >= 0 && b.NullCount == b.NumRecords
}

// MayNull reports whether a value may be null (not: whether one may be
// non-null), for IS [NOT] NULL.
func (b *Bounds) MayNull(not bool) bool {
	if not {
		return !b.AllNull()
	}
	return b.NullCount != 0
}

// MayCompare reports whether some value may make "v op lit" TRUE, lit
// canonical; nanTrue is the comparison's value on NaN (see CompareTrue).
func (b *Bounds) MayCompare(op Op, lit any, nanTrue bool) bool {
	if b.AllNull() {
		return false // comparisons are never true on null
	}
	if nanTrue && (b.Kind == KindFloat32 || b.Kind == KindFloat64) {
		return true // NaN matches, and stats may leave NaN out
	}
	return b.cmpMayMatch(op, lit)
}

// MayIn reports whether some value may equal one of lits (not: may differ
// from all of them, for NOT IN).
func (b *Bounds) MayIn(lits []any, not bool) bool {
	if b.AllNull() {
		return false
	}
	for _, lit := range lits {
		if not && !b.cmpMayMatch(OpNe, lit) {
			return false
		}
		if !not && b.cmpMayMatch(OpEq, lit) {
			return true
		}
	}
	return not
}

// MustCompare reports whether every value provably makes "v op lit" TRUE:
// only for exact kinds (integers, dates; no truncated strings, millisecond
// timestamps or NaN-prone floats), with both bounds present and no nulls.
func (b *Bounds) MustCompare(op Op, lit any) bool {
	if b.NullCount != 0 || b.Min == nil || b.Max == nil || (b.Kind != KindInt && b.Kind != KindDate) {
		return false
	}
	lo, ok1 := Compare(b.Kind, b.Min, lit)
	hi, ok2 := Compare(b.Kind, b.Max, lit)
	if !ok1 || !ok2 {
		return false
	}
	switch op {
	case OpEq:
		return lo == 0 && hi == 0
	case OpNe:
		return lo > 0 || hi < 0
	case OpLt:
		return hi < 0
	case OpLe:
		return hi <= 0
	case OpGt:
		return lo > 0
	default:
		return lo >= 0
	}
}

// cmpMayMatch says whether some non-null value v in [min, max] may make
// "v op lit" true.
func (b *Bounds) cmpMayMatch(op Op, lit any) bool {
	switch op {
	case OpEq:
		return !b.belowMin(lit, true) && b.maxMayReach(lit, true)
	case OpNe:
		// Skip only when every value provably equals lit: exact kinds
		// (no truncation, no NaN) with min = max = lit.
		switch b.Kind {
		case KindInt, KindBool, KindDate, KindDecimal:
		default:
			return true
		}
		if b.Min == nil || b.Max == nil {
			return true
		}
		c1, ok1 := Compare(b.Kind, b.Min, lit)
		c2, ok2 := Compare(b.Kind, b.Max, lit)
		return !(ok1 && ok2 && c1 == 0 && c2 == 0)
	case OpLt:
		return !b.belowMin(lit, false)
	case OpLe:
		return !b.belowMin(lit, true)
	case OpGt:
		return b.maxMayReach(lit, false)
	default: // OpGe
		return b.maxMayReach(lit, true)
	}
}

// belowMin reports whether no value can satisfy "v <= lit" (orEqual) or
// "v < lit": min > lit, or min >= lit. An unknown (nil) min compares as
// not ok.
func (b *Bounds) belowMin(lit any, orEqual bool) bool {
	c, ok := Compare(b.Kind, b.Min, lit)
	if !ok {
		return false
	}
	if orEqual {
		return c > 0
	}
	return c >= 0
}

// maxMayReach reports whether some value may be >= lit (orEqual) or > lit;
// an unknown (nil) max compares as not ok.
func (b *Bounds) maxMayReach(lit any, orEqual bool) bool {
	c, ok := Compare(b.Kind, b.Max, lit)
	if !ok {
		return true
	}
	if c > 0 || (orEqual && c == 0) {
		return true
	}
	// A string max may be a truncated prefix of the real max: every string
	// that starts with it may be in the file.
	if b.Kind == KindString {
		if s, ok := b.Max.(string); ok && strings.HasPrefix(lit.(string), s) {
			return true
		}
	}
	return false
}

// Stats is the parsed add.stats JSON of one file (spec "Per-file
// Statistics"); sections are nested by struct field, keyed by physical
// column names.
type Stats struct {
	NumRecords int64 // -1 when absent
	Tight      bool  // tightBounds (absent: true)
	min, max   map[string]any
	nulls      map[string]any
}

// ParseStats parses add.stats; it returns nil for absent or malformed
// stats (the file then may match anything).
func ParseStats(s string) *Stats {
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
	fs := &Stats{NumRecords: -1, Tight: raw.TightBounds == nil || *raw.TightBounds,
		min: raw.MinValues, max: raw.MaxValues, nulls: raw.NullCount}
	if n, err := raw.NumRecords.Int64(); err == nil && n >= 0 {
		fs.NumRecords = n
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

// Bounds returns the stats of the column of kind k at path (physical
// names, top-level first), or nil when fs is nil.
func (fs *Stats) Bounds(k Kind, path []string) *Bounds {
	if fs == nil {
		return nil
	}
	b := &Bounds{Kind: k, NullCount: -1, NumRecords: fs.NumRecords}
	if v, ok := lookupStat(fs.nulls, path); ok {
		if n, ok := v.(json.Number); ok {
			if x, err := n.Int64(); err == nil && x >= 0 {
				b.NullCount = x
			}
		}
	}
	if !fs.Tight && b.NullCount != 0 && b.NullCount != b.NumRecords {
		b.NullCount = -1 // spec: any other value carries no information
	}
	if v, ok := lookupStat(fs.min, path); ok {
		b.Min = StatValue(k, v, -time.Millisecond)
	}
	if v, ok := lookupStat(fs.max, path); ok {
		b.Max = StatValue(k, v, time.Millisecond)
	}
	return b
}

// statTypes are the Delta types whose codec parses the stats literals of a
// kind in StatValue (the integer kinds all read as a long).
var statTypes = map[Kind]schema.Type{
	KindInt: schema.Primitive(schema.Long), KindString: schema.Primitive(schema.String),
	KindDate: schema.Primitive(schema.Date), KindTimestamp: schema.Primitive(schema.Timestamp),
	KindTimestampNTZ: schema.Primitive(schema.TimestampNTZ),
}

// StatValue converts a minValues/maxValues value of add.stats (as
// encoding/json decodes it with UseNumber: json.Number, string, bool) to
// the canonical form of kind k (spec "Per-file Statistics"), or nil when it
// cannot be used (absent, malformed, NaN). Timestamps are widened by widen
// (-1 ms for a min, +1 ms for a max) since stats keep milliseconds only.
//
// Integers, strings, dates and timestamps are parsed by
// value.Codec.ParseStats. Floats, booleans and decimals keep their own
// rules here, which ParseStats does not share: Spark's "inf"/"-inf" spellings
// are accepted and NaN gives no bound; ParseStats refuses booleans (Delta
// keeps no boolean min/max, but older writers do); a decimal kind carries no
// precision, and Java's exponent form ("0E-10") must parse.
func StatValue(k Kind, v any, widen time.Duration) any {
	if t, ok := statTypes[k]; ok {
		x, err := value.CodecOf(t).ParseStats(v)
		if err != nil {
			return nil
		}
		switch x := x.(type) {
		case value.Date:
			return int64(x)
		case time.Time:
			return x.Add(widen)
		}
		return x
	}
	switch k {
	case KindFloat32, KindFloat64:
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
		if k == KindFloat32 && !math.IsInf(f, 0) {
			f = float64(float32(f))
		}
		return f
	case KindBool:
		if b, ok := v.(bool); ok {
			return b
		}
	case KindDecimal:
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
func parseStatDecimal(s string) (value.Decimal, bool) {
	mant, exp := s, int64(0)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		var err error
		if exp, err = strconv.ParseInt(s[i+1:], 10, 32); err != nil {
			return value.Decimal{}, false
		}
		mant = s[:i]
	}
	d, err := value.ParseDecimal(mant)
	if err != nil {
		return value.Decimal{}, false
	}
	sc := int64(d.Scale) - exp
	if sc < -1000 || sc > 1000 {
		return value.Decimal{}, false
	}
	d.Scale = int32(sc)
	return d, true
}
