// Package jsonerr tells encoding/json's type errors in the terms of the
// JSON document (the field's path, the JSON kind found and the one wanted)
// rather than Go's (struct names and Go types such as
// map[string]json.RawMessage), for messages about Delta log and schema
// JSON that a user reads.
package jsonerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// TypeError is a *json.UnmarshalTypeError described by the JSON field path
// and kinds; Unwrap returns it.
type TypeError struct{ err *json.UnmarshalTypeError }

// Error says which field holds which JSON kind, and what kind is wanted,
// e.g. "field add.size is a JSON string, want an integer".
func (e *TypeError) Error() string {
	want := "another JSON type"
	switch e.err.Type.Kind() {
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Map, reflect.Struct:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "an array"
	}
	if e.err.Field == "" {
		return fmt.Sprintf("a JSON %s where %s is wanted", e.err.Value, want)
	}
	return fmt.Sprintf("field %s is a JSON %s, want %s", e.err.Field, e.err.Value, want)
}

// Unwrap returns the *json.UnmarshalTypeError.
func (e *TypeError) Unwrap() error { return e.err }

// Describe returns err, or for an error wrapping a *json.UnmarshalTypeError
// a *TypeError describing it without Go type names.
func Describe(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
		return &TypeError{err: te}
	}
	return err
}
