// Package report describes a Delta table the way a data engineer looks at
// it before maintaining it: how its data files are sized (a histogram and
// the small files), how rows and bytes spread over the partitions (skew),
// how much of each file deletion vectors have deleted, how often commits
// come and which operations they are, where the log's checkpoint and
// retention stand, and which maintenance to run (optimize, vacuum,
// checkpoint, log cleanup) with the reason.
//
// Build computes a Report from a table's snapshot and history through the
// table package's API only. It goes once through the live files without
// keeping them (table.Snapshot.AllFiles): its memory is one aggregate per
// partition, a few fixed histograms and at most the commits it reads
// (WithHistoryLimit), whatever the number of files. Rendering (text, JSON,
// HTML) is the caller's: deltactl report does all three.
package report

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/deltakit/deltakit/table"
)

// MaxDeletedRowsRatio is the share of a file's rows its deletion vector
// may delete before OPTIMIZE rewrites the file: Spark's default of
// spark.databricks.delta.optimize.maxDeletedRowsRatio (0.05). A file over
// it costs every scan the deleted rows it reads and drops.
const MaxDeletedRowsRatio = 0.05

// SparkOptimizeMinFileSize is Spark's default of
// spark.databricks.delta.optimize.minFileSize (1 GiB): the files Spark's
// OPTIMIZE considers for compaction are the smaller ones. The report's
// small-file size is deltactl optimize's target (WithSmallFileSize).
const SparkOptimizeMinFileSize = 1 << 30

// Defaults of the options.
const (
	DefaultHistoryLimit  = 1000
	DefaultTopPartitions = 20
	DefaultTopFiles      = 10
)

// Report is what Build found in one table version. Sizes are in bytes,
// times in UTC; rows are numRecords of the files' stats (the rows a file
// holds, deleted ones included, as deltactl files shows them) and deleted
// rows the cardinalities of the deletion vectors.
type Report struct {
	// Table is the table's URI, Version the version described and
	// Timestamp its commit time.
	Table     string
	Version   int64
	Timestamp time.Time
	// GeneratedAt is the report's clock (WithClock) when Build ran:
	// retention is measured from it.
	GeneratedAt      time.Time
	PartitionColumns []string
	Settings         Settings
	Files            Files
	// SizeHistogram has one bucket per power of two, from the bucket of
	// the smallest file to that of the largest, empty buckets between
	// included; empty for a table without files.
	SizeHistogram   []SizeBucket
	Partitions      Partitions
	DeletionVectors DeletionVectors
	Commits         Commits
	Log             Log
	Vacuum          Vacuum
	// Recommendations are the maintenance the table needs now, in the
	// order to run it; empty when it needs none.
	Recommendations []Recommendation
	// Notes are what Build could not determine (an unreadable commit, a
	// bad retention property) and other remarks for the reader.
	Notes []string
}

// Settings are the thresholds the report applies.
type Settings struct {
	// SmallFileSize: a data file below it is small (WithSmallFileSize;
	// default table.DefaultTargetFileSize, deltactl optimize's target).
	SmallFileSize int64
	// MaxDeletedRowsRatio is MaxDeletedRowsRatio.
	MaxDeletedRowsRatio float64
	// CheckpointInterval, LogRetention and DeletedFileRetention are the
	// table's delta.checkpointInterval, delta.logRetentionDuration and
	// delta.deletedFileRetentionDuration (Spark's defaults when unset:
	// 10 commits, 30 days, 7 days).
	CheckpointInterval   int64
	LogRetention         time.Duration
	DeletedFileRetention time.Duration
}

// Files sums up the live data files.
type Files struct {
	Count int
	Bytes int64
	// Rows sums numRecords over the files with stats; WithoutStats counts
	// the others (their rows are unknown).
	Rows         int64
	WithoutStats int
	// DeletedRows sums the deletion vectors' cardinalities.
	DeletedRows int64
	// MinSize and MaxSize are the smallest and largest file (0 without
	// files).
	MinSize, MaxSize int64
	// SmallFiles and SmallBytes are the files below Settings.SmallFileSize.
	SmallFiles int
	SmallBytes int64
}

// SizeBucket counts the files of sizes in [Min, Max).
type SizeBucket struct {
	Min, Max int64
	Files    int
	Bytes    int64
}

// Partitions describes how the files spread over partition values.
type Partitions struct {
	// Count is the number of distinct partition values among the live
	// files; 0 for a table without partition columns.
	Count int
	// MinBytes, MaxBytes, MeanBytes and the same for rows are over the
	// partitions (rows of files with stats).
	MinBytes, MaxBytes, MeanBytes int64
	MinRows, MaxRows, MeanRows    int64
	// BytesSkew and RowsSkew are the largest partition over the mean (1
	// when even; 0 without partitions).
	BytesSkew, RowsSkew float64
	// Top are the largest partitions by bytes, at most WithTopPartitions.
	Top []Partition
}

// Partition is the files of one partition value.
type Partition struct {
	// Values are the partition values in PartitionColumns order; nil is
	// null.
	Values      []*string
	Files       int
	Bytes       int64
	Rows        int64
	DeletedRows int64
	SmallFiles  int
	SmallBytes  int64
}

// Name is the partition in Hive style: "a=1/b=x", null written as
// __HIVE_DEFAULT_PARTITION__ as Spark names its directory.
func (p *Partition) Name(cols []string) string {
	parts := make([]string, 0, len(cols))
	for i, c := range cols {
		v := "__HIVE_DEFAULT_PARTITION__"
		if i < len(p.Values) && p.Values[i] != nil {
			v = *p.Values[i]
		}
		parts = append(parts, c+"="+v)
	}
	return strings.Join(parts, "/")
}

// DeletionVectors describes the files with deletion vectors and how much
// of each they delete (the share: cardinality over numRecords).
type DeletionVectors struct {
	// Files counts the live files with a deletion vector, DeletedRows the
	// rows they delete.
	Files       int
	DeletedRows int64
	// UnknownShare counts the files with a vector and no numRecords.
	UnknownShare int
	// OverThreshold counts the files whose share is above
	// Settings.MaxDeletedRowsRatio, OverThresholdBytes their size.
	OverThreshold      int
	OverThresholdBytes int64
	// Histogram counts the files with a known share per share range:
	// [0, 5%], (5%, 10%], (10%, 20%], ..., (90%, 100%].
	Histogram []ShareBucket
	// Top are the files with the highest share, at most DefaultTopFiles.
	Top []DVFile
}

// ShareBucket counts the files whose deleted share is in (Min, Max] (the
// first bucket includes Min).
type ShareBucket struct {
	Min, Max float64
	Files    int
}

// DVFile is one file with a deletion vector.
type DVFile struct {
	// Path is the file's path as the log records it, decoded.
	Path        string
	Size        int64
	Rows        int64
	DeletedRows int64
	Share       float64
}

// Commits describes the commits read from the log, newest last.
type Commits struct {
	// Read counts the commits read: the newest ones, at most
	// WithHistoryLimit. Limited is true when older commits are in the log
	// and were not read.
	Read    int
	Limited bool
	// OldestVersion and NewestVersion are the versions of the commits
	// read (-1 without), First and Last their times (the times time
	// travel by timestamp uses).
	OldestVersion, NewestVersion int64
	First, Last                  time.Time
	// Operations counts the commits per commitInfo.operation, most
	// frequent first ("" for commits without commitInfo).
	Operations []OperationCount
	// Hours are the hours (UTC) with at least one commit, oldest first.
	Hours []Hour
}

// OperationCount is the number of commits of one operation.
type OperationCount struct {
	Operation string
	Commits   int
}

// Hour is the commits of one hour.
type Hour struct {
	// Start is the hour's start (UTC).
	Start   time.Time
	Commits int
	// Operations counts this hour's commits per operation, most frequent
	// first.
	Operations []OperationCount
}

// Log describes the checkpoint and the log's retention state.
type Log struct {
	// CheckpointVersion is the newest checkpoint at or below Version (-1:
	// none), CommitsSinceCheckpoint the commits a reader replays after it
	// (all of them, Version+1, without a checkpoint).
	CheckpointVersion      int64
	CommitsSinceCheckpoint int64
	// SkippedCheckpoints are checkpoints that could not be read (readers
	// replay around them), by version.
	SkippedCheckpoints []int64
	// OldestCommit is the oldest commit file in the log (-1: none; more
	// than 0 when log cleanup removed older ones).
	OldestCommit int64
	// ExpiredLogFiles are the log files log cleanup would delete now
	// (older than Settings.LogRetention and below a checkpoint), and
	// CleanupKeepFrom the oldest version reconstructable after it.
	ExpiredLogFiles int
	CleanupKeepFrom int64
}

// Vacuum describes the data files vacuum would delete and those waiting
// for the retention.
type Vacuum struct {
	// Scanned is false when the storage was not listed (WithVacuumScan
	// false, or the listing failed: see Notes); the counts below are 0
	// then.
	Scanned bool
	// ListedFiles counts the data files under the table root; Deletable
	// and DeletableBytes the ones vacuum would delete now (removed, or
	// never referenced, longer ago than Settings.DeletedFileRetention).
	ListedFiles    int
	Deletable      int
	DeletableBytes int64
	// Pending and PendingBytes are the files removed within the retention
	// (their remove actions' sizes; a remove without a size adds 0): vacuum
	// deletes them once it has passed, the first at NextDeletable (zero
	// without pending files).
	Pending       int
	PendingBytes  int64
	NextDeletable time.Time
}

// Recommendation is one maintenance operation to run, with the reason.
type Recommendation struct {
	// Action is "optimize", "vacuum", "checkpoint" or "cleanup" (log
	// cleanup).
	Action string
	// Reason says what was found and which threshold it passes.
	Reason string
}

// Option configures Build.
type Option func(*config)

type config struct {
	historyLimit  int
	smallFileSize int64
	topPartitions int
	now           func() time.Time
	vacuumScan    bool
	logger        *slog.Logger // of the view atClock opens; nil: the table package's default
}

// WithHistoryLimit sets how many of the newest commits are read for
// Commits (default DefaultHistoryLimit; n <= 0: all).
func WithHistoryLimit(n int) Option { return func(c *config) { c.historyLimit = n } }

// WithSmallFileSize sets the size in bytes below which a data file is
// small (default table.DefaultTargetFileSize, 128 MiB: the target of
// Table.Optimize, which compacts such files).
func WithSmallFileSize(bytes int64) Option { return func(c *config) { c.smallFileSize = bytes } }

// WithTopPartitions sets how many of the largest partitions
// Partitions.Top lists (default DefaultTopPartitions).
func WithTopPartitions(n int) Option { return func(c *config) { c.topPartitions = n } }

// WithClock sets the report's clock (default time.Now): GeneratedAt, and
// the time retention is measured from, which the dry runs of log cleanup
// and vacuum read as the clock (table.WithClock) of a view of the table.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithLogger sets the logger of the view of the table the dry runs of log
// cleanup and vacuum read (table.WithLogger; default slog.Default()): its
// load logs a checkpoint replayed around at Warn.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithVacuumScan turns vacuum's dry run for Report.Vacuum on or off
// (default on): it lists every data file under the table root, which can
// take a while on large tables in object storage, and its planning holds
// the keys of the live files (Table.Vacuum); off, the report's memory
// stays per partition.
func WithVacuumScan(on bool) Option { return func(c *config) { c.vacuumScan = on } }

// Build reports on t's version. It reads t's snapshot (once through the
// live files), the newest commits of the log, and for vacuum and log
// cleanup makes their dry runs (which list the storage and the log; never
// deleting anything). What it cannot read is said in Report.Notes: an
// unreadable commit, a failed listing or a bad retention property do not
// fail the report.
//
// Errors: ErrInvalidArgument (table's) for a nil table or a non-positive
// small-file size; ctx's error when it ends.
func Build(ctx context.Context, t *table.Table, opts ...Option) (*Report, error) {
	cfg := config{historyLimit: DefaultHistoryLimit, smallFileSize: table.DefaultTargetFileSize,
		topPartitions: DefaultTopPartitions, now: time.Now, vacuumScan: true}
	for _, o := range opts {
		o(&cfg)
	}
	if t == nil || t.Snapshot() == nil {
		return nil, fmt.Errorf("report: %w: nil table", table.ErrInvalidArgument)
	}
	if cfg.smallFileSize <= 0 {
		return nil, fmt.Errorf("report of %s: %w: small file size %d, want > 0", t.URI(), table.ErrInvalidArgument, cfg.smallFileSize)
	}
	now := cfg.now().UTC()
	snap := t.Snapshot()
	r := &Report{
		Table:            t.URI(),
		Version:          t.Version(),
		Timestamp:        snap.CommitTimestamp().UTC(),
		GeneratedAt:      now,
		PartitionColumns: slices.Clone(t.PartitionColumns()),
		Settings: Settings{
			SmallFileSize:       cfg.smallFileSize,
			MaxDeletedRowsRatio: MaxDeletedRowsRatio,
			CheckpointInterval:  t.CheckpointInterval(),
		},
	}
	var err error
	if r.Settings.LogRetention, err = t.LogRetention(); err != nil {
		r.note("%v (log cleanup applies the default, %s)", err, days(r.Settings.LogRetention))
	}
	if r.Settings.DeletedFileRetention, err = t.DeletedFileRetention(); err != nil {
		r.note("%v (vacuum refuses to run until it is fixed)", err)
	}
	pending := r.pendingRemoves(snap, now)
	parts, err := r.scanFiles(ctx, snap, pending)
	if err != nil {
		return nil, fmt.Errorf("report of %s: %w", t.URI(), err)
	}
	if err := r.readHistory(ctx, t, cfg.historyLimit); err != nil {
		return nil, fmt.Errorf("report of %s: %w", t.URI(), err)
	}
	dry, err := atClock(ctx, t, now, cfg.logger)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("report of %s: %w", t.URI(), ctx.Err())
		}
		r.note("the dry runs of log cleanup and vacuum failed: %v", err)
	}
	if err := r.logState(ctx, t, dry); err != nil {
		return nil, fmt.Errorf("report of %s: %w", t.URI(), err)
	}
	if err := r.vacuumState(ctx, dry, now, pending, cfg.vacuumScan); err != nil {
		return nil, fmt.Errorf("report of %s: %w", t.URI(), err)
	}
	r.summarizePartitions(parts, cfg.topPartitions)
	r.recommend(parts)
	return r, nil
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// partAgg is the running aggregate of one partition.
type partAgg struct {
	Partition
}

// shareEdges are the bounds of DeletionVectors.Histogram.
var shareEdges = [...]float64{0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}

// scanFiles goes once through the live files and fills Files,
// SizeHistogram and DeletionVectors; it returns the per-partition
// aggregates (one entry, key "", for a table without partition columns).
//
// pending holds the removed files within the retention by path; a path
// that is live again (a file whose deletion vector changed is removed and
// added under its path) is deleted from it: vacuum does not delete it.
func (r *Report) scanFiles(ctx context.Context, snap *table.Snapshot, pending map[string]removed) (map[string]*partAgg, error) {
	var sizes [65]SizeBucket // bucket i: sizes with bits.Len64 == i
	dvHist := make([]ShareBucket, len(shareEdges)-1)
	for i := range dvHist {
		dvHist[i] = ShareBucket{Min: shareEdges[i], Max: shareEdges[i+1]}
	}
	parts := map[string]*partAgg{}
	cols := r.PartitionColumns
	var key strings.Builder
	fs := &r.Files
	dv := &r.DeletionVectors
	n := 0
	for f := range snap.AllFiles() {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		delete(pending, f.Path)
		size := max(f.Size, 0)
		if fs.Count == 0 || size < fs.MinSize {
			fs.MinSize = size
		}
		fs.MaxSize = max(fs.MaxSize, size)
		fs.Count++
		fs.Bytes += size
		b := &sizes[bits.Len64(uint64(size))]
		b.Files++
		b.Bytes += size
		rows, hasRows := f.NumRecords()
		if hasRows {
			fs.Rows += rows
		} else {
			fs.WithoutStats++
		}
		small := size < r.Settings.SmallFileSize
		if small {
			fs.SmallFiles++
			fs.SmallBytes += size
		}

		key.Reset()
		for _, c := range cols {
			// "" is null in partitionValues; key it apart from any value.
			if v, ok := f.PartitionValues[c]; ok && v != "" {
				key.WriteByte('=')
				key.WriteString(v)
			} else {
				key.WriteByte('0')
			}
			key.WriteByte(0)
		}
		p := parts[key.String()]
		if p == nil {
			p = &partAgg{}
			for _, c := range cols {
				if v, ok := f.PartitionValues[c]; ok && v != "" {
					p.Values = append(p.Values, &v)
				} else {
					p.Values = append(p.Values, nil)
				}
			}
			parts[key.String()] = p
		}
		p.Files++
		p.Bytes += size
		if hasRows {
			p.Rows += rows
		}
		if small {
			p.SmallFiles++
			p.SmallBytes += size
		}

		if f.DeletionVector == nil {
			continue
		}
		card := f.DeletionVector.Cardinality
		dv.Files++
		dv.DeletedRows += card
		fs.DeletedRows += card
		p.DeletedRows += card
		if !hasRows || rows <= 0 {
			dv.UnknownShare++
			continue
		}
		share := float64(card) / float64(rows)
		i := 0
		for i < len(dvHist)-1 && share > dvHist[i].Max {
			i++
		}
		dvHist[i].Files++
		if share > r.Settings.MaxDeletedRowsRatio {
			dv.OverThreshold++
			dv.OverThresholdBytes += size
		}
		dv.Top = insertTop(dv.Top, DVFile{Path: table.DecodePath(f.Path), Size: size, Rows: rows, DeletedRows: card, Share: share}, DefaultTopFiles)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if dv.Files > dv.UnknownShare {
		dv.Histogram = dvHist
	}
	lo, hi := -1, -1
	for i := range sizes {
		if sizes[i].Files > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	for i := lo; lo >= 0 && i <= hi; i++ {
		b := sizes[i]
		b.Min, b.Max = bucketBounds(i)
		r.SizeHistogram = append(r.SizeHistogram, b)
	}
	return parts, nil
}

// bucketBounds returns the sizes of bucket i, those with bits.Len64 == i:
// [0, 1) for i 0, else [2^(i-1), 2^i) (the last bucket ends at MaxInt64).
func bucketBounds(i int) (lo, hi int64) {
	if i == 0 {
		return 0, 1
	}
	lo = int64(1) << (i - 1)
	if i >= 63 {
		return lo, 1<<63 - 1
	}
	return lo, int64(1) << i
}

// insertTop inserts f into top (sorted by share, then deleted rows,
// highest first; then path) and keeps at most k.
func insertTop(top []DVFile, f DVFile, k int) []DVFile {
	less := func(a, b DVFile) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(b.DeletedRows, a.DeletedRows), strings.Compare(a.Path, b.Path))
	}
	i, _ := slices.BinarySearchFunc(top, f, less)
	if i >= k {
		return top
	}
	top = slices.Insert(top, i, f)
	if len(top) > k {
		top = top[:k]
	}
	return top
}

// summarizePartitions fills Partitions from the aggregates.
func (r *Report) summarizePartitions(parts map[string]*partAgg, top int) {
	if len(r.PartitionColumns) == 0 || len(parts) == 0 {
		return
	}
	ps := &r.Partitions
	ps.Count = len(parts)
	all := make([]*partAgg, 0, len(parts))
	var bytes, rows int64
	first := true
	for _, p := range parts {
		all = append(all, p)
		bytes += p.Bytes
		rows += p.Rows
		if first {
			ps.MinBytes, ps.MaxBytes, ps.MinRows, ps.MaxRows = p.Bytes, p.Bytes, p.Rows, p.Rows
			first = false
			continue
		}
		ps.MinBytes, ps.MaxBytes = min(ps.MinBytes, p.Bytes), max(ps.MaxBytes, p.Bytes)
		ps.MinRows, ps.MaxRows = min(ps.MinRows, p.Rows), max(ps.MaxRows, p.Rows)
	}
	n := int64(len(parts))
	ps.MeanBytes, ps.MeanRows = bytes/n, rows/n
	if bytes > 0 {
		ps.BytesSkew = float64(ps.MaxBytes) * float64(n) / float64(bytes)
	}
	if rows > 0 {
		ps.RowsSkew = float64(ps.MaxRows) * float64(n) / float64(rows)
	}
	cols := r.PartitionColumns
	slices.SortFunc(all, func(a, b *partAgg) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Name(cols), b.Name(cols)))
	})
	for _, p := range all[:min(len(all), max(top, 0))] {
		ps.Top = append(ps.Top, p.Partition)
	}
}

// readHistory reads the newest commits and fills Commits. A log it cannot
// read through is a note.
func (r *Report) readHistory(ctx context.Context, t *table.Table, limit int) error {
	c := &r.Commits
	c.OldestVersion, c.NewestVersion = -1, -1
	h, err := t.History(ctx, max(limit, 0))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("the commits cannot be read: %v", err)
		return nil
	}
	oldest, err := t.OldestCommit(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("the log cannot be listed: %v", err)
		oldest = -1
	}
	r.Log.OldestCommit = oldest
	if len(h) == 0 {
		return nil
	}
	// h is newest first.
	c.Read = len(h)
	c.NewestVersion, c.OldestVersion = h[0].Version, h[len(h)-1].Version
	c.Last, c.First = h[0].Timestamp.UTC(), h[len(h)-1].Timestamp.UTC()
	c.Limited = oldest >= 0 && oldest < c.OldestVersion
	ops := map[string]int{}
	type hourAgg struct {
		commits int
		ops     map[string]int
	}
	hours := map[int64]*hourAgg{} // by the hour's start, Unix seconds
	for _, e := range h {
		ops[e.Operation]++
		k := e.Timestamp.UTC().Truncate(time.Hour).Unix()
		a := hours[k]
		if a == nil {
			a = &hourAgg{ops: map[string]int{}}
			hours[k] = a
		}
		a.commits++
		a.ops[e.Operation]++
	}
	c.Operations = opCounts(ops)
	for _, k := range slices.Sorted(maps.Keys(hours)) {
		a := hours[k]
		c.Hours = append(c.Hours, Hour{Start: time.Unix(k, 0).UTC(), Commits: a.commits, Operations: opCounts(a.ops)})
	}
	return nil
}

// opCounts sorts the operation counts, most frequent first, then by name.
func opCounts(m map[string]int) []OperationCount {
	out := make([]OperationCount, 0, len(m))
	for op, n := range m {
		out = append(out, OperationCount{Operation: op, Commits: n})
	}
	slices.SortFunc(out, func(a, b OperationCount) int {
		return cmp.Or(cmp.Compare(b.Commits, a.Commits), strings.Compare(a.Operation, b.Operation))
	})
	return out
}

// logState fills Log: the checkpoint and what log cleanup would delete.
func (r *Report) logState(ctx context.Context, t, dry *table.Table) error {
	snap := t.Snapshot()
	l := &r.Log
	for _, s := range snap.SkippedCheckpoints() {
		l.SkippedCheckpoints = append(l.SkippedCheckpoints, s.Version)
	}
	// The snapshot's checkpoint, or a newer one written since it was
	// loaded (not one that could not be read).
	l.CheckpointVersion = snap.CheckpointVersion()
	if cp, err := t.LatestCheckpoint(ctx); err == nil && !slices.Contains(l.SkippedCheckpoints, cp) {
		l.CheckpointVersion = max(l.CheckpointVersion, cp)
	} else if ctx.Err() != nil {
		return ctx.Err()
	}
	l.CommitsSinceCheckpoint = r.Version - l.CheckpointVersion
	if l.CheckpointVersion < 0 {
		l.CommitsSinceCheckpoint = r.Version + 1
	}
	if dry == nil {
		return nil
	}
	res, err := dry.CleanupLog(ctx, table.WithCleanupDryRun(true))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("log cleanup's dry run failed: %v", err)
		return nil
	}
	l.ExpiredLogFiles = len(res.Deleted)
	l.CleanupKeepFrom = res.KeepFrom
	return nil
}

// atClock returns t at its version with the table clock (table.WithClock)
// now, for the dry runs of log cleanup and vacuum, which measure retention
// from the table's clock.
func atClock(ctx context.Context, t *table.Table, now time.Time, logger *slog.Logger) (*table.Table, error) {
	return table.Open(ctx, t.URI(), table.WithStore(t.Store()), table.AtVersion(t.Version()),
		table.WithClock(func() time.Time { return now }), table.WithSyncCheckpoints(), table.WithLogger(logger))
}

// removed is a removed file: when (deletionTimestamp, Unix ms) and its
// size (0 when the remove action has none).
type removed struct{ at, size int64 }

// pendingRemoves returns the files removed within the retention, by path.
func (r *Report) pendingRemoves(snap *table.Snapshot, now time.Time) map[string]removed {
	cutoff := now.Add(-r.Settings.DeletedFileRetention).UnixMilli()
	out := map[string]removed{}
	for _, rm := range snap.Tombstones() {
		if rm.DeletionTimestamp != nil && *rm.DeletionTimestamp > cutoff {
			var size int64
			if rm.Size != nil {
				size = *rm.Size
			}
			out[rm.Path] = removed{at: *rm.DeletionTimestamp, size: size}
		}
	}
	return out
}

// vacuumState fills Vacuum: the removed files within the retention that
// are not live (pending), and a vacuum dry run when scan.
func (r *Report) vacuumState(ctx context.Context, dry *table.Table, now time.Time, pending map[string]removed, scan bool) error {
	v := &r.Vacuum
	var next int64
	for _, rm := range pending {
		v.Pending++
		v.PendingBytes += rm.size
		if next == 0 || rm.at < next {
			next = rm.at
		}
	}
	if v.Pending > 0 {
		v.NextDeletable = time.UnixMilli(next).Add(r.Settings.DeletedFileRetention).UTC()
	}
	if !scan || dry == nil {
		return nil
	}
	res, err := dry.Vacuum(ctx, table.WithVacuumDryRun(true))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.note("vacuum's dry run failed: %v", err)
		return nil
	}
	v.Scanned = true
	v.ListedFiles = res.Scanned
	v.Deletable = len(res.Files)
	v.DeletableBytes = res.Bytes
	return nil
}

// days formats a retention in days when whole, else as a Go duration.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		n := d / (24 * time.Hour)
		if n == 1 {
			return "1 day"
		}
		return fmt.Sprintf("%d days", n)
	}
	return d.String()
}
