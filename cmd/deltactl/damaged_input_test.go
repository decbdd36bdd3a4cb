package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// streamTable ingests rows 1..n into a new table under dir, one epoch of
// query q (one version) per row: versions 0..n-1, a checkpoint at 10 when
// n > 10. It returns the table's path.
func streamTable(t *testing.T, dir string, n int) string {
	t.Helper()
	in := writeCSV(t, filepath.Join(dir, "in.csv"), 1, n)
	tbl := filepath.Join(dir, "t")
	mustRun(t, "ingest", in, tbl, "--epoch-rows", "1", "--query-id", "q")
	return tbl
}

// dvTable creates a table with deletion vectors holding rows 1..12 in one
// file and deletes row 3 (version 2, a deletion vector file).
func dvTable(t *testing.T, dir string) string {
	t.Helper()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string", "--property", "delta.enableDeletionVectors=true")
	mustRun(t, "ingest", writeCSV(t, filepath.Join(dir, "in.csv"), 1, 12), tbl)
	mustRun(t, "delete", tbl, "--where", "id = 3")
	return tbl
}

// rewriteCommit replaces old by new in commit file v of tbl (once).
func rewriteCommit(t *testing.T, tbl string, v int, old, new string) {
	t.Helper()
	p := filepath.Join(tbl, "_delta_log", fmt.Sprintf("%020d.json", v))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not hold %s:\n%s", p, old, data)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runMeasured runs deltactl and also returns the bytes it allocated (the
// tests of this package run one at a time).
func runMeasured(t *testing.T, args ...string) (string, string, int, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out, errs, code := runCLI(t, args...)
	runtime.ReadMemStats(&after)
	return out, errs, code, after.TotalAlloc - before.TotalAlloc
}

// TestDamagedInputs: counts that come from a log file name, a
// _last_checkpoint or a deletion vector descriptor bound nothing that is
// allocated (issue 31 item 1: a copy of a checkpoint named
// "...11.checkpoint.0000000001.2147483647.parquet" made verify grow to
// 16 GB), and a log of only a checkpoint is a table that verifies (item
// 1b: delta-rs writes them). Each case says what verify, verify
// --exactly-once, snapshot and cat answer; every command stays under
// 256 MiB of allocations.
func TestDamagedInputs(t *testing.T) {
	const allocLimit = 256 << 20
	cases := []struct {
		name   string
		build  func(t *testing.T, dir string) string
		damage func(t *testing.T, tbl string)
		// verify: exit code and lines of its output
		verifyCode int
		verifyOut  []string
		// verify --exactly-once: exit code and lines of its output ("" skips)
		onceCode int
		onceOut  []string
		// snapshot's version line, cat's exit code and ids
		version string
		catCode int
		ids     []int64
		catErr  string
	}{
		{
			name:  "multi-part checkpoint claiming 2147483647 parts",
			build: func(t *testing.T, dir string) string { return streamTable(t, dir, 12) },
			damage: func(t *testing.T, tbl string) {
				log := filepath.Join(tbl, "_delta_log")
				data, err := os.ReadFile(filepath.Join(log, "00000000000000000010.checkpoint.parquet"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(log, "00000000000000000011.checkpoint.0000000001.2147483647.parquet"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			verifyCode: 3,
			verifyOut: []string{"PROBLEM checkpoint-mismatch at version 11 (_delta_log/00000000000000000011.checkpoint.0000000001.2147483647.parquet): " +
				"the checkpoint is incomplete (parts 2-2147483647 of 2147483647 missing): replay of version 11 cannot start from it"},
			onceOut: []string{"query q: exactly once; 12 commit(s), epochs 0-11 (last at version 11)"},
			version: "11", ids: seq(1, 12),
		},
		{
			name:  "_last_checkpoint claiming 2147483647 parts and 2^63-1 actions and bytes",
			build: func(t *testing.T, dir string) string { return streamTable(t, dir, 12) },
			damage: func(t *testing.T, tbl string) {
				hint := `{"version":10,"size":9223372036854775807,"parts":2147483647,"sizeInBytes":9223372036854775807,"numOfAddFiles":9223372036854775807}`
				if err := os.WriteFile(filepath.Join(tbl, "_delta_log", "_last_checkpoint"), []byte(hint), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			verifyOut: []string{": OK; version 11, commits 0-11 (12 read), 1 checkpoint(s) compared with the commits"},
			onceOut:   []string{"query q: exactly once; 12 commit(s), epochs 0-11 (last at version 11)"},
			version:   "11", ids: seq(1, 12),
		},
		{
			name:  "_last_checkpoint naming version 2^63-1",
			build: func(t *testing.T, dir string) string { return streamTable(t, dir, 12) },
			damage: func(t *testing.T, tbl string) {
				if err := os.WriteFile(filepath.Join(tbl, "_delta_log", "_last_checkpoint"), []byte(`{"version":9223372036854775807,"size":1}`), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			verifyOut: []string{": OK; version 11, commits 0-11 (12 read)"},
			onceOut:   []string{"query q: exactly once; 12 commit(s), epochs 0-11 (last at version 11)"},
			version:   "11", ids: seq(1, 12),
		},
		{
			name:  "log of only a checkpoint",
			build: func(t *testing.T, dir string) string { return streamTable(t, dir, 11) },
			damage: func(t *testing.T, tbl string) {
				keys, err := filepath.Glob(filepath.Join(tbl, "_delta_log", "*.json"))
				if err != nil || len(keys) != 11 {
					t.Fatalf("commits %v (%v)", keys, err)
				}
				for _, k := range keys {
					if err := os.Remove(k); err != nil {
						t.Fatal(err)
					}
				}
			},
			verifyOut: []string{": OK; version 10, no commit file (the log holds only checkpoints), 0 checkpoint(s) compared with the commits (1 more could not be: the commits before them were cleaned up), 11 file(s)"},
			onceOut: []string{
				"query q: exactly once; 0 commit(s), epochs -",
				"  epochs up to 10 committed before version 11 (older commits cleaned up)",
				": OK (no commit after the checkpoint at version 10)",
			},
			version: "10", ids: seq(1, 11),
		},
		{
			// The commits after the checkpoint are read from the one after it
			// (version 11 was folded into the base before: "2 commit(s),
			// epochs 12-13").
			name:  "log of a checkpoint and the commits after it",
			build: func(t *testing.T, dir string) string { return streamTable(t, dir, 14) },
			damage: func(t *testing.T, tbl string) {
				for v := range 11 {
					if err := os.Remove(filepath.Join(tbl, "_delta_log", fmt.Sprintf("%020d.json", v))); err != nil {
						t.Fatal(err)
					}
				}
			},
			verifyOut: []string{": OK; version 13, commits 11-13 (3 read)"},
			onceOut: []string{
				"query q: exactly once; 3 commit(s), epochs 11-13 (last at version 13)",
				"  epochs up to 10 committed before version 11 (older commits cleaned up)",
			},
			version: "13", ids: seq(1, 14),
		},
		{
			name:  "deletion vector claiming 2^31-1 bytes and 2^63-1 deleted rows",
			build: dvTable,
			damage: func(t *testing.T, tbl string) {
				rewriteCommit(t, tbl, 2, `"sizeInBytes":34,"cardinality":1}`, `"sizeInBytes":2147483647,"cardinality":9223372036854775807}`)
			},
			verifyCode: 3,
			verifyOut:  []string{"PROBLEM invalid-value at version 2 (part-", "deletionVector.cardinality 9223372036854775807 is above stats.numRecords 12"},
			onceCode:   -1,
			version:    "2", catCode: 1, catErr: "truncated: 42 bytes, want 2147483655",
		},
		{
			name:  "deletion vector of -1 bytes",
			build: dvTable,
			damage: func(t *testing.T, tbl string) {
				rewriteCommit(t, tbl, 2, `"sizeInBytes":34,`, `"sizeInBytes":-1,`)
			},
			verifyCode: 3,
			verifyOut:  []string{"PROBLEM invalid-value at version 2 (part-", "deletionVector.sizeInBytes is negative: -1"},
			onceCode:   -1,
			version:    "2", catCode: 1, catErr: "negative sizeInBytes -1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tbl := tc.build(t, t.TempDir())
			tc.damage(t, tbl)
			check := func(what string, code int, out, errs string, n uint64, wantCode int, want []string) {
				t.Helper()
				if n > allocLimit {
					t.Errorf("%s allocated %d MiB", what, n>>20)
				}
				if code != wantCode {
					t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, code, wantCode, out, errs)
				}
				for _, w := range want {
					if !strings.Contains(out+errs, w) {
						t.Errorf("%s: output lacks %q\nstdout:\n%s\nstderr:\n%s", what, w, out, errs)
					}
				}
			}
			out, errs, code, n := runMeasured(t, "verify", tbl)
			check("verify", code, out, errs, n, tc.verifyCode, tc.verifyOut)
			if tc.onceCode >= 0 {
				out, errs, code, n = runMeasured(t, "verify", "--exactly-once", tbl)
				check("verify --exactly-once", code, out, errs, n, tc.onceCode, tc.onceOut)
			}
			out, errs, code, n = runMeasured(t, "snapshot", tbl)
			check("snapshot", code, out, errs, n, 0, []string{"version:           " + tc.version + "\n"})
			out, errs, code, n = runMeasured(t, "cat", tbl, "--limit", "0", "--format", "jsonl")
			var catWant []string
			if tc.catErr != "" {
				catWant = []string{tc.catErr}
			}
			check("cat", code, out, errs, n, tc.catCode, catWant)
			if tc.catCode == 0 {
				if got := tableIDs(t, tbl); !slices.Equal(got, tc.ids) {
					t.Errorf("cat: ids %v, want %v", got, tc.ids)
				}
			}
		})
	}
}
