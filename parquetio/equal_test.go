package parquetio

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/deltakit/deltakit/value"
)

// valuesEqual compares two values of the value model: decimals by value and
// scale, times by instant, byte slices by content, rows, lists and maps
// element by element. Go types must match exactly.
func valuesEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case value.Decimal:
		y, ok := b.(value.Decimal)
		return ok && x.Scale == y.Scale && x.Cmp(y) == 0
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || (math.IsNaN(float64(x)) && math.IsNaN(float64(y))))
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case []value.MapEntry:
		y, ok := b.([]value.MapEntry)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i].Key, y[i].Key) || !valuesEqual(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// show formats a value with Go types, for failure messages.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case []any:
		s := "["
		for i, e := range x {
			if i > 0 {
				s += " "
			}
			s += show(e)
		}
		return s + "]"
	case []value.MapEntry:
		s := "map["
		for i, e := range x {
			if i > 0 {
				s += " "
			}
			s += show(e.Key) + ":" + show(e.Value)
		}
		return s + "]"
	case value.Decimal:
		return "dec(" + x.String() + ")"
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case []byte:
		return fmt.Sprintf("bytes%v", x)
	default:
		return fmt.Sprintf("%T(%v)", v, v)
	}
}
