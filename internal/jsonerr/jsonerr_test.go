package jsonerr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestDescribe: a type error names the JSON path and kinds, never a Go
// type; other errors pass through.
func TestDescribe(t *testing.T) {
	type inner struct {
		N int64           `json:"n"`
		M map[string]int  `json:"m"`
		L []string        `json:"l"`
		F float64         `json:"f"`
		B bool            `json:"b"`
		R json.RawMessage `json:"r"`
		O map[string]any  `json:"o"`
		S string          `json:"s"`
	}
	type doc struct {
		In inner `json:"in"`
	}
	for _, tc := range []struct {
		data string
		want string
	}{
		{`{"in":{"n":"x"}}`, "field in.n is a JSON string, want an integer"},
		{`{"in":{"m":[1]}}`, "field in.m is a JSON array, want an object"},
		{`{"in":{"l":{}}}`, "field in.l is a JSON object, want an array"},
		{`{"in":{"f":true}}`, "field in.f is a JSON bool, want a number"},
		{`{"in":{"b":1}}`, "field in.b is a JSON number, want a boolean"},
		{`{"in":{"o":"x"}}`, "field in.o is a JSON string, want an object"},
		{`{"in":{"s":1}}`, "field in.s is a JSON number, want a string"},
		{`{"in":5}`, "field in is a JSON number, want an object"},
		{`[1]`, "a JSON array where an object is wanted"},
	} {
		t.Run(tc.data, func(t *testing.T) {
			var d doc
			err := Describe(json.Unmarshal([]byte(tc.data), &d))
			var te *json.UnmarshalTypeError
			if err == nil || err.Error() != tc.want || !errors.As(err, &te) {
				t.Errorf("Describe = %v, want %q wrapping the *json.UnmarshalTypeError", err, tc.want)
			}
			if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "interface")) {
				t.Errorf("%q names Go types", err)
			}
		})
	}
	syntax := json.Unmarshal([]byte(`{`), new(doc))
	if got := Describe(syntax); got != syntax {
		t.Errorf("Describe(syntax error) = %v, want it unchanged", got)
	}
	if Describe(nil) != nil {
		t.Error("Describe(nil) != nil")
	}
}
