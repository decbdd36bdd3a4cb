package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// delete, update and merge take --retries N (table.WithConflictRetries)
// and commit as without it when nothing conflicts.
func TestDMLRetriesFlag(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v double")
	mustRun(t, "update", tbl, "--set", "v = 1.0", "--retries", "2")
	var res DMLView
	if err := json.Unmarshal([]byte(mustRun(t, "delete", tbl, "--all", "--retries", "3", "-o", "json")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Committed {
		t.Fatalf("delete of an empty table committed: %+v", res)
	}
	if _, stderr, code := runCLI(t, "delete", tbl, "--all", "--retries", "x"); code == 0 {
		t.Fatalf("--retries x accepted: %s", stderr)
	}
}
