package maint

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/deltakit/deltakit/txlog"
)

// partKey is the name of part p of n of the multi-part checkpoint of
// version v.
func partKey(v int64, p, n int) string {
	return fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", txlog.LogPrefix, v, p, n)
}

// scanOf is the logScan of the checkpoint files named keys.
func scanOf(t testing.TB, keys ...string) *logScan {
	t.Helper()
	ls := &logScan{cpFiles: map[int64][]txlog.LogFile{}}
	for _, k := range keys {
		f, ok := txlog.ParseLogKey(k)
		if !ok || f.Commit {
			t.Fatalf("%q is not a checkpoint file name", k)
		}
		ls.cpFiles[f.Version] = append(ls.cpFiles[f.Version], f)
	}
	return ls
}

// allocated returns the bytes fn allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMissingParts: the parts missing from a multi-part checkpoint are
// named as ranges, with work and text bounded by the files listed: a copy
// of a checkpoint named "...11.checkpoint.0000000001.2147483647.parquet"
// made verify allocate 16 GB listing 2,147,483,646 missing part numbers
// (issue 31 item 1).
func TestMissingParts(t *testing.T) {
	const huge = 1<<31 - 1
	cases := []struct {
		name string
		keys []string
		want string
	}{
		{"complete", []string{partKey(1, 1, 2), partKey(1, 2, 2)}, ""},
		{"classic beside parts", []string{txlog.CheckpointKey(1), partKey(1, 1, 2)}, ""},
		{"one missing", []string{partKey(1, 1, 3), partKey(1, 3, 3)}, "part 2 of 3 missing"},
		{"two apart", []string{partKey(1, 2, 4), partKey(1, 4, 4)}, "parts 1, 3 of 4 missing"},
		{"a run", []string{partKey(1, 1, 5), partKey(1, 1, 5)}, "parts 2-5 of 5 missing"},
		{"2147483647 parts claimed", []string{partKey(11, 1, huge)}, "parts 2-2147483647 of 2147483647 missing"},
		{"last of 2147483647 parts", []string{partKey(11, huge, huge)}, "parts 1-2147483646 of 2147483647 missing"},
		{"many ranges", []string{partKey(1, 2, 30), partKey(1, 4, 30), partKey(1, 6, 30), partKey(1, 8, 30), partKey(1, 10, 30),
			partKey(1, 12, 30), partKey(1, 14, 30), partKey(1, 16, 30), partKey(1, 18, 30)},
			"parts 1, 3, 5, 7, 9, 11, 13, 15 and 13 more of 30 missing"},
		{"two sets", []string{partKey(1, 1, 2), partKey(1, 1, huge)}, "part 2 of 2 missing; parts 2-2147483647 of 2147483647 missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ls := scanOf(t, tc.keys...)
			var ver int64 // the one version of the case
			for v := range ls.cpFiles {
				ver = v
			}
			var got string
			if n := allocated(func() { got = ls.missingParts(ver) }); n > 1<<20 {
				t.Errorf("missingParts allocated %d bytes", n)
			}
			if got != tc.want {
				t.Errorf("missingParts = %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzMissingParts: whatever part numbers and counts the names of a
// version's multi-part checkpoint files claim, missingParts allocates and
// writes a bounded amount.
func FuzzMissingParts(f *testing.F) {
	f.Add(uint32(1), uint32(1<<31-1), uint32(1<<31-1), uint32(1<<31-1))
	f.Add(uint32(1), uint32(3), uint32(3), uint32(3))
	f.Add(uint32(2), uint32(1<<30), uint32(7), uint32(1<<30))
	f.Fuzz(func(t *testing.T, p1, n1, p2, n2 uint32) {
		var keys []string
		for _, pn := range [][2]uint32{{p1, n1}, {p2, n2}} {
			if k := partKey(1, int(pn[0]), int(pn[1])); len(k) == len(partKey(1, 1, 1)) {
				if _, ok := txlog.ParseLogKey(k); ok {
					keys = append(keys, k)
				}
			}
		}
		ls := scanOf(t, keys...)
		var got string
		if n := allocated(func() { got = ls.missingParts(1) }); n > 1<<20 {
			t.Fatalf("missingParts of %v allocated %d bytes", keys, n)
		}
		if len(got) > 512 {
			t.Fatalf("missingParts of %v is %d bytes long: %q", keys, len(got), got)
		}
	})
}
