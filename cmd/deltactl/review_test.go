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

// writeCSV writes a CSV file with ids from..to and returns its path.
func writeCSV(t *testing.T, path string, from, to int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,v\n")
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d,x%d\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tableIDs returns the sorted ids of the table's rows.
func tableIDs(t *testing.T, tbl string) []int64 {
	t.Helper()
	var ids []int64
	for _, line := range strings.Split(strings.TrimSpace(mustRun(t, "cat", tbl, "--limit", "0", "--format", "jsonl")), "\n") {
		var row struct{ ID int64 }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		ids = append(ids, row.ID)
	}
	slices.Sort(ids)
	return ids
}

func seq(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// TestResumeRefusesOtherEpochRows: a restart with another --epoch-rows would
// resume at epoch × the new size and ingest rows twice; the epoch commits
// record the size and the restart is refused.
func TestResumeRefusesOtherEpochRows(t *testing.T) {
	dir := t.TempDir()
	ten := writeCSV(t, filepath.Join(dir, "ten.csv"), 1, 10)
	tbl := filepath.Join(dir, "t")
	mustRun(t, "ingest", ten, tbl, "--epoch-rows", "4", "--query-id", "q", "--max-epochs", "1")

	log := mustRun(t, "log", tbl, "-o", "json")
	for _, want := range []string{`"epochRows": "4"`, `"inputFiles": "[{\"name\":\"ten.csv\",\"size\":`, `"epochId": "0"`, `"queryId": "q"`, `"outputMode": "Append"`} {
		if !strings.Contains(log, want) {
			t.Errorf("epoch commit lacks %s:\n%s", want, log)
		}
	}

	for _, args := range [][]string{
		{"ingest", ten, tbl, "--epoch-rows", "1", "--query-id", "q"},
		{"ingest", ten, tbl, "--epoch-rows", "1", "--query-id", "q", "--from-epoch", "0"},
	} {
		out, errs, code := runCLI(t, args...)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
		}
		for _, want := range []string{"--epoch-rows 1", "4 rows per epoch", "query q", "--epoch-rows 4"} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr %q lacks %q", errs, want)
			}
		}
	}
	if got := tableIDs(t, tbl); !slices.Equal(got, seq(1, 4)) {
		t.Fatalf("after the refused restarts: ids %v, want 1..4", got)
	}
	mustRun(t, "ingest", ten, tbl, "--epoch-rows", "4", "--query-id", "q")
	if got := tableIDs(t, tbl); !slices.Equal(got, seq(1, 10)) {
		t.Fatalf("after the resume: ids %v, want 1..10", got)
	}
	if out, errs, code := runCLI(t, "verify", "--exactly-once", tbl); code != 0 {
		t.Fatalf("verify --exactly-once: exit %d\n%s%s", code, out, errs)
	}
}

// TestResumeChecksInput: the epoch commits record the input files (names
// and sizes); a restart on other files is refused, one on a file that grew
// (rows appended) resumes.
func TestResumeChecksInput(t *testing.T) {
	dir := t.TempDir()
	in := writeCSV(t, filepath.Join(dir, "in.csv"), 1, 6)
	other := writeCSV(t, filepath.Join(dir, "other.csv"), 1, 6)
	tbl := filepath.Join(dir, "t")
	mustRun(t, "ingest", in, tbl, "--epoch-rows", "2", "--query-id", "q", "--max-epochs", "1")

	out, errs, code := runCLI(t, "ingest", other, tbl, "--epoch-rows", "2", "--query-id", "q")
	if code != 1 || !strings.Contains(errs, "other.csv") || !strings.Contains(errs, "in.csv") {
		t.Fatalf("other input: exit %d, want 1 naming both inputs\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	writeCSV(t, in, 1, 8) // the file grew
	mustRun(t, "ingest", in, tbl, "--epoch-rows", "2", "--query-id", "q")
	if got := tableIDs(t, tbl); !slices.Equal(got, seq(1, 8)) {
		t.Fatalf("ids %v, want 1..8", got)
	}
}

// TestExactlyOnceLogProblems: a gap or a corrupt commit in the log is a
// failed verification (exit 3 with a report), as for plain verify; a
// missing table stays an error (exit 1).
func TestExactlyOnceLogProblems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(logDir string) error
		kind   string
	}{
		{"gap", func(d string) error { return os.Remove(filepath.Join(d, "00000000000000000001.json")) }, "log-gap"},
		{"corrupt commit", func(d string) error {
			return os.WriteFile(filepath.Join(d, "00000000000000000001.json"), []byte("{\"add\": {\"path\": \n"), 0o644)
		}, "corrupt-commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tbl := filepath.Join(dir, "s")
			mustRun(t, "ingest", "testdata/events.ndjson", tbl, "--epoch-rows", "1", "--query-id", "q", "--max-epochs", "3")
			if err := tc.damage(filepath.Join(tbl, "_delta_log")); err != nil {
				t.Fatal(err)
			}
			out, errs, code := runCLI(t, "verify", "--exactly-once", tbl, "-o", "json")
			if code != 3 {
				t.Fatalf("exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			var v ExactlyOnceView
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if v.OK || len(v.Problems) != 1 || v.Problems[0].Kind != tc.kind || v.Problems[0].Version == nil || *v.Problems[0].Version != 1 {
				t.Errorf("report %+v, want one %s problem at version 1", v, tc.kind)
			}
			out, _, code = runCLI(t, "verify", "--exactly-once", tbl)
			if code != 3 || !strings.Contains(out, "PROBLEM "+tc.kind) || !strings.Contains(out, "FAILED") {
				t.Errorf("text: exit %d\n%s", code, out)
			}
		})
	}
	_, errs, code := runCLI(t, "verify", "--exactly-once", filepath.Join(t.TempDir(), "none"))
	if code != 1 || !strings.Contains(errs, "not a Delta table") {
		t.Errorf("missing table: exit %d, want 1: %s", code, errs)
	}
}

// TestReviewMessages: version -o json, log --version past the end, vacuum's
// refusal, the missing region (defaulted) and the help text of -1 defaults.
func TestReviewMessages(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string")
	mustRun(t, "ingest", writeCSV(t, filepath.Join(dir, "a.csv"), 1, 3), tbl)

	var v VersionView
	if out := mustRun(t, "version", "-o", "json"); json.Unmarshal([]byte(out), &v) != nil || v.Version != version {
		t.Errorf("version -o json: %q", out)
	}
	if out := mustRun(t, "version"); !strings.HasPrefix(out, "deltactl "+version+" [github.com/deltakit/deltakit ") {
		t.Errorf("version: %q", out)
	}

	_, errs, code := runCLI(t, "log", tbl, "--version", "5")
	// The error names the operation and the table, as snapshot's does.
	if code != 1 || !strings.HasPrefix(errs, "deltactl: error: log file://"+tbl+": ") || !strings.Contains(errs, "version 5 not found") || !strings.Contains(errs, "latest is 1") || strings.Contains(errs, "does not exist") {
		t.Errorf("log --version 5: exit %d: %s", code, errs)
	}

	_, errs, code = runCLI(t, "vacuum", tbl, "--retain", "1h")
	if code != 1 || !strings.Contains(errs, "--force") {
		t.Errorf("vacuum --retain 1h: exit %d: %s", code, errs)
	}

	for k, val := range map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "no-config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "no-credentials"),
		"AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, val)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	// No region: the library's default us-east-1 (as with --endpoint), so
	// the error is the missing credentials, not the region.
	_, errs, code = runCLI(t, "snapshot", "s3://bucket/t")
	if code != 1 || strings.Contains(errs, "region") || !strings.Contains(errs, "get credentials") {
		t.Errorf("s3 without a region or credentials: exit %d: %s", code, errs)
	}

	for _, c := range [][]string{{"log"}, {"snapshot"}, {"files"}, {"cat"}, {"ingest"}} {
		out := mustRun(t, append(c, "--help")...)
		if strings.Contains(out, "(default -1)") {
			t.Errorf("%s --help shows the -1 default:\n%s", c[0], out)
		}
	}
}
