package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// pinned is the clock of every command the tests run: commit timestamps,
// file modification times and txn lastUpdated are this instant.
var pinned = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)

// runCLI runs deltactl in-process and returns its stdout, stderr and exit
// code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runCLIAt(t, func() time.Time { return pinned }, args...)
}

// runCLIAt is runCLI with the clock now instead of the pinned one.
func runCLIAt(t *testing.T, now func() time.Time, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(string) string { return "" },
		now:    now,
	})
	return out.String(), errb.String(), code
}

// mustRun runs deltactl and fails unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("deltactl %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

var (
	reUUID      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	reTime      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
	reJSONBytes = regexp.MustCompile(`"(size|sizeBytes|bytes|bytesAdded|bytesRemoved|numOutputBytes|numAddedBytes|numRemovedBytes)": ?("?)\d+("?)`)
	reTextBytes = regexp.MustCompile(`(numOutputBytes|numAddedBytes|numRemovedBytes)=\d+`)
	reHuman     = regexp.MustCompile(`\d+(\.\d)? (B|KiB|MiB|GiB)\b`)
	reSizeCol   = regexp.MustCompile(`(\.parquet +\S+ +)\d+`)
	reBytes     = regexp.MustCompile(`\(\d+ bytes\)`)
	reSpaces    = regexp.MustCompile(` {2,}`)
	rePart      = regexp.MustCompile(`part-\d{5}-<uuid>`)
)

// normalize replaces what differs between runs or between parquet writer
// versions: the temp dir, UUIDs (table ids, file names, txnIds), times other
// than the pinned clock (file modification times from the filesystem) and
// byte sizes of data files. Runs of spaces collapse, so that column
// alignment does not depend on the sizes either.
func normalize(s, dir string) string {
	s = strings.ReplaceAll(s, "file://"+dir, "<dir>")
	s = strings.ReplaceAll(s, dir, "<dir>")
	s = reUUID.ReplaceAllString(s, "<uuid>")
	s = rePart.ReplaceAllString(s, "part-<n>-<uuid>") // file numbers follow the writers' scheduling
	pinnedText := fmtTime(pinned)
	s = reTime.ReplaceAllStringFunc(s, func(m string) string {
		if m == pinnedText {
			return m
		}
		return "<mtime>"
	})
	s = reJSONBytes.ReplaceAllString(s, `"$1": $2<n>$3`)
	s = reTextBytes.ReplaceAllString(s, "$1=<n>")
	s = reHuman.ReplaceAllString(s, "<bytes>")
	s = reSizeCol.ReplaceAllString(s, "${1}<n>")
	s = reBytes.ReplaceAllString(s, "(<n> bytes)")
	return s
}

// normalizeText is normalize plus collapsed runs of spaces, so that column
// alignment does not depend on the normalized values.
func normalizeText(s, dir string) string {
	return reSpaces.ReplaceAllString(normalize(s, dir), "  ")
}

// sortLines sorts the lines of s (for outputs whose row order follows
// random file names).
func sortLines(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/deltactl -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./cmd/deltactl -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestGolden builds tables with the CLI in a temp dir and compares the text
// and JSON output of every inspection command with golden files.
func TestGolden(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "people")
	stream := filepath.Join(dir, "events")

	steps := []struct {
		name   string
		args   []string
		sorted bool
	}{
		{"create.txt", []string{"create", tbl, "--schema", "id long not null, name string, score double, day date, active boolean, seen timestamp_ntz", "--partition-by", "day", "--property", "delta.checkpointInterval=3", "--name", "people", "--description", "golden test table"}, false},
		{"ingest.json", []string{"ingest", "testdata/people.csv", tbl, "-o", "json"}, false},
		{"history.txt", []string{"history", tbl}, false},
		{"history.json", []string{"history", tbl, "-o", "json"}, false},
		{"snapshot.txt", []string{"snapshot", tbl}, false},
		{"snapshot.json", []string{"snapshot", tbl, "-o", "json"}, false},
		{"snapshot-v0.json", []string{"snapshot", tbl, "--version", "0", "-o", "json"}, false},
		{"files.txt", []string{"files", tbl}, false},
		{"files.json", []string{"files", tbl, "-o", "json"}, false},
		{"files-where.txt", []string{"files", tbl, "--where", "day >= DATE '2024-01-02'"}, false},
		{"schema.txt", []string{"schema", tbl}, false},
		{"schema.json", []string{"schema", tbl, "-o", "json"}, false},
		{"log-1.txt", []string{"log", tbl, "--version", "1"}, false},
		{"log-0.json", []string{"log", tbl, "--version", "0", "-o", "json"}, false},
		{"cat.txt", []string{"cat", tbl}, false},
		{"cat.csv", []string{"cat", tbl, "--format", "csv"}, false},
		{"cat.jsonl", []string{"cat", tbl, "-o", "json"}, false},
		{"cat-where.txt", []string{"cat", tbl, "--where", "score > 70 AND day IN (DATE '2024-01-01', '2024-01-02') OR name IS NULL", "--columns", "id,name,score"}, false},
		{"verify.txt", []string{"verify", tbl}, false},
		{"verify.json", []string{"verify", tbl, "-o", "json"}, false},
		{"stream-1.json", []string{"ingest", "testdata/events.ndjson", stream, "--epoch-rows", "1", "--query-id", "q1", "--max-epochs", "2", "-o", "json"}, false},
		{"stream-2.txt", []string{"ingest", "testdata/events.ndjson", stream, "--epoch-rows", "1", "--query-id", "q1", "--from-epoch", "1"}, false},
		{"stream-schema.txt", []string{"schema", stream}, false},
		{"stream-cat.jsonl", []string{"cat", stream, "--format", "jsonl"}, true},
		{"txn.txt", []string{"txn", stream}, false},
		{"txn.json", []string{"txn", stream, "-o", "json"}, false},
		{"exactly-once.txt", []string{"verify", "--exactly-once", stream}, false},
		{"exactly-once.json", []string{"verify", "--exactly-once", stream, "-o", "json"}, false},
		{"history-stream.txt", []string{"history", stream, "--limit", "2"}, false},
	}
	for _, s := range steps {
		out := mustRun(t, s.args...)
		if strings.HasSuffix(s.name, ".json") {
			if !json.Valid([]byte(out)) {
				t.Errorf("%s: output is not JSON:\n%s", s.name, out)
			}
		}
		if strings.HasSuffix(s.name, ".jsonl") {
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !json.Valid([]byte(line)) {
					t.Errorf("%s: line is not JSON: %s", s.name, line)
				}
			}
		}
		if s.sorted {
			out = sortLines(out)
		}
		if strings.HasSuffix(s.name, ".json") {
			golden(t, s.name, normalize(out, dir))
		} else {
			golden(t, s.name, normalizeText(out, dir))
		}
	}
}

// A command whose context ends (SIGINT in main) exits 130 and says it was
// interrupted.
func TestInterruptedExitCode(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"create", dir + "/t", "--schema", "id long"}, env{
		stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(string) string { return "" }, now: func() time.Time { return pinned },
	})
	if code != exitInterrupted || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q; want %d and 'interrupted'", code, errb.String(), exitInterrupted)
	}
}
