package bench

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// deltarsScript is the delta-rs side of P3: it answers one timing per
// command line read from stdin, so that the Go side can interleave its own
// repetitions with delta-rs's.
//
//go:embed deltars_open.py
var deltarsScript string

// openBench is the state of P3: a generated table on the local filesystem.
type openBench struct {
	dir   string
	store objectstore.Store
	spec  TableSpec
	files int
}

func newOpenBench(ctx context.Context, tmpDir string, spec TableSpec) (*openBench, error) {
	dir, err := os.MkdirTemp(tmpDir, "p3-table-")
	if err != nil {
		return nil, err
	}
	store, err := objectstore.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	o := &openBench{dir: dir, store: store, spec: spec, files: int(spec.Commits) * spec.FilesPerCommit}
	if err := GenerateTable(ctx, store, spec); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return o, nil
}

func (o *openBench) close() error { return os.RemoveAll(o.dir) }

// open loads the latest snapshot and lists its files.
func (o *openBench) open(ctx context.Context) (load, total, cpu time.Duration, err error) {
	t0, c0 := time.Now(), cpuTime()
	snap, err := txlog.Load(ctx, o.store)
	if err != nil {
		return 0, 0, 0, err
	}
	load = time.Since(t0)
	files := snap.Files()
	total, cpu = time.Since(t0), cpuTime()-c0
	if len(files) != o.files || snap.Version() != o.spec.Commits {
		return 0, 0, 0, fmt.Errorf("bench: loaded version %d with %d files, want %d with %d",
			snap.Version(), len(files), o.spec.Commits, o.files)
	}
	return load, total, cpu, nil
}

// base loads the snapshot of the checkpoint version, the start of update.
func (o *openBench) base(ctx context.Context) (*txlog.Snapshot, error) {
	return txlog.Load(ctx, o.store, txlog.AtVersion(o.spec.CheckpointAt))
}

// update refreshes base to the latest version incrementally.
func (o *openBench) update(ctx context.Context, base *txlog.Snapshot) (wall, cpu time.Duration, err error) {
	t0, c0 := time.Now(), cpuTime()
	snap, err := base.Update(ctx)
	wall, cpu = time.Since(t0), cpuTime()-c0
	if err != nil {
		return 0, 0, err
	}
	if snap.Version() != o.spec.Commits || snap.NumFiles() != o.files {
		return 0, 0, fmt.Errorf("bench: updated to version %d with %d files, want %d with %d",
			snap.Version(), snap.NumFiles(), o.spec.Commits, o.files)
	}
	return wall, cpu, nil
}

// deltaRS is a running delta-rs timing script.
type deltaRS struct {
	*pyScript
	Version string
}

// pyScript is a running Python script that answers every line sent to its
// stdin with one line of JSON on its stdout, {"error": "..."} on failure.
type pyScript struct {
	name   string // in errors: "delta-rs script"
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr strings.Builder
}

// startPyScript starts script with python and args; answers may be up to
// maxLine bytes long (0: bufio.Scanner's default).
func startPyScript(ctx context.Context, name, python, script string, maxLine int, args ...string) (*pyScript, error) {
	p := &pyScript{name: name}
	p.cmd = exec.CommandContext(ctx, python, append([]string{"-c", script}, args...)...)
	p.cmd.Stderr = &p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewScanner(out)
	if maxLine > 0 {
		p.out.Buffer(nil, maxLine)
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// ask sends line (without its newline) for command cmd and decodes the
// answer into out; an answer with an error is the error.
func (p *pyScript) ask(line []byte, cmd string, out any) error {
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("bench: %s: %w\n%s", p.name, err, p.stderr.String())
	}
	if !p.out.Scan() {
		return fmt.Errorf("bench: %s ended: %v\n%s", p.name, p.out.Err(), p.stderr.String())
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &e); err != nil {
		return fmt.Errorf("bench: %s said %q: %w", p.name, p.out.Text(), err)
	}
	if e.Error != "" {
		return fmt.Errorf("bench: delta-rs %s: %s", cmd, e.Error)
	}
	if err := json.Unmarshal(p.out.Bytes(), out); err != nil {
		return fmt.Errorf("bench: %s said %q: %w", p.name, p.out.Text(), err)
	}
	return nil
}

func (p *pyScript) close() error {
	p.in.Close()
	return p.cmd.Wait()
}

// deltaRSTiming is one answer of the script, in seconds.
type deltaRSTiming struct {
	Open       float64 `json:"open"`
	OpenFiles  float64 `json:"open_files"`
	AddActions float64 `json:"add_actions"`
	Update     float64 `json:"update"`
	CPU        float64 `json:"cpu"` // process CPU time of open_files or update
	Files      int     `json:"files"`
	Version    int64   `json:"version"`
	Deltalake  string  `json:"deltalake"` // the package version, in the answer to hello
	Error      string  `json:"error"`
}

func startDeltaRS(ctx context.Context, python, tableDir string, base int64) (*deltaRS, error) {
	p, err := startPyScript(ctx, "delta-rs script", python, deltarsScript, 0, tableDir, fmt.Sprint(base))
	if err != nil {
		return nil, err
	}
	d := &deltaRS{pyScript: p}
	hello, err := d.do("hello")
	if err != nil {
		d.close()
		return nil, err
	}
	d.Version = hello.Deltalake
	return d, nil
}

// do sends one command ("hello", "open", "update") and returns the answer.
func (d *deltaRS) do(cmd string) (*deltaRSTiming, error) {
	var t deltaRSTiming
	if err := d.ask([]byte(cmd), cmd, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// OpenFigure measures P3 on a table generated on the local filesystem:
// txlog.Load of the latest snapshot plus listing its files vs delta-rs's
// DeltaTable(path) plus file_uris(), and the incremental refresh of the
// snapshot of the checkpoint version by the 10 commits after it
// (Snapshot.Update vs DeltaTable.update_incremental), repetitions of the two
// interleaved. Without Env.Python only deltakit is measured.
func OpenFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	spec := TableSpec{Commits: int64(cfg.OpenCommits), FilesPerCommit: cfg.OpenFilesPerCommit, CheckpointAt: int64(cfg.OpenCommits) - 10}
	files := cfg.OpenCommits * cfg.OpenFilesPerCommit
	fig := &Figure{ID: "P3", Title: "open a large table vs delta-rs",
		Setup: fmt.Sprintf("local filesystem (page cache warm); table of %d commits, checkpoint at %d, %d live files with stats; "+
			"%d interleaved repetitions per side, median counted: txlog.Load + Snapshot.Files vs deltalake.DeltaTable(path) + file_uris(); "+
			"refresh: Snapshot.Update vs update_incremental from version %d (10 commits)",
			spec.Commits, spec.CheckpointAt, files, cfg.OpenReps, spec.CheckpointAt)}
	t0 := time.Now()
	o, err := newOpenBench(ctx, env.TempDir, spec)
	if err != nil {
		return fig, err
	}
	defer o.close()
	fig.add("generate_table", time.Since(t0).Seconds(), "s")
	env.logf("P3: table generated in %v", time.Since(t0).Round(time.Millisecond))

	var rs *deltaRS
	if env.Python == "" {
		fig.Skipped = "delta-rs side skipped: no Python venv with deltalake ($DELTAKIT_VENV or <repo>/.venv; run scripts/install-interop.sh)"
	} else if rs, err = startDeltaRS(ctx, env.Python, o.dir, spec.CheckpointAt); err != nil {
		return fig, err
	} else {
		defer rs.close()
		fig.note("delta-rs: deltalake %s (Python), timed inside Python with time.perf_counter", rs.Version)
	}

	var dkLoad, dkOpen, dkUpdate, rsOpen, rsOpenFiles, rsAdd, rsUpdate []time.Duration
	var dkOpenCPU, dkUpdateCPU, rsOpenCPU, rsUpdateCPU []time.Duration
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	for i := -1; i < cfg.OpenReps; i++ { // i == -1 warms both up
		runtime.GC()
		load, total, openCPU, err := o.open(ctx)
		if err != nil {
			return fig, err
		}
		base, err := o.base(ctx)
		if err != nil {
			return fig, err
		}
		runtime.GC()
		upd, updCPU, err := o.update(ctx, base)
		if err != nil {
			return fig, err
		}
		base = nil
		if i >= 0 {
			dkLoad, dkOpen, dkUpdate = append(dkLoad, load), append(dkOpen, total), append(dkUpdate, upd)
			dkOpenCPU, dkUpdateCPU = append(dkOpenCPU, openCPU), append(dkUpdateCPU, updCPU)
		}
		if rs == nil {
			continue
		}
		t, err := rs.do("open")
		if err != nil {
			return fig, err
		}
		if t.Files != files || t.Version != spec.Commits {
			return fig, fmt.Errorf("bench: delta-rs saw version %d with %d files, want %d with %d", t.Version, t.Files, spec.Commits, files)
		}
		u, err := rs.do("update")
		if err != nil {
			return fig, err
		}
		if u.Version != spec.Commits {
			return fig, fmt.Errorf("bench: delta-rs updated to version %d, want %d", u.Version, spec.Commits)
		}
		if i >= 0 {
			rsOpen, rsOpenFiles, rsAdd = append(rsOpen, sec(t.Open)), append(rsOpenFiles, sec(t.OpenFiles)), append(rsAdd, sec(t.AddActions))
			rsUpdate = append(rsUpdate, sec(u.Update))
			rsOpenCPU, rsUpdateCPU = append(rsOpenCPU, sec(t.CPU)), append(rsUpdateCPU, sec(u.CPU))
		}
	}
	fig.add("deltakit_load", ms(median(dkLoad)), "ms")
	fig.add("deltakit_open_files", ms(median(dkOpen)), "ms")
	fig.add("deltakit_update_10", ms(median(dkUpdate)), "ms")
	fig.add("deltakit_open_files_cpu", ms(median(dkOpenCPU)), "ms")
	fig.add("deltakit_update_10_cpu", ms(median(dkUpdateCPU)), "ms")
	if rs != nil {
		fig.add("deltars_open", ms(median(rsOpen)), "ms")
		fig.add("deltars_open_files", ms(median(rsOpenFiles)), "ms")
		fig.add("deltars_get_add_actions", ms(median(rsAdd)), "ms")
		fig.add("deltars_update_10", ms(median(rsUpdate)), "ms")
		fig.add("deltars_open_files_cpu", ms(median(rsOpenCPU)), "ms")
		fig.add("deltars_update_10_cpu", ms(median(rsUpdateCPU)), "ms")
		fig.goalFull(cfg, fig.add("ratio_open", ratio(median(dkOpen), median(rsOpenFiles)), "x"), "<", 1)
		fig.goalFull(cfg, fig.add("ratio_update", ratio(median(dkUpdate), median(rsUpdate)), "x"), "<", 1)
		fig.add("ratio_open_cpu", ratio(median(dkOpenCPU), median(rsOpenCPU)), "x")
		fig.add("ratio_update_cpu", ratio(median(dkUpdateCPU), median(rsUpdateCPU)), "x")
		fig.note("ratios are wall time; the _cpu figures are process CPU time (getrusage in Go, time.process_time in Python), all threads")
	}
	fig.add("files", float64(files), "count")
	return fig, nil
}
