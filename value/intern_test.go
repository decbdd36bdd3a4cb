package value

import (
	"fmt"
	"testing"
	"unsafe"
)

func TestInterner(t *testing.T) {
	cases := []struct {
		name    string
		inputs  []string
		wantOff bool
	}{
		{"repeating", repeat([]string{"SFO", "LAX", "東京"}, 3000), false},
		{"distinct", distinct(internProbe + 10), true},
		{"too many distinct", distinct(internMaxEntries + 10), true},
		{"empty strings", repeat([]string{""}, 10), false},
	}
	for _, tc := range cases {
		for _, kind := range []string{"Bytes", "String"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				var in Interner
				for i, s := range tc.inputs {
					b := []byte(s)
					var v any
					aliasFree := true
					if kind == "Bytes" {
						v = in.Bytes(b)
					} else {
						// s aliasing b, as a string read from an Arrow
						// buffer does; once off, String boxes it as it is.
						v = in.String(unsafe.String(unsafe.SliceData(b), len(b)))
						aliasFree = !in.off
					}
					for j := range b {
						b[j] = 'x'
					}
					if !aliasFree {
						continue
					}
					if got, ok := v.(string); !ok || got != s {
						t.Fatalf("input %d: got %#v, want %q", i, v, s)
					}
				}
				if in.off != tc.wantOff {
					t.Errorf("off = %v, want %v (lookups %d, hits %d)", in.off, tc.wantOff, in.lookups, in.hits)
				}
				if !tc.wantOff && in.hits != len(tc.inputs)-len(in.m) {
					t.Errorf("hits = %d, want %d", in.hits, len(tc.inputs)-len(in.m))
				}
			})
		}
	}
}

func repeat(vals []string, n int) []string {
	var out []string
	for range n {
		out = append(out, vals...)
	}
	return out
}

func distinct(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("v%06d", i)
	}
	return out
}
