package orderedjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestWriteObject(t *testing.T) {
	vals := []any{1, "<b>", nil, []int{2}}
	keys := []string{"z", "a\"q", "é", "m"}
	var b strings.Builder
	err := WriteObject(&b, keys, func(b *strings.Builder, i int) error {
		vb, err := json.Marshal(vals[i])
		b.Write(vb)
		return err
	})
	want := `{"z":1,"a\"q":"\u003cb\u003e","é":null,"m":[2]}`
	if err != nil || b.String() != want {
		t.Fatalf("got %s, %v; want %s", b.String(), err, want)
	}
	b.Reset()
	if err := WriteObject(&b, nil, nil); err != nil || b.String() != "{}" {
		t.Fatalf("empty: got %s, %v", b.String(), err)
	}
	bad := errors.New("bad value")
	if err := WriteObject(&b, keys, func(*strings.Builder, int) error { return bad }); !errors.Is(err, bad) {
		t.Fatalf("error: got %v, want %v", err, bad)
	}
}
