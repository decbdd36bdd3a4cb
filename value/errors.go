package value

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/deltakit/deltakit/schema"
)

// Reasons wrapped by *Error; match them with errors.Is.
var (
	// ErrTypeMismatch: the Go type of a value is not one that the Delta type
	// accepts (a string for a long column).
	ErrTypeMismatch = errors.New("value of a Go type that does not fit the Delta type")
	// ErrOutOfRange: the Go type fits but the value does not (300 for a
	// byte, a decimal with too many digits, a timestamp beyond year 290000,
	// a struct Row of the wrong length).
	ErrOutOfRange = errors.New("value out of range of the Delta type")
	// ErrSyntax: text (a partition value, a stats literal, a decimal string)
	// does not parse as the Delta type.
	ErrSyntax = errors.New("text does not parse as the Delta type")
	// ErrNull: a null where the type does not allow one (an array element
	// without containsNull, a map key, a non-nullable struct field).
	ErrNull = errors.New("null value not allowed")
	// ErrUnsupported: the Delta type has no codec for the operation (variant
	// values, a nested type as a partition column).
	ErrUnsupported = errors.New("type not supported here")
)

// Error is a value that does not fit a Delta type. Column says where inside
// a nested value the offending one is ("" at the top level; `column "x"`,
// "element 3", "key of entry 2", joined by ": "); the caller names the
// top-level column and the row.
type Error struct {
	Column string      // place inside a nested value, "" at the top
	Type   schema.Type // the Delta type
	Value  any         // the offending value (nil for ErrNull)
	Reason error       // ErrTypeMismatch, ErrOutOfRange, ErrSyntax, ErrNull or ErrUnsupported
	Detail string      // replaces the standard message when set
}

// Error describes the value and the type.
func (e *Error) Error() string {
	var msg string
	switch {
	case e.Detail != "":
		msg = e.Detail
	case e.Reason == ErrTypeMismatch:
		msg = fmt.Sprintf("value %s (%s) does not fit type %s", formatValue(e.Value), kindOf(e.Value), e.Type)
	case e.Reason == ErrSyntax:
		msg = fmt.Sprintf("%q does not parse as %s", e.Value, e.Type)
	case e.Reason == ErrNull:
		msg = fmt.Sprintf("null in a field of type %s that does not allow one", e.Type)
	case e.Reason == ErrUnsupported:
		msg = fmt.Sprintf("type %s is not supported here", e.Type)
	default:
		msg = fmt.Sprintf("value %v does not fit type %s", e.Value, e.Type)
	}
	if e.Column != "" {
		return e.Column + ": " + msg
	}
	return msg
}

// kindOf names what the Go value v holds, in the Delta terms of the value
// model (doc.go): "a string", "a long" (int64 or int), "a date", "a
// struct or array" ([]any), "a map" ([]MapEntry), ...; "Go type T" for a
// value outside the model.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case []byte:
		return "binary"
	case bool:
		return "a boolean"
	case int64, int:
		return "a long"
	case int32:
		return "an integer"
	case int16:
		return "a short"
	case int8:
		return "a byte"
	case uint, uint8, uint16, uint32, uint64:
		return fmt.Sprintf("an unsigned integer (%T)", v)
	case float64:
		return "a double"
	case float32:
		return "a float"
	case Date:
		return "a date"
	case Decimal:
		return "a decimal"
	case time.Time:
		return "a timestamp"
	case []any:
		return "a struct or array"
	case []MapEntry:
		return "a map"
	}
	return fmt.Sprintf("Go type %T", v)
}

// formatValue formats v for a message: a string quoted, so that "1" and 1
// differ; anything else as %v.
func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Reason }

func mismatch(t schema.Type, v any) error {
	return &Error{Type: t, Value: v, Reason: ErrTypeMismatch}
}

func outOfRange(t schema.Type, v any) error {
	return &Error{Type: t, Value: v, Reason: ErrOutOfRange}
}

func syntax(t schema.Type, s any) error {
	return &Error{Type: t, Value: s, Reason: ErrSyntax}
}

// within prefixes the Column of a *Error from a nested check with seg
// (`column "x"`, "element 3").
func within(seg string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		if c.Column == "" {
			c.Column = seg
		} else {
			c.Column = seg + ": " + c.Column
		}
		return &c
	}
	return fmt.Errorf("%s: %w", seg, err)
}
