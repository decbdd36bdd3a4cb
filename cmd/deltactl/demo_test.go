package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
)

// TestDemo runs scripts/demo.sh end to end on a slice of the real data
// (200,000 flights in 8 epochs), as the README's first command does with
// all of it: the stream with a restart, MERGE, DELETE with deletion
// vectors, UPDATE, the change feed, a bad load and RESTORE, verify,
// optimize and the report. Then it reads the tables the demo leaves with
// delta-rs itself and compares those rows with the rows the demo printed
// (not with deltakit's read). It needs npm to fetch vega-datasets@3.2.1 once
// (cached in ~/.cache/deltakit/demo): without it the test fails in CI
// (CI=true) and is skipped elsewhere. Spark is left out (DEMO_SPARK=0: the
// interop tests read with Spark); the output must hold no Spark or Ivy line.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the demo takes about 20 s")
	}
	ci := os.Getenv("CI") == "true"
	for _, tool := range []string{"bash", "tar", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testsupport.Absent(t, "%s not found: the demo needs it", tool)
		}
	}
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "deltakit", "demo")
	if _, err := os.Stat(filepath.Join(cache, "flights-3m.parquet")); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			testsupport.Absent(t, "npm not found: the demo fetches vega-datasets@3.2.1 with npm pack (apt-get install npm)")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "npm", "view", "vega-datasets@3.2.1", "version").CombinedOutput(); err != nil {
			testsupport.Absent(t, "npm cannot reach the registry (%v): %s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), "DEMO_ROWS=200000", "DEMO_EPOCHS=8", "DEMO_DIR="+out, "DEMO_SPARK=0")
	// As on a fresh clone, the demo's venv does not exist: demo.sh must run
	// scripts/install-interop.sh itself. When the interop venv is already
	// here, a python3 stand-in "creates" the fresh venv as a link to it, so
	// that the install needs no network; otherwise install-interop.sh
	// installs into the fresh venv with pip.
	real := interopVenv(t)
	if real != "" {
		stubs := stubPython(t, `if [ "$1" = -m ] && [ "$2" = venv ]; then ln -sfn "`+real+`" "$3"; exit 0; fi
exec "`+realPython3(t)+`" "$@"`)
		cmd.Env = append(cmd.Env, "PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"),
			"DELTAKIT_VENV="+filepath.Join(t.TempDir(), "fresh-venv"))
	}
	start := time.Now()
	b, err := cmd.CombinedOutput()
	text := string(b)
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, text)
	}
	t.Logf("demo.sh on 200,000 rows took %v", time.Since(start).Round(time.Second))
	// Expected values from the input: the first 200,000 flights of
	// flights-3m.parquet hold 11 between BTR and MEM (all in the first
	// 50,000; 7 in the first 25,000), six at 2001-01-01 00:01 and three AUS->CLE before 2001-01-04
	// with delays -5, 0 and -11; the corrections file updates three of the
	// six and adds one; the bad load appends the first 25,000 again.
	for _, want := range []string{
		"epoch 0: committed as version 0 (25000 rows",
		"stopped by --max-epochs",
		// The restart replays from epoch 1: it skips 25,000 rows of the
		// file, inside its first row group.
		"epoch 1: skipped by the sink",
		"epoch 2: skipped by the sink",
		"epoch 7: committed as version 7 (25000 rows",
		"rows:              200000",
		"timestampNtz",
		"delta.enableChangeDataFeed=true, delta.enableDeletionVectors=true",
		"query flights-demo: exactly once; 8 commit(s), epochs 0-7",
		"version 8, 4 source row(s): 1 inserted, 3 updated, 0 deleted",
		"flights between BTR and MEM: 11\n",
		"version 9, 11 row(s) deleted; 0 file(s) added, 0 removed, 0 row(s) copied, deletion vectors",
		"flights between BTR and MEM: 0\n",
		"version 10, 3 row(s) updated",
		"  version 8 insert: 1\n  version 8 update_postimage: 3\n  version 8 update_preimage: 3\n  version 9 delete: 11\n",
		"rows: 224990 (was 199990); flights between BTR and MEM: 7 (erased, and back)",
		"rows: 199990; flights between BTR and MEM: 0",
		"RESTORE",
		"verify --exactly-once file://" + out + "/flights: OK (versions 0-12)",
		"MiB) compacted into 1",
		"created file://" + out + "/weather: version 0, 1461 rows in 5 file(s)",
		"flights: 199990 rows; where",
		"weather: 1461 rows; where",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	for _, noise := range []string{":: resolving", "Ivy", "ivy", "Host ", "log4j", "Spark", "spark"} {
		if strings.Contains(text, noise) {
			t.Errorf("demo output holds Spark or Ivy output %q", noise)
		}
	}
	// The rows the demo printed, from the inputs: the corrections applied
	// and the late flight there, the erased flights gone, the signs fixed.
	flights := demoPrintedRows(t, text, "flights: ", "weather: ")
	weather := demoPrintedRows(t, text, "weather: ", "\n\x1b[1m== ")
	wantFlights := []string{
		"2001-01-01T00:01:00,48,2176,LAS,PHL", "2001-01-01T00:01:00,7,215,ATL,SAV", "2001-01-01T00:01:00,-2,2345,ANC,LAX",
		"2001-01-01T00:01:00,12,337,SFO,LAX", "2001-01-01T00:01:00,14,405,MCI,MDW", "2001-01-01T00:01:00,1,75,RIC,ORF",
		"2001-01-01T00:01:00,18,406,ATL,TPA", "2001-01-01T06:30:00,5,1174,AUS,CLE", "2001-01-02T06:29:00,0,1174,AUS,CLE",
		"2001-01-03T06:25:00,11,1174,AUS,CLE",
	}
	if got := strings.Join(sortedRows(flights.rows), "\n"); got != strings.Join(sortedRows(wantFlights), "\n") {
		t.Errorf("the demo printed the flights\n%s\nwant\n%s", got, strings.Join(sortedRows(wantFlights), "\n"))
	}
	if len(weather.rows) != 21 { // snow days of 2012 in seattle-weather.csv
		t.Errorf("the demo printed %d snow days of 2012, want 21", len(weather.rows))
	}
	if strings.Contains(text, "delta-rs check skipped") {
		if ci {
			t.Errorf("CI has no interop venv and demo.sh could not install it: %s", text[strings.Index(text, "read back with delta-rs"):])
		} else {
			t.Log("delta-rs read-back skipped: scripts/install-interop.sh failed (no network?)")
		}
	} else {
		for _, want := range []string{
			"delta-rs 1.6.6: " + out + "/flights version 13: 199990 rows (deltactl: 199990) ok; the 10 rows printed above: the same",
			"delta-rs 1.6.6: " + out + "/weather version 0: 1461 rows (deltactl: 1461) ok; the 21 rows printed above: the same",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("delta-rs read-back lacks %q", want)
			}
		}
	}
	// The test's own delta-rs read of every table the demo left, against
	// the rows and counts the demo printed.
	if real == "" {
		if ci {
			t.Error("CI=true: no interop venv to read the demo's tables with delta-rs")
		} else {
			t.Log("no interop venv: the demo's tables were not read by the test")
		}
	} else {
		for _, tc := range []struct {
			table   string
			printed demoRows
		}{{"flights", flights}, {"weather", weather}} {
			n, rows := readDeltaRs(t, real, filepath.Join(out, tc.table), tc.printed.where)
			if n != tc.printed.total {
				t.Errorf("delta-rs reads %d rows of %s, the demo printed %d", n, tc.table, tc.printed.total)
			}
			if got, want := strings.Join(sortedRows(rows), "\n"), strings.Join(sortedRows(tc.printed.rows), "\n"); got != want {
				t.Errorf("delta-rs reads %s where %s as\n%s\nthe demo printed\n%s", tc.table, tc.printed.where, got, want)
			}
		}
	}
	// The report of the streamed, compacted table: the page renders in
	// headless Chromium with deltactl files' numbers.
	page := filepath.Join(out, "flights-report.html")
	if !strings.Contains(text, "# HTML report written to "+page) {
		t.Errorf("demo output lacks the HTML report %s", page)
	} else if browser := lookChromium(); browser != "" {
		checkReportPage(t, browser, page, filepath.Join(out, "flights"), map[string]string{"file sizes": colorSmallBar, "commits per hour": opColors[0]})
	} else if ci {
		t.Error("CI=true: " + noChromium)
	} else {
		t.Log(noChromium + "; the demo's report page was not rendered")
	}
	if t.Failed() {
		t.Log(text)
	}
}

// TestDemoWithoutInterop: when scripts/install-interop.sh fails (no
// network), demo.sh says so and finishes without the delta-rs check.
func TestDemoWithoutInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	home, _ := os.UserHomeDir()
	if _, err := os.Stat(filepath.Join(home, ".cache", "deltakit", "demo", "flights-3m.parquet")); err != nil {
		testsupport.Absent(t, "no demo data in ~/.cache/deltakit/demo (TestDemo fetches it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "demo.sh"))
	stubs := stubPython(t, `echo "python3 stand-in: no network" >&2; exit 1`)
	cmd.Env = append(os.Environ(), "DEMO_ROWS=20000", "DEMO_EPOCHS=2", "DEMO_DIR="+t.TempDir(),
		"PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"), "DELTAKIT_VENV="+filepath.Join(t.TempDir(), "fresh-venv"))
	b, err := cmd.CombinedOutput()
	text := string(b)
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, text)
	}
	for _, want := range []string{"scripts/install-interop.sh failed", "delta-rs check skipped", "== done in"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q\n%s", want, text)
		}
	}
}

// interopVenv returns the interop venv ($DELTAKIT_VENV, else the repo's
// .venv) when its python imports deltalake, else "".
func interopVenv(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("DELTAKIT_VENV")
	if venv == "" {
		venv, _ = filepath.Abs(filepath.Join("..", "..", ".venv"))
	}
	py := filepath.Join(venv, "bin", "python")
	// os._exit: deltalake sometimes aborts at interpreter exit.
	if err := exec.Command(py, "-c", "import os, sys, deltalake; sys.stdout.flush(); os._exit(0)").Run(); err != nil {
		return ""
	}
	return venv
}

func realPython3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		testsupport.Absent(t, "python3 not found")
	}
	return p
}

// stubPython returns a directory holding a python3 script with body.
func stubPython(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// demoRows is a block of rows the demo printed: "<name>: N rows; where
// PRED:", a CSV header and the rows.
type demoRows struct {
	total int
	where string
	rows  []string // normalized by normRow
}

// demoPrintedRows parses the block that starts at the line beginning with
// start and ends before end.
func demoPrintedRows(t *testing.T, text, start, end string) demoRows {
	t.Helper()
	i := strings.Index(text, "\n"+start)
	if i < 0 {
		t.Fatalf("demo output lacks the block %q", start)
	}
	block := text[i+1:]
	if j := strings.Index(block[len(start):], end); j >= 0 {
		block = block[:len(start)+j]
	}
	lines := strings.Split(strings.TrimSpace(block), "\n")
	head := strings.TrimPrefix(lines[0], start)
	var r demoRows
	k := strings.Index(head, " rows; where ")
	if k < 0 || len(lines) < 2 {
		t.Fatalf("demo block %q is not '<name>: N rows; where PRED:' and a CSV header", lines[0])
	}
	n, err := strconv.Atoi(head[:k])
	if err != nil {
		t.Fatalf("demo block %q: %v", lines[0], err)
	}
	r.total, r.where = n, strings.TrimSuffix(head[k+len(" rows; where "):], ":")
	for _, l := range lines[2:] {
		r.rows = append(r.rows, normRow(strings.Split(l, ",")))
	}
	return r
}

// normRow joins fields with commas, numbers in Go's shortest form (so that
// deltactl's 5 and Python's 5.0 agree).
func normRow(fields []string) string {
	for i, f := range fields {
		if v, err := strconv.ParseFloat(f, 64); err == nil {
			fields[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return strings.Join(fields, ",")
}

func sortedRows(rows []string) []string {
	s := append([]string(nil), rows...)
	for i := range s {
		s[i] = normRow(strings.Split(s[i], ","))
	}
	sort.Strings(s)
	return s
}

// readDeltaRs reads the table with delta-rs (its DataFusion QueryBuilder:
// deltalake's pyarrow reader refuses deletion vectors) from the venv: the
// row count and the rows where pred holds, as CSV lines in column order.
func readDeltaRs(t *testing.T, venv, path, pred string) (int, []string) {
	t.Helper()
	const script = `
import datetime, json, os, sys
import deltalake, pyarrow as pa
dt = deltalake.DeltaTable(sys.argv[1])
q = deltalake.QueryBuilder().register("t", dt)
n = pa.table(q.execute("SELECT count(*) AS n FROM t").read_all()).column(0)[0].as_py()
rows = pa.table(q.execute("SELECT * FROM t WHERE " + sys.argv[2]).read_all()).to_pylist()
def enc(v):
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    return "" if v is None else str(v)
print(json.dumps({"n": n, "rows": [",".join(enc(v) for v in r.values()) for r in rows]}))
sys.stdout.flush()
os._exit(0)
`
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), "-c", script, path, pred)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("delta-rs read of %s: %v\n%s", path, err, b)
	}
	var got struct {
		N    int      `json:"n"`
		Rows []string `json:"rows"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("delta-rs read of %s: %v\n%s", path, err, b)
	}
	return got.N, got.Rows
}
