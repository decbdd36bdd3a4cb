package table

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAssignments(t *testing.T) {
	sch := maintSchema()
	cases := []struct {
		in   string
		want map[string]string // column -> Value.String()
		err  string
	}{
		{in: "v = 1.5", want: map[string]string{"v": "1.5"}},
		{in: "v = v * 2, id = id + 1000", want: map[string]string{"v": "(v * 2)", "id": "(id + 1000)"}},
		{in: "v = v-1", want: map[string]string{"v": "(v - 1)"}},
		{in: "v = (v + 1) / 2", want: map[string]string{"v": "((v + 1) / 2)"}},
		{in: "city = 'osl', v = NULL", want: map[string]string{"city": "'osl'", "v": "NULL"}},
		{in: "`city` = city", want: map[string]string{"city": "city"}},
		{in: "v = ", err: "expected a value"},
		{in: "v 1", err: "expected '='"},
		{in: "v = 1, v = 2", err: "twice"},
		{in: "a.b = 1", err: "top-level"},
		{in: "v = 1 1", err: "unexpected"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseAssignments(c.in, sch)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want ErrInvalidArgument with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for k, w := range c.want {
				if got[k] == nil || got[k].String() != w {
					t.Errorf("%s = %v, want %s", k, got[k], w)
				}
			}
		})
	}
}
