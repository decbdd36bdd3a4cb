package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// delete, update and restore from the command line: rows checked with cat
// against what the commands must leave; bad input exits non-zero and
// commits nothing.
func TestDMLCommands(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(`{"id":1,"city":"ams","v":1.5}
{"id":2,"city":"ber","v":2.5}
{"id":3,"city":"ams","v":null}
{"id":4,"city":"cph","v":4.0}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := filepath.Join(dir, "t")
	for _, props := range [][]string{nil, {"--property", "delta.enableDeletionVectors=true"}} {
		name := "cow"
		if props != nil {
			name = "dv"
		}
		t.Run(name, func(t *testing.T) {
			tbl := tbl + name
			mustRun(t, append([]string{"create", tbl, "--schema", "id long, city string, v double"}, props...)...)
			mustRun(t, "ingest", in, tbl)
			rows := func() []string {
				out := mustRun(t, "cat", tbl, "-o", "json")
				var got []string
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Fatalf("%v: %s", err, line)
					}
					b, _ := json.Marshal(m)
					got = append(got, string(b))
				}
				slices.Sort(got)
				return got
			}
			var res DMLView
			if err := json.Unmarshal([]byte(mustRun(t, "delete", tbl, "--where", "id = 2", "-o", "json")), &res); err != nil {
				t.Fatal(err)
			}
			if !res.Committed || res.DeletedRows != 1 || res.Version != 2 {
				t.Fatalf("delete: %+v", res)
			}
			mustRun(t, "update", tbl, "--set", "v = v * 10", "--set", "city = 'osl'", "--where", "city = 'ams'")
			want := []string{`{"city":"cph","id":4,"v":4}`, `{"city":"osl","id":1,"v":15}`, `{"city":"osl","id":3,"v":null}`}
			if got := rows(); !slices.Equal(got, want) {
				t.Fatalf("after delete and update:\n got %v\nwant %v", got, want)
			}
			mustRun(t, "restore", tbl, "--version", "1")
			if got := rows(); len(got) != 4 {
				t.Fatalf("after restore: %v", got)
			}
			for _, bad := range [][]string{
				{"delete", tbl},
				{"delete", tbl, "--where", "nope = 1"},
				{"update", tbl, "--set", "id = city"},
				{"update", tbl, "--where", "id = 1"},
				{"restore", tbl, "--version", "99"},
				{"restore", tbl},
			} {
				if _, _, code := runCLI(t, bad...); code == 0 {
					t.Errorf("deltactl %v: exit 0", bad)
				}
			}
			if out := mustRun(t, "history", tbl, "-o", "json"); !strings.Contains(out, `"RESTORE"`) || strings.Count(out, `"version"`) < 5 {
				t.Errorf("history after the commands:\n%s", out)
			}
		})
	}
}
