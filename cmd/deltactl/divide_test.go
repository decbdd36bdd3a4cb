package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpdateDivisionByZero: update --set 'v = v / 0' on a long column
// names the division by zero (it said "a double value does not fit column
// v of type long", issue 31 item 6). Division by zero is an error, as in
// Spark's default ANSI mode (DIVIDE_BY_ZERO; non-ANSI Spark gives NULL),
// the mode whose overflow errors deltakit's arithmetic follows: refused
// before anything is written for a literal zero, at the row for a zero
// value, and the table stays as it was.
func TestUpdateDivisionByZero(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v long, w long, d double")
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("id,v,w,d\n1,10,0,1.5\n2,20,4,2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ingest", in, tbl)
	before := mustRun(t, "cat", tbl, "--format", "csv")
	for _, tc := range []struct {
		set, want string
	}{
		{"v = v / 0", "(v / 0): division by zero (Spark: DIVIDE_BY_ZERO)"},
		{"d = d / 0.0", "(d / 0): division by zero (Spark: DIVIDE_BY_ZERO)"},
		{"d = v / w", "(v / w): division by zero for 10 / 0 (Spark: DIVIDE_BY_ZERO)"},
	} {
		out, errs, code := runCLI(t, "update", tbl, "--set", tc.set)
		if code != 1 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "does not fit") {
			t.Errorf("update --set %q: exit %d, want 1 naming %q\nstdout:\n%s\nstderr:\n%s", tc.set, code, tc.want, out, errs)
		}
	}
	if after := mustRun(t, "cat", tbl, "--format", "csv"); after != before {
		t.Errorf("the failed updates changed the table:\n%s\nwas\n%s", after, before)
	}
	if v := mustRun(t, "snapshot", tbl); !strings.Contains(v, "version:           1\n") {
		t.Errorf("a failed update committed:\n%s", v)
	}
	// A divisor that is never zero: 10/4 and 20/4 as doubles.
	mustRun(t, "update", tbl, "--where", "w != 0", "--set", "d = v / w")
	if got, want := mustRun(t, "cat", tbl, "--format", "csv", "--columns", "id,d"), "id,d\n1,1.5\n2,5\n"; got != want {
		t.Errorf("after d = v / w where w != 0:\n%s\nwant\n%s", got, want)
	}
}
