package report_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/table/report"
)

type cityRow struct {
	ID   int64  `delta:"id"`
	City string `delta:"city"`
}

func rowsOf(city string, from, n int64) []cityRow {
	out := make([]cityRow, n)
	for i := range out {
		out[i] = cityRow{ID: from + int64(i), City: city}
	}
	return out
}

// clocked is a table whose commits happen at the time cur says (in-commit
// timestamps on, so that history's times are these).
type clocked struct {
	t   *testing.T
	dir string
	tbl *table.Table
	cur time.Time
}

func newClocked(t *testing.T, at time.Time, partitioned bool, props map[string]string) *clocked {
	t.Helper()
	c := &clocked{t: t, dir: filepath.Join(t.TempDir(), "t"), cur: at}
	sch, err := table.SchemaOf[cityRow]()
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]string{"delta.enableInCommitTimestamps": "true"}
	for k, v := range props {
		p[k] = v
	}
	opts := []table.Option{table.WithProperties(p), table.WithClock(func() time.Time { return c.cur }), table.WithSyncCheckpoints()}
	if partitioned {
		opts = append(opts, table.WithPartitionColumns("city"))
	}
	if c.tbl, err = table.Create(context.Background(), c.dir, sch, opts...); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *clocked) append(at time.Time, rows []cityRow) {
	c.t.Helper()
	c.cur = at
	var err error
	if c.tbl, err = table.Append(context.Background(), c.tbl, rows); err != nil {
		c.t.Fatal(err)
	}
}

func (c *clocked) delete(at time.Time, where table.Expr) {
	c.t.Helper()
	c.cur = at
	var err error
	if c.tbl, _, err = c.tbl.Delete(context.Background(), where); err != nil {
		c.t.Fatal(err)
	}
}

// sizeOnDisk is the size of the table's data file p (a path the log
// records) as the filesystem reports it.
func sizeOnDisk(t *testing.T, dir, p string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(table.DecodePath(p))))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// day is midnight (UTC) two days ago: commits happen at hours of it.
// Snapshot.Tombstones measures retention from the wall clock, so the
// table's times are recent ones.
var day = time.Now().UTC().Truncate(24 * time.Hour).Add(-48 * time.Hour)

// at is hh:mm of day.
func at(hhmm string) time.Time {
	t, err := time.Parse("15:04", hhmm)
	if err != nil {
		panic(err)
	}
	return day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute)
}

// TestBuild reports on a partitioned table with deletion vectors whose
// commits come at known times: every count follows from what was written.
func TestBuild(t *testing.T) {
	ctx := context.Background()
	c := newClocked(t, at("10:00"), true, map[string]string{"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "100"})
	c.append(at("10:10"), rowsOf("ams", 0, 10))  // v1: ams file 1
	c.append(at("10:20"), rowsOf("ams", 10, 10)) // v2: ams file 2
	c.append(at("11:05"), rowsOf("ams", 20, 10)) // v3: ams file 3
	c.append(at("11:30"), rowsOf("ber", 100, 40))
	c.append(at("12:00"), rowsOf("cph", 200, 5))
	c.delete(at("13:15"), table.Col("city").Eq("cph"))  // v6: the cph file removed whole
	c.delete(at("13:40"), table.Col("id").In(0, 1, 10)) // v7: DVs on ams files 1 (2 of 10) and 2 (1 of 10)
	var amsBytes, berBytes int64
	for f := range c.tbl.Snapshot().AllFiles() {
		if f.PartitionValues["city"] == "ams" {
			amsBytes += sizeOnDisk(t, c.dir, f.Path)
		} else {
			berBytes += sizeOnDisk(t, c.dir, f.Path)
		}
	}
	// The cph file, as written at 12:00 (vacuum keeps files modified
	// within the retention, whatever the log says).
	var cphSize int64
	entries, _ := os.ReadDir(filepath.Join(c.dir, "city=cph"))
	for _, e := range entries {
		fi, _ := e.Info()
		cphSize += fi.Size()
		if err := os.Chtimes(filepath.Join(c.dir, "city=cph", e.Name()), at("12:00"), at("12:00")); err != nil {
			t.Fatal(err)
		}
	}
	if len(entries) != 1 {
		t.Fatalf("city=cph holds %d files, want 1", len(entries))
	}

	r, err := report.Build(ctx, c.tbl, report.WithClock(func() time.Time { return at("14:40") }))
	if err != nil {
		t.Fatal(err)
	}
	if r.Version != 7 || !slices.Equal(r.PartitionColumns, []string{"city"}) || !r.Timestamp.Equal(at("13:40")) {
		t.Errorf("version %d, partition columns %v, timestamp %v", r.Version, r.PartitionColumns, r.Timestamp)
	}
	wantFiles := report.Files{Count: 4, Bytes: amsBytes + berBytes, Rows: 70, DeletedRows: 3, SmallFiles: 4, SmallBytes: amsBytes + berBytes}
	got := r.Files
	got.MinSize, got.MaxSize = 0, 0
	if got != wantFiles {
		t.Errorf("files %+v, want %+v", got, wantFiles)
	}
	var hFiles int
	var hBytes int64
	for _, b := range r.SizeHistogram {
		hFiles += b.Files
		hBytes += b.Bytes
		if b.Files > 0 && (r.Files.MinSize < b.Min && r.Files.MaxSize < b.Min || b.Max <= b.Min) {
			t.Errorf("bucket %+v outside the sizes %d-%d", b, r.Files.MinSize, r.Files.MaxSize)
		}
	}
	if hFiles != 4 || hBytes != r.Files.Bytes || r.SizeHistogram[0].Files == 0 || r.SizeHistogram[len(r.SizeHistogram)-1].Files == 0 {
		t.Errorf("size histogram %+v: %d files, %d bytes", r.SizeHistogram, hFiles, hBytes)
	}

	ps := r.Partitions
	if ps.Count != 2 || len(ps.Top) != 2 || ps.MinRows != 30 || ps.MaxRows != 40 || ps.MeanRows != 35 {
		t.Fatalf("partitions %+v", ps)
	}
	if want := 40.0 / 35; ps.RowsSkew < want-1e-9 || ps.RowsSkew > want+1e-9 {
		t.Errorf("rows skew %v, want %v", ps.RowsSkew, want)
	}
	byName := map[string]report.Partition{}
	for _, p := range ps.Top {
		byName[p.Name(r.PartitionColumns)] = p
	}
	if p := byName["city=ams"]; p.Files != 3 || p.Rows != 30 || p.DeletedRows != 3 || p.Bytes != amsBytes || p.SmallFiles != 3 {
		t.Errorf("ams %+v", p)
	}
	if p := byName["city=ber"]; p.Files != 1 || p.Rows != 40 || p.DeletedRows != 0 || p.Bytes != berBytes {
		t.Errorf("ber %+v", p)
	}
	if ps.Top[0].Bytes < ps.Top[1].Bytes || ps.MaxBytes != max(amsBytes, berBytes) || ps.MinBytes != min(amsBytes, berBytes) {
		t.Errorf("partitions not largest first: %+v", ps)
	}

	dv := r.DeletionVectors
	if dv.Files != 2 || dv.DeletedRows != 3 || dv.OverThreshold != 2 || dv.UnknownShare != 0 || len(dv.Top) != 2 {
		t.Fatalf("deletion vectors %+v", dv)
	}
	if dv.Top[0].Share != 0.2 || dv.Top[0].Rows != 10 || dv.Top[0].DeletedRows != 2 || dv.Top[1].Share != 0.1 || !strings.HasPrefix(dv.Top[0].Path, "city=ams/") {
		t.Errorf("top DV files %+v", dv.Top)
	}
	var hist []int
	for _, b := range dv.Histogram {
		hist = append(hist, b.Files)
	}
	if !slices.Equal(hist, []int{0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("DV share histogram %v", hist)
	}

	cm := r.Commits
	if cm.Read != 8 || cm.Limited || cm.OldestVersion != 0 || cm.NewestVersion != 7 || !cm.First.Equal(at("10:00")) || !cm.Last.Equal(at("13:40")) {
		t.Errorf("commits %+v", cm)
	}
	if want := []report.OperationCount{{"WRITE", 5}, {"DELETE", 2}, {"CREATE TABLE", 1}}; !slices.Equal(cm.Operations, want) {
		t.Errorf("operations %v, want %v", cm.Operations, want)
	}
	var hours []string
	for _, h := range cm.Hours {
		hours = append(hours, h.Start.Format("15:04")+"="+strconv.Itoa(h.Commits))
	}
	if want := []string{"10:00=3", "11:00=2", "12:00=1", "13:00=2"}; !slices.Equal(hours, want) {
		t.Errorf("hours %v, want %v", hours, want)
	}
	if h := cm.Hours[0]; !slices.Equal(h.Operations, []report.OperationCount{{"WRITE", 2}, {"CREATE TABLE", 1}}) {
		t.Errorf("10:00 operations %v", h.Operations)
	}

	if l := r.Log; l.CheckpointVersion != -1 || l.CommitsSinceCheckpoint != 8 || l.OldestCommit != 0 || l.ExpiredLogFiles != 0 {
		t.Errorf("log %+v", l)
	}
	if s := r.Settings; s.CheckpointInterval != 100 || s.LogRetention != 30*24*time.Hour || s.DeletedFileRetention != 7*24*time.Hour || s.SmallFileSize != 128<<20 {
		t.Errorf("settings %+v", s)
	}
	// The cph file is removed at 13:15 and within the week; the ams files
	// whose vectors changed were removed too, but are live again.
	if v := r.Vacuum; !v.Scanned || v.Deletable != 0 || v.Pending != 1 || v.PendingBytes != cphSize || !v.NextDeletable.Equal(at("13:15").Add(7*24*time.Hour)) {
		t.Errorf("vacuum %+v (cph file %d bytes)", v, cphSize)
	}
	if len(r.Recommendations) != 1 || r.Recommendations[0].Action != "optimize" {
		t.Fatalf("recommendations %+v", r.Recommendations)
	}
	for _, want := range []string{"3 small files", "below 128 MiB in 1 partition(s) compact into about 1", "2 file(s)", "more than 5% of their rows deleted"} {
		if !strings.Contains(r.Recommendations[0].Reason, want) {
			t.Errorf("optimize reason %q lacks %q", r.Recommendations[0].Reason, want)
		}
	}
	if len(r.Notes) != 0 {
		t.Errorf("notes %q", r.Notes)
	}

	// Eight days later the cph file is past the retention: vacuum.
	r, err = report.Build(ctx, c.tbl, report.WithClock(func() time.Time { return at("13:16").Add(8 * 24 * time.Hour) }))
	if err != nil {
		t.Fatal(err)
	}
	if v := r.Vacuum; v.Deletable != 1 || v.DeletableBytes != cphSize || v.Pending != 0 {
		t.Errorf("vacuum 8 days later %+v", v)
	}
	if len(r.Recommendations) != 2 || r.Recommendations[1].Action != "vacuum" || !strings.Contains(r.Recommendations[1].Reason, "1 data file(s)") {
		t.Errorf("recommendations 8 days later %+v", r.Recommendations)
	}

	// A small-file size below every file, and no storage listing.
	r, err = report.Build(ctx, c.tbl, report.WithSmallFileSize(1), report.WithVacuumScan(false), report.WithHistoryLimit(3), report.WithTopPartitions(1))
	if err != nil {
		t.Fatal(err)
	}
	if r.Files.SmallFiles != 0 || r.Vacuum.Scanned || r.Commits.Read != 3 || !r.Commits.Limited || r.Commits.OldestVersion != 5 || len(r.Partitions.Top) != 1 {
		t.Errorf("small files %d, vacuum %+v, commits %+v, top partitions %d", r.Files.SmallFiles, r.Vacuum, r.Commits, len(r.Partitions.Top))
	}
	if len(r.Recommendations) != 1 || strings.Contains(r.Recommendations[0].Reason, "small files") {
		t.Errorf("recommendations with 1-byte small files: %+v", r.Recommendations)
	}
}

// TestBuildLogMaintenance: a checkpoint that is due, and log files past
// delta.logRetentionDuration.
func TestBuildLogMaintenance(t *testing.T) {
	ctx := context.Background()
	c := newClocked(t, time.Now().UTC(), false, map[string]string{"delta.checkpointInterval": "3"})
	for i := range 4 {
		c.append(c.cur.Add(time.Minute), rowsOf("x", int64(i*10), 10)) // v1-v4; the checkpoint of v3
	}
	log := filepath.Join(c.dir, "_delta_log")
	entries, err := os.ReadDir(log)
	if err != nil {
		t.Fatal(err)
	}
	expired := 0 // the log files below the checkpoint of version 3
	for _, e := range entries {
		if v, err := strconv.ParseInt(strings.SplitN(e.Name(), ".", 2)[0], 10, 64); err == nil && v < 3 {
			expired++
		}
	}
	later := func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }
	r, err := report.Build(ctx, c.tbl, report.WithClock(later))
	if err != nil {
		t.Fatal(err)
	}
	if l := r.Log; l.CheckpointVersion != 3 || l.CommitsSinceCheckpoint != 1 || l.ExpiredLogFiles != expired || expired < 3 || l.CleanupKeepFrom != 3 {
		t.Errorf("log %+v, want checkpoint 3, 1 commit since, %d expired files", l, expired)
	}
	var actions []string
	for _, rec := range r.Recommendations {
		actions = append(actions, rec.Action)
	}
	if !slices.Equal(actions, []string{"optimize", "cleanup"}) {
		t.Errorf("recommendations %+v", r.Recommendations)
	}

	// A damaged checkpoint: readers replay around it.
	cp := filepath.Join(log, "00000000000000000003.checkpoint.parquet")
	if err := os.WriteFile(cp, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	damaged, err := table.Open(ctx, c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = report.Build(ctx, damaged, report.WithClock(later)); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(r.Recommendations, func(rec report.Recommendation) bool { return rec.Action == "checkpoint" })
	if !slices.Equal(r.Log.SkippedCheckpoints, []int64{3}) || r.Log.CheckpointVersion != -1 || r.Log.CommitsSinceCheckpoint != 5 || i < 0 || !strings.Contains(r.Recommendations[i].Reason, "version(s) 3 cannot be read") {
		t.Errorf("damaged checkpoint: log %+v, recommendations %+v", r.Log, r.Recommendations)
	}

	// A writer that never checkpoints (the checkpoint removed): 5 commits,
	// delta.checkpointInterval 3.
	for _, e := range entries {
		if strings.Contains(e.Name(), ".checkpoint") || e.Name() == "_last_checkpoint" {
			if err := os.Remove(filepath.Join(log, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	tbl, err := table.Open(ctx, c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = report.Build(ctx, tbl, report.WithClock(later)); err != nil {
		t.Fatal(err)
	}
	if l := r.Log; l.CheckpointVersion != -1 || l.CommitsSinceCheckpoint != 5 || l.ExpiredLogFiles != 0 {
		t.Errorf("log without a checkpoint %+v", l)
	}
	i = slices.IndexFunc(r.Recommendations, func(rec report.Recommendation) bool { return rec.Action == "checkpoint" })
	if i < 0 || !strings.Contains(r.Recommendations[i].Reason, "5 commit(s) since no checkpoint: the checkpoint due at version 3 (delta.checkpointInterval 3) was not written") {
		t.Errorf("recommendations %+v", r.Recommendations)
	}
}

// A fresh table with one file needs nothing; bad arguments are errors.
func TestBuildQuietAndErrors(t *testing.T) {
	ctx := context.Background()
	c := newClocked(t, time.Now().UTC(), false, nil)
	c.append(c.cur.Add(time.Second), rowsOf("x", 0, 3))
	r, err := report.Build(ctx, c.tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Recommendations) != 0 || r.Partitions.Count != 0 || r.Partitions.Top != nil || r.Files.Count != 1 || r.Files.Rows != 3 || r.DeletionVectors.Histogram != nil {
		t.Errorf("fresh table: %+v", r)
	}
	for _, tc := range []struct {
		name string
		tbl  *table.Table
		opts []report.Option
	}{
		{"nil table", nil, nil},
		{"zero small-file size", c.tbl, []report.Option{report.WithSmallFileSize(0)}},
	} {
		if _, err := report.Build(ctx, tc.tbl, tc.opts...); !errors.Is(err, table.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := report.Build(cctx, c.tbl); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
