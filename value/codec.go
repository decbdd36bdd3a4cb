package value

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/schema"
)

// Codec is what deltakit knows about one Delta primitive or decimal type:
// which Go values it accepts, and how its values are written as partition
// values, as stats literals and in Arrow. Get one with CodecOf; methods are
// safe for concurrent use.
type Codec interface {
	// Type returns the Delta type.
	Type() schema.Type
	// Check reports whether non-nil v is a Go value the type accepts (see
	// the package doc) and returns its approximate encoded size in bytes
	// (8 for long, double and timestamps, 4 for integer, short, byte and
	// date, 1 for boolean, len+4 for string and binary, 16 for decimal). The
	// error is an *Error wrapping ErrTypeMismatch, ErrOutOfRange, ErrSyntax
	// (a decimal string) or ErrUnsupported.
	Check(v any) (size int64, err error)
	// Normalize returns non-nil v, accepted as by Check, in the type's
	// canonical Go type (package doc): int32 for integer, a UTC time, a
	// Decimal at the column's scale.
	Normalize(v any) (any, error)
	// FormatPartition returns the partitionValues string of v (spec
	// "Partition Value Serialization"); ok is false for null: v nil, or an
	// empty string or binary (Spark writes those as null).
	FormatPartition(v any) (s string, ok bool, err error)
	// ParsePartition parses a non-empty partitionValues string into the
	// canonical Go value; the error wraps ErrSyntax.
	ParsePartition(s string) (any, error)
	// FormatStats returns the stats min/max literal of v (spec "Per-file
	// Statistics", as Spark writes it): a json.Number for numbers and
	// decimals, a string for strings, dates ("2024-01-02") and timestamps
	// cut to milliseconds ("2024-01-02T03:04:05.123Z", timestamp_ntz without
	// the zone). ok is false when the type keeps no min/max (boolean,
	// binary) or the value cannot be written (NaN, ±Inf). Strings are not
	// truncated here.
	FormatStats(v any) (lit any, ok bool, err error)
	// ParseStats reads a stats literal as decoded by encoding/json with
	// UseNumber (json.Number, string, bool) into the canonical Go value.
	// Floats also accept "Infinity", "-Infinity" and "NaN" strings.
	ParseStats(lit any) (any, error)
	// ArrowType returns the Arrow type of the column (package arrowio):
	// timestamp[us, UTC] for timestamp, timestamp[us] for timestamp_ntz,
	// decimal128(p,s) for decimals.
	ArrowType() arrow.DataType
}

// kind numbers the primitive codecs.
type kind uint8

const (
	kLong kind = iota
	kInteger
	kShort
	kByte
	kFloat
	kDouble
	kBoolean
	kString
	kBinary
	kDate
	kTimestamp
	kTimestampNTZ
	kDecimal
	kVariant
)

// primitiveKinds is the one table from Delta primitive type names to codecs.
var primitiveKinds = map[string]kind{
	schema.Long: kLong, schema.Integer: kInteger, schema.Short: kShort, schema.Byte: kByte,
	schema.Float: kFloat, schema.Double: kDouble, schema.Boolean: kBoolean,
	schema.String: kString, schema.Binary: kBinary, schema.Date: kDate,
	schema.Timestamp: kTimestamp, schema.TimestampNTZ: kTimestampNTZ, schema.Variant: kVariant,
}

var primitiveCodecs = func() map[string]*codec {
	m := make(map[string]*codec, len(primitiveKinds))
	for name, k := range primitiveKinds {
		m[name] = &codec{k: k, t: schema.Primitive(name)}
	}
	return m
}()

// CodecOf returns the codec of a primitive or decimal type, nil for nested
// types (struct, array, map) and void.
func CodecOf(t schema.Type) Codec {
	switch x := t.(type) {
	case *schema.PrimitiveType:
		if c, ok := primitiveCodecs[x.Name]; ok {
			return c
		}
	case *schema.DecimalType:
		return &codec{k: kDecimal, t: x, dec: x}
	}
	return nil
}

// codec implements Codec for every primitive type; k selects the
// behaviour. One struct with a switch per method keeps each method's rules
// for all types side by side.
type codec struct {
	k   kind
	t   schema.Type
	dec *schema.DecimalType // kDecimal
}

func (c *codec) Type() schema.Type { return c.t }

// maxTimestampYear keeps microseconds since the epoch inside an int64, as
// parquetio requires; the Unix bounds are the same in seconds.
const maxTimestampYear = 290000

var (
	minTimestampUnix = time.Date(-maxTimestampYear, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	maxTimestampUnix = time.Date(maxTimestampYear+1, 1, 1, 0, 0, 0, 0, time.UTC).Unix() - 1
)

// TimestampInRange reports whether t can be a timestamp value: its year is
// within ±290000 (Unix seconds compared, cheaper than Year; the wall clock
// of a timestamp_ntz may shift by the zone offset, well inside the margin).
func TimestampInRange(t time.Time) bool {
	u := t.Unix()
	return u >= minTimestampUnix+86400 && u <= maxTimestampUnix-86400
}

// IntRange returns the range of an integer type name (long, integer,
// short, byte).
func IntRange(name string) (lo, hi int64) {
	switch primitiveKinds[name] {
	case kInteger:
		return math.MinInt32, math.MaxInt32
	case kShort:
		return math.MinInt16, math.MaxInt16
	case kByte:
		return math.MinInt8, math.MaxInt8
	}
	return math.MinInt64, math.MaxInt64
}

// ToInt64 returns v as an int64 when it is a Go integer that fits.
func ToInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), true
		}
		return 0, false
	case uint:
		if uint64(n) <= math.MaxInt64 {
			return int64(n), true
		}
		return 0, false
	}
	return ToInt64ByType(v)
}

// ToInt64ByType returns v as an int64 when v's Go type alone makes it fit:
// a signed integer, or an unsigned one of at most 32 bits. These are the Go
// values integer, short and byte columns accept (within the type's range,
// IntRange); uint64 and uint are accepted by long columns only (ToInt64).
func ToInt64ByType(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	}
	return 0, false
}

// ToFloat64 returns v as a float64 when it is a float32 or float64.
func ToFloat64(v any) (float64, bool) {
	switch f := v.(type) {
	case float32:
		return float64(f), true
	case float64:
		return f, true
	}
	return 0, false
}

func (c *codec) Check(v any) (int64, error) {
	switch c.k {
	case kLong:
		switch v.(type) {
		case int64, int, int32, int16, int8, uint8, uint16, uint32:
			return 8, nil
		case uint64, uint:
			if _, ok := ToInt64(v); ok {
				return 8, nil
			}
			return 0, outOfRange(c.t, v)
		}
	case kInteger, kShort, kByte:
		if x, ok := ToInt64ByType(v); ok {
			if lo, hi := IntRange(c.t.String()); x < lo || x > hi {
				return 0, outOfRange(c.t, v)
			}
			return 4, nil
		}
	case kFloat, kDouble:
		switch v.(type) {
		case float32, float64:
			return 8, nil
		}
	case kBoolean:
		if _, ok := v.(bool); ok {
			return 1, nil
		}
	case kString, kBinary:
		switch s := v.(type) {
		case string:
			return int64(len(s)) + 4, nil
		case []byte:
			return int64(len(s)) + 4, nil
		}
	case kDate:
		switch d := v.(type) {
		case Date:
			return 4, nil
		case time.Time:
			if d.Year() > 5000000 || d.Year() < -5000000 {
				return 0, outOfRange(c.t, v)
			}
			return 4, nil
		}
	case kTimestamp, kTimestampNTZ:
		if ts, ok := v.(time.Time); ok {
			if !TimestampInRange(ts) {
				return 0, outOfRange(c.t, v)
			}
			return 8, nil
		}
	case kDecimal:
		if _, err := c.decimal(v); err != nil {
			return 0, err
		}
		return 16, nil
	case kVariant:
		return 0, &Error{Type: c.t, Value: v, Reason: ErrUnsupported, Detail: "writing variant columns is not supported"}
	}
	return 0, mismatch(c.t, v)
}

// decimal returns v as a Decimal at the column's scale, checked against its
// precision.
func (c *codec) decimal(v any) (Decimal, error) {
	var d Decimal
	switch x := v.(type) {
	case Decimal:
		d = x
	case *Decimal:
		if x == nil {
			return d, mismatch(c.t, v)
		}
		d = *x
	case string:
		var err error
		if d, err = ParseDecimal(x); err != nil {
			return d, &Error{Type: c.t, Value: x, Reason: ErrSyntax, Detail: strconv.Quote(x) + " is not a decimal"}
		}
	default:
		n, ok := ToInt64(v)
		if !ok {
			return d, mismatch(c.t, v)
		}
		d = NewDecimal(n, 0)
	}
	r, ok := d.Rescale(int32(c.dec.Scale))
	if !ok || r.Unscaled.CmpAbs(pow10(c.dec.Precision)) >= 0 {
		return d, outOfRange(c.t, d.String())
	}
	return r, nil
}

func (c *codec) Normalize(v any) (any, error) {
	if c.k == kDecimal {
		return c.decimal(v)
	}
	if _, err := c.Check(v); err != nil {
		return nil, err
	}
	switch c.k {
	case kLong:
		n, _ := ToInt64(v)
		return n, nil
	case kInteger:
		n, _ := ToInt64(v)
		return int32(n), nil
	case kShort:
		n, _ := ToInt64(v)
		return int16(n), nil
	case kByte:
		n, _ := ToInt64(v)
		return int8(n), nil
	case kFloat:
		f, _ := ToFloat64(v)
		return float32(f), nil
	case kDouble:
		f, _ := ToFloat64(v)
		return f, nil
	case kString:
		if b, ok := v.([]byte); ok {
			return string(b), nil
		}
	case kBinary:
		if s, ok := v.(string); ok {
			return []byte(s), nil
		}
	case kDate:
		if t, ok := v.(time.Time); ok {
			return DateOf(t), nil
		}
	case kTimestamp:
		return v.(time.Time).UTC(), nil
	case kTimestampNTZ:
		return WallClock(v.(time.Time)), nil
	}
	return v, nil
}

// WallClock returns the wall clock reading of t in its own location as a
// UTC time: the timestamp_ntz value of t.
func WallClock(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// Partition value layouts (spec "Partition Value Serialization").
const (
	partitionTimestampLayout = "2006-01-02 15:04:05.999999"
	partitionISOLayout       = "2006-01-02T15:04:05.999999Z07:00"
)

// FormatPartition formats v straight from its Go type once Check accepts
// it (no Normalize: a write calls it per row, and boxing the normalised
// value would allocate).
func (c *codec) FormatPartition(v any) (string, bool, error) {
	if v == nil {
		return "", false, nil
	}
	if c.k == kDecimal {
		d, err := c.decimal(v)
		if err != nil {
			return "", false, err
		}
		return d.String(), true, nil
	}
	if _, err := c.Check(v); err != nil {
		return "", false, err
	}
	switch c.k {
	case kString, kBinary:
		if b, ok := v.([]byte); ok {
			return string(b), len(b) > 0, nil
		}
		s := v.(string)
		return s, s != "", nil
	case kBoolean:
		return strconv.FormatBool(v.(bool)), true, nil
	case kLong, kInteger, kShort, kByte:
		n, _ := ToInt64(v)
		return strconv.FormatInt(n, 10), true, nil
	case kFloat, kDouble:
		f, _ := ToFloat64(v)
		bits := 64
		if c.k == kFloat {
			bits = 32
		}
		return formatPartitionFloat(f, bits), true, nil
	case kDate:
		if t, ok := v.(time.Time); ok {
			return DateOf(t).String(), true, nil
		}
		return v.(Date).String(), true, nil
	case kTimestamp:
		return v.(time.Time).UTC().Truncate(time.Microsecond).Format(partitionISOLayout), true, nil
	case kTimestampNTZ:
		return WallClock(v.(time.Time)).Truncate(time.Microsecond).Format(partitionTimestampLayout), true, nil
	}
	return "", false, &Error{Type: c.t, Value: v, Reason: ErrUnsupported}
}

// formatPartitionFloat formats a float partition value so that Java's
// Double.parseDouble (Spark) and Go's strconv.ParseFloat both read it:
// shortest round-trip digits, and "Infinity"/"-Infinity"/"NaN" as Java
// spells them (Go would write "+Inf").
func formatPartitionFloat(f float64, bits int) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// ParsePartition accepts timestamps in both the "2006-01-02
// 15:04:05[.ffffff]" and the ISO-8601 forms, and Java's "Infinity" spelling
// of floats.
func (c *codec) ParsePartition(s string) (any, error) {
	switch c.k {
	case kString:
		return s, nil
	case kBinary:
		return []byte(s), nil
	case kBoolean:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, syntax(c.t, s)
		}
		return b, nil
	case kLong, kInteger, kShort, kByte:
		bits := map[kind]int{kLong: 64, kInteger: 32, kShort: 16, kByte: 8}[c.k]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, syntax(c.t, s)
		}
		return c.Normalize(n)
	case kFloat, kDouble:
		bits := 64
		if c.k == kFloat {
			bits = 32
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil {
			return nil, syntax(c.t, s)
		}
		return c.Normalize(f)
	case kDate:
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, syntax(c.t, s)
		}
		return DateOf(d), nil
	case kTimestamp, kTimestampNTZ:
		for _, layout := range []string{partitionTimestampLayout, time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999Z07:00"} {
			if ts, err := time.Parse(layout, s); err == nil {
				return ts.UTC(), nil
			}
		}
		return nil, syntax(c.t, s)
	case kDecimal:
		d, err := ParseDecimal(s)
		if err != nil {
			return nil, syntax(c.t, s)
		}
		r, ok := d.Rescale(int32(c.dec.Scale))
		if !ok {
			return nil, outOfRange(c.t, s)
		}
		return r, nil
	}
	return nil, &Error{Type: c.t, Value: s, Reason: ErrUnsupported, Detail: "partition column type " + c.t.String() + " is not supported"}
}

// Stats literal layouts: timestamps cut to milliseconds, as Spark writes them.
const (
	statsTimestampLayout    = "2006-01-02T15:04:05.000Z07:00"
	statsTimestampNTZLayout = "2006-01-02T15:04:05.000"
)

func (c *codec) FormatStats(v any) (any, bool, error) {
	if c.k == kBoolean || c.k == kBinary || c.k == kVariant {
		return nil, false, nil
	}
	n, err := c.Normalize(v)
	if err != nil {
		return nil, false, err
	}
	switch x := n.(type) {
	case int64, int32, int16, int8:
		i, _ := ToInt64(x)
		return json.Number(strconv.FormatInt(i, 10)), true, nil
	case float32:
		return floatStats(float64(x), 32)
	case float64:
		return floatStats(x, 64)
	case Decimal:
		return json.Number(x.String()), true, nil
	case string:
		return x, true, nil
	case Date:
		return x.String(), true, nil
	case time.Time:
		return StatsTimestamp(x.UnixMicro(), c.k == kTimestampNTZ), true, nil
	}
	return nil, false, nil
}

func floatStats(f float64, bits int) (any, bool, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false, nil
	}
	return json.Number(FormatJSONFloat(f, bits)), true, nil
}

// StatsTimestamp returns the stats literal of a timestamp given in
// microseconds since the epoch (for timestamp_ntz, of the wall clock taken
// as UTC), cut to milliseconds toward the past.
func StatsTimestamp(us int64, ntz bool) string {
	layout := statsTimestampLayout
	if ntz {
		layout = statsTimestampNTZLayout
	}
	return time.UnixMilli(floorDiv(us, 1000)).UTC().Format(layout)
}

// FormatJSONFloat formats finite f as the shortest JSON number that reads
// back as the same float of the given bit size (32 or 64), in plain
// notation from 1e-6 up to 1e21 and with an exponent ("1e-7") outside.
func FormatJSONFloat(f float64, bits int) string {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	s := strconv.FormatFloat(f, format, -1, bits)
	if format == 'e' {
		// 1e-07 -> 1e-7
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:]
		}
	}
	return s
}

// statsTimeLayouts are the forms timestamps take in stats: ISO-8601 with a
// zone (timestamp) or without (timestamp_ntz), with any fraction.
var statsTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
}

func (c *codec) ParseStats(lit any) (any, error) {
	text, isNum := "", false
	switch x := lit.(type) {
	case json.Number:
		text, isNum = string(x), true
	case string:
		text = x
	case float64: // decoded without UseNumber
		text, isNum = strconv.FormatFloat(x, 'g', -1, 64), true
	default:
		return nil, syntax(c.t, lit)
	}
	switch c.k {
	case kLong, kInteger, kShort, kByte:
		if !isNum {
			return nil, syntax(c.t, text)
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return nil, syntax(c.t, text)
		}
		return c.Normalize(n)
	case kFloat, kDouble:
		var f float64
		switch {
		case isNum:
			var err error
			if f, err = strconv.ParseFloat(text, 64); err != nil {
				return nil, syntax(c.t, text)
			}
		case text == "Infinity" || text == "+Infinity":
			f = math.Inf(1)
		case text == "-Infinity":
			f = math.Inf(-1)
		case text == "NaN":
			f = math.NaN()
		default:
			return nil, syntax(c.t, text)
		}
		return c.Normalize(f)
	case kDecimal:
		d, err := ParseDecimal(strings.TrimSpace(text))
		if err != nil {
			return nil, syntax(c.t, text)
		}
		return c.Normalize(d)
	case kString:
		if isNum {
			return nil, syntax(c.t, text)
		}
		return text, nil
	case kDate:
		d, err := time.Parse(time.DateOnly, text)
		if err != nil || isNum {
			return nil, syntax(c.t, text)
		}
		return DateOf(d), nil
	case kTimestamp, kTimestampNTZ:
		if !isNum {
			for _, layout := range statsTimeLayouts {
				if ts, err := time.Parse(layout, text); err == nil {
					return ts.UTC(), nil
				}
			}
		}
		return nil, syntax(c.t, text)
	}
	return nil, &Error{Type: c.t, Value: lit, Reason: ErrUnsupported, Detail: "type " + c.t.String() + " keeps no stats min/max"}
}

// arrowTypes is the Arrow type of each kind; decimal's depends on the
// column (ArrowType), variant has none.
var arrowTypes = [...]arrow.DataType{
	kLong:         arrow.PrimitiveTypes.Int64,
	kInteger:      arrow.PrimitiveTypes.Int32,
	kShort:        arrow.PrimitiveTypes.Int16,
	kByte:         arrow.PrimitiveTypes.Int8,
	kFloat:        arrow.PrimitiveTypes.Float32,
	kDouble:       arrow.PrimitiveTypes.Float64,
	kBoolean:      arrow.FixedWidthTypes.Boolean,
	kString:       arrow.BinaryTypes.String,
	kBinary:       arrow.BinaryTypes.Binary,
	kDate:         arrow.FixedWidthTypes.Date32,
	kTimestamp:    &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
	kTimestampNTZ: &arrow.TimestampType{Unit: arrow.Microsecond},
	kVariant:      nil,
}

func (c *codec) ArrowType() arrow.DataType {
	if c.k == kDecimal {
		if p, s := c.dec.Precision, c.dec.Scale; p >= 1 && p <= 38 && s >= 0 && s <= p {
			return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}
		}
		return nil // beyond decimal128
	}
	return arrowTypes[c.k]
}

// TimestampUnixBounds returns the Unix seconds of the first instant of year
// -290000 and of the last of year 290000 (UTC); TimestampInRange keeps a
// day's margin inside them.
func TimestampUnixBounds() (lo, hi int64) { return minTimestampUnix, maxTimestampUnix }
