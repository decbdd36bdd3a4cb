package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// memoryLinePrefix starts the line a memory child writes with its figures.
const memoryLinePrefix = "deltabench-memory: "

// memoryReport is what a memory child measures, in kB of /proc/self/status
// and bytes of the Go runtime.
type memoryReport struct {
	BaselineRSSKB int64   `json:"baseline_rss_kb"` // VmRSS before loading
	PeakRSSKB     int64   `json:"peak_rss_kb"`     // VmHWM after loading
	RSSKB         int64   `json:"rss_kb"`          // VmRSS after loading and a GC
	HeapLiveBytes uint64  `json:"heap_live_bytes"` // HeapAlloc after a GC, snapshot held
	LoadSeconds   float64 `json:"load_seconds"`
	// HeapAfterAllBytes is HeapAlloc after a GC once every file was
	// streamed with Snapshot.AllFiles (what a checkpoint or a scan does).
	HeapAfterAllBytes uint64 `json:"heap_after_all_files_bytes"`
	Files             int    `json:"files"`
	Version           int64  `json:"version"`
}

// MemoryChild is the body of P5's child process: it loads the latest
// snapshot of the table at dir (local filesystem), holds it, and writes one
// line "deltabench-memory: {json}" to w with the process's peak resident set
// (VmHWM of /proc/self/status) and the live heap. Run it in a fresh process
// so that nothing else shaped the figure.
func MemoryChild(ctx context.Context, dir string, w io.Writer) error {
	before, err := procStatus()
	if err != nil {
		return err
	}
	store, err := objectstore.NewLocal(dir)
	if err != nil {
		return err
	}
	t0 := time.Now()
	snap, err := txlog.Load(ctx, store)
	if err != nil {
		return err
	}
	r := memoryReport{LoadSeconds: time.Since(t0).Seconds(), Files: snap.NumFiles(), Version: snap.Version(),
		BaselineRSSKB: procKB(before, "VmRSS")}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	r.HeapLiveBytes = m.HeapAlloc
	after, err := procStatus()
	if err != nil {
		return err
	}
	r.PeakRSSKB, r.RSSKB = procKB(after, "VmHWM"), procKB(after, "VmRSS")
	// Going through every file once (a checkpoint, a scan) must leave the
	// snapshot at its packed size.
	n := 0
	for range snap.AllFiles() {
		n++
	}
	if n != r.Files {
		return fmt.Errorf("bench: AllFiles yielded %d files, NumFiles says %d", n, r.Files)
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	r.HeapAfterAllBytes = m.HeapAlloc
	runtime.KeepAlive(snap)
	return writeChildLine(w, memoryLinePrefix, r)
}

// childUsage is what a child process measures of itself around its work.
type childUsage struct {
	PeakRSSKB     int64   `json:"peak_rss_kb"`     // VmHWM at the end
	BaselineRSSKB int64   `json:"baseline_rss_kb"` // VmRSS before the work
	Seconds       float64 `json:"seconds"`         // wall time of the work
	CPUSeconds    float64 `json:"cpu_seconds"`     // user+system CPU of the process during the work
}

// measureChild runs work in this (child) process and returns its wall and
// CPU time, the resident set before it (VmRSS) and the process's peak
// resident set after it (VmHWM), from /proc/self/status.
func measureChild(work func() error) (childUsage, error) {
	var u childUsage
	before, err := procStatus()
	if err != nil {
		return u, err
	}
	cpu0, t0 := cpuTime(), time.Now()
	if err := work(); err != nil {
		return u, err
	}
	u.Seconds, u.CPUSeconds = time.Since(t0).Seconds(), (cpuTime() - cpu0).Seconds()
	after, err := procStatus()
	if err != nil {
		return u, err
	}
	u.PeakRSSKB, u.BaselineRSSKB = procKB(after, "VmHWM"), procKB(before, "VmRSS")
	return u, nil
}

func procStatus() (string, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", fmt.Errorf("bench: peak RSS needs Linux /proc: %w", err)
	}
	return string(data), nil
}

// memoryGoalFiles is the snapshot size P5's peak RSS goal is set for;
// memoryGoalRSSMiB is the goal (issue 17 item 5; round one's was 400 MiB).
const (
	memoryGoalFiles  = 1_000_000
	memoryGoalRSSMiB = 200
)

// MemoryFigure measures P5: the peak RSS of a fresh process that loads and
// holds a snapshot of Config.MemoryFiles live files, replayed from a classic
// checkpoint (10,000 files per commit before it, stats on every file).
func MemoryFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	const perCommit = 10_000
	commits := max(1, cfg.MemoryFiles/perCommit)
	spec := TableSpec{Commits: int64(commits), FilesPerCommit: cfg.MemoryFiles / commits, CheckpointAt: int64(commits)}
	files := int(spec.Commits) * spec.FilesPerCommit
	fig := &Figure{ID: "P5", Title: "memory: peak RSS holding a snapshot",
		Setup: fmt.Sprintf("local filesystem; a child process loads the latest snapshot of a table of %d live files with stats "+
			"from its classic checkpoint and holds it; VmHWM from /proc/self/status", files)}
	if skipWithoutChild(fig, env.MemoryChild) {
		return fig, nil
	}
	dir, store, err := env.tempLocalStore("p5-table-")
	if err != nil {
		return fig, err
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	if err := GenerateTable(ctx, store, spec); err != nil {
		return fig, err
	}
	fig.add("generate_table", time.Since(t0).Seconds(), "s")
	env.logf("P5: table generated in %v", time.Since(t0).Round(time.Millisecond))
	if info, err := store.Stat(ctx, txlog.CheckpointKey(spec.CheckpointAt)); err == nil {
		fig.add("checkpoint_bytes", float64(info.Size), "B")
	}
	r, err := runMemoryChild(ctx, env, dir)
	if err != nil {
		return fig, err
	}
	if r.Files != files {
		return fig, fmt.Errorf("bench: memory child loaded %d files, want %d", r.Files, files)
	}
	mib := func(kb int64) float64 { return float64(kb) / 1024 }
	// The goal (memoryGoalRSSMiB) is for a snapshot of 1,000,000 files; a smaller
	// table (quick mode) gets no verdict, only a note.
	fig.addPeakRSS(r.PeakRSSKB, memoryGoalRSSMiB, files >= memoryGoalFiles, "at 1,000,000 files", "holds "+groupDigits(files))
	fig.add("rss_after_gc", mib(r.RSSKB), "MiB")
	fig.add("heap_live", float64(r.HeapLiveBytes)/(1<<20), "MiB")
	fig.add("heap_live_per_file", float64(r.HeapLiveBytes)/float64(files), "B")
	fig.add("heap_live_after_all_files", float64(r.HeapAfterAllBytes)/(1<<20), "MiB")
	fig.add("baseline_rss", mib(r.BaselineRSSKB), "MiB")
	fig.add("load", r.LoadSeconds, "s")
	fig.add("files", float64(files), "count")
	return fig, nil
}

func runMemoryChild(ctx context.Context, env *Env, dir string) (*memoryReport, error) {
	var r memoryReport
	if err := runChild(env.MemoryChild(ctx, dir), "memory child", "memory child", memoryLinePrefix, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// writeChildLine writes the line a child process reports with: prefix and
// r as JSON.
func writeChildLine(w io.Writer, prefix string, r any) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", prefix, line)
	return err
}

// runChild runs cmd, a child process that reports with writeChildLine,
// and decodes the JSON of the first line of its output that starts with
// prefix into r. name names the child in the errors, and runName in that
// of a failed run; those of a failed run or of a missing line hold the
// child's output.
func runChild(cmd *exec.Cmd, name, runName, prefix string, r any) error {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench: %s: %w\n%s%s", runName, err, stdout.String(), stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			if err := json.Unmarshal([]byte(rest), r); err != nil {
				return fmt.Errorf("bench: %s said %q: %w", name, rest, err)
			}
			return nil
		}
	}
	return fmt.Errorf("bench: %s wrote no %q line:\n%s%s", name, prefix, stdout.String(), stderr.String())
}

// groupDigits prints n with thousands separators (1,000,000).
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
