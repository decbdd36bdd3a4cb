package fileset

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestFileSetMatchesMap checks the layered set against plain maps over
// random chains of derived sets, and that deriving never changes a sealed
// set (snapshots share levels). Values are compared by content: a packed
// bottom level materialises them.
func TestFileSetMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type state struct {
		set  Set[file]
		want map[Key]*file
	}
	check := func(st state) {
		t.Helper()
		if st.set.Len() != len(st.want) {
			t.Fatalf("len %d, want %d", st.set.Len(), len(st.want))
		}
		for k, v := range st.want {
			if got, ok := st.set.Get(k); !ok || !reflect.DeepEqual(got, v) {
				t.Fatalf("get(%v) = %v, %v", k, got, ok)
			}
		}
		got := map[Key]*file{}
		st.set.Each(func(k Key, v *file) {
			if _, dup := got[k]; dup {
				t.Fatalf("each visits %v twice", k)
			}
			got[k] = v
		})
		if !maps.EqualFunc(got, st.want, func(a, b *file) bool { return reflect.DeepEqual(a, b) }) {
			t.Fatalf("each: %d entries, want %d", len(got), len(st.want))
		}
		keys := slices.SortedFunc(maps.Keys(st.want), Compare)
		sorted := st.set.SortedValues()
		if len(sorted) != len(keys) {
			t.Fatalf("sortedValues: %d, want %d", len(sorted), len(keys))
		}
		for i, k := range keys {
			if !reflect.DeepEqual(sorted[i], st.want[k]) {
				t.Fatalf("sortedValues[%d] is not %v", i, k)
			}
		}
	}
	// newAdd returns a random add; one in ten has a deletion vector, and
	// one in ten a path with an escape.
	newAdd := func() *file {
		a := &file{Path: fmt.Sprintf("p%04d", r.IntN(3000))}
		if r.IntN(10) == 0 {
			a.Path += "%20x"
		}
		if r.IntN(10) == 0 {
			a.DeletionVector = &dvDesc{StorageType: "u", PathOrInlineDv: fmt.Sprint(r.IntN(3))}
		}
		return a
	}
	cur := state{set: NewPacking(&testCodec), want: map[Key]*file{}}
	var history []state
	for step := range 400 {
		next := state{set: cur.set.Derive(), want: maps.Clone(cur.want)}
		if step == 0 {
			next.set = NewPacking(&testCodec)
		}
		n := 1 + r.IntN(20)
		if step%50 == 0 {
			n = 500
		}
		for range n {
			a := newAdd()
			k := a.Key()
			if r.IntN(3) == 0 {
				next.set.Del(k)
				delete(next.want, k)
			} else {
				next.set.Put(k, a)
				next.want[k] = a
			}
		}
		next.set.Seal()
		if len(next.set.levels) > 8 {
			t.Fatalf("%d levels", len(next.set.levels))
		}
		check(next)
		history = append(history, next)
		cur = next
		if r.IntN(20) == 0 && len(history) > 1 {
			cur = history[r.IntN(len(history))] // branch from an older set
		}
	}
	for _, st := range history {
		check(st)
	}
}

// TestMergeSorted: a sorted level overridden by a sorted overlay, whatever
// the overlay's size and where its keys fall (before, between, on and
// after the level's keys), is what a linear merge gives.
func TestMergeSorted(t *testing.T) {
	base := make([]*tombstone, 0, 100)
	for i := range 100 {
		base = append(base, &tombstone{Path: fmt.Sprintf("k%03d", 2*i)}) // even keys k000-k198
	}
	keyOf := (*tombstone).Key
	for _, tc := range []struct {
		name string
		ov   []string // overlay keys; "-" prefix: removed
		want int      // files after the merge
	}{
		{"empty overlay", nil, 100},
		{"before every key", []string{"a"}, 101},
		{"after every key", []string{"z"}, 101},
		{"between keys", []string{"k001", "k101", "k197"}, 103},
		{"replaces keys", []string{"k000", "k100", "k198"}, 100},
		{"removes keys", []string{"-k000", "-k051", "-k198"}, 98}, // k051 is not in base
		{"every key replaced and one added", nil, 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ov := tc.ov
			if tc.name == "every key replaced and one added" {
				for i := range 100 {
					ov = append(ov, fmt.Sprintf("k%03d", 2*i))
				}
				ov = append(ov, "k199")
			}
			var es []entry[tombstone]
			want := map[string]*tombstone{}
			for _, b := range base {
				want[b.Path] = b
			}
			for _, k := range ov {
				if p, ok := strings.CutPrefix(k, "-"); ok {
					es = append(es, entry[tombstone]{k: Key{Path: p}})
					delete(want, p)
					continue
				}
				v := &tombstone{Path: k}
				es = append(es, entry[tombstone]{k: Key{Path: k}, v: v})
				want[k] = v
			}
			got := mergeSorted(base, es, len(base)+len(es), keyOf)
			if len(got) != tc.want {
				t.Fatalf("merged %d files, want %d", len(got), tc.want)
			}
			for i, v := range got {
				if want[v.Path] != v {
					t.Errorf("file %d is %q, not the overlay's or the level's value", i, v.Path)
				}
				if i > 0 && got[i-1].Path >= v.Path {
					t.Errorf("file %d %q after %q: not in key order", i, v.Path, got[i-1].Path)
				}
			}
		})
	}
}

// TestMergeSortedSmallLevels: mergeSorted (galloping search) against a
// map merge on levels of 0 to 9 files and 17 (past several galloping
// steps), with keys differing only in their DV, for an overlay of one key
// at every position (added between, before and after every key, replacing
// or removing each key, removing an absent key) and of every key at once.
func TestMergeSortedSmallLevels(t *testing.T) {
	type dvFile struct{ path, dv string }
	keyOf := func(f *dvFile) Key { return Key{Path: f.path, DV: f.dv} }
	// k(i): keys in order, even i in the level; pairs share a path.
	k := func(i int) Key { return Key{Path: fmt.Sprintf("p%02d", i/4), DV: fmt.Sprintf("d%d", i%4)} }
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 17} {
		var base []*dvFile
		for i := range n {
			base = append(base, &dvFile{k(2 * i).Path, k(2 * i).DV})
		}
		type op struct {
			i      int
			remove bool
		}
		var cases [][]op
		for i := -1; i <= 2*n; i++ {
			cases = append(cases, []op{{i, false}}, []op{{i, true}})
		}
		var all []op
		for i := -1; i <= 2*n; i++ {
			all = append(all, op{i, i%3 == 0})
		}
		cases = append(cases, all)
		for _, ops := range cases {
			name := fmt.Sprintf("level of %d, overlay %v", n, ops)
			want := map[Key]*dvFile{}
			for _, b := range base {
				want[keyOf(b)] = b
			}
			var ov []entry[dvFile]
			for _, o := range ops {
				key := Key{Path: "a"} // i = -1: before every key
				if o.i >= 0 {
					key = k(o.i)
				}
				if o.remove {
					ov = append(ov, entry[dvFile]{k: key})
					delete(want, key)
					continue
				}
				v := &dvFile{key.Path, key.DV}
				ov = append(ov, entry[dvFile]{k: key, v: v})
				want[key] = v
			}
			got := mergeSorted(base, ov, len(base)+len(ov), keyOf)
			if len(got) != len(want) {
				t.Fatalf("%s: %d files, want %d", name, len(got), len(want))
			}
			for i, v := range got {
				if want[keyOf(v)] != v {
					t.Fatalf("%s: file %d %v is not the overlay's or the level's", name, i, keyOf(v))
				}
				if i > 0 && Compare(keyOf(got[i-1]), keyOf(v)) >= 0 {
					t.Fatalf("%s: file %d %v after %v: not in key order", name, i, keyOf(v), keyOf(got[i-1]))
				}
			}
		}
	}
}
