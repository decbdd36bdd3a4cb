package txlog

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog/internal/textpack"
	"github.com/deltakit/deltakit/value"
)

// This file reads add.stats_parsed and add.partitionValues_parsed, the
// struct forms of add.stats and add.partitionValues that Spark writes with
// delta.checkpoint.writeStatsAsStruct (spec "Checkpoint Schema"). Where the
// JSON stats are absent (delta.checkpoint.writeStatsAsJson=false), the row's
// stats_parsed values are written back as the stats JSON Spark would have
// written (numbers, "YYYY-MM-DD" dates, ISO-8601 timestamps at millisecond
// precision, decimals at their scale), so that everything downstream (the
// packed stats storage, data skipping, row counts) sees one representation.
// Field names are kept as they are: physical names under column mapping,
// as in the JSON.

// parsedKind is how a stats_parsed or partitionValues_parsed leaf is
// formatted.
type parsedKind uint8

const (
	pkSkip parsedKind = iota // a type stats JSON has no literal for: left out
	pkInt
	pkFloat
	pkBool
	pkString
	pkDate
	pkTimestamp // INT64 with unit; utc says timestamp or timestamp_ntz
	pkInt96
	pkDecimal
)

// parsedLeaf is one leaf column under add.stats_parsed or
// add.partitionValues_parsed.
type parsedLeaf struct {
	path   []string // below stats_parsed / partitionValues_parsed
	kind   parsedKind
	unit   time.Duration // pkTimestamp
	utc    bool          // pkTimestamp, pkInt96
	scale  int32         // pkDecimal
	maxDef int
}

// parsedVal is one leaf value of a row (null values are not kept for
// stats; for partition values null is v's definition level below maxDef).
type parsedVal struct {
	leaf *parsedLeaf
	v    parquet.Value
}

// newParsedLeaf classifies leaf node n of the given path.
func newParsedLeaf(path []string, n parquet.Node, maxDef int) *parsedLeaf {
	l := &parsedLeaf{path: path, maxDef: maxDef}
	t := n.Type()
	if lt := t.LogicalType(); lt != nil && lt.Value != nil {
		switch x := lt.Value.(type) {
		case *format.DateType:
			l.kind = pkDate
			return l
		case *format.TimestampType:
			l.kind, l.utc, l.unit = pkTimestamp, x.IsAdjustedToUTC, time.Microsecond
			if x.Unit.Value != nil {
				l.unit = x.Unit.Value.Duration()
			}
			if t.Kind() != parquet.Int64 {
				l.kind = pkSkip
			}
			return l
		case *format.DecimalType:
			l.kind, l.scale = pkDecimal, x.Scale
			return l
		}
	}
	switch t.Kind() {
	case parquet.Int32, parquet.Int64:
		l.kind = pkInt
	case parquet.Float, parquet.Double:
		l.kind = pkFloat
	case parquet.Boolean:
		l.kind = pkBool
	case parquet.ByteArray:
		l.kind = pkString
	case parquet.Int96:
		l.kind, l.utc = pkInt96, true // Spark's INT96 timestamps are UTC instants
	}
	return l
}

// newParsedPlan returns the parsed leaf of a column under
// add.stats_parsed or add.partitionValues_parsed, nil for other columns and
// for leaves under a list or map (stats have none).
func newParsedPlan(path []string, nodes []parquet.Node, maxDef int) *parsedLeaf {
	if len(path) < 3 || path[0] != "add" || (path[1] != "stats_parsed" && path[1] != "partitionValues_parsed") {
		return nil
	}
	for _, n := range nodes[1:] {
		if n.Repeated() {
			return nil
		}
	}
	return newParsedLeaf(path[2:], nodes[len(path)-1], maxDef)
}

// resolveParsedTimestamps decides from the table schema in the checkpoint's
// metaData row whether each timestamp leaf of stats_parsed is a timestamp
// (stats with a zone) or a timestamp_ntz (without): writers annotate
// timestamp columns with isAdjustedToUTC=false too (delta-rs did), so the
// Parquet annotation alone is not enough. Without a metaData row (another
// part of a multi-part checkpoint has it) the annotation decides.
func resolveParsedTimestamps(groups []parquet.RowGroup, plans []columnPlan) error {
	need := false
	for i := range plans {
		if l := plans[i].parsed; l != nil && l.kind == pkTimestamp && !l.utc {
			need = true
		}
	}
	if !need {
		return nil
	}
	meta := slices.Clone(plans)
	for i := range meta {
		if meta[i].top != colMetaData {
			meta[i].top = -1
		}
	}
	var schemaString string
	for _, g := range groups {
		err := safeDecode(g, meta, nil, func(a *Action) {
			if a.Metadata != nil && schemaString == "" {
				schemaString = a.Metadata.SchemaString
			}
		})
		if err != nil {
			return err
		}
		if schemaString != "" {
			break
		}
	}
	st, err := schema.Parse(schemaString)
	if schemaString == "" || err != nil {
		return nil // the annotation decides; a bad schema is reported by replay
	}
	for i := range plans {
		l := plans[i].parsed
		if l == nil || l.kind != pkTimestamp || len(l.path) < 2 {
			continue
		}
		// below minValues / maxValues
		if t := fieldTypeByPhysicalPath(st, l.path[1:]); t != nil {
			if p, ok := t.(*schema.PrimitiveType); ok {
				switch p.Name {
				case schema.Timestamp:
					l.utc = true
				case schema.TimestampNTZ:
					l.utc = false
				}
			}
		}
	}
	return nil
}

// fieldTypeByPhysicalPath returns the type of the nested field whose
// physical names (the logical ones without column mapping) are names, or
// nil.
func fieldTypeByPhysicalPath(st *schema.StructType, names []string) schema.Type {
	var t schema.Type = st
	for _, n := range names {
		s, ok := t.(*schema.StructType)
		if !ok {
			return nil
		}
		var next *schema.StructField
		for _, f := range s.Fields {
			if f.PhysicalName("name") == n || f.Name == n {
				next = f
				break
			}
		}
		if next == nil {
			return nil
		}
		t = next.Type
	}
	return t
}

// parsedSetter collects the values of one parsed leaf; structDef is the
// definition level at which stats_parsed (partitionValues_parsed) is
// non-null.
func parsedSetter(l *parsedLeaf, structDef int, pv bool) colSetter {
	return func(a *rowAsm, v parquet.Value) {
		d := v.DefinitionLevel()
		if d < structDef {
			return
		}
		// The JSON forms, when they come first in the file (they do in
		// Spark's and delta-rs's schemas), make the parsed ones moot.
		if pv && a.hasMap[mapAddPartitionValues] || !pv && len(a.addStats) > 0 {
			return
		}
		if pv {
			a.hasPVParsed = true
			a.pvParsed = append(a.pvParsed, parsedVal{l, v})
			return
		}
		a.hasStatsParsed = true
		if d == l.maxDef && l.kind != pkSkip {
			a.statsParsed = append(a.statsParsed, parsedVal{l, v})
		}
	}
}

// applyParsed fills in what the row's JSON lacks from its parsed columns:
// the stats from stats_parsed when add.stats is null or empty.
func (a *rowAsm) applyParsed() {
	if len(a.addStats) == 0 && a.hasStatsParsed {
		a.statsBuf = statsJSON(a.statsBuf[:0], a.statsParsed)
		a.addStats = a.statsBuf
	}
}

// parsedPartitionValues returns the partitionValues of partitionValues_parsed
// when the row has no partitionValues map, else nil.
func (a *rowAsm) parsedPartitionValues() map[string]string {
	if a.hasMap[mapAddPartitionValues] || !a.hasPVParsed {
		return nil
	}
	return partitionValuesOf(a.pvParsed)
}

// statsJSON appends the stats JSON of the row's stats_parsed values (in
// schema order) to buf; structs without values are left out.
func statsJSON(buf []byte, vals []parsedVal) []byte {
	buf = append(buf, '{')
	var open []string // the struct path currently open
	first := []bool{true}
	for _, pv := range vals {
		lit, ok := pv.leaf.jsonLiteral(pv.v)
		if !ok {
			continue
		}
		dir := pv.leaf.path[:len(pv.leaf.path)-1]
		common := 0
		for common < len(open) && common < len(dir) && open[common] == dir[common] {
			common++
		}
		for len(open) > common {
			buf = append(buf, '}')
			open, first = open[:len(open)-1], first[:len(first)-1]
		}
		for _, name := range dir[common:] {
			if !first[len(first)-1] {
				buf = append(buf, ',')
			}
			first[len(first)-1] = false
			buf = appendJSONString(buf, name)
			buf = append(buf, ':', '{')
			open, first = append(open, name), append(first, true)
		}
		if !first[len(first)-1] {
			buf = append(buf, ',')
		}
		first[len(first)-1] = false
		buf = appendJSONString(buf, pv.leaf.path[len(pv.leaf.path)-1])
		buf = append(buf, ':')
		buf = append(buf, lit...)
	}
	for range open {
		buf = append(buf, '}')
	}
	return append(buf, '}')
}

// jsonLiteral returns v as a stats JSON literal; ok is false for values
// JSON stats do not hold (NaN, infinities, invalid UTF-8, out-of-range
// times).
//
// It formats (it parses no stats literal) and keeps its own switch over
// parsedKind, on parquet.Value, instead of value.Codec.FormatStats: the
// checkpoint decoder calls it for every stats_parsed leaf of every file,
// and going through the value model (a Go value, FormatStats, then JSON)
// measured 212-334 ns and 4 allocations for a long against 97-179 ns and 1
// here, and 7-8 allocations (176 B) against 2 (56 B) for a timestamp
// (2 shared cores, -count 2). The literals are the same: Spark's forms, as
// FormatStats writes them.
func (l *parsedLeaf) jsonLiteral(v parquet.Value) (string, bool) {
	switch l.kind {
	case pkInt:
		return strconv.FormatInt(intOf(v), 10), true
	case pkFloat:
		f := v.Double()
		if v.Kind() == parquet.Float {
			f = float64(v.Float())
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", false
		}
		bits := 64
		if v.Kind() == parquet.Float {
			bits = 32
		}
		return strconv.FormatFloat(f, 'g', -1, bits), true
	case pkBool:
		return strconv.FormatBool(v.Boolean()), true
	case pkDecimal:
		s, ok := l.decimal(v)
		return s, ok
	case pkString, pkDate, pkTimestamp, pkInt96:
		s, ok := l.text(v, false)
		if !ok {
			return "", false
		}
		return string(appendJSONString(nil, s)), true
	}
	return "", false
}

// text returns v as a string: the text of a string, "YYYY-MM-DD" for a
// date, and for a timestamp the stats form (ISO-8601, milliseconds, "Z" for
// timestamp, no zone for timestamp_ntz) or, with partition set, the
// partition value form ("YYYY-MM-DD HH:MM:SS[.ffffff]", UTC).
func (l *parsedLeaf) text(v parquet.Value, partition bool) (string, bool) {
	switch l.kind {
	case pkString:
		b := v.ByteArray()
		return string(b), utf8.Valid(b)
	case pkDate:
		return value.Date(intOf(v)).String(), true
	case pkTimestamp, pkInt96:
		us, ok := l.micros(v)
		if !ok {
			return "", false
		}
		t := time.UnixMicro(us).UTC()
		switch {
		case partition && us%1_000_000 == 0:
			return t.Format(time.DateTime), true
		case partition:
			return t.Format("2006-01-02 15:04:05.000000"), true
		case l.utc:
			return time.UnixMilli(textpack.FloorDiv(us, 1000)).UTC().Format("2006-01-02T15:04:05.000Z07:00"), true
		default:
			return time.UnixMilli(textpack.FloorDiv(us, 1000)).UTC().Format("2006-01-02T15:04:05.000"), true
		}
	case pkInt, pkBool, pkFloat, pkDecimal:
		s, ok := l.jsonLiteral(v)
		return s, ok
	}
	return "", false
}

// micros returns a timestamp value in microseconds since the epoch.
func (l *parsedLeaf) micros(v parquet.Value) (int64, bool) {
	const limit = 1 << 53 // far beyond year 9999 in microseconds
	if l.kind == pkInt96 {
		if v.Kind() != parquet.Int96 {
			return 0, false
		}
		x := v.Int96()
		nanos := uint64(x[1])<<32 | uint64(x[0])
		days := int64(x[2]) - 2440588 // Julian day of 1970-01-01
		if days < -10_000_000 || days > 10_000_000 || nanos >= 86_400_000_000_000 {
			return 0, false
		}
		return days*86_400_000_000 + int64(nanos/1000), true
	}
	n := intOf(v)
	switch l.unit {
	case time.Millisecond:
		if n > limit/1000 || n < -limit/1000 {
			return 0, false
		}
		return n * 1000, true
	case time.Nanosecond:
		return textpack.FloorDiv(n, 1000), true
	}
	return n, n <= limit && n >= -limit
}

// decimal returns a decimal value as a JSON number at the column's scale.
func (l *parsedLeaf) decimal(v parquet.Value) (string, bool) {
	var u *big.Int
	switch v.Kind() {
	case parquet.Int32, parquet.Int64:
		u = big.NewInt(intOf(v))
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		if len(b) == 0 || len(b) > 64 {
			return "", false
		}
		u = new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 {
			u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
	default:
		return "", false
	}
	return value.Decimal{Unscaled: u, Scale: l.scale}.String(), true
}

func intOf(v parquet.Value) int64 {
	switch v.Kind() {
	case parquet.Int32:
		return int64(v.Int32())
	case parquet.Int64:
		return v.Int64()
	}
	return 0
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}

// partitionValuesOf returns the partitionValues map of the row's
// partitionValues_parsed values: each top-level field by name, its value in
// the partition value form, "" for null (spec "Partition Value
// Serialization").
func partitionValuesOf(vals []parsedVal) map[string]string {
	m := make(map[string]string, len(vals))
	for _, pv := range vals {
		if len(pv.leaf.path) != 1 {
			continue // partition columns are top-level and primitive
		}
		s := ""
		if pv.v.DefinitionLevel() == pv.leaf.maxDef {
			var ok bool
			if s, ok = pv.leaf.text(pv.v, true); !ok {
				s = ""
			}
		}
		m[pv.leaf.path[0]] = s
	}
	return m
}
