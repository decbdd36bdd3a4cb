package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// deltactl -v shows the commit records on stderr; without it, stderr stays
// empty.
func TestVerboseLogsCommits(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "t")
	tests := []struct {
		args []string
		want []string // substrings of stderr; none: stderr is empty
	}{
		{[]string{"-v", "create", tbl, "--schema", "id long, name string, score double, day date, active boolean, seen timestamp"},
			[]string{"level=DEBUG", `msg="txlog: committed"`, "version=0", "attempts=1", `operation="CREATE TABLE"`, "bytes=", "duration="}},
		{[]string{"--verbose", "ingest", "testdata/people.csv", tbl},
			[]string{`msg="txlog: committed"`, "version=1", "operation=WRITE"}},
		{[]string{"ingest", "testdata/people.csv", tbl}, nil},
	}
	for _, tc := range tests {
		out, errs, code := runCLI(t, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", tc.args, code, out, errs)
		}
		if tc.want == nil && errs != "" {
			t.Errorf("%v: stderr %q, want it empty", tc.args, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr %q does not contain %q", tc.args, errs, w)
			}
		}
	}
}
