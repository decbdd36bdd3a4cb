package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// alter rename-column and drop-column: cat shows the logical names after
// the change; a table without column mapping is refused and unchanged.
func TestAlterCommands(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(`{"id":1,"city":"ams","v":1.5}
{"id":2,"city":"ber","v":2.5}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"name", "id"} {
		t.Run(mode, func(t *testing.T) {
			tbl := filepath.Join(dir, mode)
			mustRun(t, "create", tbl, "--schema", "id long, city string, v double", "--property", "delta.columnMapping.mode="+mode)
			mustRun(t, "ingest", in, tbl)
			var res AlterView
			if err := json.Unmarshal([]byte(mustRun(t, "alter", "rename-column", tbl, "v", "value", "-o", "json")), &res); err != nil {
				t.Fatal(err)
			}
			if res.Operation != "RENAME COLUMN" || res.Version != 2 || !slices.Equal(res.Columns, []string{"id", "city", "value"}) {
				t.Fatalf("rename: %+v", res)
			}
			out := mustRun(t, "alter", "drop-column", tbl, "city")
			if !strings.HasPrefix(out, "DROP COLUMNS ") || !strings.HasSuffix(out, ": version 3; columns now id, value\n") {
				t.Errorf("drop output %q", out)
			}
			got := strings.Split(strings.TrimSpace(mustRun(t, "cat", tbl, "-o", "json")), "\n")
			slices.Sort(got)
			if want := []string{`{"id":1,"value":1.5}`, `{"id":2,"value":2.5}`}; !slices.Equal(got, want) {
				t.Errorf("cat after rename and drop: %v, want %v", got, want)
			}
		})
	}
	plain := filepath.Join(dir, "plain")
	mustRun(t, "create", plain, "--schema", "id long, v double")
	for _, args := range [][]string{
		{"alter", "rename-column", plain, "v", "w"},
		{"alter", "drop-column", plain, "v"},
		{"alter", "drop-column", plain},
	} {
		_, errs, code := runCLI(t, args...)
		if code == 0 {
			t.Errorf("deltactl %v succeeded", args)
		}
		if len(args) >= 4 && !strings.Contains(errs, "column mapping is required") {
			t.Errorf("deltactl %v: %s", args, errs)
		}
	}
	if out := mustRun(t, "schema", plain); !strings.Contains(out, "v") {
		t.Errorf("schema after refusals: %s", out)
	}
}

// alter set-properties delta.columnMapping.mode=name enables column mapping
// on a table created without it: the rows ingested before read back, and
// rename-column works; mode id is refused naming the reason, and nothing is
// committed.
func TestAlterEnableColumnMapping(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "t")
	mustRun(t, "create", tbl, "--schema", "id long, city string, v double")
	mustRun(t, "ingest", "testdata/alter_colmap.ndjson", tbl)
	_, errs, code := runCLI(t, "alter", "set-properties", tbl, "delta.columnMapping.mode=id")
	if code != 1 || !strings.Contains(errs, "no Parquet field ids") || !strings.Contains(errs, "at version 1") {
		t.Errorf("mode id: exit %d, stderr %q", code, errs)
	}
	out := mustRun(t, "alter", "set-properties", tbl, "delta.columnMapping.mode=name")
	if want := "SET TBLPROPERTIES file://" + tbl + ": version 2; properties now delta.columnMapping.maxColumnId=3, delta.columnMapping.mode=name; protocol (2,7) appendOnly, columnMapping, invariants\n"; out != want {
		t.Errorf("set-properties output\n%q\nwant\n%q", out, want)
	}
	mustRun(t, "alter", "rename-column", tbl, "v", "value")
	got := strings.Split(strings.TrimSpace(mustRun(t, "cat", tbl, "-o", "json")), "\n")
	slices.Sort(got)
	if want := []string{`{"id":1,"city":"ams","value":1.5}`, `{"id":2,"city":"ber","value":2.5}`}; !slices.Equal(got, want) {
		t.Errorf("cat after enabling and renaming: %v, want %v", got, want)
	}
}

// alter set-properties and unset-properties: the change data feed turned on
// later makes delete write change data; deletion vectors upgrade the
// protocol; refused features and bad values change nothing.
func TestAlterProperties(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(`{"id":1,"v":1.5}
{"id":2,"v":2.5}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v double")
	mustRun(t, "ingest", in, tbl)
	out := mustRun(t, "alter", "set-properties", tbl, "delta.enableChangeDataFeed=true", "delta.checkpointInterval=20")
	if want := "SET TBLPROPERTIES file://" + tbl + ": version 2; properties now delta.checkpointInterval=20, delta.enableChangeDataFeed=true; protocol (1,7) appendOnly, changeDataFeed, invariants\n"; out != want {
		t.Errorf("set-properties output\n%q\nwant\n%q", out, want)
	}
	var res AlterView
	if err := json.Unmarshal([]byte(mustRun(t, "alter", "set-properties", tbl, "delta.enableDeletionVectors=true", "-o", "json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Operation != "SET TBLPROPERTIES" || res.Version != 3 || !strings.HasPrefix(res.Protocol, "(3,7) ") ||
		!strings.Contains(res.Protocol, "deletionVectors") || res.Properties["delta.enableDeletionVectors"] != "true" {
		t.Errorf("set deletion vectors: %+v", res)
	}
	mustRun(t, "delete", tbl, "--where", "id = 1")
	if changes := mustRun(t, "changes", tbl, "--from", "4", "-o", "json"); !strings.Contains(changes, `"_change_type":"delete"`) {
		t.Errorf("changes of the delete after enabling CDF: %s", changes)
	}
	out = mustRun(t, "alter", "unset-properties", tbl, "delta.checkpointInterval")
	if !strings.HasPrefix(out, "UNSET TBLPROPERTIES ") || strings.Contains(out, "checkpointInterval") || !strings.Contains(out, "deletionVectors") {
		t.Errorf("unset-properties output %q", out)
	}
	mustRun(t, "alter", "unset-properties", tbl, "--if-exists", "delta.nosuch")
	before := mustRun(t, "history", tbl, "-o", "json")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"set-properties", tbl, "delta.enableIcebergCompatV2=true"}, 1, "icebergCompatV2"},
		{[]string{"set-properties", tbl, "delta.checkpointInterval=zero"}, 1, "delta.checkpointInterval"},
		{[]string{"set-properties", tbl, "novalue"}, 2, "want key=value"},
		{[]string{"set-properties", tbl}, 2, "at least one"},
		{[]string{"unset-properties", tbl, "delta.nosuch"}, 1, "delta.nosuch"},
	} {
		_, errs, code := runCLI(t, append([]string{"alter"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("deltactl alter %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
	if after := mustRun(t, "history", tbl, "-o", "json"); after != before {
		t.Errorf("refused alters changed the history")
	}
}
