package value

import (
	"fmt"
	"strconv"

	"github.com/deltakit/deltakit/schema"
)

// Check reports whether non-nil v is a value of Delta type t in the value
// model (nested values included) and returns its approximate encoded size
// in bytes (Codec.Check; 4 more per array or map). The error is an *Error
// saying where inside a nested value the offending one is.
func Check(t schema.Type, v any) (int64, error) {
	switch t := t.(type) {
	case *schema.StructType:
		return checkStruct(t, v)
	case *schema.ArrayType:
		return checkArray(t, v)
	case *schema.MapType:
		return checkMap(t, v)
	}
	c := CodecOf(t)
	if c == nil {
		return 0, mismatch(t, v)
	}
	return c.Check(v)
}

// CheckField is Check for the value of field f, nil allowed when f is
// nullable; a null in a non-nullable field is an *Error wrapping ErrNull.
func CheckField(f *schema.StructField, v any) (int64, error) {
	if v == nil {
		if !f.Nullable {
			return 0, &Error{Type: f.Type, Reason: ErrNull, Detail: "null in a non-nullable field"}
		}
		return 0, nil
	}
	return Check(f.Type, v)
}

func checkStruct(t *schema.StructType, v any) (int64, error) {
	row, ok := v.(Row)
	if !ok {
		return 0, mismatch(t, v)
	}
	if len(row) != len(t.Fields) {
		return 0, &Error{Type: t, Value: v, Reason: ErrOutOfRange,
			Detail: fmt.Sprintf("struct value has %d fields, type %s has %d", len(row), t, len(t.Fields))}
	}
	var size int64
	for i, f := range t.Fields {
		n, err := CheckField(f, row[i])
		if err != nil {
			return 0, within("column "+strconv.Quote(f.Name), err)
		}
		size += n
	}
	return size, nil
}

func checkArray(t *schema.ArrayType, v any) (int64, error) {
	list, ok := v.([]any)
	if !ok {
		return 0, mismatch(t, v)
	}
	size := int64(4)
	for i, e := range list {
		if e == nil {
			if !t.ContainsNull {
				return 0, &Error{Column: "element " + strconv.Itoa(i), Type: t, Reason: ErrNull,
					Detail: "null in an array without null elements"}
			}
			continue
		}
		n, err := Check(t.ElementType, e)
		if err != nil {
			return 0, within("element "+strconv.Itoa(i), err)
		}
		size += n
	}
	return size, nil
}

func checkMap(t *schema.MapType, v any) (int64, error) {
	entries, ok := v.([]MapEntry)
	if !ok {
		return 0, mismatch(t, v)
	}
	size := int64(4)
	for i, e := range entries {
		if e.Key == nil {
			return 0, &Error{Column: "entry " + strconv.Itoa(i), Type: t, Reason: ErrNull, Detail: "null map key"}
		}
		n, err := Check(t.KeyType, e.Key)
		if err != nil {
			return 0, within("key of entry "+strconv.Itoa(i), err)
		}
		size += n
		if e.Value == nil {
			if !t.ValueContainsNull {
				return 0, &Error{Column: "entry " + strconv.Itoa(i), Type: t, Reason: ErrNull,
					Detail: "null in a map without null values"}
			}
			continue
		}
		if n, err = Check(t.ValueType, e.Value); err != nil {
			return 0, within("value of entry "+strconv.Itoa(i), err)
		}
		size += n
	}
	return size, nil
}
