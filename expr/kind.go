package expr

import (
	"bytes"
	"cmp"
	"math"
	"strings"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Kind is how a column's values compare, and the canonical Go type its
// literals are converted to (Convert): the comment of each constant names
// it.
type Kind uint8

const (
	KindUnsupported  Kind = iota // struct, array, map, variant: IS [NOT] NULL only
	KindInt                      // byte, short, integer, long: int64
	KindFloat32                  // float: float64 holding a float32
	KindFloat64                  // double: float64
	KindBool                     // boolean: bool
	KindString                   // string: string
	KindBinary                   // binary: []byte
	KindDate                     // date: int64 days since the epoch
	KindTimestamp                // timestamp: time.Time (instant)
	KindTimestampNTZ             // timestamp_ntz: time.Time (UTC wall clock)
	KindDecimal                  // decimal: value.Decimal
)

// KindOf returns the kind of a Delta type; KindUnsupported for struct,
// array, map and variant.
func KindOf(t schema.Type) Kind {
	switch t := t.(type) {
	case *schema.DecimalType:
		return KindDecimal
	case *schema.PrimitiveType:
		switch t.Name {
		case schema.Long, schema.Integer, schema.Short, schema.Byte:
			return KindInt
		case schema.Float:
			return KindFloat32
		case schema.Double:
			return KindFloat64
		case schema.Boolean:
			return KindBool
		case schema.String:
			return KindString
		case schema.Binary:
			return KindBinary
		case schema.Date:
			return KindDate
		case schema.Timestamp:
			return KindTimestamp
		case schema.TimestampNTZ:
			return KindTimestampNTZ
		}
	}
	return KindUnsupported
}

// LiteralType returns the Delta type a literal of the value model stands
// for (its type in SET, and in messages): long for Go integers, double for
// floats, boolean, string, binary ([]byte), date (value.Date), decimal(38,
// scale) (value.Decimal), timestamp (time.Time); false for any other Go
// value.
func LiteralType(v any) (schema.Type, bool) {
	switch d := v.(type) {
	case int, int8, int16, int32, int64, uint8, uint16, uint32:
		return schema.Primitive(schema.Long), true
	case float32, float64:
		return schema.Primitive(schema.Double), true
	case bool:
		return schema.Primitive(schema.Boolean), true
	case string:
		return schema.Primitive(schema.String), true
	case []byte:
		return schema.Primitive(schema.Binary), true
	case value.Date:
		return schema.Primitive(schema.Date), true
	case value.Decimal:
		return &schema.DecimalType{Precision: 38, Scale: int(d.Scale)}, true
	}
	if _, ok := v.(interface{ UnixMicro() int64 }); ok {
		return schema.Primitive(schema.Timestamp), true
	}
	return nil, false
}

// Convert converts a literal (the value model (package value), see Column.Eq) to
// the canonical form of kind k for column name of type typ (both for
// messages). A value that does not fit, nil, or a column of
// KindUnsupported is an error wrapping ErrInvalidArgument.
func Convert(k Kind, name string, typ schema.Type, v any) (any, error) {
	bad := func() error {
		if lt, ok := LiteralType(v); ok {
			return invalidf("value %s (a %s literal) does not fit column %s of type %s", FormatLiteral(v), lt, name, typ)
		}
		return invalidf("value %s (Go type %T) does not fit column %s of type %s", FormatLiteral(v), v, name, typ)
	}
	if v == nil {
		return nil, invalidf("comparison of column %s with nil: use IsNull or IsNotNull", name)
	}
	switch k {
	case KindInt:
		if n, ok := value.ToInt64(v); ok {
			return n, nil
		}
	case KindFloat32, KindFloat64:
		f, ok := value.ToFloat64(v)
		if !ok {
			var n int64
			if n, ok = value.ToInt64(v); ok {
				f = float64(n)
			}
		}
		if ok {
			if k == KindFloat32 {
				f = float64(float32(f))
			}
			return f, nil
		}
	case KindBool:
		if x, ok := v.(bool); ok {
			return x, nil
		}
	case KindString:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return string(x), nil
		}
	case KindBinary:
		switch x := v.(type) {
		case []byte:
			return append([]byte{}, x...), nil
		case string:
			return []byte(x), nil
		}
	case KindDate:
		switch x := v.(type) {
		case value.Date:
			return int64(x), nil
		case time.Time:
			return int64(value.DateOf(x)), nil
		case string:
			d, err := time.Parse(time.DateOnly, x)
			if err != nil {
				return nil, bad()
			}
			return int64(value.DateOf(d)), nil
		}
	case KindTimestamp, KindTimestampNTZ:
		switch x := v.(type) {
		case time.Time:
			if k == KindTimestampNTZ {
				return WallClockUTC(x), nil
			}
			return x.UTC(), nil
		case string:
			ts, err := parseTimestamp(x)
			if err != nil {
				return nil, bad()
			}
			return ts, nil
		}
	case KindDecimal:
		switch x := v.(type) {
		case value.Decimal:
			return x, nil
		case string:
			d, err := value.ParseDecimal(x)
			if err != nil {
				return nil, bad()
			}
			return d, nil
		default:
			if n, ok := value.ToInt64(v); ok {
				return value.NewDecimal(n, 0), nil
			}
		}
	case KindUnsupported:
		return nil, invalidf("column %s has type %s: only IsNull and IsNotNull apply to it", name, typ)
	}
	return nil, bad()
}

// WallClockUTC returns t's wall clock in its own location as a UTC time.
func WallClockUTC(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// Compare compares v (a value read from a data file, a parsed
// partition value, a stats bound or a canonical value) with the canonical
// value lit of kind k. ok is false when v has an unexpected Go type or the
// two are unordered (a NaN).
func Compare(k Kind, v, lit any) (c int, ok bool) {
	switch k {
	case KindInt:
		a, ok := value.ToInt64(v)
		if !ok {
			return 0, false
		}
		return cmp.Compare(a, lit.(int64)), true
	case KindFloat32, KindFloat64:
		a, ok := value.ToFloat64(v)
		b := lit.(float64)
		if !ok || math.IsNaN(a) || math.IsNaN(b) {
			return 0, false
		}
		return cmp.Compare(a, b), true
	case KindBool:
		a, ok := v.(bool)
		if !ok {
			return 0, false
		}
		b := lit.(bool)
		switch {
		case a == b:
			return 0, true
		case b:
			return -1, true
		}
		return 1, true
	case KindString:
		a, ok := v.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(a, lit.(string)), true
	case KindBinary:
		a, ok := v.([]byte)
		if !ok {
			return 0, false
		}
		return bytes.Compare(a, lit.([]byte)), true
	case KindDate:
		var a int64
		switch x := v.(type) {
		case value.Date:
			a = int64(x)
		case int64:
			a = x
		default:
			return 0, false
		}
		return cmp.Compare(a, lit.(int64)), true
	case KindTimestamp, KindTimestampNTZ:
		a, ok := v.(time.Time)
		if !ok {
			return 0, false
		}
		return a.Compare(lit.(time.Time)), true
	case KindDecimal:
		a, ok := v.(value.Decimal)
		if !ok {
			return 0, false
		}
		return a.Cmp(lit.(value.Decimal)), true
	}
	return 0, false
}

// CompareTrue says whether "v op lit" is TRUE, for a non-nil v and a
// canonical lit of kind k. nanTrue is the result when a float v or lit is
// NaN: IEEE 754 makes NaN != x true and every other comparison false, and
// the negation NOT (x < y) is "x >= y OR x is NaN".
func CompareTrue(k Kind, v any, op Op, lit any, nanTrue bool) bool {
	c, ok := Compare(k, v, lit)
	if !ok {
		return nanTrue && (k == KindFloat32 || k == KindFloat64)
	}
	return op.Holds(c)
}

// IsNumber reports whether k is an integer or floating-point kind (numbers
// of these kinds compare with each other).
func (k Kind) IsNumber() bool { return k == KindInt || k == KindFloat32 || k == KindFloat64 }

// NumberAsFloat returns a number of the value model (package value) (any Go
// integer or float) as a float64; 0 for anything else.
func NumberAsFloat(v any) float64 {
	if f, ok := value.ToFloat64(v); ok {
		return f
	}
	n, _ := value.ToInt64(v)
	return float64(n)
}
