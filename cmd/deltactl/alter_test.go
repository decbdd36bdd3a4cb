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
