// Package bench measures deltakit against its floors (what the same work
// costs without deltakit: a bare conditional PUT, raw parquet-go) and against
// delta-rs, side by side in one process run, so that the figures are ratios
// that survive noisy machines.
//
// The figures are:
//
//	P1 commit       p50/p99 latency of a one-file blind append commit on MinIO
//	                vs a bare PutIfAbsent of the same bytes, interleaved
//	P2 append       flights structs through table.Append[Flight] (and rows
//	                through table.AppendRows) vs
//	                parquet-go's GenericWriter + Put, on MinIO
//	P3 open         latest snapshot (and an incremental refresh) of a table
//	                with many commits, a checkpoint and many live files:
//	                txlog.Load vs delta-rs DeltaTable, on the local filesystem
//	P4 contention   commits/s of 1, 4 and 8 writers blind-appending to one
//	                table on MinIO, with zero lost commits checked
//	P5 memory       peak RSS of a process holding a snapshot of many live
//	                files, measured in a child process
//	P6 streaming    epochs/s of a streamsink on MinIO, vs the floor of the
//	                same data file and commit written directly; the cost of
//	                a skipped epoch
//	P7 delete       DELETE of ~1% of the rows of a table, every file
//	                touched, with deletion vectors and copy-on-write, vs
//	                rewriting the touched files with raw parquet-go, on MinIO
//	P8 arrow        table.Table.ScanArrow (full and selective) vs delta-rs
//	                to_pyarrow_table / to_pyarrow_dataset, Scan and ScanAs
//	                as ratios to it, AppendArrow vs AppendRows vs raw
//	                parquet-go, peak RSS of a ScanArrow of a large table
//	P10 group       64 goroutines of one process each appending one batch
//	                to one table on MinIO, with table.WithGroupCommit and
//	                without, vs the same appends serialized
//	R1 upload-rss   peak RSS of a child process streaming one large data
//	                file to MinIO (S3 multipart) and committing it
//	R2 optimize-rss peak RSS of a child process running OPTIMIZE over
//	                many small files
//	G1 growth       open time and peak RSS at growing live file counts,
//	                commit p50 on small and large tables, refresh cost
//	                after k new commits
//	P9 kafka        Kafka → Delta records/s of 1 KiB JSON records with 1, 2
//	                and 3 ingest processes in one consumer group on a real
//	                broker, vs as many plain kgo consumers reading the same
//	                records; end-to-end latency from produce to the
//	                committed version
//	P11 merge       MERGE of 10,000 changed keys (half updates, half
//	                inserts) into a date-partitioned table of 10,000,000
//	                rows in 100 files, keys of 5 dates and of every date:
//	                table.Table.Merge with deletion vectors and copy-on-write vs
//	                delta-rs's DeltaTable.merge, on the local filesystem
//	P12 ingest      issue 17's "P7 ingest": deltactl ingest of the demo's
//	                flights-3m.parquet into a local table as epochs vs
//	                raw parquet-go reading and writing the rows once, and
//	                in one commit vs delta-rs's write_deltalake
//	S1 file-size    issue 30's item 6: the bytes of deltakit's Parquet file
//	                of the demo's flights rows vs pyarrow's default writer
//	                at the same rows per row group, and the write CPU of
//	                deltakit's encoding defaults vs its previous ones
//
// Run builds a Report of them; cmd/deltabench prints it, and the benchmarks
// in this package's tests drive the same code under go test -bench. Nothing
// here asserts timings.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
)

// Figure ids, in the order Run measures them.
var figureIDs = []string{"P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11", "P12", "S1", "R1", "R2", "G1"}

// FigureIDs returns the ids of all figures in order.
func FigureIDs() []string { return slices.Clone(figureIDs) }

// Config holds the sizes of every figure. Use QuickConfig or FullConfig and
// change fields as needed.
type Config struct {
	// Mode names the configuration: "quick" or "full".
	Mode string

	// P1: interleaved commit/PUT pairs measured, after CommitWarmup pairs,
	// on a new table; then CommitLargePairs on a table of CommitLargeFiles
	// live files (none when 0).
	CommitPairs      int
	CommitWarmup     int
	CommitLargeFiles int
	CommitLargePairs int

	// P2: rows per append, repetitions per side (the median counts).
	AppendRows int
	AppendReps int

	// P3: commits of the generated table (after version 0), files per
	// commit, the checkpoint version (commits-10), repetitions per side.
	OpenCommits        int
	OpenFilesPerCommit int
	OpenReps           int

	// P4: writer counts and commits per writer.
	ContentionWriters []int
	ContentionCommits int

	// P5: live files of the snapshot held.
	MemoryFiles int

	// P6: epochs written, rows per epoch, skipped epochs measured.
	StreamEpochs  int
	StreamRows    int
	StreamSkipped int

	// P7: rows and files of the table deleted from, repetitions per side
	// (the median counts).
	DeleteRows  int
	DeleteFiles int
	DeleteReps  int

	// P10: goroutines, rows per append, repetitions per side.
	GroupWriters int
	GroupRows    int
	GroupReps    int

	// P8: flights rows and files of the scanned table, repetitions per
	// side (the median counts); rows and files of the memory table.
	ArrowRows        int
	ArrowFiles       int
	ArrowReps        int
	ArrowMemoryRows  int
	ArrowMemoryFiles int

	// P9: records produced before the runs, their size in bytes, the
	// topic's partitions, the member counts; then records produced at
	// KafkaLatencyRate records/s for the latency.
	KafkaRecords        int
	KafkaRecordBytes    int
	KafkaPartitions     int32
	KafkaMembers        []int
	KafkaLatencyRecords int
	KafkaLatencyRate    int

	// P11: rows and dates (one file each) of the table merged into, the
	// changed keys of the source (half updates, half inserts), the dates
	// of the narrow spread, repetitions per side (the median counts).
	MergeRows        int
	MergeDates       int
	MergeKeys        int
	MergeNarrowDates int
	MergeReps        int

	// P12: rows of flights-3m.parquet ingested (0: all), rows per epoch of
	// the streaming side, repetitions per side (the median counts).
	IngestRows      int
	IngestEpochRows int
	IngestReps      int

	// S1: rows of flights-3m.parquet written (0: all), rows per row
	// group, repetitions of each deltakit write (the median counts).
	SizeRows         int
	SizeRowGroupRows int
	SizeReps         int

	// R1: bytes of the one data file streamed to MinIO.
	UploadBytes int64
	// R2: bytes of small files optimized, and the size of each.
	OptimizeBytes     int64
	OptimizeFileBytes int64

	// G1: live files of the tables opened (ascending), files of the large
	// table committed to (beside one of 1,000) and refreshed, commits per
	// table, commits before each refresh.
	GrowthFiles       []int
	GrowthCommitFiles int
	GrowthCommits     int
	GrowthRefresh     []int
}

// QuickConfig returns the sizes CI runs: 5-30 s on 2 cores (BENCHMARKS.md).
func QuickConfig() Config {
	return Config{
		Mode:        "quick",
		CommitPairs: 150, CommitWarmup: 10, CommitLargeFiles: 20_000, CommitLargePairs: 30,
		AppendRows: 200_000, AppendReps: 3,
		OpenCommits: 1_000, OpenFilesPerCommit: 10, OpenReps: 5,
		ContentionWriters: []int{1, 4, 8}, ContentionCommits: 15,
		MemoryFiles:  100_000,
		StreamEpochs: 20, StreamRows: 10_000, StreamSkipped: 20,
		DeleteRows: 100_000, DeleteFiles: 20, DeleteReps: 3,
		ArrowRows: 200_000, ArrowFiles: 10, ArrowReps: 3, ArrowMemoryRows: 500_000, ArrowMemoryFiles: 5,
		KafkaRecords: 5_000, KafkaRecordBytes: 1024, KafkaPartitions: 6, KafkaMembers: []int{1, 2, 3},
		KafkaLatencyRecords: 500, KafkaLatencyRate: 1_000,
		GroupWriters: 64, GroupRows: 1_000, GroupReps: 1,
		MergeRows: 200_000, MergeDates: 20, MergeKeys: 1_000, MergeNarrowDates: 5, MergeReps: 1,
		IngestRows: 300_000, IngestEpochRows: 10_000, IngestReps: 1,
		SizeRows: 300_000, SizeRowGroupRows: 100_000, SizeReps: 1,
		UploadBytes: 48 << 20, OptimizeBytes: 32 << 20, OptimizeFileBytes: 1 << 20,
		GrowthFiles: []int{10_000, 100_000}, GrowthCommitFiles: 100_000, GrowthCommits: 20, GrowthRefresh: []int{1, 10, 100},
	}
}

// FullConfig returns the sizes of the issue: 1,000,000 rows, a table of
// 10,000 commits and 100,000 files, a snapshot of 1,000,000 files, a
// DELETE from a table of 1,000,000 rows in 20 files, a MERGE of 10,000
// keys into a table of 10,000,000 rows in 100 date partitions (P11 alone
// takes 6-8 minutes and ~5 GiB of RSS on 2 loaded cores).
func FullConfig() Config {
	return Config{
		Mode:        "full",
		CommitPairs: 500, CommitWarmup: 20, CommitLargeFiles: 100_000, CommitLargePairs: 100,
		AppendRows: 1_000_000, AppendReps: 7,
		OpenCommits: 10_000, OpenFilesPerCommit: 10, OpenReps: 7,
		ContentionWriters: []int{1, 4, 8}, ContentionCommits: 50,
		MemoryFiles:  1_000_000,
		StreamEpochs: 100, StreamRows: 10_000, StreamSkipped: 50,
		DeleteRows: 1_000_000, DeleteFiles: 20, DeleteReps: 5,
		ArrowRows: 3_000_000, ArrowFiles: 30, ArrowReps: 5, ArrowMemoryRows: 20_000_000, ArrowMemoryFiles: 20,
		KafkaRecords: 200_000, KafkaRecordBytes: 1024, KafkaPartitions: 6, KafkaMembers: []int{1, 2, 3},
		KafkaLatencyRecords: 20_000, KafkaLatencyRate: 2_000,
		GroupWriters: 64, GroupRows: 1_000, GroupReps: 5,
		MergeRows: 10_000_000, MergeDates: 100, MergeKeys: 10_000, MergeNarrowDates: 5, MergeReps: 1,
		IngestRows: 0, IngestEpochRows: 100_000, IngestReps: 3,
		SizeRows: 0, SizeRowGroupRows: 1_000_000, SizeReps: 5,
		UploadBytes: 2 << 30, OptimizeBytes: 1 << 30, OptimizeFileBytes: 2 << 20,
		GrowthFiles: []int{100_000, 1_000_000, 3_000_000}, GrowthCommitFiles: 1_000_000, GrowthCommits: 50, GrowthRefresh: []int{1, 10, 100},
	}
}

// Env is what the figures run against.
type Env struct {
	// S3 is the MinIO server of P1, P2, P4, P6 and P7; nil skips them.
	S3 *testenv.MinIO
	// TempDir holds generated tables; it must exist. Run removes what it
	// writes there.
	TempDir string
	// Python is the interpreter of a venv with the deltalake package
	// (delta-rs); "" skips the delta-rs side of P3.
	Python string
	// MemoryChild returns the command that runs MemoryChild in a fresh
	// process for the table in dir (P5); nil skips P5.
	MemoryChild func(ctx context.Context, dir string) *exec.Cmd
	// ContentionChild returns the command that runs ContentionChild with
	// job in a fresh process (P4's writers); nil runs P4's writers as
	// goroutines of this process instead.
	ContentionChild func(ctx context.Context, job string) *exec.Cmd
	// ArrowChild returns the command that runs ArrowScanChild in a fresh
	// process for the table in dir (P8's memory part); nil skips it.
	ArrowChild func(ctx context.Context, dir string) *exec.Cmd
	// Kafka is the broker of P9; nil skips it.
	Kafka *testenv.Kafka
	// KafkaChild returns the command that runs KafkaChild with job in a
	// fresh process (P9's ingest members and floor consumers); nil skips
	// P9. The process must end cleanly on SIGINT.
	KafkaChild func(ctx context.Context, job string) *exec.Cmd
	// RSSChild returns the command that runs RSSChild with job in a fresh
	// process (R1, R2); nil skips them.
	RSSChild func(ctx context.Context, job string) *exec.Cmd
	// Deltactl is the deltactl binary P12 runs; "" builds one from this
	// module with go build (P12 is skipped when that fails).
	Deltactl string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// skipWithoutS3 marks fig skipped, and reports true, when e has no MinIO
// server.
func (e *Env) skipWithoutS3(fig *Figure) bool {
	if e.S3 != nil {
		return false
	}
	fig.Skipped = "no MinIO server"
	return true
}

// skipWithoutChild marks fig skipped, and reports true, when child (one of
// e's child-process commands) is nil.
func skipWithoutChild(fig *Figure, child func(ctx context.Context, arg string) *exec.Cmd) bool {
	if child != nil {
		return false
	}
	fig.Skipped = "no way to start a child process"
	return true
}

// tempLocalStore makes a fresh directory named prefix* under e.TempDir
// and a local store rooted there; the caller removes dir.
func (e *Env) tempLocalStore(prefix string) (dir string, store *objectstore.Local, err error) {
	dir, err = os.MkdirTemp(e.TempDir, prefix)
	if err != nil {
		return "", nil, err
	}
	store, err = objectstore.NewLocal(dir)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, store, nil
}

func (e *Env) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

// Report is the outcome of one run. Its JSON keys are stable.
type Report struct {
	Schema  int       `json:"schema"` // 1
	Date    time.Time `json:"date"`
	Mode    string    `json:"mode"`
	Machine Machine   `json:"machine"`
	Figures []*Figure `json:"figures"`
	// Seconds is the wall time of the whole run.
	Seconds float64 `json:"seconds"`
}

// Machine describes where a report was measured.
type Machine struct {
	CPUModel   string `json:"cpu_model"`
	NumCPU     int    `json:"num_cpu"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemTotalMB int64  `json:"mem_total_mib"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
}

// Figure is one measured figure: its metrics and what limits it.
type Figure struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Setup says what was measured, with the sizes.
	Setup string `json:"setup"`
	// Skipped says why the figure (or a part of it) was not measured; the
	// figure is absent only when it says so.
	Skipped string    `json:"skipped,omitempty"`
	Metrics []*Metric `json:"metrics"`
	Notes   []string  `json:"notes,omitempty"`
	Seconds float64   `json:"seconds"` // wall time of the figure, setup included
}

// Metric is one number. Ratios have Unit "x" and usually a Goal.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Goal is "<= 1.15", "< 1" and the like; "" when the metric has none.
	Goal string `json:"goal,omitempty"`
	// Met reports whether Value meets Goal; nil without a goal.
	Met *bool `json:"met,omitempty"`
}

func (f *Figure) add(name string, value float64, unit string) *Metric {
	m := &Metric{Name: name, Value: value, Unit: unit}
	f.Metrics = append(f.Metrics, m)
	return m
}

// goalFull attaches the goal "op limit" to m in full mode. Quick mode's sizes
// and sample counts are not those the goal is set for (a p99 of 150 samples
// is the second slowest), so there the goal is only noted, without verdict.
func (f *Figure) goalFull(cfg Config, m *Metric, op string, limit float64) {
	if cfg.Mode == "full" {
		m.goal(op, limit)
		return
	}
	f.note("%s: goal %s %g applies in full mode; %s mode gives no verdict", m.Name, op, limit, cfg.Mode)
}

// goal attaches a goal "op limit" (op one of "<=", "<", ">=") to m.
func (m *Metric) goal(op string, limit float64) {
	m.Goal = fmt.Sprintf("%s %g", op, limit)
	var ok bool
	switch op {
	case "<=":
		ok = m.Value <= limit
	case "<":
		ok = m.Value < limit
	case ">=":
		ok = m.Value >= limit
	}
	m.Met = &ok
}

// addPeakRSS adds the metric peak_rss of kb kB, in MiB, with the goal
// "<= goalMiB" when the run is of the size the goal is set for (atSize);
// otherwise a note says what the goal applies to (goalFor: "to a 2 GiB
// file") and what this run did (ran: "writes 48 MiB"), without verdict.
func (f *Figure) addPeakRSS(kb int64, goalMiB int, atSize bool, goalFor, ran string) {
	peak := f.add("peak_rss", float64(kb)/1024, "MiB")
	if atSize {
		peak.goal("<=", float64(goalMiB))
		return
	}
	f.note("peak_rss: goal <= %d MiB applies %s; this run %s, so no verdict", goalMiB, goalFor, ran)
}

func (f *Figure) note(format string, args ...any) {
	f.Notes = append(f.Notes, fmt.Sprintf(format, args...))
}

// Metric returns the metric called name, or nil.
func (f *Figure) Metric(name string) *Metric {
	for _, m := range f.Metrics {
		if m.Name == name {
			return m
		}
	}
	return nil
}

type figureFunc func(ctx context.Context, env *Env, cfg Config) (*Figure, error)

func figureFuncs() map[string]figureFunc {
	return map[string]figureFunc{
		"P1":  CommitFigure,
		"P2":  AppendFigure,
		"P3":  OpenFigure,
		"P4":  ContentionFigure,
		"P5":  MemoryFigure,
		"P6":  StreamFigure,
		"P7":  DeleteFigure,
		"P8":  ArrowFigure,
		"P9":  KafkaFigure,
		"P10": GroupCommitFigure,
		"P11": MergeFigure,
		"P12": IngestFigure,
		"S1":  FileSizeFigure,
		"R1":  UploadFigure,
		"R2":  OptimizeFigure,
		"G1":  GrowthFigure,
	}
}

// Run measures the figures named in only (all when empty), in order, and
// returns the report. A figure that fails is reported with its error in
// Skipped and Run goes on; the returned error joins those failures.
func Run(ctx context.Context, env *Env, cfg Config, only []string) (*Report, error) {
	start := time.Now()
	rep := &Report{Schema: 1, Date: start.UTC().Truncate(time.Second), Mode: cfg.Mode, Machine: DescribeMachine()}
	funcs := figureFuncs()
	var failed []string
	for _, id := range figureIDs {
		if len(only) > 0 && !slices.Contains(only, id) {
			continue
		}
		env.logf("== %s", id)
		t0 := time.Now()
		fig, err := funcs[id](ctx, env, cfg)
		if err != nil {
			if fig == nil {
				fig = &Figure{ID: id}
			}
			fig.Skipped = "failed: " + err.Error()
			failed = append(failed, id+": "+err.Error())
		}
		fig.Seconds = time.Since(t0).Seconds()
		rep.Figures = append(rep.Figures, fig)
		if ctx.Err() != nil {
			break
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	if len(failed) > 0 {
		return rep, fmt.Errorf("bench: %s", strings.Join(failed, "; "))
	}
	return rep, nil
}

// ParseOnly parses a comma-separated list of figure ids ("P1,P3", case
// insensitive); it returns an error naming an unknown id.
func ParseOnly(s string) ([]string, error) {
	var ids []string
	for p := range strings.SplitSeq(s, ",") {
		p = strings.ToUpper(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		if !slices.Contains(figureIDs, p) {
			return nil, fmt.Errorf("unknown figure %q (want some of %s)", p, strings.Join(figureIDs, ","))
		}
		ids = append(ids, p)
	}
	return ids, nil
}

// DescribeMachine reads the CPU model and memory from /proc (Linux; empty
// elsewhere) and the Go runtime's view of the machine.
func DescribeMachine() Machine {
	m := Machine{NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemTotalMB = procKB(string(data), "MemTotal") / 1024
	}
	return m
}

// procKB returns the value in kB of a "Key:   123 kB" line of a /proc file,
// or -1.
func procKB(text, key string) int64 {
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		var n int64
		if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(v), " kB"), &n); err == nil {
			return n
		}
	}
	return -1
}

// FindPython returns the python of the interop venv ($DELTAKIT_VENV, else
// .venv in the repository holding dir or one of its parents) when it exists,
// else "".
func FindPython(dir string) string {
	if v := os.Getenv("DELTAKIT_VENV"); v != "" {
		p := filepath.Join(v, "bin", "python")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, ".venv", "bin", "python")
			if _, err := os.Stat(p); err == nil {
				return p
			}
			return ""
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
