package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
)

// bothFail lists the corpus tables (expect "read") that neither delta-rs
// nor deltactl reads here: files their log names are absent from the
// corpus copy (the source's tests read them through a store that adds a
// prefix to the names, or never had them), or deltakit refuses a feature
// (TestCorpusScan reports those as REFUSED). Each gives a part of
// delta-rs's error and a part of deltactl's. TestCatArrowDeltaRS fails
// when either reads one of them, so that the list stays true.
var bothFail = map[string]struct{ deltaRS, deltactl string }{
	"deltars__checkpoints_vacuumed":               {"FileNotFoundError", "object does not exist"},
	"deltars__latest_not_checkpointed":            {"FileNotFoundError", "object does not exist"},
	"deltars__with_checkpoint_no_last_checkpoint": {"FileNotFoundError", "object does not exist"},
	// Data files named with a test%file%prefix-; deltakit refuses variant.
	"kernel__spark-variant-stable-feature-checkpoint": {"FileNotFoundError", "unsupported table reader feature(s): variantType"},
	// Deletion vector files named with a test%dv%prefix- (table's tests
	// read it through a store that adds the prefix).
	"spark__table-with-dv-large": {"reader features: {'deletionVectors'}", "object does not exist"},
}

// deltaRSStrip lists corpus tables whose protocol names a reader feature
// delta-rs refuses though reading needs nothing of it, or delta-rs does
// what it asks (widened types): the oracle reads a copy whose protocol
// lacks the feature.
var deltaRSStrip = map[string]string{
	"golden__basic-with-vacuum-protocol-check-feature": "vacuumProtocolCheck", // only VACUUM is concerned
	"golden__type-widening":                            "typeWidening-preview",
}

// deltaRSFiles lists corpus tables delta-rs misreads: the oracle reads
// their files with pyarrow.parquet, after a replay of the JSON commits.
var deltaRSFiles = map[string]string{
	// to_pyarrow_table() fails ("Casting from timestamp[ns] to
	// timestamp[us, tz=UTC] would lose data"), and the DataFusion scan
	// reads the INT96 year-9999 timestamps as 1816 (an overflow).
	"deltars__table_with_edge_timestamps": "INT96 year-9999 timestamps",
}

// deltaRSSQL lists corpus tables that delta-rs's to_pyarrow_table()
// refuses or misreads, with the reason, and that its DataFusion scan
// (QueryBuilder, "select * from t") reads: the oracle reads these with it.
var deltaRSSQL = map[string]string{
	"deltars__table-with-dv-small":               "to_pyarrow_table: reader features: {'deletionVectors'}",
	"deltars__table_with_liquid_clustering":      "to_pyarrow_table: reader features: {'deletionVectors'}",
	"golden__log-replay-dv-key-cases":            "to_pyarrow_table: reader features: {'deletionVectors'}",
	"kernel__basic-dv-no-checkpoint":             "to_pyarrow_table: reader features: {'deletionVectors'}",
	"golden__v2-checkpoint-json":                 "to_pyarrow_table: reader features: {'v2Checkpoint'}",
	"golden__basic-decimal-table":                "to_pyarrow_table: '-2342342.-23423' is not a valid decimal128 number (a decimal partition value)",
	"golden__table-with-columnmapping-mode-name": "to_pyarrow_table reads every column of the column-mapped (mode name) table as null",
}

// oracleReply is one answer line of testdata/delta_oracle.py.
type oracleReply struct {
	Name    string   `json:"name"`
	Error   string   `json:"error"`
	Rows    int64    `json:"rows"`
	Filters []string `json:"filters"`
	OK      *int64   `json:"ok"`
	Diff    string   `json:"diff"`
}

// oracle is one running testdata/delta_oracle.py: every table of a test
// goes through the same python process, so the test pays for one start of
// python and deltalake.
type oracle struct {
	cmd    *exec.Cmd
	in     *json.Encoder
	out    *bufio.Scanner
	stderr *bytes.Buffer
}

// startOracle starts testdata/delta_oracle.py with the interop venv's
// python and stops it at the end of t.
func startOracle(t *testing.T) *oracle {
	t.Helper()
	py := testsupport.Python(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, py, filepath.Join("testdata", "delta_oracle.py"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	o := &oracle{cmd: cmd, in: json.NewEncoder(stdin), out: bufio.NewScanner(stdout), stderr: &bytes.Buffer{}}
	o.out.Buffer(nil, 16<<20)
	cmd.Stderr = o.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		// The oracle ends when its stdin does; delta-rs's runtime sometimes
		// aborts in the interpreter's teardown, after the last answer.
		_ = cmd.Wait()
		cancel()
	})
	return o
}

// ask sends req and reads one answer.
func (o *oracle) ask(t *testing.T, req any) oracleReply {
	t.Helper()
	if req != nil {
		if err := o.in.Encode(req); err != nil {
			t.Fatalf("oracle: %v\nstderr:\n%s", err, o.stderr)
		}
	}
	return o.next(t)
}

// next reads one answer.
func (o *oracle) next(t *testing.T) oracleReply {
	t.Helper()
	if !o.out.Scan() {
		t.Fatalf("oracle ended: %v\nstderr:\n%s", o.out.Err(), o.stderr)
	}
	var r oracleReply
	if err := json.Unmarshal(o.out.Bytes(), &r); err != nil {
		t.Fatalf("oracle answer %q: %v", o.out.Text(), err)
	}
	return r
}

// TestCatArrowDeltaRS: for every corpus table deltakit reads and delta-rs
// reads too, `deltactl cat -o arrow` is an Arrow IPC stream that pyarrow
// reads to the table deltalake's to_pyarrow_table() gives (schema and
// values, rows as a multiset), and so is `deltactl cat -o arrow --where
// ...` for filters built from delta-rs's values (an equality on a partition
// column, an equality on another primitive column, a range), compared with
// delta-rs's table filtered by pyarrow.compute. The reference never comes
// from deltakit: a regression of the Arrow reader, which the row scan
// shares, fails here. delta-rs reads some tables only through its
// DataFusion scan (deltaRSSQL), a copy without a protocol feature
// (deltaRSStrip), or not at all (deltaRSFiles: pyarrow.parquet reads the
// files); bothFail lists the few no reader can read here.
func TestCatArrowDeltaRS(t *testing.T) {
	corpus := testsupport.CorpusDir(t)
	var tables []testsupport.CorpusExpected
	for _, exp := range testsupport.CorpusTables(t, corpus) {
		if exp.Expect == "read" {
			tables = append(tables, exp)
		}
	}
	o := startOracle(t)
	type req struct {
		Name  string `json:"name"`
		Path  string `json:"path"`
		SQL   bool   `json:"sql"`
		Strip string `json:"strip,omitempty"`
		Copy  string `json:"copy,omitempty"`
		Files bool   `json:"files"`
	}
	var list []req
	for _, exp := range tables {
		_, sql := deltaRSSQL[exp.Table]
		_, files := deltaRSFiles[exp.Table]
		r := req{Name: exp.Table, Path: filepath.Join(corpus, exp.Table, exp.Root), SQL: sql, Files: files}
		if r.Strip = deltaRSStrip[exp.Table]; r.Strip != "" {
			r.Copy = t.TempDir()
		}
		list = append(list, r)
	}
	if err := o.in.Encode(map[string]any{"tables": list}); err != nil {
		t.Fatal(err)
	}
	replies := make([]oracleReply, len(tables))
	for i := range tables {
		if replies[i] = o.next(t); replies[i].Name != tables[i].Table {
			t.Fatalf("oracle answered for %s, asked %s", replies[i].Name, tables[i].Table)
		}
	}
	dir := t.TempDir()
	cases := 0
	for i, exp := range tables {
		path, r := list[i].Path, replies[i]
		fail, both := bothFail[exp.Table]
		switch {
		case both:
			if !strings.Contains(r.Error, fail.deltaRS) {
				t.Errorf("%s: delta-rs gives %q, want an error with %q (bothFail)", exp.Table, r.Error, fail.deltaRS)
			}
			t.Run(exp.Table, func(t *testing.T) {
				_, errs, code := runCLI(t, "cat", path, "-o", "arrow")
				if code == 0 || !strings.Contains(errs, fail.deltactl) {
					t.Fatalf("deltactl cat: exit %d, %q; want an error with %q (bothFail)", code, errs, fail.deltactl)
				}
			})
			continue
		case r.Error != "":
			t.Errorf("%s: delta-rs cannot read it: %s", exp.Table, r.Error)
			continue
		}
		for f := -1; f < len(r.Filters); f++ {
			args := []string{"cat", path, "-o", "arrow"}
			name := exp.Table + "/all"
			if f >= 0 {
				args = append(args, "--where", r.Filters[f])
				name = exp.Table + "/" + r.Filters[f]
			}
			cases++
			t.Run(name, func(t *testing.T) {
				file := filepath.Join(dir, fmt.Sprintf("case%d.arrows", cases))
				out, errs, code := runCLI(t, args...)
				if code != 0 {
					t.Fatalf("deltactl %s: exit %d: %s", strings.Join(args[2:], " "), code, errs)
				}
				if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(file)
				res := o.ask(t, map[string]any{"name": exp.Table, "filter": f, "file": file})
				if res.OK == nil {
					t.Fatalf("deltactl %s: pyarrow vs delta-rs: %s", strings.Join(args[2:], " "), res.Diff)
				}
				if f >= 0 && *res.OK == 0 {
					t.Errorf("the filter selects no row of delta-rs's table: the case checks nothing")
				}
				if f < 0 && exp.RowsLatest != nil && *res.OK != *exp.RowsLatest {
					t.Errorf("delta-rs reads %d rows, expected.json says %d", *res.OK, *exp.RowsLatest)
				}
				t.Logf("%d rows", *res.OK)
			})
		}
	}
	if cases < 100 {
		t.Errorf("only %d cases compared with delta-rs", cases)
	}
}
