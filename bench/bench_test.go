package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/ingest"
	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/testenv"
)

// The benchmarks use QuickConfig's sizes; -full uses FullConfig's:
//
//	go test -run '^$' -bench . ./bench -args -full
var full = flag.Bool("full", false, "benchmark with the full sizes of FullConfig")

func benchConfig() Config {
	if *full {
		return FullConfig()
	}
	return QuickConfig()
}

// memoryChildEnv names the variable that makes TestMemoryChild the body of
// P5's child process; its value is the table directory.
const memoryChildEnv = "DELTABENCH_MEMORY_CHILD"

// TestMemoryChild is P5's child process when run with $DELTABENCH_MEMORY_CHILD.
func TestMemoryChild(t *testing.T) {
	dir := os.Getenv(memoryChildEnv)
	if dir == "" {
		t.Skip("only P5's child process runs this")
	}
	if err := MemoryChild(t.Context(), dir, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// kafkaChildEnv names the variable that makes TestKafkaChild the body of a
// P9 child process; its value is the job.
const kafkaChildEnv = "DELTABENCH_KAFKA_CHILD"

// TestKafkaChild is a P9 child process when run with $DELTABENCH_KAFKA_CHILD;
// SIGINT ends it cleanly.
func TestKafkaChild(t *testing.T) {
	job := os.Getenv(kafkaChildEnv)
	if job == "" {
		t.Skip("only P9's child processes run this")
	}
	ctx, stop := signal.NotifyContext(t.Context(), os.Interrupt)
	defer stop()
	if err := KafkaChild(ctx, job, os.Stdout); err != nil {
		t.Fatal(err)
	}
}

// withKafka adds a Kafka broker (and the test binary as P9's children) to
// env. Without an install P9 is skipped (env.Kafka stays nil); with CI=true
// that fails tb instead.
func withKafka(tb testing.TB, env *Env) {
	k, err := testenv.StartKafkaBroker(tb.Context(), tb.TempDir())
	if err != nil {
		if os.Getenv("CI") == "true" {
			testenv.KafkaUnavailable(tb, err) // fails tb
		}
		tb.Logf("P9 skipped: %v", err)
		return
	}
	tb.Cleanup(func() { _ = k.Close() })
	env.Kafka = k
	env.KafkaChild = func(ctx context.Context, job string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKafkaChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), kafkaChildEnv+"="+job)
		return cmd
	}
}

// testEnv returns an Env with MinIO, the venv's python (if any) and the test
// binary as P5's child.
func testEnv(tb testing.TB) *Env {
	env := &Env{S3: testenv.StartMinIO(tb), TempDir: tb.TempDir()}
	if wd, err := os.Getwd(); err == nil {
		env.Python = FindPython(wd)
	}
	if env.Python == "" && os.Getenv("CI") == "true" {
		tb.Fatal("CI=true: no python with deltalake for P3; scripts/test.sh runs scripts/install-interop.sh")
	}
	env.MemoryChild = func(ctx context.Context, dir string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMemoryChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), memoryChildEnv+"="+dir)
		return cmd
	}
	return env
}

// TestFigures runs every figure at tiny sizes and checks that each produced
// its metrics and a report with stable JSON keys. It asserts no timing.
func TestFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MinIO and generates tables")
	}
	env := testEnv(t)
	withKafka(t, env)
	cfg := Config{Mode: "test", CommitPairs: 10, CommitWarmup: 1, AppendRows: 5_000, AppendReps: 1,
		OpenCommits: 30, OpenFilesPerCommit: 5, OpenReps: 1, ContentionWriters: []int{1, 3}, ContentionCommits: 4,
		MemoryFiles: 2_000, StreamEpochs: 3, StreamRows: 500, StreamSkipped: 2,
		DeleteRows: 8_000, DeleteFiles: 4, DeleteReps: 1,
		ArrowRows: 20_000, ArrowFiles: 4, ArrowReps: 1, ArrowMemoryRows: 20_000, ArrowMemoryFiles: 2,
		KafkaRecords: 600, KafkaRecordBytes: 1024, KafkaPartitions: 6, KafkaMembers: []int{1, 2},
		KafkaLatencyRecords: 60, KafkaLatencyRate: 200,
		GroupWriters: 8, GroupRows: 100, GroupReps: 1}
	cfg.IngestRows, cfg.IngestEpochRows, cfg.IngestReps = tinyIngest()
	cfg.MergeRows, cfg.MergeDates, cfg.MergeKeys, cfg.MergeNarrowDates, cfg.MergeReps = tinyMerge()
	cfg.SizeRows, cfg.SizeRowGroupRows, cfg.SizeReps = tinyFileSize()
	rep, err := Run(t.Context(), env, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"P1": {"ratio_p50", "ratio_p99", "default_ratio_p50", "default_ratio_p99", "default_checkpoints_written", "deltakit_commit_p50", "bare_put_p50", "background_checkpoints_written", "last_checkpoint_version", "sync_commit_p99", "unpaced_commit_p50"},
		"P2": {"ratio", "deltakit_append", "raw_parquet_go", "append_rows", "ratio_append_rows"},
		"P3": {"deltakit_open_files", "deltakit_update_10"},
		"P4": {"commits_per_s_1w", "commits_per_s_3w", "lost_commits_3w"},
		"P5": {"peak_rss", "heap_live"},
		"P6": {"epochs_per_s", "skipped_epoch_p50"},
		"P7": {"ratio_dv", "ratio_cow", "ratio_dv_cpu", "ratio_cow_cpu", "dv_delete", "cow_delete", "floor_delete",
			"dv_deleted_rows", "dv_bytes_written", "cow_bytes_written", "floor_bytes_written", "floor_files_touched", "dv_second_delete"},
		"P8":  {"scanarrow_1file", "scanarrow_files", "scan_rows_vs_scanarrow", "selective", "append_arrow", "append_arrow_vs_rows", "append_arrow_vs_parquet_go"},
		"P12": ingestMetrics(env.Python != ""),
		"S1":  fileSizeMetrics(env.Python != ""),
		"P10": {"serial_wall", "serial_versions", "grouped_wall", "grouped_versions", "grouped_wall_ratio", "concurrent_wall"},
		"P9": {"records_per_s_1m", "floor_records_per_s_1m", "ratio_1m", "latency_p50_1m", "latency_p99_1m", "commits_1m",
			"records_per_s_2m", "floor_records_per_s_2m", "ratio_2m", "latency_p50_2m", "latency_p99_2m"},
	}
	if env.Python != "" {
		want["P3"] = append(want["P3"], "ratio_open", "ratio_update")
	}
	var ids []string
	for _, f := range rep.Figures {
		ids = append(ids, f.ID)
		for _, name := range want[f.ID] {
			if m := f.Metric(name); m == nil || m.Value <= 0 && f.ID != "P4" {
				t.Errorf("%s: metric %s = %+v", f.ID, name, m)
			}
		}
		// R1 and R2 measure a child process's peak RSS and G1 needs growth
		// sizes: this test env has neither (deltabench --quick runs them).
		rssOrGrowth := f.ID == "R1" || f.ID == "R2" || f.ID == "G1"
		if f.Skipped != "" && !((f.ID == "P3" || f.ID == "P11") && env.Python == "") && !(f.ID == "P9" && env.Kafka == nil) && !rssOrGrowth &&
			!((f.ID == "P12" || f.ID == "S1") && (FlightsParquet() == "" || env.Python == "")) {
			t.Errorf("%s skipped: %s", f.ID, f.Skipped)
		}
	}
	if !slices.Equal(ids, FigureIDs()) {
		t.Errorf("figures %v", ids)
	}
	for _, f := range rep.Figures {
		if f.ID != "P7" {
			continue
		}
		// Every file is touched; with deletion vectors none is rewritten
		// and one DV file is written, copy-on-write rewrites them all.
		for name, want := range map[string]float64{"dv_files_touched": 4, "cow_files_touched": 4, "floor_files_touched": 4,
			"dv_data_files_written": 0, "dv_dv_files_written": 1, "cow_dv_files_written": 0, "floor_data_files_written": 4,
			"dv_second_dv_files_written": 1, "dv_second_files_touched": 4} {
			if m := f.Metric(name); m == nil || m.Value != want {
				t.Errorf("P7: %s = %+v, want %v", name, m, want)
			}
		}
		if f.Metric("cow_deleted_rows").Value != f.Metric("floor_deleted_rows").Value {
			t.Errorf("P7: deleted rows differ: copy-on-write %v, floor %v", f.Metric("cow_deleted_rows").Value, f.Metric("floor_deleted_rows").Value)
		}
	}
	for _, f := range rep.Figures {
		if f.ID == "P11" {
			checkMergeFigure(t, f, env.Python != "")
		}
	}
	for _, f := range rep.Figures {
		if f.ID != "P9" || env.Kafka == nil {
			continue
		}
		// Each run's table holds every record on the topic once: the 600
		// produced first, then 60 more per latency phase before it.
		for name, want := range map[string]float64{"rows_1m": 660, "rows_2m": 720} {
			if m := f.Metric(name); m == nil || m.Value != want {
				t.Errorf("P9: %s = %+v, want %v", name, m, want)
			}
		}
	}
	for _, f := range rep.Figures {
		if m := f.Metric("lost_commits_3w"); m != nil && (m.Value != 0 || !*m.Met) {
			t.Errorf("P4 lost commits: %+v", m)
		}
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "date", "mode", "machine", "figures", "seconds"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("report JSON lacks %q: %s", k, data)
		}
	}
}

// tinyIngest returns P12's test sizes: rows of flights-3m.parquet, rows
// per epoch, repetitions.
func tinyIngest() (rows, epochRows, reps int) { return 20_000, 1_000, 1 }

// ingestMetrics returns the metrics P12 must have (positive), those of the
// delta-rs side too when deltars.
func ingestMetrics(deltars bool) []string {
	m := []string{"ratio_epochs", "ratio_epochs_cpu", "floor", "floor_cpu", "epochs", "epochs_cpu", "epochs_rss",
		"one_commit", "one_commit_cpu", "one_commit_rss", "rows", "epoch_count", "floor_files", "epochs_files", "one_commit_files"}
	if deltars {
		m = append(m, "deltars", "deltars_cpu", "deltars_rss", "deltars_files", "ratio_one_commit_vs_deltars", "ratio_one_commit_vs_deltars_cpu")
	}
	return m
}

// TestIngestFigure runs P12 alone at tiny sizes (no MinIO needed) when the
// demo's flights-3m.parquet is there: each side's table must hold the
// slice's rows (Run fails otherwise), the streaming side one version per
// epoch.
func TestIngestFigure(t *testing.T) {
	if FlightsParquet() == "" {
		testsupport.Absent(t, "P12 needs flights-3m.parquet ($DELTAKIT_FLIGHTS_PARQUET; scripts/fetch-demo-data.sh)")
	}
	env := &Env{TempDir: t.TempDir()}
	if wd, err := os.Getwd(); err == nil {
		env.Python = FindPython(wd)
	}
	var cfg Config
	cfg.Mode = "test"
	cfg.IngestRows, cfg.IngestEpochRows, cfg.IngestReps = tinyIngest()
	rep, err := Run(t.Context(), env, cfg, []string{"P12"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Figures) != 1 {
		t.Fatalf("figures %+v", rep.Figures)
	}
	f := rep.Figures[0]
	for _, name := range ingestMetrics(env.Python != "") {
		if m := f.Metric(name); m == nil || m.Value <= 0 {
			t.Errorf("P12: metric %s = %+v", name, m)
		}
	}
	rows, epochRows, _ := tinyIngest()
	for name, want := range map[string]float64{"rows": float64(rows), "epoch_count": float64(rows / epochRows), "floor_files": 1} {
		if m := f.Metric(name); m == nil || m.Value != want {
			t.Errorf("P12: %s = %+v, want %v", name, m, want)
		}
	}
	for _, m := range f.Metrics {
		if m.Met != nil {
			t.Errorf("P12: %s has a verdict in test mode: %+v", m.Name, m)
		}
	}
}

// tinyMerge returns P11's test sizes: rows, dates, keys, narrow dates,
// repetitions.
func tinyMerge() (rows, dates, keys, narrow, reps int) { return 20_000, 10, 200, 3, 1 }

// checkMergeFigure checks what P11's sides did at tinyMerge's sizes: the
// narrow MERGE touches its 3 dates' files, the wide one every file; with
// deletion vectors no file is removed and one DV file is written;
// copy-on-write (deltakit and delta-rs) removes every touched file and
// copies its other rows. (Run checks each side's rows against the
// reference digest and fails otherwise.)
func checkMergeFigure(t *testing.T, f *Figure, deltars bool) {
	t.Helper()
	rows, dates, keys, narrow, _ := tinyMerge()
	perDate := rows / dates
	want := map[string]float64{
		"narrow_dv_files_given_dv": float64(narrow), "narrow_dv_files_removed": 0, "narrow_dv_dv_files_written": 1,
		"narrow_dv_files_added":    float64(narrow), // the updated and inserted rows: one new file per date
		"narrow_cow_files_removed": float64(narrow), "narrow_cow_files_given_dv": 0,
		"narrow_cow_rows_copied": float64(narrow*perDate - keys/2),
		"wide_dv_files_given_dv": float64(dates), "wide_cow_files_removed": float64(dates),
		"wide_cow_rows_copied": float64(rows - keys/2),
	}
	if deltars {
		want["narrow_deltars_files_removed"] = float64(narrow)
		want["narrow_deltars_rows_copied"] = float64(narrow*perDate - keys/2)
		want["wide_deltars_files_removed"] = float64(dates)
	}
	for name, w := range want {
		if m := f.Metric(name); m == nil || m.Value != w {
			t.Errorf("P11: %s = %+v, want %v", name, m, w)
		}
	}
	for _, name := range []string{"narrow_dv_merge", "narrow_cow_merge", "wide_dv_merge", "wide_cow_merge", "table_bytes"} {
		if m := f.Metric(name); m == nil || m.Value <= 0 {
			t.Errorf("P11: %s = %+v", name, m)
		}
	}
	if m := f.Metric("narrow_ratio_cow"); deltars && (m == nil || m.Value <= 0) {
		t.Errorf("P11: narrow_ratio_cow = %+v", m)
	}
}

// TestMergeFigure runs P11 alone at tiny sizes (no MinIO needed): every
// side's result must equal the reference digest, and the files touched
// are those the key spread implies.
func TestMergeFigure(t *testing.T) {
	env := &Env{TempDir: t.TempDir()}
	if wd, err := os.Getwd(); err == nil {
		env.Python = FindPython(wd)
	}
	var cfg Config
	cfg.Mode = "test"
	cfg.MergeRows, cfg.MergeDates, cfg.MergeKeys, cfg.MergeNarrowDates, cfg.MergeReps = tinyMerge()
	rep, err := Run(t.Context(), env, cfg, []string{"P11"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Figures) != 1 {
		t.Fatalf("figures %+v", rep.Figures)
	}
	checkMergeFigure(t, rep.Figures[0], env.Python != "")
}

func TestParseOnly(t *testing.T) {
	ids, err := ParseOnly(" p1, P3 ,")
	if err != nil || !slices.Equal(ids, []string{"P1", "P3"}) {
		t.Errorf("ParseOnly = %v, %v", ids, err)
	}
	if _, err := ParseOnly("P1,P99"); err == nil {
		t.Error("P99 accepted")
	}
}

func TestGenerateFlightsDeterministic(t *testing.T) {
	_, all := GenerateFlights(0, 100)
	_, part := GenerateFlights(40, 10)
	for i := range part {
		if fmt.Sprint(part[i]) != fmt.Sprint(all[40+i]) {
			t.Fatalf("row %d: %v vs %v", 40+i, part[i], all[40+i])
		}
	}
}

// BenchmarkCommit is P1: a one-file blind append commit vs a bare
// PutIfAbsent of the same bytes, on MinIO. "deltakit" writes the due
// checkpoints in the background (txlog.Checkpointer; they run beside the
// next commits), "deltakit-sync-checkpoint" inside Commit.
func BenchmarkCommit(b *testing.B) {
	ctx := b.Context()
	s3 := testenv.StartMinIO(b)
	for _, bc := range []struct {
		name       string
		background bool
	}{{"deltakit", true}, {"deltakit-sync-checkpoint", false}} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := newCommitBench(ctx, s3, 0, bc.background)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.commit(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if _, err := c.closeCheckpointer(ctx); err != nil && c.due > 0 {
				b.Fatal(err)
			}
		})
	}
	c, err := newCommitBench(ctx, s3, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.commit(ctx); err != nil { // bytes for the bare PUT
		b.Fatal(err)
	}
	b.Run("bare-put", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := c.put(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAppend is P2: table.Append[Flight] ("deltakit"), table.AppendRows
// of the same rows as parquetio rows ("deltakit-rows") and parquet-go +
// Put of the same []Flight ("raw-parquet-go"), on MinIO.
func BenchmarkAppend(b *testing.B) {
	ctx := b.Context()
	cfg := benchConfig()
	a, err := newAppendBench(ctx, testenv.StartMinIO(b), cfg.AppendRows)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("deltakit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.deltakit(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cfg.AppendRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("deltakit-rows", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.deltakitRows(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cfg.AppendRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("raw-parquet-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.rawWrite(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(cfg.AppendRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkOpen is P3 on the local filesystem: txlog.Load + Files and
// Snapshot.Update by 10 commits; with the interop venv also delta-rs, whose
// time is measured inside Python and reported as ms/op-python.
func BenchmarkOpen(b *testing.B) {
	ctx := b.Context()
	cfg := benchConfig()
	spec := TableSpec{Commits: int64(cfg.OpenCommits), FilesPerCommit: cfg.OpenFilesPerCommit, CheckpointAt: int64(cfg.OpenCommits) - 10}
	o, err := newOpenBench(ctx, b.TempDir(), spec)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { o.close() })
	b.Run("deltakit-open", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, err := o.open(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("deltakit-update", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			base, err := o.base(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, _, err := o.update(ctx, base); err != nil {
				b.Fatal(err)
			}
		}
	})
	wd, _ := os.Getwd()
	python := FindPython(wd)
	if python == "" {
		b.Log("delta-rs skipped: no venv (scripts/install-interop.sh)")
		return
	}
	rs, err := startDeltaRS(ctx, python, o.dir, spec.CheckpointAt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rs.close() })
	for _, cmd := range []string{"open", "update"} {
		b.Run("deltars-"+cmd, func(b *testing.B) {
			var sum float64
			for b.Loop() {
				t, err := rs.do(cmd)
				if err != nil {
					b.Fatal(err)
				}
				sum += t.OpenFiles + t.Update
			}
			b.ReportMetric(sum*1000/float64(b.N), "ms/op-python")
		})
	}
}

// BenchmarkContention is P4: each iteration runs n writers × the configured
// commits on a new table and checks the log.
func BenchmarkContention(b *testing.B) {
	s3 := testenv.StartMinIO(b)
	cfg := benchConfig()
	for _, n := range cfg.ContentionWriters {
		b.Run(fmt.Sprintf("writers=%d", n), func(b *testing.B) {
			var commits, seconds float64
			for b.Loop() {
				r, err := contend(b.Context(), s3, n, cfg.ContentionCommits)
				if err != nil {
					b.Fatal(err)
				}
				if r.lost != 0 {
					b.Fatalf("%d commits lost", r.lost)
				}
				commits += float64(n * cfg.ContentionCommits)
				seconds += r.wall.Seconds()
			}
			b.ReportMetric(commits/seconds, "commits/s")
		})
	}
}

// BenchmarkMemory is P5: the peak RSS of a child process (this test binary
// running TestMemoryChild) holding a snapshot.
func BenchmarkMemory(b *testing.B) {
	env := &Env{TempDir: b.TempDir()}
	env.MemoryChild = testEnv(b).MemoryChild
	cfg := benchConfig()
	for b.Loop() {
		fig, err := MemoryFigure(b.Context(), env, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(fig.Metric("peak_rss").Value, "peak-RSS-MiB")
		b.ReportMetric(fig.Metric("heap_live_per_file").Value, "heap-B/file")
	}
}

// BenchmarkStream is P6: streamsink epochs of the configured rows, the
// floor of the same work, and skipped (already committed) epochs.
func BenchmarkStream(b *testing.B) {
	ctx := b.Context()
	cfg := benchConfig()
	s, err := newStreamBench(ctx, testenv.StartMinIO(b), cfg.StreamRows)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.epoch(ctx); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fn   func(context.Context) error
	}{{"epoch", s.epoch}, {"floor", s.floorEpoch}, {"skipped", s.skipped}, {"bare-list", s.floorList}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.fn(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDelete is P7: DELETE of origin = 'MSY' (~1% of the rows, every
// file touched) with deletion vectors ("deletion-vectors") and
// copy-on-write ("copy-on-write"), and the floor of rewriting every file
// with raw parquet-go ("raw-parquet-go"), on MinIO. Each deltakit delete is
// followed, outside the timer, by a restore of the table's initial files.
func BenchmarkDelete(b *testing.B) {
	ctx := b.Context()
	cfg := benchConfig()
	d, err := newDeleteBench(ctx, testenv.StartMinIO(b), cfg.DeleteRows, cfg.DeleteFiles)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		run   func(context.Context) (deleteOutcome, error)
		after func(context.Context) error
	}{
		{"deletion-vectors", d.dvDelete, func(ctx context.Context) error { return restore(ctx, &d.dv, d.dvBase) }},
		{"copy-on-write", d.cowDelete, func(ctx context.Context) error { return restore(ctx, &d.cow, d.cowBase) }},
		{"raw-parquet-go", d.floor, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var written int64
			for b.Loop() {
				out, err := c.run(ctx)
				if err != nil {
					b.Fatal(err)
				}
				written += out.io.putBytes
				if c.after != nil {
					b.StopTimer()
					if err := c.after(ctx); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(written)/float64(b.N), "B-written/op")
		})
	}
}

// TestGoalFull checks that full mode judges a figure against its goal and
// that quick mode only notes the goal.
func TestGoalFull(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		cfg      Config
		value    float64
		wantMet  *bool
		wantNote bool
	}{
		{FullConfig(), 1.05, &yes, false},
		{FullConfig(), 1.20, &no, false},
		{QuickConfig(), 1.20, nil, true},
	} {
		f := &Figure{}
		m := f.add("ratio", tc.value, "x")
		f.goalFull(tc.cfg, m, "<=", 1.15)
		switch {
		case (m.Met == nil) != (tc.wantMet == nil), m.Met != nil && *m.Met != *tc.wantMet:
			t.Errorf("%s mode, %v: met %v, want %v", tc.cfg.Mode, tc.value, m.Met, tc.wantMet)
		case tc.wantMet != nil && m.Goal != "<= 1.15":
			t.Errorf("%s mode: goal %q", tc.cfg.Mode, m.Goal)
		case tc.wantNote != (len(f.Notes) == 1):
			t.Errorf("%s mode: notes %q", tc.cfg.Mode, f.Notes)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1000000: "1,000,000", -1234: "-1,234"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestKafkaRecord: P9's records are exactly the configured size, valid JSON
// rows of the table's schema, and distinct.
func TestKafkaRecord(t *testing.T) {
	payloads := kafkaPayloads()
	seen := map[string]bool{}
	for _, id := range []int64{0, 1, 63, 64, 12_345, 199_999, 10_000_000} {
		v := kafkaRecord(id, 1024, payloads)
		if len(v) != 1024 {
			t.Errorf("record %d: %d bytes, want 1024", id, len(v))
		}
		row, err := ingest.JSONRow(kafkaSchema(), v)
		if err != nil {
			t.Fatalf("record %d: %v: %s", id, err, v)
		}
		if row[0] != id {
			t.Errorf("record %d: id column %v", id, row[0])
		}
		p := row[5].(string)
		if seen[p] {
			t.Errorf("record %d: payload repeated", id)
		}
		seen[p] = true
	}
}

// TestMergeSourceAndDigest checks P11's source (distinct keys, half of
// them existing rows of the chosen dates, half new ids on those dates) and
// that the digest tells a table without the MERGE from the reference.
func TestMergeSourceAndDigest(t *testing.T) {
	ctx := t.Context()
	m, err := newMergeBench(ctx, t.TempDir(), 4_000, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close(ctx)
	src, err := mergeSource(m.rows, m.perDate, []int{1, 3}, 100)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[int64]bool{}
	var existing int
	for _, r := range src {
		if keys[r.ID] {
			t.Fatalf("id %d twice in the source", r.ID)
		}
		keys[r.ID] = true
		if d := int(r.Date - mergeDay0); d != 1 && d != 3 {
			t.Errorf("id %d on date index %d", r.ID, d)
		}
		if r.ID < int64(m.rows) {
			existing++
			if want := mergeUpdated(mergeInitialRow(r.ID, m.perDate)); r != want {
				t.Errorf("update %+v, want %+v", r, want)
			}
		}
	}
	if existing != 50 {
		t.Errorf("%d updates of existing rows, want 50", existing)
	}
	want := expectedDigest(m.base, src, m.rows, m.perDate)
	before, err := digestTable(ctx, m.cow, keys)
	if err != nil {
		t.Fatal(err)
	}
	if before == want || before.Rows != 4_000 || before.KeyRows != 50 {
		t.Errorf("digest before the merge %v, reference %v", before, want)
	}
	if _, err := deltakitMerge(ctx, &m.cow, m.cowStore, src); err != nil {
		t.Fatal(err)
	}
	after, err := digestTable(ctx, m.cow, keys)
	if err != nil {
		t.Fatal(err)
	}
	if after != want || after.Rows != 4_050 || after.KeyRows != 100 {
		t.Errorf("digest after the merge %v, reference %v", after, want)
	}
}

// tinyFileSize returns S1's test sizes: rows of flights-3m.parquet, rows
// per row group, repetitions.
func tinyFileSize() (rows, rgRows, reps int) { return 20_000, 6_000, 1 }

// fileSizeMetrics returns the metrics S1 must have (positive), those of
// the pyarrow side too when pyarrow.
func fileSizeMetrics(pyarrow bool) []string {
	m := []string{"deltakit_bytes", "deltakit_write", "deltakit_write_cpu", "previous_bytes", "previous_write", "previous_write_cpu",
		"ratio_write_cpu_vs_previous", "ratio_bytes_vs_previous", "rows", "row_groups"}
	if pyarrow {
		m = append(m, "pyarrow_bytes", "pyarrow_write", "pyarrow_write_cpu", "ratio_bytes_vs_pyarrow", "ratio_previous_bytes_vs_pyarrow", "ratio_write_cpu_vs_pyarrow")
	}
	return m
}

// TestFileSizeFigure runs S1 alone at tiny sizes when the demo's
// flights-3m.parquet is there: each file holds the slice's rows in
// ceil(rows/rgRows) row groups (Run fails when pyarrow does not read the
// slice's table back from deltakit's file), and dictionary pages for the
// numbers make deltakit's file smaller than the previous defaults'.
func TestFileSizeFigure(t *testing.T) {
	if FlightsParquet() == "" {
		testsupport.Absent(t, "S1 needs flights-3m.parquet ($DELTAKIT_FLIGHTS_PARQUET; scripts/fetch-demo-data.sh)")
	}
	env := &Env{TempDir: t.TempDir()}
	if wd, err := os.Getwd(); err == nil {
		env.Python = FindPython(wd)
	}
	cfg := Config{Mode: "test"}
	cfg.SizeRows, cfg.SizeRowGroupRows, cfg.SizeReps = tinyFileSize()
	rep, err := Run(t.Context(), env, cfg, []string{"S1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Figures) != 1 {
		t.Fatalf("figures %+v", rep.Figures)
	}
	f := rep.Figures[0]
	for _, name := range fileSizeMetrics(env.Python != "") {
		if m := f.Metric(name); m == nil || m.Value <= 0 {
			t.Errorf("S1: metric %s = %+v", name, m)
		}
	}
	rows, rgRows, _ := tinyFileSize()
	for name, want := range map[string]float64{"rows": float64(rows), "row_groups": float64((rows + rgRows - 1) / rgRows)} {
		if m := f.Metric(name); m == nil || m.Value != want {
			t.Errorf("S1: %s = %+v, want %v", name, m, want)
		}
	}
	if m := f.Metric("ratio_bytes_vs_previous"); m == nil || m.Value >= 1 {
		t.Errorf("S1: ratio_bytes_vs_previous = %+v, want < 1 (delay and distance dictionary-encoded)", m)
	}
	for _, m := range f.Metrics {
		if m.Met != nil {
			t.Errorf("S1: %s has a verdict in test mode: %+v", m.Name, m)
		}
	}
}
