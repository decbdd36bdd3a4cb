package parquetio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Stats are the Delta per-file statistics of a data file (spec "Per-file
// Statistics"), as the add action's stats JSON holds them. Field names are
// physical names and nest like the schema.
//
// The rules, chosen to match what Spark writes:
//   - stats cover the first 32 leaf columns (WithNumIndexedCols) or the
//     listed columns (WithStatsColumns); a nested struct field counts as a
//     leaf, an array or map counts as one leaf;
//   - nullCount is kept for every covered column, arrays and maps included
//     (the count of null collections; a null struct counts as null in each
//     of its fields);
//   - minValues/maxValues are kept for byte, short, integer, long, float,
//     double, decimal, date, timestamp, timestamp_ntz and string columns
//     outside arrays and maps, and left out for boolean, binary, arrays,
//     maps and columns whose values are all null;
//   - strings keep a prefix of 32 characters (UTF-16 code units, as Java
//     counts them, never splitting a surrogate pair); a cut max gets U+007F
//     appended when the next character sorts below it, else U+10FFFF, and
//     has no max at all if no such bound fits in twice the prefix length;
//   - timestamps are cut to milliseconds ("2024-01-02T03:04:05.123Z";
//     timestamp_ntz without a zone), so the max may be below the true max by
//     less than 1 ms, as in Spark; dates are "YYYY-MM-DD";
//   - decimals are JSON numbers in plain notation with the column's scale;
//   - a float or double column that holds a NaN has no min and no max; an
//     infinite min or max is left out (JSON has no infinity).
type Stats struct {
	NumRecords  int64        // rows in the file
	MinValues   []StatsField // nil when no column has a min
	MaxValues   []StatsField // nil when no column has a max
	NullCount   []StatsField // Value is an int64 count
	TightBounds *bool        // nil when left out (see WithTightBounds)
}

// StatsField is one entry of minValues, maxValues or nullCount: a value for
// a column, or nested Fields for a struct column.
type StatsField struct {
	Name   string       // physical column name
	Value  any          // json.Number or string (min/max), int64 (nullCount); nil for a struct
	Fields []StatsField // the struct's fields, in schema order
}

// Lookup returns the value at the physical path in one section: "minValues",
// "maxValues" or "nullCount".
func (s *Stats) Lookup(section string, path ...string) (any, bool) {
	var fields []StatsField
	switch section {
	case "minValues":
		fields = s.MinValues
	case "maxValues":
		fields = s.MaxValues
	case "nullCount":
		fields = s.NullCount
	default:
		return nil, false
	}
	for i, name := range path {
		var found *StatsField
		for j := range fields {
			if fields[j].Name == name {
				found = &fields[j]
				break
			}
		}
		if found == nil {
			return nil, false
		}
		if i == len(path)-1 {
			return found.Value, found.Value != nil
		}
		fields = found.Fields
	}
	return nil, false
}

// JSON returns the stats as the add action's stats string, keys in schema
// order: {"numRecords":..,"minValues":{..},"maxValues":{..},"nullCount":{..},"tightBounds":true}.
func (s *Stats) JSON() (string, error) {
	var b bytes.Buffer
	b.WriteString(`{"numRecords":`)
	b.WriteString(strconv.FormatInt(s.NumRecords, 10))
	for _, sec := range []struct {
		name   string
		fields []StatsField
	}{{"minValues", s.MinValues}, {"maxValues", s.MaxValues}, {"nullCount", s.NullCount}} {
		if len(sec.fields) == 0 {
			continue
		}
		b.WriteString(`,"` + sec.name + `":`)
		if err := writeStatsFields(&b, sec.fields); err != nil {
			return "", err
		}
	}
	if s.TightBounds != nil {
		b.WriteString(`,"tightBounds":` + strconv.FormatBool(*s.TightBounds))
	}
	b.WriteByte('}')
	return b.String(), nil
}

func writeStatsFields(b *bytes.Buffer, fields []StatsField) error {
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(b, f.Name)
		b.WriteByte(':')
		switch v := f.Value.(type) {
		case nil:
			if err := writeStatsFields(b, f.Fields); err != nil {
				return err
			}
		case json.Number:
			b.WriteString(v.String())
		case string:
			writeJSONString(b, v)
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		default:
			return fmt.Errorf("parquetio: stats value %T for %s", v, f.Name)
		}
	}
	b.WriteByte('}')
	return nil
}

// writeJSONString writes s as a JSON string without HTML escaping (as
// Jackson writes it).
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // cannot fail for a string
	b.Truncate(b.Len() - 1)
}

type statKind uint8

const (
	statNullOnly statKind = iota // boolean, binary, array, map: nullCount only
	statInt                      // byte, short, integer, long
	statFloat32
	statFloat64
	statDecimal
	statString
	statDate
	statTimestamp    // microseconds since the epoch
	statTimestampNTZ // microseconds of the wall clock taken as UTC
)

// colStats accumulates the stats of one column.
type colStats struct {
	kind       statKind
	scale      int32 // decimal
	nulls      int64
	count      int64 // non-null values
	minI, maxI int64
	minF, maxF float64
	fcount     int64 // non-NaN floats
	nan        bool
	minD, maxD *big.Int
	minS, maxS string
}

func (c *colStats) observeNonNull() { c.count++ }

func (c *colStats) observeInt(x int64) {
	if c.count == 0 || x < c.minI {
		c.minI = x
	}
	if c.count == 0 || x > c.maxI {
		c.maxI = x
	}
	c.count++
}

func (c *colStats) observeFloat(x float64) {
	c.count++
	if math.IsNaN(x) {
		c.nan = true
		return
	}
	if c.fcount == 0 || x < c.minF {
		c.minF = x
	}
	if c.fcount == 0 || x > c.maxF {
		c.maxF = x
	}
	c.fcount++
}

func (c *colStats) observeDecimal(u *big.Int) {
	if c.minD == nil || u.Cmp(c.minD) < 0 {
		c.minD = new(big.Int).Set(u)
	}
	if c.maxD == nil || u.Cmp(c.maxD) > 0 {
		c.maxD = new(big.Int).Set(u)
	}
	c.count++
}

// observeString records s; s may alias the caller's bytes, so kept values are
// cloned.
func (c *colStats) observeString(s string) {
	if c.count == 0 || s < c.minS {
		c.minS = strings.Clone(s)
	}
	if c.count == 0 || s > c.maxS {
		c.maxS = strings.Clone(s)
	}
	c.count++
}

// statCodecs are the codecs whose FormatStats writes each kind's min/max
// literals (decimals get theirs from their scale, in bounds).
var statCodecs = [...]value.Codec{
	statInt:          value.CodecOf(schema.Primitive(schema.Long)),
	statFloat32:      value.CodecOf(schema.Primitive(schema.Float)),
	statFloat64:      value.CodecOf(schema.Primitive(schema.Double)),
	statString:       value.CodecOf(schema.Primitive(schema.String)),
	statDate:         value.CodecOf(schema.Primitive(schema.Date)),
	statTimestamp:    value.CodecOf(schema.Primitive(schema.Timestamp)),
	statTimestampNTZ: value.CodecOf(schema.Primitive(schema.TimestampNTZ)),
}

// bounds returns the JSON min and max of the column (nil when absent), as
// value.Codec.FormatStats writes them; strings are cut to prefix first.
func (c *colStats) bounds(prefix int) (minV, maxV any) {
	if c.count == 0 {
		return nil, nil
	}
	var lo, hi any
	switch c.kind {
	case statInt:
		lo, hi = c.minI, c.maxI
	case statDate:
		lo, hi = value.Date(c.minI), value.Date(c.maxI)
	case statTimestamp, statTimestampNTZ:
		lo, hi = time.UnixMicro(c.minI).UTC(), time.UnixMicro(c.maxI).UTC()
	case statFloat32, statFloat64:
		if c.nan || c.fcount == 0 {
			return nil, nil
		}
		lo, hi = c.minF, c.maxF
	case statDecimal:
		cd := value.CodecOf(&schema.DecimalType{Precision: 38, Scale: int(c.scale)})
		return statsLiteral(cd, value.Decimal{Unscaled: c.minD, Scale: c.scale}), statsLiteral(cd, value.Decimal{Unscaled: c.maxD, Scale: c.scale})
	case statString:
		lo = truncateStatsMin(c.minS, prefix)
		if mx, ok := truncateStatsMax(c.maxS, prefix); ok {
			hi = mx
		}
	default:
		return nil, nil
	}
	cd := statCodecs[c.kind]
	return statsLiteral(cd, lo), statsLiteral(cd, hi)
}

// statsLiteral returns cd's stats literal of v, nil when v is nil or has
// none (NaN, ±Inf).
func statsLiteral(cd value.Codec, v any) any {
	if v == nil {
		return nil
	}
	lit, ok, err := cd.FormatStats(v)
	if !ok || err != nil {
		return nil
	}
	return lit
}

// utf16Len returns the length of r in UTF-16 code units.
func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// prefixEnd returns the byte offset in s after the shortest prefix of at
// least n UTF-16 code units (n or n+1 when a surrogate pair straddles n),
// and whether s is longer than n code units at all.
func prefixEnd(s string, n int) (end int, longer bool) {
	units := 0
	for i, r := range s {
		if units >= n {
			return i, true
		}
		units += utf16Len(r)
	}
	return len(s), false
}

// truncateStatsMin cuts a string min to its prefix of n characters (UTF-16
// code units, keeping surrogate pairs whole), as Spark does.
func truncateStatsMin(s string, n int) string {
	if n <= 0 {
		return ""
	}
	end, _ := prefixEnd(s, n)
	return s[:end]
}

// truncateStatsMax cuts a string max to a prefix of n characters plus a tie
// breaker that sorts after every string with that prefix: U+007F when the
// next character is below it, else U+10FFFF (skipping any U+10FFFF that
// follow, as they cannot be beaten). ok is false when that needs more than
// 2n characters: then the column has no max.
func truncateStatsMax(s string, n int) (string, bool) {
	end, longer := prefixEnd(s, n)
	if !longer {
		return s, true
	}
	if n <= 0 {
		return "", false
	}
	units := 0
	for _, r := range s[:end] {
		units += utf16Len(r)
	}
	for units <= 2*n {
		if end >= len(s) {
			return s, true
		}
		r, size := utf8.DecodeRuneInString(s[end:])
		switch {
		case r == utf8.MaxRune:
			end += size
			units += 2
		case r < 0x7f:
			return s[:end] + "\x7f", true
		default:
			return s[:end] + string(utf8.MaxRune), true
		}
	}
	return "", false
}

// statNode is one column of the stats tree: a leaf with its stats or a
// struct with children.
type statNode struct {
	name     string
	stats    *colStats
	children []*statNode
}

type statsBuilder struct {
	prefix int
	fields []*statNode
}

func (b *statsBuilder) finish(numRows int64, tight bool) *Stats {
	s := &Stats{NumRecords: numRows}
	s.MinValues, s.MaxValues, s.NullCount = b.collect(b.fields)
	if tight {
		t := true
		s.TightBounds = &t
	}
	return s
}

func (b *statsBuilder) collect(nodes []*statNode) (mins, maxs, nulls []StatsField) {
	for _, n := range nodes {
		if n.stats == nil {
			cmin, cmax, cnull := b.collect(n.children)
			if len(cmin) > 0 {
				mins = append(mins, StatsField{Name: n.name, Fields: cmin})
			}
			if len(cmax) > 0 {
				maxs = append(maxs, StatsField{Name: n.name, Fields: cmax})
			}
			if len(cnull) > 0 {
				nulls = append(nulls, StatsField{Name: n.name, Fields: cnull})
			}
			continue
		}
		lo, hi := n.stats.bounds(b.prefix)
		if lo != nil {
			mins = append(mins, StatsField{Name: n.name, Value: lo})
		}
		if hi != nil {
			maxs = append(maxs, StatsField{Name: n.name, Value: hi})
		}
		nulls = append(nulls, StatsField{Name: n.name, Value: n.stats.nulls})
	}
	return mins, maxs, nulls
}

// statsSelection says which fields get stats: all fields below it, or those
// in fields.
type statsSelection struct {
	all    bool
	fields map[*schema.StructField]*statsSelection
}

func (s *statsSelection) child(f *schema.StructField) *statsSelection {
	if s == nil {
		return nil
	}
	if s.all {
		return s
	}
	return s.fields[f]
}

func selectStatsColumns(sch *schema.StructType, cfg writeConfig) (*statsSelection, error) {
	if cfg.statsColsSet {
		sel := &statsSelection{fields: map[*schema.StructField]*statsSelection{}}
		for _, col := range cfg.statsColumns {
			parts, err := splitColumnPath(col)
			if err != nil {
				return nil, err
			}
			addStatsPath(sel, sch, parts)
		}
		return sel, nil
	}
	if cfg.numIndexedCols < 0 {
		return &statsSelection{all: true}, nil
	}
	sel, _ := truncateStatsSchema(sch, cfg.numIndexedCols)
	return sel, nil
}

// addStatsPath marks the field at parts (matched case-insensitively, as
// Spark does) and, for a struct, all its fields. Paths that name no field
// are ignored, as Spark ignores them when it collects stats.
func addStatsPath(sel *statsSelection, st *schema.StructType, parts []string) {
	for _, f := range st.Fields {
		if !strings.EqualFold(f.Name, parts[0]) {
			continue
		}
		if len(parts) == 1 {
			sel.fields[f] = &statsSelection{all: true}
			return
		}
		inner, ok := f.Type.(*schema.StructType)
		if !ok {
			return
		}
		child := sel.fields[f]
		if child == nil {
			child = &statsSelection{fields: map[*schema.StructField]*statsSelection{}}
			sel.fields[f] = child
		}
		if child.all {
			return
		}
		addStatsPath(child, inner, parts[1:])
		return
	}
}

// truncateStatsSchema selects the first n leaf columns (Spark's
// truncateSchema): a struct is entered while columns remain.
func truncateStatsSchema(st *schema.StructType, n int) (*statsSelection, int) {
	sel := &statsSelection{fields: map[*schema.StructField]*statsSelection{}}
	used := 0
	for _, f := range st.Fields {
		if used >= n {
			break
		}
		if inner, ok := f.Type.(*schema.StructType); ok {
			child, k := truncateStatsSchema(inner, n-used)
			used += k
			sel.fields[f] = child
			continue
		}
		used++
		sel.fields[f] = &statsSelection{all: true}
	}
	return sel, used
}

// splitColumnPath splits a dotted column name into its parts; backquotes
// quote a part ("a.`b.c`" is a, b.c) and a doubled backquote inside them is
// one backquote.
func splitColumnPath(s string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	inQuote := false
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '`':
			if i+1 < len(s) && s[i+1] == '`' {
				cur.WriteByte('`')
				i++
			} else {
				inQuote = false
			}
		case inQuote:
			cur.WriteByte(c)
		case c == '`':
			inQuote, quoted = true, true
		case c == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("parquetio: unterminated backquote in column %q", s)
	}
	last := cur.String()
	if !quoted {
		last = strings.TrimSpace(last)
	}
	parts = append(parts, last)
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("parquetio: empty part in column %q", s)
		}
	}
	return parts, nil
}

// ParseStatsColumns splits the value of the table property
// delta.dataSkippingStatsColumns ("a, b.c, `d,e`") into column names for
// WithStatsColumns. Commas inside backquotes do not split.
func ParseStatsColumns(prop string) []string {
	var out []string
	var cur strings.Builder
	inQuote := false
	for i := 0; i < len(prop); i++ {
		c := prop[i]
		if c == '`' {
			inQuote = !inQuote
		}
		if c == ',' && !inQuote {
			if s := strings.TrimSpace(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
