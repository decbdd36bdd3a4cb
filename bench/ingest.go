package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// P12 is issue 17's item 6, called "P7 ingest" there (this package's P7
// is the DELETE figure): deltactl ingest of the demo's flights-3m.parquet
// (3,000,000 rows written by Polars) into a local table.
//
//	epochs     deltactl ingest --epoch-rows N --query-id ID (the streaming
//	           path, one commit per epoch) vs the floor of parquet-go
//	           reading the file and copying its rows once (one file,
//	           snappy) to the local filesystem
//	one commit deltactl ingest without --epoch-rows (one CREATE TABLE AS SELECT commit) vs
//	           delta-rs: pyarrow.parquet.read_table + write_deltalake
//
// deltactl runs as a built binary in a child process (its wall time, CPU
// and peak RSS from the child's rusage); delta-rs is timed inside Python.
// Every table written is checked to hold the input's rows.

// deltarsIngestScript is the delta-rs side of P12.
//
//go:embed deltars_ingest.py
var deltarsIngestScript string

// ingestGoalRows is the input size P12's goals are set for: all of
// flights-3m.parquet.
const ingestGoalRows = 3_000_000

// FlightsParquet returns the path of the demo's flights-3m.parquet:
// $DELTAKIT_FLIGHTS_PARQUET, else flights-3m.parquet in $DEMO_CACHE or
// ~/.cache/deltakit/demo (where scripts/fetch-demo-data.sh puts it), or ""
// when there is no such file.
func FlightsParquet() string {
	path := os.Getenv("DELTAKIT_FLIGHTS_PARQUET")
	if path == "" {
		dir := os.Getenv("DEMO_CACHE")
		if dir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			dir = filepath.Join(home, ".cache", "deltakit", "demo")
		}
		path = filepath.Join(dir, "flights-3m.parquet")
	}
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// ingestSide is what one side of P12 measured.
type ingestSide struct {
	wall, cpu time.Duration
	rssKB     int64 // peak RSS; 0 when not measured
	rows      int64 // rows of the table (or file) written, from the footers
	files     int
	version   int64
}

// IngestFigure measures P12 (issue 17's "P7 ingest"): deltactl ingest of
// flights-3m.parquet (Config.IngestRows of it in quick mode) into a local
// table as epochs of Config.IngestEpochRows vs the raw parquet-go floor,
// and in one commit vs delta-rs's write_deltalake. Without the demo file
// the figure is skipped (with CI=true it fails); without Env.Python only
// the delta-rs side is.
func IngestFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P12", Title: "ingest: deltactl ingest of the demo's flights-3m.parquet (issue 17's \"P7 ingest\")"}
	src := FlightsParquet()
	if src == "" {
		const why = "no flights-3m.parquet ($DELTAKIT_FLIGHTS_PARQUET or ~/.cache/deltakit/demo; run scripts/fetch-demo-data.sh)"
		fig.Setup = "deltactl ingest of the demo's flights-3m.parquet"
		if os.Getenv("CI") == "true" {
			return fig, errors.New("bench: P12: " + why + " (CI=true, so this fails)")
		}
		fig.Skipped = why
		return fig, nil
	}
	dir, err := os.MkdirTemp(env.TempDir, "p12-")
	if err != nil {
		return fig, err
	}
	defer os.RemoveAll(dir)
	deltactl := env.Deltactl
	if deltactl == "" {
		t0 := time.Now()
		if deltactl, err = buildDeltactl(ctx, dir); err != nil {
			fig.Setup = "deltactl ingest of the demo's flights-3m.parquet"
			fig.Skipped = err.Error()
			return fig, nil
		}
		env.logf("P12: deltactl built in %v", time.Since(t0).Round(time.Millisecond))
	}
	input, rows, err := ingestInput(src, cfg.IngestRows, dir)
	if err != nil {
		return fig, err
	}
	epochs := (rows + int64(cfg.IngestEpochRows) - 1) / int64(cfg.IngestEpochRows)
	what := "all of flights-3m.parquet"
	if input != src {
		what = "the first " + groupDigits(int(rows)) + " rows of flights-3m.parquet (rewritten by parquet-go, zstd)"
	}
	fig.Setup = fmt.Sprintf("issue 17's \"P7 ingest\"; local filesystem; input %s: %s rows; "+
		"epochs: deltactl ingest --epoch-rows %d (%d epochs, one commit each) vs the floor of parquet-go "+
		"reading the file (parquet.Reader) and copying its rows once (parquet.CopyRows, snappy) to one file; "+
		"one commit: deltactl ingest without --epoch-rows vs delta-rs pyarrow.parquet.read_table + write_deltalake; "+
		"reading the input is inside the timed region of every side; median of %d runs",
		what, groupDigits(int(rows)), cfg.IngestEpochRows, epochs, cfg.IngestReps)
	if env.Python == "" {
		fig.Skipped = "delta-rs side skipped: no Python venv with deltalake ($DELTAKIT_VENV or <repo>/.venv; run scripts/install-interop.sh)"
	}
	r, err := ingestReps(ctx, env, cfg, dir, deltactl, input, rows, epochs)
	if err != nil {
		return fig, err
	}
	addIngestSide(fig, "floor", r.floor)
	addIngestSide(fig, "epochs", r.stream)
	addIngestSide(fig, "one_commit", r.batch)
	atSize := rows >= ingestGoalRows && cfg.Mode == "full"
	goal := func(m *Metric, limit float64) {
		if atSize {
			m.goal("<=", limit)
			return
		}
		fig.note("%s: goal <= %g applies in full mode to all 3,000,000 rows; this %s run ingests %s, so no verdict", m.Name, limit, cfg.Mode, groupDigits(int(rows)))
	}
	goal(fig.add("ratio_epochs", ratio(medianWall(r.stream), medianWall(r.floor)), "x"), 2.0)
	goal(fig.add("ratio_epochs_cpu", ratio(medianCPU(r.stream), medianCPU(r.floor)), "x"), 2.0)
	if len(r.deltars) > 0 {
		addIngestSide(fig, "deltars", r.deltars)
		goal(fig.add("ratio_one_commit_vs_deltars", ratio(medianWall(r.batch), medianWall(r.deltars)), "x"), 1.5)
		goal(fig.add("ratio_one_commit_vs_deltars_cpu", ratio(medianCPU(r.batch), medianCPU(r.deltars)), "x"), 1.5)
		fig.note("delta-rs: deltalake %s (Python), timed inside Python (time.perf_counter, time.process_time; interpreter start and imports excluded); "+
			"deltars_rss is the Python process's peak RSS (VmHWM; epochs_rss and one_commit_rss likewise the deltactl child's)", r.rs)
	}
	fig.add("rows", float64(rows), "count")
	fig.add("epoch_count", float64(epochs), "count")
	fig.note("deltactl ingest of a new table without --epoch-rows creates it with its rows in version 0 (CREATE TABLE AS SELECT), as write_deltalake does; "+
		"with --epoch-rows the first epoch creates it (version 0: the table, the epoch's txn and rows, STREAMING UPDATE): epochs end at version %d", epochs-1)
	fig.note("deltactl runs as a child process (the binary built from this tree): its wall time includes the process start, its CPU is the child's rusage, its peak RSS the child's VmHWM; " +
		"the floor runs in this process (getrusage of the process); every table's rows are counted from its data files' footers")
	return fig, nil
}

// ingestRuns are P12's measurements, one per repetition and side.
type ingestRuns struct {
	floor, stream, batch, deltars []ingestSide // deltars empty without Env.Python
	rs                            string       // the deltalake version
}

// ingestReps runs P12's sides Config.IngestReps times, in turn, each into
// a fresh directory under dir, and checks each one's rows (and version).
func ingestReps(ctx context.Context, env *Env, cfg Config, dir, deltactl, input string, rows, epochs int64) (*ingestRuns, error) {
	r := &ingestRuns{}
	for rep := range cfg.IngestReps {
		run := func(name string, f func(out string) (ingestSide, error)) (ingestSide, error) {
			out := filepath.Join(dir, fmt.Sprintf("%s-%d", name, rep))
			defer os.RemoveAll(out)
			s, err := f(out)
			if err != nil {
				return s, fmt.Errorf("bench: P12 %s: %w", name, err)
			}
			if s.rows != rows {
				return s, fmt.Errorf("bench: P12 %s wrote %d rows, want %d", name, s.rows, rows)
			}
			env.logf("P12: %s %v wall, %v CPU, %d rows", name, s.wall.Round(time.Millisecond), s.cpu.Round(time.Millisecond), s.rows)
			return s, nil
		}
		s, err := run("floor", func(out string) (ingestSide, error) { return ingestFloor(ctx, input, out) })
		if err != nil {
			return nil, err
		}
		r.floor = append(r.floor, s)
		if s, err = run("epochs", func(out string) (ingestSide, error) {
			return runDeltactlIngest(ctx, deltactl, input, out, "--epoch-rows", fmt.Sprint(cfg.IngestEpochRows), "--query-id", "p12")
		}); err != nil {
			return nil, err
		}
		if s.version != epochs-1 {
			return nil, fmt.Errorf("bench: P12 epochs: table at version %d, want %d (one commit per epoch, the first creating the table)", s.version, epochs-1)
		}
		r.stream = append(r.stream, s)
		if s, err = run("one_commit", func(out string) (ingestSide, error) { return runDeltactlIngest(ctx, deltactl, input, out) }); err != nil {
			return nil, err
		}
		if s.version != 0 {
			return nil, fmt.Errorf("bench: P12 one_commit: table at version %d, want 0 (CREATE TABLE AS SELECT: the table and its rows in one commit)", s.version)
		}
		r.batch = append(r.batch, s)
		if env.Python == "" {
			continue
		}
		if s, err = run("deltars", func(out string) (ingestSide, error) {
			s, v, err := runDeltaRSIngest(ctx, env.Python, input, out)
			r.rs = v
			return s, err
		}); err != nil {
			return nil, err
		}
		r.deltars = append(r.deltars, s)
	}
	return r, nil
}

// addIngestSide adds name's median wall and CPU time, its peak RSS when
// measured, and its files.
func addIngestSide(fig *Figure, name string, s []ingestSide) {
	fig.add(name, medianWall(s).Seconds(), "s")
	fig.add(name+"_cpu", medianCPU(s).Seconds(), "s")
	var rss int64
	for _, x := range s {
		rss = max(rss, x.rssKB)
	}
	if rss > 0 {
		fig.add(name+"_rss", float64(rss)/1024, "MiB")
	}
	fig.add(name+"_files", float64(s[0].files), "count")
}

func medianWall(s []ingestSide) time.Duration {
	ds := make([]time.Duration, len(s))
	for i, x := range s {
		ds[i] = x.wall
	}
	return median(ds)
}

func medianCPU(s []ingestSide) time.Duration {
	ds := make([]time.Duration, len(s))
	for i, x := range s {
		ds[i] = x.cpu
	}
	return median(ds)
}

// buildDeltactl builds cmd/deltactl of this module into dir and returns
// the binary's path.
func buildDeltactl(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "deltactl")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/deltakit/deltakit/cmd/deltactl")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build deltactl (go build: %v): %s", err, bytes.TrimSpace(out))
	}
	return bin, nil
}

// ingestInput returns the file P12 ingests and its rows: src itself when
// n is 0 or not less than its rows, else a file in dir of src's first n
// rows, written by parquet-go with zstd as Polars writes src.
func ingestInput(src string, n int, dir string) (string, int64, error) {
	f, err := os.Open(src)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	r := parquet.NewGenericReader[Flight](f)
	defer r.Close()
	total := r.NumRows()
	if n <= 0 || int64(n) >= total {
		return src, total, nil
	}
	path := filepath.Join(dir, "flights-slice.parquet")
	out, err := os.Create(path)
	if err != nil {
		return "", 0, err
	}
	defer out.Close()
	w := parquet.NewGenericWriter[Flight](out, parquet.Compression(&parquet.Zstd))
	if _, err := copyFlights(w, r, int64(n)); err != nil {
		return "", 0, fmt.Errorf("bench: P12 slice of %s: %w", src, err)
	}
	if err := w.Close(); err != nil {
		return "", 0, err
	}
	return path, int64(n), out.Close()
}

// copyFlights copies up to limit rows from r to w in batches and returns
// how many it copied.
func copyFlights(w *parquet.GenericWriter[Flight], r *parquet.GenericReader[Flight], limit int64) (int64, error) {
	return readFlights(r, limit, func(b []Flight) error {
		_, err := w.Write(b)
		return err
	})
}

// readFlights reads up to limit rows from r in batches, hands each batch
// to sink (which must not keep it), and returns how many it read.
func readFlights(r *parquet.GenericReader[Flight], limit int64, sink func([]Flight) error) (int64, error) {
	buf := make([]Flight, 8192)
	var n int64
	for n < limit {
		b := buf[:min(int64(len(buf)), limit-n)]
		k, err := r.Read(b)
		if k > 0 {
			if serr := sink(b[:k]); serr != nil {
				return n, serr
			}
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// ingestFloor is P12's floor: parquet-go reads input's rows
// (parquet.Reader) and copies them once (parquet.CopyRows) to one file of
// the Flight schema (snappy, data page v1, 1 MiB pages, dictionary strings:
// deltakit's layout) in the new directory out. Copying parquet.Rows is
// cheaper than going through Flight structs (GenericReader[Flight] took
// ~1.5x its CPU), so it is the floor.
func ingestFloor(ctx context.Context, input, out string) (ingestSide, error) {
	var s ingestSide
	if err := os.MkdirAll(out, 0o755); err != nil {
		return s, err
	}
	cpu0, t0 := cpuTime(), time.Now()
	in, err := os.Open(input)
	if err != nil {
		return s, err
	}
	defer in.Close()
	r := parquet.NewReader(in)
	defer r.Close()
	path := filepath.Join(out, "part-00000-floor-c000.snappy.parquet")
	f, err := os.Create(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	w := parquet.NewWriter(f, parquet.SchemaOf(Flight{}), parquet.Compression(&parquet.Snappy),
		parquet.DataPageVersion(1), parquet.PageBufferSize(1<<20))
	if _, err := parquet.CopyRows(w, r); err != nil {
		return s, err
	}
	if err := w.Close(); err != nil {
		return s, err
	}
	if err := f.Close(); err != nil {
		return s, err
	}
	s.wall, s.cpu = time.Since(t0), cpuTime()-cpu0
	md, err := localFooter(path)
	if err != nil {
		return s, err
	}
	s.rows = md.NumRows
	s.files = 1
	return s, ctx.Err()
}

// localFooter returns the footer of the local Parquet file at path.
func localFooter(path string) (*format.FileMetaData, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return pf.Metadata(), nil
}

// tableRows opens the local table at dir and returns its version, its
// live files and the rows of their footers.
func tableRows(ctx context.Context, dir string) (version int64, files int, rows int64, err error) {
	tbl, err := table.Open(ctx, dir)
	if err != nil {
		return 0, 0, 0, err
	}
	defer tbl.Close(ctx)
	adds := tbl.Snapshot().Files()
	for _, a := range adds {
		md, err := localFooter(filepath.Join(dir, filepath.FromSlash(txlog.DecodePath(a.Path))))
		if err != nil {
			return 0, 0, 0, err
		}
		rows += md.NumRows
	}
	return tbl.Version(), len(adds), rows, nil
}

// runDeltactlIngest runs deltactl -o json ingest input out args... in a
// child process and measures it: CPU from its rusage, peak RSS from its
// VmHWM (watchHWM); the table's rows are counted afterwards.
func runDeltactlIngest(ctx context.Context, deltactl, input, out string, args ...string) (ingestSide, error) {
	var s ingestSide
	cmd := exec.CommandContext(ctx, deltactl, append([]string{"-o", "json", "--progress=false", "ingest", input, out}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Start()
	var hwm func() int64
	if err == nil {
		hwm = watchHWM(cmd.Process.Pid)
		err = cmd.Wait()
	}
	s.wall = time.Since(t0)
	if err != nil {
		return s, fmt.Errorf("deltactl %v: %w\n%s%s", cmd.Args[1:], err, stdout.String(), stderr.String())
	}
	var view struct {
		Rows    int64 `json:"rows"`
		Version int64 `json:"version"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &view); err != nil {
		return s, fmt.Errorf("deltactl said %q: %w", stdout.String(), err)
	}
	s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if s.rssKB = hwm(); s.rssKB <= 0 {
		s.rssKB = maxRSSKB(cmd.ProcessState)
	}
	if s.version, s.files, s.rows, err = tableRows(ctx, out); err != nil {
		return s, err
	}
	if view.Rows != s.rows || view.Version != s.version {
		return s, fmt.Errorf("deltactl reported %d rows at version %d, the table holds %d at version %d", view.Rows, view.Version, s.rows, s.version)
	}
	return s, nil
}

// runDeltaRSIngest runs deltars_ingest.py in a fresh Python process,
// which writes input to a new table at out; it returns the side and the
// deltalake version. The table's rows are counted by both Python and
// deltakit (which must agree).
func runDeltaRSIngest(ctx context.Context, python, input, out string) (ingestSide, string, error) {
	var s ingestSide
	cmd := exec.CommandContext(ctx, python, "-c", deltarsIngestScript, input, out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return s, "", fmt.Errorf("delta-rs ingest script: %w\n%s%s", err, stdout.String(), stderr.String())
	}
	var ans struct {
		Deltalake string  `json:"deltalake"`
		Wall      float64 `json:"wall"`
		CPU       float64 `json:"cpu"`
		MaxRSSKB  int64   `json:"maxrss_kb"`
		Rows      int64   `json:"rows"`
		Error     string  `json:"error"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &ans); err != nil {
		return s, "", fmt.Errorf("delta-rs ingest script said %q: %w\n%s", stdout.String(), err, stderr.String())
	}
	if ans.Error != "" {
		return s, "", fmt.Errorf("delta-rs ingest: %s", ans.Error)
	}
	s.wall = time.Duration(ans.Wall * float64(time.Second))
	s.cpu = time.Duration(ans.CPU * float64(time.Second))
	s.rssKB = ans.MaxRSSKB
	var err error
	if s.version, s.files, s.rows, err = tableRows(ctx, out); err != nil {
		return s, "", err
	}
	if ans.Rows != s.rows {
		return s, "", fmt.Errorf("delta-rs counted %d rows, deltakit %d in its table", ans.Rows, s.rows)
	}
	return s, ans.Deltalake, nil
}

// watchHWM samples the VmHWM (peak resident set, KiB) of process pid from
// /proc every 2 ms until the returned function is called (after the
// process was waited for), which returns the last value read, or -1 where
// /proc says nothing. VmHWM, not the child's ru_maxrss: on Linux a child
// started by exec inherits its parent's peak RSS as the floor of its
// ru_maxrss, so after a figure that made deltabench large (P11's MERGE,
// ~4 GiB) every child reported deltabench's peak. VmHWM belongs to the
// child's own address space; it only grows, so the last sample misses at
// most the growth of the child's last 2 ms.
func watchHWM(pid int) func() int64 {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var last atomic.Int64
	last.Store(-1)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(path); err == nil {
				if kb := procKB(string(b), "VmHWM"); kb > 0 {
					last.Store(kb)
				}
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return last.Load()
	}
}
