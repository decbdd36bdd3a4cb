package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// changes from the command line: a change data feed table made by create,
// ingest, delete and update prints the change rows of a range, in every
// format; bad input is a usage error, a table without the feed an error.
func TestChangesCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(`{"id":1,"city":"ams","v":1.5}
{"id":2,"city":"ber","v":2.5}
{"id":3,"city":"ams","v":null}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, city string, v double", "--property", "delta.enableChangeDataFeed=true")
	mustRun(t, "ingest", in, tbl)                                                          // v1
	mustRun(t, "delete", tbl, "--where", "id = 2")                                         // v2
	mustRun(t, "update", tbl, "--set", "v = v * 10", "--where", "city = 'ams' AND id = 1") // v3

	out := mustRun(t, "changes", tbl, "--from", "2", "--format", "csv")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != "id,city,v,_change_type,_commit_version,_commit_timestamp" {
		t.Fatalf("header %q", lines[0])
	}
	var got []string
	for _, l := range lines[1:] {
		// the timestamp is the commit file's modification time
		got = append(got, l[:strings.LastIndexByte(l, ',')])
	}
	want := []string{"2,ber,2.5,delete,2", "1,ams,1.5,update_preimage,3", "1,ams,15,update_postimage,3"}
	if strings.Join(sortedCopy(got), "\n") != strings.Join(sortedCopy(want), "\n") {
		t.Errorf("changes --from 2:\n got %v\nwant %v", got, want)
	}
	out = mustRun(t, "changes", tbl, "--from", "1", "--to", "1", "-o", "json", "--columns", "id", "--where", "id >= 2")
	if n := strings.Count(out, "\n"); n != 2 || !strings.Contains(out, `{"id":2,"_change_type":"insert","_commit_version":1,"_commit_timestamp":"`) {
		t.Errorf("changes -o json:\n%s", out)
	}
	out = mustRun(t, "changes", tbl, "--from", "3")
	if !strings.HasPrefix(out, "id") || !strings.Contains(out, "update_postimage") || strings.Count(out, "\n") != 3 {
		t.Errorf("changes (table):\n%s", out)
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"changes", tbl}, 2, "--from is required"},
		{[]string{"changes", tbl, "--from", "3", "--to", "1"}, 2, "--to"},
		{[]string{"changes", tbl, "--from", "-1"}, 2, "--from"},
		{[]string{"changes", tbl, "--from", "0", "--format", "arrow"}, 2, "--format"},
		{[]string{"changes", tbl, "--from", "9"}, 1, "version 9"},
	} {
		_, errs, code := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
	plain := filepath.Join(dir, "plain")
	mustRun(t, "create", plain, "--schema", "id long")
	if _, errs, code := runCLI(t, "changes", plain, "--from", "0"); code != 1 || !strings.Contains(errs, "change data not recorded") {
		t.Errorf("table without the feed: exit %d, %s", code, errs)
	}
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }
