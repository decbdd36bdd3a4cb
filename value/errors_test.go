package value

import (
	"errors"
	"testing"

	"github.com/deltakit/deltakit/schema"
)

// TestTypeMismatchMessage: a value of a Go type its Delta type does not
// take is named by what it holds in Delta terms (a string quoted, so "1"
// differs from 1), never by a Go type name of the value model; a Go value
// outside the model keeps its Go type, the only name it has. The error
// stays a *Error wrapping ErrTypeMismatch.
func TestTypeMismatchMessage(t *testing.T) {
	long := schema.Primitive(schema.Long)
	str := schema.Primitive(schema.String)
	type custom struct{ A int }
	for _, tc := range []struct {
		name string
		t    schema.Type
		v    any
		want string
	}{
		{"string for long", long, "1", `value "1" (a string) does not fit type long`},
		{"double for long", long, 1.5, `value 1.5 (a double) does not fit type long`},
		{"long for string", str, int64(7), `value 7 (a long) does not fit type string`},
		{"date for long", long, Date(0), `value 1970-01-01 (a date) does not fit type long`},
		{"decimal for string", str, MustParseDecimal("1.50"), `value 1.50 (a decimal) does not fit type string`},
		{"bool for long", long, true, `value true (a boolean) does not fit type long`},
		{"array for string", str, []any{int64(1)}, `value [1] (a struct or array) does not fit type string`},
		{"map for long", long, []MapEntry{}, `value [] (a map) does not fit type long`},
		{"outside the model", long, custom{1}, `value {1} (Go type value.custom) does not fit type long`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check(tc.t, tc.v)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrTypeMismatch) {
				t.Fatalf("Check(%s, %v) = %v, want a *Error wrapping ErrTypeMismatch", tc.t, tc.v, err)
			}
			if err.Error() != tc.want {
				t.Errorf("message %q, want %q", err.Error(), tc.want)
			}
		})
	}
}
