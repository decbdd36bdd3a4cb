package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rivo/uniseg"

	"github.com/deltakit/deltakit/table"
)

// runCLIIn is runCLI with stdin.
func runCLIIn(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, env{
		stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(string) string { return "" },
		now:    func() time.Time { return pinned },
	})
	return out.String(), errb.String(), code
}

// TestIngestConcurrentFirstWrites runs several ingests into one new table at
// once: one creates it, the others append, no row is lost.
func TestIngestConcurrentFirstWrites(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := "batch"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			const n = 6
			tbl := filepath.Join(t.TempDir(), "t")
			var wg sync.WaitGroup
			codes := make([]int, n)
			errs := make([]string, n)
			start := make(chan struct{})
			for w := range n {
				wg.Go(func() {
					<-start
					in := writeCSV(t, filepath.Join(t.TempDir(), "in.csv"), w*100, w*100+9)
					args := []string{"ingest", in, tbl}
					if stream {
						args = append(args, "--epoch-rows", "5", "--query-id", "q"+string(rune('a'+w)))
					}
					_, errs[w], codes[w] = runCLI(t, args...)
				})
			}
			close(start)
			wg.Wait()
			for w := range n {
				if codes[w] != 0 {
					t.Fatalf("ingest %d: exit %d: %s", w, codes[w], errs[w])
				}
			}
			var want []int64
			for w := range n {
				want = append(want, seq(int64(w*100), int64(w*100+9))...)
			}
			slices64Sort(want)
			if got := tableIDs(t, tbl); !equal64(got, want) {
				t.Fatalf("ids %v, want %v", got, want)
			}
			h := mustRun(t, "history", tbl, "-o", "json")
			var view struct {
				Commits []struct {
					Version   int64  `json:"version"`
					Operation string `json:"operation"`
				} `json:"commits"`
			}
			if err := json.Unmarshal([]byte(h), &view); err != nil {
				t.Fatalf("%v\n%s", err, h)
			}
			// One version per write: the batch ingests one each (the
			// winner's CREATE TABLE AS SELECT, the others' WRITE), the
			// stream ones one per epoch (two each), the first of them
			// creating the table (STREAMING UPDATE at version 0).
			wantVersions, wantFirst := n, table.CreateTableAsSelectOperation
			if stream {
				wantVersions, wantFirst = 2*n, table.StreamingUpdateOperation
			}
			ops := map[int64]string{}
			hist := view.Commits
			for _, c := range hist {
				ops[c.Version] = c.Operation
			}
			if len(hist) != wantVersions || ops[0] != wantFirst || strings.Contains(h, `"CREATE TABLE"`) {
				t.Fatalf("history: %d versions, version 0 %q; want %d, %q, no CREATE TABLE commit:\n%s", len(hist), ops[0], wantVersions, wantFirst, h)
			}
		})
	}
}

func slices64Sort(s []int64) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func equal64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestIngestStdin: "-" reads standard input once; a fifo too.
func TestIngestStdin(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	out, errs, code := runCLIIn(t, "{\"id\":1,\"s\":\"a\"}\n{\"id\":2,\"s\":\"b\"}\n", "ingest", "-", tbl)
	if code != 0 || !strings.Contains(out, "2 rows") {
		t.Fatalf("ingest -: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runCLIIn(t, "id,s\n3,c\n", "ingest", "-", tbl, "--format", "csv")
	if code != 0 || !strings.Contains(out, "1 rows") {
		t.Fatalf("ingest - --format csv: exit %d\n%s%s", code, out, errs)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no fifo:", err)
	}
	go func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.WriteString("{\"id\":4,\"s\":\"d\"}\n")
			f.Close()
		}
	}()
	mustRun(t, "ingest", fifo, tbl, "--format", "ndjson")
	if got := tableIDs(t, tbl); !equal64(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("ids %v", got)
	}
}

// TestFailedIngestLeavesNoTable: an ingest into a new table that fails
// writing its rows creates no table.
func TestFailedIngestLeavesNoTable(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "e.ndjson")
	if err := os.WriteFile(in, []byte("{\"a\":1e400}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--epoch-rows", "1", "--query-id", "q"}} {
		tbl := filepath.Join(t.TempDir(), "t")
		_, errs, code := runCLI(t, append([]string{"ingest", in, tbl}, extra...)...)
		if code != 1 || !strings.Contains(errs, "column a: 1e400 is not a double") {
			t.Fatalf("ingest %v: exit %d: %s", extra, code, errs)
		}
		if _, err := os.Stat(filepath.Join(tbl, "_delta_log")); !os.IsNotExist(err) {
			entries, _ := os.ReadDir(filepath.Join(tbl, "_delta_log"))
			t.Fatalf("ingest %v: failed ingest left a log behind: %v", extra, entries)
		}
		if entries, _ := os.ReadDir(tbl); len(entries) != 0 {
			t.Fatalf("ingest %v: failed ingest left files: %v", extra, entries)
		}
	}
}

// TestIngestMergeSchema: a new column is refused naming --merge-schema,
// and added with it.
func TestIngestMergeSchema(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "ingest", "testdata/people.csv", tbl)
	extra := filepath.Join(dir, "x.ndjson")
	if err := os.WriteFile(extra, []byte("{\"id\":9,\"city\":\"Oslo\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, stream := range [][]string{nil, {"--epoch-rows", "1", "--query-id", "q"}} {
		_, errs, code := runCLI(t, append([]string{"ingest", extra, tbl}, stream...)...)
		if code != 1 || !strings.Contains(errs, `column "city" is not in the table schema (use ingest --merge-schema to add it)`) {
			t.Fatalf("ingest %v without --merge-schema: exit %d: %s", stream, code, errs)
		}
	}
	// The first ingest created the table with its rows: version 0.
	if out := mustRun(t, "snapshot", tbl, "-o", "json"); !strings.Contains(out, `"version": 0,`) {
		t.Fatalf("refused ingests changed the table:\n%s", out)
	}
	mustRun(t, "ingest", extra, tbl, "--merge-schema")
	if out := mustRun(t, "schema", tbl); !strings.Contains(out, "city") {
		t.Fatalf("schema after --merge-schema:\n%s", out)
	}
	h := mustRun(t, "history", tbl, "-o", "json")
	if !strings.Contains(h, `"mergeSchema": "true"`) || !strings.Contains(h, `"version": 1,`) || strings.Contains(h, `"version": 2,`) {
		t.Fatalf("want one commit (1) with the schema change and the rows:\n%s", h)
	}
	// Streaming: the schema change commits with the first epoch, in one
	// version (2).
	extra2 := filepath.Join(dir, "y.ndjson")
	if err := os.WriteFile(extra2, []byte("{\"id\":10,\"zip\":\"0150\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ingest", extra2, tbl, "--merge-schema", "--epoch-rows", "1", "--query-id", "q")
	if got := tableIDs(t, tbl); !equal64(got, []int64{1, 2, 3, 4, 5, 9, 10}) {
		t.Fatalf("ids %v", got)
	}
	if out := mustRun(t, "snapshot", tbl, "-o", "json"); !strings.Contains(out, `"version": 2,`) {
		t.Fatalf("want the streaming ingest in one commit (2):\n%s", out)
	}
}

// TestIngestNDJSONError: a cut line says what is wrong.
func TestIngestNDJSONError(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "f.ndjson")
	if err := os.WriteFile(in, []byte("{\"id\":1}\n{\"id\": 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runCLI(t, "ingest", in, filepath.Join(dir, "t"))
	if code != 1 || !strings.Contains(errs, "f.ndjson:2: invalid JSON at byte 8: unexpected end of JSON input") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestCatWideCharacters: columns stay aligned by display width.
func TestCatWideCharacters(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "t")
	mustRunIn(t, "{\"city\":\"東京\",\"n\":1}\n{\"city\":\"Oslo\",\"n\":2}\n{\"city\":\"Zürich\",\"n\":3}\n", "ingest", "-", tbl)
	out := mustRun(t, "cat", tbl)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("output:\n%s", out)
	}
	want := -1
	for _, l := range lines {
		i := strings.LastIndex(l, "  ")
		col := uniseg.StringWidth(l[:i+2])
		if want < 0 {
			want = col
		}
		if col != want {
			t.Fatalf("column n starts at display column %d in %q, %d in the header:\n%s", col, l, want, out)
		}
	}
}

func mustRunIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errs, code := runCLIIn(t, stdin, args...)
	if code != 0 {
		t.Fatalf("deltactl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// TestCLIRoughEdges: negative counts, a --where type mismatch, version.
func TestCLIRoughEdges(t *testing.T) {
	tbl := filepath.Join(t.TempDir(), "p")
	mustRun(t, "ingest", "testdata/people.csv", tbl)
	for _, args := range [][]string{
		{"cat", tbl, "-n", "-5"},
		{"history", tbl, "-n", "-1"},
	} {
		_, errs, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(errs, "must be >= 0") {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
	for _, format := range []string{"table", "csv", "jsonl"} {
		out, errs, code := runCLI(t, "cat", tbl, "--format", format, "--where", "id = 'x'")
		if code == 0 || out != "" || !strings.Contains(errs, "does not fit column id") {
			t.Errorf("cat --format %s --where with a type mismatch: exit %d, stdout %q, stderr %q", format, code, out, errs)
		}
	}
	var v VersionView
	if err := json.Unmarshal([]byte(mustRun(t, "version", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Version != version || v.Module != "github.com/deltakit/deltakit" {
		t.Errorf("version %+v", v)
	}
	info := &debug.BuildInfo{GoVersion: "go1.26", Main: debug.Module{Path: "github.com/deltakit/deltakit", Version: "v0.1.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionView(info, true).String(), "deltactl "+version+" [github.com/deltakit/deltakit v0.1.0; commit abc123 (2026-01-02T03:04:05Z), modified; go1.26]"; got != want {
		t.Errorf("version line %q, want %q", got, want)
	}
}

// TestIngestErrorsNameInputAndTable checks that a refused ingest into an
// existing table names the input file, the table and the reason (a
// NOT NULL violation by its row in the whole input, not in its batch),
// exits 1 and commits nothing.
func TestIngestErrorsNameInputAndTable(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long not null, name string")
	for _, tc := range []struct {
		name, csv string
		args      []string
		want      string
	}{
		{"missing not null column", "name\nx\n", nil,
			`ingest in.csv into ` + tbl + `: table: schema mismatch: NOT NULL column "id" is missing from the input`},
		{"column the table lacks", "id,nosuch\n1,x\n", nil,
			`ingest in.csv into ` + tbl + `: table: schema mismatch: column "nosuch" is not in the table schema (use ingest --merge-schema to add it)`},
		{"null in a NOT NULL column, third row, batches of 2", "id,name\n1,a\n2,b\n,c\n", []string{"--batch-rows", "2"},
			`ingest in.csv: row 3 of the input: column "id": NOT NULL constraint violated (null value) (nothing was committed)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := filepath.Join(t.TempDir(), "in.csv")
			if err := os.WriteFile(in, []byte(tc.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := runCLI(t, append([]string{"ingest", in, tbl}, tc.args...)...)
			stderr = strings.ReplaceAll(stderr, in, "in.csv")
			if code != 1 || stderr != "deltactl: error: "+tc.want+"\n" {
				t.Fatalf("exit %d, stderr %q; want 1, %q", code, stderr, "deltactl: error: "+tc.want+"\n")
			}
			if out := mustRun(t, "log", tbl); !strings.Contains(out, "# version 0:") {
				t.Fatalf("a commit was made:\n%s", out)
			}
		})
	}
}

// TestIngestStreamRowErrorNamesInputRow: a row a streaming ingest's epoch
// refuses is named by its row in the whole input (1-based), as a
// one-commit ingest names it, not by its index in the epoch; the epochs
// before it stay committed.
func TestIngestStreamRowErrorNamesInputRow(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long not null, name string")
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("id,name\n1,a\n2,b\n3,c\n,d\n5,e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "ingest", in, tbl, "--epoch-rows", "2", "--query-id", "q")
	want := "deltactl: error: ingest epoch 1: row 4 of the input: column \"id\": NOT NULL constraint violated (null value)\n"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
	if out := mustRun(t, "cat", tbl, "--format", "csv"); out != "id,name\n1,a\n2,b\n" {
		t.Errorf("table holds %q, want epoch 0's rows", out)
	}
}

// TestIngestFlagsOfExistingTable checks that flags which only shape a new
// table are refused (exit 2, nothing committed) when they do not match the
// existing table, instead of being silently ignored, and that
// --epoch-rows 0 says what is wrong with it.
func TestIngestFlagsOfExistingTable(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string", "--property", "delta.appendOnly=true")
	in := writeCSV(t, filepath.Join(dir, "in.csv"), 1, 3)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"property the table lacks", []string{"--property", "delta.enableChangeDataFeed=true"}, 2,
			"deltactl: --property delta.enableChangeDataFeed=true: table file://" + tbl + " exists and --property applies only when ingest creates a table (its delta.enableChangeDataFeed is unset); change it with deltactl alter set-properties\n"},
		{"property with another value", []string{"--property", "delta.appendOnly=false"}, 2,
			"deltactl: --property delta.appendOnly=false: table file://" + tbl + " exists and --property applies only when ingest creates a table (its delta.appendOnly is \"true\"); change it with deltactl alter set-properties\n"},
		{"epoch-rows 0", []string{"--epoch-rows", "0", "--query-id", "q"}, 2, "deltactl: --epoch-rows must be > 0\n"},
		{"property the table has", []string{"--property", "delta.appendOnly=true"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, append([]string{"ingest", in, tbl}, tc.args...)...)
			if tc.code != 0 {
				stderr = strings.TrimSuffix(stderr, "Run 'deltactl ingest --help' for usage.\n")
			}
			if code != tc.code || stderr != tc.want {
				t.Fatalf("exit %d, stderr %q; want %d, %q", code, stderr, tc.code, tc.want)
			}
		})
	}
	if got := tableIDs(t, tbl); len(got) != 3 {
		t.Fatalf("rows %v: want only the one accepted ingest's 3", got)
	}
}

// TestIngestNewTableOneCommit: an ingest into a new table commits once:
// version 0 holds protocol, metaData, the adds and commitInfo (CREATE TABLE
// AS SELECT with numFiles, numOutputRows, numOutputBytes), and the table
// reads back the input's rows.
func TestIngestNewTableOneCommit(t *testing.T) {
	for _, path := range [][]string{nil, {"--row-path"}} {
		tbl := filepath.Join(t.TempDir(), "t")
		var view IngestView
		if err := json.Unmarshal([]byte(mustRun(t, append([]string{"ingest", "testdata/people.csv", tbl, "-o", "json"}, path...)...)), &view); err != nil {
			t.Fatal(err)
		}
		if !view.Created || view.Version != 0 || view.Rows != 5 {
			t.Fatalf("%v: created %v version %d rows %d, want true 0 5", path, view.Created, view.Version, view.Rows)
		}
		log, err := os.ReadFile(filepath.Join(tbl, "_delta_log", "00000000000000000000.json"))
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		var ci struct {
			Operation           string            `json:"operation"`
			OperationParameters map[string]string `json:"operationParameters"`
			OperationMetrics    map[string]string `json:"operationMetrics"`
		}
		for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
			var a map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatal(err)
			}
			for k, v := range a {
				kinds[k]++
				if k == "commitInfo" {
					if err := json.Unmarshal(v, &ci); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		want := map[string]int{"commitInfo": 1, "protocol": 1, "metaData": 1, "add": view.Files}
		if fmt.Sprint(kinds) != fmt.Sprint(want) {
			t.Fatalf("%v: version 0 actions %v, want %v", path, kinds, want)
		}
		wantMetrics := map[string]string{"numFiles": fmt.Sprint(view.Files), "numOutputRows": "5", "numOutputBytes": fmt.Sprint(view.Bytes)}
		if ci.Operation != "CREATE TABLE AS SELECT" || fmt.Sprint(ci.OperationMetrics) != fmt.Sprint(wantMetrics) ||
			ci.OperationParameters["source"] != "testdata/people.csv" || ci.OperationParameters["partitionBy"] != "[]" {
			t.Fatalf("%v: commitInfo %+v, want CREATE TABLE AS SELECT with metrics %v", path, ci, wantMetrics)
		}
		if _, err := os.Stat(filepath.Join(tbl, "_delta_log", "00000000000000000001.json")); !os.IsNotExist(err) {
			t.Fatalf("%v: version 1 exists (%v): want one commit", path, err)
		}
		// The rows, against the input parsed here.
		f, err := os.Open("testdata/people.csv")
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var wantRows []string
		for _, r := range recs[1:] {
			wantRows = append(wantRows, r[0]+"|"+r[1]+"|"+r[3])
		}
		var gotRows []string
		for _, line := range strings.Split(strings.TrimSpace(mustRun(t, "cat", tbl, "--limit", "0", "--format", "jsonl")), "\n") {
			var row struct {
				ID   int64
				Name *string
				Day  string
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			name := ""
			if row.Name != nil {
				name = *row.Name
			}
			gotRows = append(gotRows, fmt.Sprintf("%d|%s|%s", row.ID, name, row.Day))
		}
		slices.Sort(gotRows)
		if !slices.Equal(gotRows, wantRows) {
			t.Fatalf("%v: rows %q, want %q", path, gotRows, wantRows)
		}
	}
}

// TestIngestNewTableRace: two ingests create one new table at once; one
// creates it with its rows (version 0), the other appends its rows as
// version 1; every row is in the table exactly once. (A loser whose rows do
// not fit the winner's table: table's TestDraftCreateRaceLoserMismatch.)
func TestIngestNewTableRace(t *testing.T) {
	dir := t.TempDir()
	var ins [2]string
	for w := range ins {
		ins[w] = filepath.Join(dir, fmt.Sprintf("in%d.ndjson", w))
		if err := os.WriteFile(ins[w], fmt.Appendf(nil, "{\"id\":%d,\"s\":\"a\"}\n{\"id\":%d,\"s\":\"b\"}\n", 10*w, 10*w+1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		tbl := filepath.Join(dir, fmt.Sprint("t", round))
		var wg sync.WaitGroup
		var views [2]IngestView
		var errs [2]error
		for w := range ins {
			wg.Go(func() {
				out, stderr, code := runCLI(t, "ingest", ins[w], tbl, "-o", "json")
				if code != 0 {
					errs[w] = fmt.Errorf("ingest %d: exit %d: %s", w, code, stderr)
					return
				}
				errs[w] = json.Unmarshal([]byte(out), &views[w])
			})
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			t.Fatal(err)
		}
		versions := []int64{views[0].Version, views[1].Version}
		slices.Sort(versions)
		if views[0].Created == views[1].Created || !slices.Equal(versions, []int64{0, 1}) {
			t.Fatalf("created %v/%v versions %v, want one creator and versions [0 1]", views[0].Created, views[1].Created, versions)
		}
		if got := tableIDs(t, tbl); !equal64(got, []int64{0, 1, 10, 11}) {
			t.Fatalf("ids %v, want [0 1 10 11]", got)
		}
	}
}
