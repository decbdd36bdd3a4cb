package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
)

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string")
	mustRun(t, "ingest", "testdata/people.csv", filepath.Join(dir, "p"))
	broken := filepath.Join(dir, "p")
	// Delete one data file of p: verify must fail with exit 3.
	files, _ := filepath.Glob(filepath.Join(broken, "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no data file")
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name    string
		args    []string
		code    int
		errWant string // substring of stderr
	}{
		{"help", []string{"--help"}, 0, ""},
		{"subcommand help", []string{"vacuum", "--help"}, 0, ""},
		{"version", []string{"version"}, 0, ""},
		{"snapshot ok", []string{"snapshot", tbl}, 0, ""},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
		{"unknown flag", []string{"snapshot", "--nope", tbl}, 2, "unknown flag"},
		{"missing argument", []string{"snapshot"}, 2, "deltactl: snapshot takes 1 argument(s), got 0 (deltactl snapshot <table> [flags])\n"},
		{"too many arguments", []string{"history", tbl, tbl}, 2, "deltactl: history takes 1 argument(s), got 2 (deltactl history <table> [flags])\n"},
		{"bad output format", []string{"snapshot", tbl, "-o", "yaml"}, 2, "want table or json"},
		{"bad where", []string{"cat", tbl, "--where", "id >"}, 2, "--where"},
		{"bad schema", []string{"create", filepath.Join(dir, "x"), "--schema", "id lang"}, 2, "unknown type"},
		{"schema required", []string{"create", filepath.Join(dir, "x")}, 2, "--schema is required"},
		{"version and timestamp", []string{"snapshot", tbl, "--version", "0", "--timestamp", "2024-01-01"}, 2, "exclude each other"},
		{"bad retention", []string{"vacuum", tbl, "--retain", "a week"}, 2, "--retain"},
		{"bad target size", []string{"optimize", tbl, "--target-size", "big"}, 2, "--target-size"},
		{"epoch rows without query id", []string{"ingest", "testdata/people.csv", tbl, "--epoch-rows", "2"}, 2, "--query-id"},
		{"not a table", []string{"snapshot", filepath.Join(dir, "nothing")}, 1, "not a Delta table"},
		{"version not found", []string{"snapshot", tbl, "--version", "7"}, 1, "version 7"},
		{"table exists", []string{"create", tbl, "--schema", "id long"}, 1, "already exists"},
		{"vacuum retention too short", []string{"vacuum", tbl, "--retain", "1h"}, 1, "delta.deletedFileRetentionDuration"},
		{"verify ok", []string{"verify", tbl}, 0, ""},
		{"verify failed", []string{"verify", broken}, 3, ""},
		{"exactly-once ok without queries", []string{"verify", "--exactly-once", tbl}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, out, errs)
			}
			if tc.errWant != "" && !strings.Contains(errs, tc.errWant) {
				t.Errorf("stderr %q does not contain %q", errs, tc.errWant)
			}
			if tc.code == 0 && errs != "" {
				t.Errorf("stderr not empty on success: %q", errs)
			}
		})
	}
}

// TestHelpEverywhere runs --help on every command.
func TestHelpEverywhere(t *testing.T) {
	root := newRootCmd(&app{env: env{getenv: func(string) string { return "" }}})
	for _, c := range root.Commands() {
		out, _, code := runCLI(t, c.Name(), "--help")
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, "deltactl "+c.Name()) {
			t.Errorf("%s --help: exit %d\n%s", c.Name(), code, out)
		}
	}
}

// TestExactlyOnceFailure makes a log whose streaming query repeats an epoch
// and skips one: verify --exactly-once must exit 3 and say why.
func TestExactlyOnceFailure(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "s")
	mustRun(t, "ingest", "testdata/events.ndjson", tbl, "--epoch-rows", "1", "--query-id", "q", "--max-epochs", "2")
	ctx := context.Background()
	store, err := objectstore.Open(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := txlog.Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	for _, epoch := range []int64{1, 3} { // a repeat of 1, then a gap at 2
		tx := txlog.NewTransaction(snap, "STREAMING UPDATE")
		tx.Add(txlog.Action{Txn: &txlog.Txn{AppID: "q", Version: epoch}})
		tx.SetOperationParameters(map[string]string{"queryId": "q", "epochId": jsonInt(epoch), "outputMode": "Append"})
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	out, _, code := runCLI(t, "verify", "--exactly-once", tbl, "-o", "json")
	if code != 3 {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	var v ExactlyOnceView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	q := v.Queries[0]
	if v.OK || q.OK || len(q.Repeats) != 1 || q.Repeats[0].Epoch != 1 || len(q.Gaps) != 1 || q.Gaps[0] != "2" {
		t.Errorf("report %+v", v)
	}
	text, _, _ := runCLI(t, "verify", "--exactly-once", tbl)
	for _, want := range []string{"NOT exactly once", "gaps: 2", "repeat: epoch 1 committed by versions [1 2]"} {
		if !strings.Contains(text, want) {
			t.Errorf("text output lacks %q:\n%s", want, text)
		}
	}
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestMaintenanceCLI: optimize compacts and keeps the rows, vacuum's dry
// run lists the compacted files without deleting them, a forced vacuum
// deletes them, and verify stays clean throughout.
func TestMaintenanceCLI(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "m")
	mustRun(t, "create", tbl, "--schema", "id long not null, name string, score double, day date, active boolean, seen timestamp_ntz")
	for range 4 {
		mustRun(t, "ingest", "testdata/people.csv", tbl)
	}
	before := mustRun(t, "cat", tbl, "--format", "csv", "--limit", "0")
	var opt OptimizeView
	if err := json.Unmarshal([]byte(mustRun(t, "optimize", tbl, "-o", "json")), &opt); err != nil {
		t.Fatal(err)
	}
	if !opt.Committed || opt.FilesRemoved != 4 || opt.FilesAdded != 1 || opt.Rows != 20 {
		t.Fatalf("optimize %+v", opt)
	}
	if after := mustRun(t, "cat", tbl, "--format", "csv", "--limit", "0"); sortLines(after) != sortLines(before) {
		t.Errorf("rows changed by optimize:\n%s\nvs\n%s", after, before)
	}
	if h := mustRun(t, "history", tbl, "--limit", "1"); !strings.Contains(h, "OPTIMIZE") {
		t.Errorf("history: %s", h)
	}
	// Vacuum measures retention from the table's clock and, as Spark's,
	// keeps a file modified within it; the files' modification times are the
	// filesystem's, after the pinned clock: vacuum at the real time (as
	// TestS3 does), when the removes (stamped with the pinned clock) are past
	// any retention and the files' modification times decide.
	vacuum := func(args ...string) string {
		t.Helper()
		out, errs, code := runCLIAt(t, time.Now, append([]string{"vacuum", tbl}, args...)...)
		if code != 0 {
			t.Fatalf("deltactl vacuum %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		return out
	}
	var dry VacuumView
	if err := json.Unmarshal([]byte(vacuum("--retain", "0h", "--force", "--dry-run", "-o", "json")), &dry); err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || dry.NumFiles != 4 {
		t.Fatalf("dry run %+v", dry)
	}
	for _, f := range dry.Files {
		if _, err := os.Stat(filepath.Join(tbl, f.Path)); err != nil {
			t.Errorf("dry run deleted %s", f.Path)
		}
		if f.Removed == "" {
			t.Errorf("%s: no removal time", f.Path)
		}
	}
	// The default retention keeps the compacted files.
	if v := vacuum(); !strings.Contains(v, "deleted 0 file(s)") {
		t.Errorf("vacuum with the default retention: %s", v)
	}
	if v := vacuum("--retain", "0h", "--force"); !strings.Contains(v, "deleted 4 file(s)") {
		t.Errorf("forced vacuum: %s", v)
	}
	for _, f := range dry.Files {
		if _, err := os.Stat(filepath.Join(tbl, f.Path)); !os.IsNotExist(err) {
			t.Errorf("%s survived the vacuum", f.Path)
		}
	}
	mustRun(t, "verify", tbl)
	if after := mustRun(t, "cat", tbl, "--format", "csv", "--limit", "0"); sortLines(after) != sortLines(before) {
		t.Errorf("rows changed by vacuum")
	}
	// checkpoint and cleanup.
	if out := mustRun(t, "checkpoint", tbl); !strings.Contains(out, "checkpoint of version 5 written") {
		t.Errorf("checkpoint: %s", out)
	}
	if out := mustRun(t, "cleanup", tbl, "--dry-run"); !strings.Contains(out, "would delete 0 log file(s)") {
		t.Errorf("cleanup: %s", out)
	}
	var vv VerifyView
	out, _, _ := runCLI(t, "verify", tbl, "-o", "json")
	if err := json.Unmarshal([]byte(out), &vv); err != nil {
		t.Fatal(err)
	}
	if !vv.OK || vv.Checkpoints != 1 || vv.Files != 1 {
		t.Errorf("verify %+v", vv)
	}
}

func TestParseWhere(t *testing.T) {
	sch := schema.NewStruct(
		schema.NewField("delay", schema.Primitive(schema.Long), true),
		schema.NewField("origin", schema.Primitive(schema.String), true),
		schema.NewField("price", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		schema.NewField("ratio", schema.Primitive(schema.Double), true),
		schema.NewField("s", schema.NewStruct(schema.NewField("x", schema.Primitive(schema.Long), true)), true),
	)
	for _, tc := range []struct{ in, want string }{
		{"delay > 10 AND origin = 'SFO'", "(delay > 10 AND origin = 'SFO')"},
		{"delay > 10 and (origin = 'SFO' or origin = 'LAX')", "(delay > 10 AND (origin = 'SFO' OR origin = 'LAX'))"},
		{"x IN (1,2)", "x IN (1, 2)"},
		{"y IS NULL", "y IS NULL"},
		{"y is not null", "y IS NOT NULL"},
		{"origin NOT IN ('a', 'b')", "NOT origin IN ('a', 'b')"},
		{"NOT delay <= -3", "NOT delay <= -3"},
		{"delay BETWEEN 1 AND 5", "(delay >= 1 AND delay <= 5)"},
		{"price = 12.50", "price = 12.50"},
		{"ratio < 1", "ratio < 1"},
		{"s.x != 2", "s.x != 2"},
		{"`odd name` <> 'it''s'", "`odd name` != 'it''s'"},
		{"d >= DATE '2024-01-31'", "d >= DATE '2024-01-31'"},
		{"flag = TRUE", "flag = true"},
	} {
		e, err := parseWhere(tc.in, sch)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := e.String(); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "delay >", "delay > 1 AND", "(delay > 1", "delay = NULL", "delay ! 1", "'x' = 1", "delay IN ()", "delay > 1 extra", "a = 'unterminated", "delay NOT 5", "a IS 5"} {
		if _, err := parseWhere(bad, sch); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseDDL(t *testing.T) {
	st, err := parseDDL("id long not null, name string comment 'the name', price decimal(10, 2), tags array<string>, attrs map<string, int>, p struct<x: double, y:double not null>, `odd col` timestamp_ntz, d DATE")
	if err != nil {
		t.Fatal(err)
	}
	want := "struct<id:long,name:string,price:decimal(10,2),tags:array<string>,attrs:map<string,integer>,p:struct<x:double,y:double>,odd col:timestamp_ntz,d:date>"
	if st.String() != want {
		t.Errorf("got  %s\nwant %s", st, want)
	}
	if st.Fields[0].Nullable || !st.Fields[1].Nullable || st.Fields[1].Metadata["comment"] != "the name" {
		t.Errorf("nullability or comment wrong: %+v %+v", st.Fields[0], st.Fields[1])
	}
	if p := st.Fields[5].Type.(*schema.StructType); p.Fields[1].Nullable {
		t.Errorf("nested not null lost")
	}
	for _, bad := range []string{"id", "id lang", "id long, id string", "a decimal(50,2)", "a map<string>", "a array<string", "a long nullable"} {
		if _, err := parseDDL(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 9: "9 B", 1000: "1000 B", 1536: "1.5 KiB", 12_900_000: "12 MiB",
		3 << 29: "1.5 GiB", 130 << 30: "130 GiB", -1: "0 B"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParseSizeAndRetention(t *testing.T) {
	for in, want := range map[string]int64{"128MB": 128 << 20, "64MiB": 64 << 20, "1g": 1 << 30, "1048576": 1 << 20, "512 KB": 512 << 10,
		"1.5GiB": 3 << 29, "2k": 2 << 10, "64mb": 64 << 20, " 8 M ": 8 << 20, "100B": 100, "1TB": 1 << 40, "0.5KiB": 512} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1MB", "big", "12XB", "MB", "16EiB", "0.1B"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q): no error", bad)
		}
	}
	if d, err := parseRetention("7d"); err != nil || d.Hours() != 168 {
		t.Errorf("7d = %v, %v", d, err)
	}
	if d, err := parseRetention("168h"); err != nil || d.Hours() != 168 {
		t.Errorf("168h = %v, %v", d, err)
	}
}

// corpusDir returns the conformance corpus (testsupport.CorpusDir: a
// failure under CI=true when it is missing, a skip elsewhere).
func corpusDir(t *testing.T) string { return testsupport.CorpusDir(t) }

// TestCorpus runs the read-only commands on every corpus table (read-only:
// nothing is written there) and checks them against expected.json.
func TestCorpus(t *testing.T) {
	dir := corpusDir(t)
	n := 0
	for _, exp := range testsupport.CorpusTables(t, dir) {
		root := filepath.Join(dir, exp.Table, exp.Root)
		n++
		t.Run(exp.Table, func(t *testing.T) {
			out, errs, code := runCLI(t, "snapshot", root, "-o", "json")
			if exp.Expect != "read" {
				if code != 1 {
					t.Errorf("expect %s: snapshot exit %d, want 1", exp.Expect, code)
				}
				return
			}
			if code == 1 && strings.Contains(errs, "unsupported table reader feature") {
				t.Logf("REFUSED: %s", strings.TrimSpace(errs))
				return
			}
			if code != 0 {
				t.Fatalf("snapshot exit %d: %s", code, errs)
			}
			var snap SnapshotView
			if err := json.Unmarshal([]byte(out), &snap); err != nil {
				t.Fatal(err)
			}
			if snap.Version != exp.LatestVersion || snap.Protocol.MinReaderVersion != exp.Protocol.MinReaderVersion ||
				snap.Protocol.MinWriterVersion != exp.Protocol.MinWriterVersion {
				t.Errorf("snapshot version %d protocol %d/%d, want %d %d/%d", snap.Version, snap.Protocol.MinReaderVersion,
					snap.Protocol.MinWriterVersion, exp.LatestVersion, exp.Protocol.MinReaderVersion, exp.Protocol.MinWriterVersion)
			}
			if exp.RowsLatest != nil && snap.FilesWithoutStats == 0 && snap.NumRows != *exp.RowsLatest {
				t.Errorf("rows from stats %d, want %d", snap.NumRows, *exp.RowsLatest)
			}
			var files FilesView
			if err := json.Unmarshal([]byte(mustRun(t, "files", root, "-o", "json")), &files); err != nil {
				t.Fatal(err)
			}
			if len(files.Files) != snap.NumFiles {
				t.Errorf("files lists %d, snapshot counts %d", len(files.Files), snap.NumFiles)
			}
			var hist HistoryView
			if err := json.Unmarshal([]byte(mustRun(t, "history", root, "-o", "json", "--limit", "3")), &hist); err != nil {
				t.Fatal(err)
			}
			if len(hist.Commits) == 0 || hist.Commits[0].Version != snap.Version {
				t.Errorf("history %+v", hist.Commits)
			}
			for _, args := range [][]string{{"schema", root, "-o", "json"}, {"txn", root, "-o", "json"}, {"log", root, "-o", "json"}, {"schema", root}} {
				mustRun(t, args...)
			}
			vout, verrs, vcode := runCLI(t, "verify", root, "-o", "json")
			var vv VerifyView
			if err := json.Unmarshal([]byte(vout), &vv); err != nil {
				t.Fatalf("verify exit %d: %v\n%s", vcode, err, verrs)
			}
			for _, p := range vv.Problems {
				// Some corpus tables ship without (some of) their data files.
				if p.Kind != "missing-file" {
					t.Errorf("verify: %s %s: %s", p.Kind, p.Path, p.Detail)
				}
			}
			if (vcode == 0) != vv.OK || (vcode != 0 && vcode != 3) {
				t.Errorf("verify exit %d with ok %v", vcode, vv.OK)
			}
			if vv.OK {
				out, errs, code := runCLI(t, "cat", root, "--limit", "3", "--format", "jsonl")
				if code != 0 {
					t.Errorf("cat exit %d: %s", code, errs)
				}
				if want := min(3, int(snap.NumRows)); snap.FilesWithoutStats == 0 && strings.Count(out, "\n") != want {
					t.Errorf("cat printed %d rows, want %d", strings.Count(out, "\n"), want)
				}
			}
			mustRun(t, "verify", "--exactly-once", root)
		})
	}
	if n == 0 {
		t.Fatal("no corpus table with expected.json")
	}
}

// TestCorpusGolden compares the text output of a few commands on corpus
// tables with golden files.
func TestCorpusGolden(t *testing.T) {
	dir := corpusDir(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"corpus-delta-1.2.1-history.txt", []string{"history", "spark__delta-1.2.1"}},
		{"corpus-delta-1.2.1-snapshot.json", []string{"snapshot", "spark__delta-1.2.1", "-o", "json"}},
		{"corpus-partition-values-files.txt", []string{"files", "golden__data-reader-partition-values"}},
		{"corpus-dv-small-cat.txt", []string{"cat", "deltars__table-with-dv-small"}},
		{"corpus-nested-schema.txt", []string{"schema", "golden__data-reader-nested-struct"}},
	} {
		args := append([]string{}, tc.args...)
		args[1] = filepath.Join(dir, args[1])
		out := mustRun(t, args...)
		// Corpus files are fixed; only the directory and the snapshot's
		// commit time (a file modification time, which git does not keep)
		// vary.
		out = strings.ReplaceAll(out, "file://"+dir, "<corpus>")
		out = reSnapshotTime.ReplaceAllString(out, `"timestamp": "<mtime>"`)
		if tc.args[0] == "history" {
			// history's TIMESTAMP is time travel's: the modification time.
			out = reHistoryTime.ReplaceAllString(out, "${1}<mtime>   ")
		}
		golden(t, tc.name, out)
	}
}

var (
	reSnapshotTime = regexp.MustCompile(`"timestamp": "[^"]*"`)
	reHistoryTime  = regexp.MustCompile(`(?m)^(\d+ +)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`)
)

// TestProgressOnlyOnTerminal: with a terminal the bar goes to stderr and
// stdout keeps only the report; without one (every other test) nothing is
// drawn; --progress=false and -o json turn it off too.
func TestProgressOnlyOnTerminal(t *testing.T) {
	dir := t.TempDir()
	runTTY := func(args ...string) (string, string) {
		t.Helper()
		var out, errb strings.Builder
		code := run(context.Background(), args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, tty: true,
			getenv: func(string) string { return "" }})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String(), errb.String()
	}
	var csv strings.Builder
	csv.WriteString("id,v\n")
	for i := range 40000 {
		fmt.Fprintf(&csv, "%d,%d.5\n", i, i)
	}
	big := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(big, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs := runTTY("ingest", big, filepath.Join(dir, "a"))
	if !strings.Contains(errs, "ingest") || !strings.Contains(errs, "%") || strings.Contains(out, "%") {
		t.Errorf("tty: stdout %q, stderr %q", out, errs)
	}
	if _, errs := runTTY("ingest", "testdata/people.csv", filepath.Join(dir, "b"), "--progress=false"); errs != "" {
		t.Errorf("--progress=false drew on stderr: %q", errs)
	}
	if _, errs := runTTY("ingest", "testdata/people.csv", filepath.Join(dir, "c"), "-o", "json"); errs != "" {
		t.Errorf("-o json drew on stderr: %q", errs)
	}
	for range 3 {
		runTTY("ingest", big, filepath.Join(dir, "a"), "--progress=false")
	}
	if _, errs := runTTY("optimize", filepath.Join(dir, "a")); !strings.Contains(errs, "optimize") {
		t.Errorf("optimize drew no bar: %q", errs)
	}
	if _, errs := runTTY("vacuum", filepath.Join(dir, "a"), "--retain", "0h", "--force"); !strings.Contains(errs, "vacuum") {
		t.Errorf("vacuum drew no bar: %q", errs)
	}
}

// FuzzParseInput: the --where and --schema parsers return errors for bad
// input and never panic.
func FuzzParseInput(f *testing.F) {
	for _, s := range []string{"delay > 10 AND origin = 'SFO'", "x IN (1,2)", "y IS NULL", "a.b BETWEEN 1 AND 2", "NOT (a = 'it''s')",
		"id long not null, m map<string, array<struct<a:int>>>", "`a b` decimal(3,1) comment 'x'", "(((", "'", "`"} {
		f.Add(s)
	}
	sch := schema.NewStruct(schema.NewField("delay", schema.Primitive(schema.Long), true), schema.NewField("p", &schema.DecimalType{Precision: 5, Scale: 2}, true))
	f.Fuzz(func(t *testing.T, s string) {
		if e, err := parseWhere(s, sch); err == nil && e == nil {
			t.Errorf("%q: nil expression without error", s)
		}
		if st, err := parseDDL(s); err == nil && st == nil {
			t.Errorf("%q: nil schema without error", s)
		}
	})
}

// TestCatColumnsTopLevel: --columns selects top-level columns (matched as
// table.WithColumns matches them); a nested field of a struct column, or
// an unknown name, is a usage error saying that only top-level columns can
// be selected and listing them, for cat and changes.
func TestCatColumnsTopLevel(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, s struct<a: long, b: string>", "--property", "delta.enableChangeDataFeed=true")
	in := filepath.Join(dir, "in.ndjson")
	if err := os.WriteFile(in, []byte(`{"id":1,"s":{"a":1,"b":"x"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ingest", in, tbl)
	const list = "the columns are: id, s"
	for _, tc := range []struct {
		args []string
		code int
		want string // in stdout (exit 0) or stderr
	}{
		{[]string{"cat", tbl, "--columns", "s", "--format", "csv"}, 0, "s\n\"{\"\"a\"\":1,\"\"b\"\":\"\"x\"\"}\"\n"},
		{[]string{"cat", tbl, "--columns", "S,ID", "--format", "csv"}, 0, "s,id\n"},
		{[]string{"cat", tbl, "--columns", "s.b"}, 2, "--columns s.b: only top-level columns can be selected, and s.b is a field of struct column s (select s; --where can filter on s.b); " + list},
		{[]string{"cat", tbl, "--columns", "id,S.a"}, 2, "S.a is a field of struct column s"},
		{[]string{"cat", tbl, "--columns", "nope"}, 2, "--columns nope: no such column (only top-level columns can be selected); " + list},
		{[]string{"cat", tbl, "--columns", "id.x"}, 2, "--columns id.x: no such column"},
		{[]string{"cat", tbl, "--columns", "s.b", "-o", "arrow"}, 2, "only top-level columns"},
		{[]string{"changes", tbl, "--from", "1", "--columns", "s.a"}, 2, "s.a is a field of struct column s"},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			out, errs, code := runCLI(t, tc.args...)
			got := errs
			if tc.code == 0 {
				got = out
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d with %q", code, out, errs, tc.code, tc.want)
			}
		})
	}
}

// TestTypeMismatchMessagesNameDeltaTypes: a --where or --set literal that
// does not fit its column is refused with the literal's Delta type, never
// a Go type name (int64, string, value.Date, ...).
func TestTypeMismatchMessagesNameDeltaTypes(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "t")
	mustRun(t, "create", tbl, "--schema", "id long, s string, d date, dec decimal(10,2)")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cat", tbl, "--where", "id = 'abc'"}, "value 'abc' (a string literal) does not fit column id of type long"},
		{[]string{"cat", tbl, "--where", "s = 5"}, "value 5 (a long literal) does not fit column s of type string"},
		{[]string{"cat", tbl, "--where", "s = 1.5"}, "value 1.5 (a double literal) does not fit column s of type string"},
		{[]string{"cat", tbl, "--where", "id = TRUE"}, "value true (a boolean literal) does not fit column id of type long"},
		{[]string{"cat", tbl, "--where", "id = DATE '2024-01-01'"}, "value DATE '2024-01-01' (a date literal) does not fit column id of type long"},
		{[]string{"cat", tbl, "--where", "id = TIMESTAMP '2024-01-01 00:00:00'"}, "(a timestamp literal) does not fit column id of type long"},
		{[]string{"delete", tbl, "--where", "dec = 'x'"}, "value 'x' (a string literal) does not fit column dec of type decimal(10,2)"},
		{[]string{"update", tbl, "--where", "id = 1", "--set", "d = 5"}, "value 5 (a long literal) does not fit column d of type date"},
	} {
		t.Run(strings.Join(tc.args[2:], " "), func(t *testing.T) {
			_, errs, code := runCLI(t, tc.args...)
			if code == 0 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "Go type") {
				t.Errorf("exit %d, stderr %q; want a failure with %q and no Go type", code, errs, tc.want)
			}
		})
	}
}
