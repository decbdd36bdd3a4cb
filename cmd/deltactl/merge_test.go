package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mergeRef applies a MERGE by id to rows (id -> row) as the flags say,
// computed from the inputs alone.
func mergeRef(target, source []upsertRow, matched, notMatched, bySource string) []string {
	out := map[int64]upsertRow{}
	for _, r := range target {
		out[r.ID] = r
	}
	inSource := map[int64]bool{}
	for _, s := range source {
		inSource[s.ID] = true
		_, hit := out[s.ID]
		switch {
		case hit && matched == "update-all":
			out[s.ID] = s
		case hit && matched == "delete":
			delete(out, s.ID)
		case !hit && notMatched == "insert-all":
			out[s.ID] = s
		}
	}
	for _, r := range target {
		if !inSource[r.ID] && bySource == "delete" {
			delete(out, r.ID)
		}
	}
	var rows []upsertRow
	for _, r := range out {
		rows = append(rows, r)
	}
	return latestRef([]string{"id"}, rows)
}

func TestMergeCmd(t *testing.T) {
	target := []upsertRow{{1, "ams", 1}, {2, "ber", 2}, {3, "cph", 3}, {4, "osl", 4}}
	source := []upsertRow{{2, "ber", 20}, {4, "hel", 40}, {5, "rom", 50}, {6, "ams", 60}}
	tests := []struct {
		name                          string
		matched, notMatched, bySource string
		format                        string // ndjson, csv or parquet
		dv                            bool
		wantInserted, wantUpdated     int64
		wantDeleted                   int64
	}{
		{name: "upsert", matched: "update-all", notMatched: "insert-all", bySource: "none", format: "ndjson", wantInserted: 2, wantUpdated: 2},
		{name: "upsert, deletion vectors", matched: "update-all", notMatched: "insert-all", bySource: "none", format: "ndjson", dv: true, wantInserted: 2, wantUpdated: 2},
		{name: "upsert from csv", matched: "update-all", notMatched: "insert-all", bySource: "none", format: "csv", wantInserted: 2, wantUpdated: 2},
		{name: "upsert from parquet", matched: "update-all", notMatched: "insert-all", bySource: "none", format: "parquet", wantInserted: 2, wantUpdated: 2},
		{name: "delete matched", matched: "delete", notMatched: "none", bySource: "none", format: "ndjson", wantDeleted: 2},
		{name: "insert only", matched: "none", notMatched: "insert-all", bySource: "none", format: "ndjson", wantInserted: 2},
		{name: "sync: delete not matched by source", matched: "update-all", notMatched: "insert-all", bySource: "delete", format: "ndjson", wantInserted: 2, wantUpdated: 2, wantDeleted: 2},
		{name: "sync with deletion vectors", matched: "update-all", notMatched: "insert-all", bySource: "delete", format: "ndjson", dv: true, wantInserted: 2, wantUpdated: 2, wantDeleted: 2},
		{name: "nothing matches to delete", matched: "none", notMatched: "none", bySource: "delete", format: "ndjson", wantDeleted: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := filepath.Join(dir, "t")
			create := []string{"create", tbl, "--schema", "id long, city string, v double"}
			if tc.dv {
				create = append(create, "--property", "delta.enableDeletionVectors=true")
			}
			mustRun(t, create...)
			tin := filepath.Join(dir, "target.ndjson")
			writeNDJSON(t, tin, target)
			mustRun(t, "ingest", tin, tbl)
			src := sourceFile(t, dir, tc.format, source)
			out := mustRun(t, "merge", tbl, "--source", src, "--on", "id", "--when-matched", tc.matched,
				"--when-not-matched", tc.notMatched, "--when-not-matched-by-source", tc.bySource, "-o", "json")
			var v MergeView
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if !v.Committed || v.Version != 2 || v.Operation != "merge" || v.SourceRows != 4 || v.InsertedRows != tc.wantInserted ||
				v.UpdatedRows != tc.wantUpdated || v.DeletedRows != tc.wantDeleted {
				t.Errorf("view %+v", v)
			}
			for k, want := range map[string]int64{"numSourceRows": 4, "numTargetRowsInserted": tc.wantInserted,
				"numTargetRowsUpdated": tc.wantUpdated, "numTargetRowsDeleted": tc.wantDeleted} {
				if got := v.Metrics[k]; got != fmt.Sprint(want) {
					t.Errorf("operationMetrics %s = %q, want %d", k, got, want)
				}
			}
			if tc.dv && tc.wantUpdated+tc.wantDeleted < int64(len(target)) && v.DeletionVectorsAdded == 0 {
				t.Errorf("no deletion vector on a DV table: %+v", v)
			}
			want := mergeRef(target, source, tc.matched, tc.notMatched, tc.bySource)
			if got := catRows(t, tbl); !slices.Equal(got, want) {
				t.Fatalf("table:\n got %v\nwant %v", got, want)
			}
			if hist := mustRun(t, "history", tbl, "-o", "json"); !strings.Contains(hist, `"MERGE"`) {
				t.Errorf("history lacks the MERGE:\n%s", hist)
			}
		})
	}
	// The text output names the counts.
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	tin := filepath.Join(dir, "target.ndjson")
	writeNDJSON(t, tin, target)
	mustRun(t, "ingest", tin, tbl)
	out := mustRun(t, "merge", tbl, "--source", sourceFile(t, dir, "ndjson", source), "--on", "id")
	if !strings.Contains(out, "4 source row(s): 2 inserted, 2 updated, 0 deleted (0 when matched, 0 when not matched by source), 2 copied; 1 file(s) added, 1 removed") {
		t.Errorf("text output: %s", out)
	}
}

// sourceFile writes rows as a source file of format and returns its path;
// parquet is a data file of a table ingested from them.
func sourceFile(t *testing.T, dir, format string, rows []upsertRow) string {
	t.Helper()
	switch format {
	case "csv":
		var b strings.Builder
		b.WriteString("id,city,v\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "%d,%s,%g\n", r.ID, r.City, r.V)
		}
		p := filepath.Join(dir, "source.csv")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	case "parquet":
		nd := filepath.Join(dir, "source-in.ndjson")
		writeNDJSON(t, nd, rows)
		st := filepath.Join(dir, "source-table")
		mustRun(t, "create", st, "--schema", "id long, city string, v double")
		mustRun(t, "ingest", nd, st)
		files, err := filepath.Glob(filepath.Join(st, "part-*.parquet"))
		if err != nil || len(files) != 1 {
			t.Fatalf("source table files %v, %v", files, err)
		}
		return files[0]
	}
	p := filepath.Join(dir, "source.ndjson")
	writeNDJSON(t, p, rows)
	return p
}

// Bad merge input is refused, and the table is unchanged.
func TestMergeCmdRefusals(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, city string, v double")
	tin := filepath.Join(dir, "target.ndjson")
	writeNDJSON(t, tin, []upsertRow{{1, "ams", 1}, {2, "ber", 2}})
	mustRun(t, "ingest", tin, tbl)
	good := filepath.Join(dir, "good.ndjson")
	writeNDJSON(t, good, []upsertRow{{2, "x", 3}})
	dup := filepath.Join(dir, "dup.ndjson")
	writeNDJSON(t, dup, []upsertRow{{2, "x", 3}, {2, "y", 4}})
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noKey := write("nokey.ndjson", `{"key":2,"city":"x","v":3}`+"\n")
	badType := write("badtype.ndjson", `{"id":"two","city":"x","v":3}`+"\n")
	missing := write("missing.ndjson", `{"id":2,"city":"x"}`+"\n")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"duplicate source keys", []string{"--source", dup, "--on", "id"}, 1, "multiple source rows matched the same target row"},
		{"key missing from the source", []string{"--source", noKey, "--on", "id"}, 1, "--on id: the input's columns are"},
		{"key missing from the table", []string{"--source", good, "--on", "nope"}, 2, "nope"},
		{"key of the wrong type", []string{"--source", badType, "--on", "id"}, 1, "two"},
		{"source lacks a table column", []string{"--source", missing, "--on", "id"}, 1, "merge --merge-schema"},
		{"no source", []string{"--on", "id"}, 2, "--source is required"},
		{"no key", []string{"--source", good}, 2, "--on k1,k2 is required"},
		{"bad when-matched", []string{"--source", good, "--on", "id", "--when-matched", "upsert"}, 2, "--when-matched"},
		{"bad when-not-matched", []string{"--source", good, "--on", "id", "--when-not-matched", "delete"}, 2, "--when-not-matched"},
		{"bad by-source", []string{"--source", good, "--on", "id", "--when-not-matched-by-source", "update-all"}, 2, "--when-not-matched-by-source"},
		{"every clause none", []string{"--source", good, "--on", "id", "--when-matched", "none", "--when-not-matched", "none"}, 2, "nothing to do"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCLI(t, append([]string{"merge", tbl}, tc.args...)...)
			if code != tc.wantCode || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d mentioning %q", code, errs, tc.wantCode, tc.want)
			}
			if strings.Contains(errs, "--merge-on") || strings.Contains(errs, "latest per key") {
				t.Errorf("merge error names ingest's flag or its dedup step: %q", errs)
			}
			if got := catRows(t, tbl); len(got) != 2 || !strings.Contains(got[1], `"city":"ber"`) {
				t.Fatalf("table changed: %v", got)
			}
			if out := mustRun(t, "history", tbl, "-o", "json"); strings.Count(out, `"version"`) != 2 {
				t.Fatalf("history changed:\n%s", out)
			}
		})
	}
}
