package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakit/deltakit/table/report"
)

func newReportCmd(a *app) *cobra.Command {
	var (
		htmlFile   string
		target     string
		history    int
		vacuumScan bool
	)
	cmd := &cobra.Command{
		Use:   "report <table>",
		Short: "Describe the table for its maintainer and say which maintenance to run",
		Long: `report describes the table's latest version the way a data engineer looks at
it before maintaining it:

  - data file sizes: a histogram (powers of two) and the small files, those
    below --target-size (deltactl optimize's target, 128 MiB by default);
  - rows and bytes per partition, the largest first, and the skew (the
    largest partition over the mean);
  - deletion vectors: the share of each file's rows they delete, the files
    over 5% (Spark's spark.databricks.delta.optimize.maxDeletedRowsRatio);
  - commits per hour (UTC) and their operations, over the newest --history
    commits;
  - the checkpoint (commits since it, delta.checkpointInterval) and log
    retention (delta.logRetentionDuration: what log cleanup would delete);
  - vacuum: the files it would delete now (a dry run, which lists the
    table's storage; --vacuum-scan=false skips it) and the removed files
    waiting for delta.deletedFileRetentionDuration;
  - what to run (optimize, vacuum, checkpoint, cleanup) and why.

Nothing is written to the table. With --html FILE the same report is also
written as one self-contained HTML file with plots (inline SVG, no scripts,
nothing fetched when it is viewed).`,
		Example: "  deltactl report ./demo-data/flights\n  deltactl report ./demo-data/flights --html flights.html\n  deltactl report -o json s3://bucket/tables/t1 --vacuum-scan=false",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			size, err := parseTargetSize(target)
			if err != nil {
				return err
			}
			if history < 0 {
				return usagef("--history must be >= 0")
			}
			t, err := a.openTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			opts := []report.Option{report.WithSmallFileSize(size), report.WithHistoryLimit(history), report.WithVacuumScan(vacuumScan), report.WithLogger(a.logger)}
			if a.now != nil {
				opts = append(opts, report.WithClock(a.now))
			}
			r, err := report.Build(cmd.Context(), t, opts...)
			if err != nil {
				return err
			}
			v := reportView(r)
			if htmlFile != "" {
				var buf bytes.Buffer
				if err := renderReportHTML(&buf, v); err != nil {
					return fmt.Errorf("report %s: rendering HTML: %w", t.URI(), err)
				}
				if err := writeFileAtomic(htmlFile, buf.Bytes()); err != nil {
					return fmt.Errorf("report %s: %w", t.URI(), err)
				}
				v.HTML = htmlFile
			}
			return a.out().Report(v)
		},
	}
	cmd.Flags().StringVar(&htmlFile, "html", "", "also write the report as a self-contained HTML file with plots")
	cmd.Flags().StringVar(&target, "target-size", "128MB", "files below this size are small (deltactl optimize compacts them to it)")
	cmd.Flags().IntVar(&history, "history", report.DefaultHistoryLimit, "read at most this many of the newest commits (0: all)")
	cmd.Flags().BoolVar(&vacuumScan, "vacuum-scan", true, "list the table's storage for what vacuum would delete (a vacuum dry run)")
	return cmd
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so that a reader never sees half a report.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(f.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	return nil
}

// ReportView is the output of report: report.Report with the CLI's
// conventions (instants RFC 3339 in UTC, retentions as Go durations).
type ReportView struct {
	Table            string   `json:"table"`
	Version          int64    `json:"version"`
	Timestamp        string   `json:"timestamp"`
	GeneratedAt      string   `json:"generatedAt"`
	PartitionColumns []string `json:"partitionColumns"`
	Settings         struct {
		SmallFileSize        int64   `json:"smallFileSize"`
		MaxDeletedRowsRatio  float64 `json:"maxDeletedRowsRatio"`
		CheckpointInterval   int64   `json:"checkpointInterval"`
		LogRetention         string  `json:"logRetention"`
		DeletedFileRetention string  `json:"deletedFileRetention"`
	} `json:"settings"`
	Files struct {
		Count        int   `json:"count"`
		Bytes        int64 `json:"bytes"`
		Rows         int64 `json:"rows"`
		WithoutStats int   `json:"withoutStats"`
		DeletedRows  int64 `json:"deletedRows"`
		MinSize      int64 `json:"minSize"`
		MaxSize      int64 `json:"maxSize"`
		SmallFiles   int   `json:"smallFiles"`
		SmallBytes   int64 `json:"smallBytes"`
	} `json:"files"`
	SizeHistogram []ReportSizeBucketView `json:"sizeHistogram"`
	Partitions    struct {
		Count     int                   `json:"count"`
		MinBytes  int64                 `json:"minBytes"`
		MaxBytes  int64                 `json:"maxBytes"`
		MeanBytes int64                 `json:"meanBytes"`
		MinRows   int64                 `json:"minRows"`
		MaxRows   int64                 `json:"maxRows"`
		MeanRows  int64                 `json:"meanRows"`
		BytesSkew float64               `json:"bytesSkew"`
		RowsSkew  float64               `json:"rowsSkew"`
		Top       []ReportPartitionView `json:"top"`
	} `json:"partitions"`
	DeletionVectors struct {
		Files              int                     `json:"files"`
		DeletedRows        int64                   `json:"deletedRows"`
		UnknownShare       int                     `json:"unknownShare"`
		OverThreshold      int                     `json:"overThreshold"`
		OverThresholdBytes int64                   `json:"overThresholdBytes"`
		Histogram          []ReportShareBucketView `json:"histogram"`
		Top                []ReportDVFileView      `json:"top"`
	} `json:"deletionVectors"`
	Commits struct {
		Read          int                   `json:"read"`
		Limited       bool                  `json:"limited"`
		OldestVersion int64                 `json:"oldestVersion"`
		NewestVersion int64                 `json:"newestVersion"`
		First         string                `json:"first"`
		Last          string                `json:"last"`
		Operations    []ReportOperationView `json:"operations"`
		Hours         []ReportHourView      `json:"hours"`
	} `json:"commits"`
	Log struct {
		CheckpointVersion      int64   `json:"checkpointVersion"`
		CommitsSinceCheckpoint int64   `json:"commitsSinceCheckpoint"`
		SkippedCheckpoints     []int64 `json:"skippedCheckpoints"`
		OldestCommit           int64   `json:"oldestCommit"`
		ExpiredLogFiles        int     `json:"expiredLogFiles"`
		CleanupKeepFrom        int64   `json:"cleanupKeepFrom"`
	} `json:"log"`
	Vacuum struct {
		Scanned        bool   `json:"scanned"`
		ListedFiles    int    `json:"listedFiles"`
		Deletable      int    `json:"deletable"`
		DeletableBytes int64  `json:"deletableBytes"`
		Pending        int    `json:"pending"`
		PendingBytes   int64  `json:"pendingBytes"`
		NextDeletable  string `json:"nextDeletable"`
	} `json:"vacuum"`
	Recommendations []ReportRecommendationView `json:"recommendations"`
	Notes           []string                   `json:"notes"`
	// HTML is the file --html wrote ("" without --html).
	HTML string `json:"html,omitempty"`
}

// ReportPartitionView is one partition of ReportView.
type ReportPartitionView struct {
	// Name is the partition in Hive style ("a=1/b=x").
	Name        string             `json:"name"`
	Values      map[string]*string `json:"values"`
	Files       int                `json:"files"`
	Bytes       int64              `json:"bytes"`
	Rows        int64              `json:"rows"`
	DeletedRows int64              `json:"deletedRows"`
	SmallFiles  int                `json:"smallFiles"`
	SmallBytes  int64              `json:"smallBytes"`
}

// ReportHourView is one hour of ReportView's commits.
type ReportHourView struct {
	Start      string                `json:"start"`
	Commits    int                   `json:"commits"`
	Operations []ReportOperationView `json:"operations"`
}

// ReportSizeBucketView counts the files of sizes in [min, max) bytes.
type ReportSizeBucketView struct {
	Min   int64 `json:"min"`
	Max   int64 `json:"max"`
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
}

// ReportShareBucketView counts the files whose deleted share is in (min,
// max] (the first bucket includes min).
type ReportShareBucketView struct {
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Files int     `json:"files"`
}

// ReportDVFileView is a file with a deletion vector.
type ReportDVFileView struct {
	Path        string  `json:"path"`
	Size        int64   `json:"size"`
	Rows        int64   `json:"rows"`
	DeletedRows int64   `json:"deletedRows"`
	Share       float64 `json:"share"`
}

// ReportOperationView is the number of commits of one operation.
type ReportOperationView struct {
	Operation string `json:"operation"`
	Commits   int    `json:"commits"`
}

func operationViews(ops []report.OperationCount) []ReportOperationView {
	out := make([]ReportOperationView, len(ops))
	for i, o := range ops {
		out[i] = ReportOperationView(o)
	}
	return out
}

// ReportRecommendationView is one recommendation with the command that
// runs it.
type ReportRecommendationView struct {
	Action  string `json:"action"`
	Command string `json:"command"`
	Reason  string `json:"reason"`
}

func reportView(r *report.Report) *ReportView {
	v := &ReportView{Table: r.Table, Version: r.Version, Timestamp: fmtTime(r.Timestamp), GeneratedAt: fmtTime(r.GeneratedAt),
		PartitionColumns: nonNil(r.PartitionColumns), SizeHistogram: []ReportSizeBucketView{}, Notes: nonNil(r.Notes),
		Recommendations: []ReportRecommendationView{}}
	for _, b := range r.SizeHistogram {
		v.SizeHistogram = append(v.SizeHistogram, ReportSizeBucketView(b))
	}
	s := r.Settings
	v.Settings.SmallFileSize, v.Settings.MaxDeletedRowsRatio, v.Settings.CheckpointInterval = s.SmallFileSize, s.MaxDeletedRowsRatio, s.CheckpointInterval
	v.Settings.LogRetention, v.Settings.DeletedFileRetention = s.LogRetention.String(), s.DeletedFileRetention.String()
	f := r.Files
	v.Files.Count, v.Files.Bytes, v.Files.Rows, v.Files.WithoutStats, v.Files.DeletedRows = f.Count, f.Bytes, f.Rows, f.WithoutStats, f.DeletedRows
	v.Files.MinSize, v.Files.MaxSize, v.Files.SmallFiles, v.Files.SmallBytes = f.MinSize, f.MaxSize, f.SmallFiles, f.SmallBytes
	p := r.Partitions
	v.Partitions.Count, v.Partitions.MinBytes, v.Partitions.MaxBytes, v.Partitions.MeanBytes = p.Count, p.MinBytes, p.MaxBytes, p.MeanBytes
	v.Partitions.MinRows, v.Partitions.MaxRows, v.Partitions.MeanRows = p.MinRows, p.MaxRows, p.MeanRows
	v.Partitions.BytesSkew, v.Partitions.RowsSkew = p.BytesSkew, p.RowsSkew
	v.Partitions.Top = []ReportPartitionView{}
	for _, pt := range p.Top {
		pv := ReportPartitionView{Name: pt.Name(r.PartitionColumns), Values: map[string]*string{}, Files: pt.Files, Bytes: pt.Bytes,
			Rows: pt.Rows, DeletedRows: pt.DeletedRows, SmallFiles: pt.SmallFiles, SmallBytes: pt.SmallBytes}
		for i, c := range r.PartitionColumns {
			if i < len(pt.Values) {
				pv.Values[c] = pt.Values[i]
			}
		}
		v.Partitions.Top = append(v.Partitions.Top, pv)
	}
	d := r.DeletionVectors
	v.DeletionVectors.Files, v.DeletionVectors.DeletedRows, v.DeletionVectors.UnknownShare = d.Files, d.DeletedRows, d.UnknownShare
	v.DeletionVectors.OverThreshold, v.DeletionVectors.OverThresholdBytes = d.OverThreshold, d.OverThresholdBytes
	v.DeletionVectors.Histogram, v.DeletionVectors.Top = []ReportShareBucketView{}, []ReportDVFileView{}
	for _, b := range d.Histogram {
		v.DeletionVectors.Histogram = append(v.DeletionVectors.Histogram, ReportShareBucketView(b))
	}
	for _, f := range d.Top {
		v.DeletionVectors.Top = append(v.DeletionVectors.Top, ReportDVFileView(f))
	}
	c := r.Commits
	v.Commits.Read, v.Commits.Limited, v.Commits.OldestVersion, v.Commits.NewestVersion = c.Read, c.Limited, c.OldestVersion, c.NewestVersion
	v.Commits.First, v.Commits.Last, v.Commits.Operations = fmtTime(c.First), fmtTime(c.Last), operationViews(c.Operations)
	v.Commits.Hours = []ReportHourView{}
	for _, h := range c.Hours {
		v.Commits.Hours = append(v.Commits.Hours, ReportHourView{Start: fmtTime(h.Start), Commits: h.Commits, Operations: operationViews(h.Operations)})
	}
	l := r.Log
	v.Log.CheckpointVersion, v.Log.CommitsSinceCheckpoint, v.Log.SkippedCheckpoints = l.CheckpointVersion, l.CommitsSinceCheckpoint, nonNil(l.SkippedCheckpoints)
	v.Log.OldestCommit, v.Log.ExpiredLogFiles, v.Log.CleanupKeepFrom = l.OldestCommit, l.ExpiredLogFiles, l.CleanupKeepFrom
	vc := r.Vacuum
	v.Vacuum.Scanned, v.Vacuum.ListedFiles, v.Vacuum.Deletable, v.Vacuum.DeletableBytes = vc.Scanned, vc.ListedFiles, vc.Deletable, vc.DeletableBytes
	v.Vacuum.Pending, v.Vacuum.PendingBytes, v.Vacuum.NextDeletable = vc.Pending, vc.PendingBytes, fmtTime(vc.NextDeletable)
	for _, rec := range r.Recommendations {
		v.Recommendations = append(v.Recommendations, ReportRecommendationView{Action: rec.Action,
			Command: "deltactl " + rec.Action + " " + shellQuote(r.Table), Reason: rec.Reason})
	}
	return v
}

// nonNil returns s, or an empty slice for nil (JSON [] instead of null).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:=@+,%.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sizeRange names a size bucket: "256 B-512 B".
func sizeRange(b ReportSizeBucketView) string {
	return humanBytes(b.Min) + "-" + humanBytes(b.Max)
}

// shareRange names a share bucket: "0-5%", "5-10%".
func shareRange(b ReportShareBucketView) string {
	return strconv.FormatFloat(b.Min*100, 'f', -1, 64) + "-" + strconv.FormatFloat(b.Max*100, 'f', -1, 64) + "%"
}

// opList formats operation counts: "WRITE 5, DELETE 2".
func opList(ops []ReportOperationView) string {
	parts := make([]string, len(ops))
	for i, o := range ops {
		parts[i] = fmt.Sprintf("%s %d", orDash(o.Operation), o.Commits)
	}
	return strings.Join(parts, ", ")
}

// textBar is a bar of n out of most, at most width cells of U+2588.
func textBar(n, most int64, width int) string {
	if most <= 0 || n <= 0 {
		return ""
	}
	cells := int((n*int64(width) + most - 1) / most)
	return strings.Repeat("█", max(cells, 1))
}

// durationText writes a retention as days when whole ("7 days"), else
// as a Go duration.
func durationText(s string) string {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d%(24*time.Hour) != 0 {
		return s
	}
	if n := d / (24 * time.Hour); n != 1 {
		return fmt.Sprintf("%d days", n)
	}
	return "1 day"
}

// rowsText says how many rows the files hold: "12 rows", "12 rows (+ 2
// file(s) without stats)", or "rows unknown (no file has stats)".
func rowsText(rows int64, withoutStats, files int) string {
	switch {
	case withoutStats == 0:
		return fmt.Sprintf("%d rows", rows)
	case withoutStats == files:
		return "rows unknown (no file has stats)"
	}
	return fmt.Sprintf("%d rows (+ %d file(s) without stats)", rows, withoutStats)
}

// reportTextHours is how many hours with commits the text report lists
// (the newest).
const reportTextHours = 24

func (o *textOutput) Report(v *ReportView) error {
	w := o.w
	fmt.Fprintf(w, "report of %s at version %d (%s)\n", v.Table, v.Version, orDash(v.Timestamp))

	fmt.Fprintln(w, "\nrecommendations:")
	if len(v.Recommendations) == 0 {
		fmt.Fprintln(w, "  none: no maintenance needed now")
	}
	for _, r := range v.Recommendations {
		fmt.Fprintf(w, "  %s\n      %s\n", r.Command, r.Reason)
	}

	f := v.Files
	fmt.Fprintf(w, "\nfiles: %d, %s (%d bytes), %s", f.Count, humanBytes(f.Bytes), f.Bytes, rowsText(f.Rows, f.WithoutStats, f.Count))
	if f.DeletedRows > 0 {
		fmt.Fprintf(w, ", %d deleted by deletion vectors", f.DeletedRows)
	}
	fmt.Fprintln(w)
	if f.Count > 0 {
		fmt.Fprintf(w, "sizes: %s to %s, mean %s; %d small file(s) below %s (%s)\n",
			humanBytes(f.MinSize), humanBytes(f.MaxSize), humanBytes(f.Bytes/int64(f.Count)), f.SmallFiles, humanBytes(v.Settings.SmallFileSize), humanBytes(f.SmallBytes))
		var most int64
		for _, b := range v.SizeHistogram {
			most = max(most, int64(b.Files))
		}
		hist := make([][]string, 0, len(v.SizeHistogram))
		for _, b := range v.SizeHistogram {
			mark := ""
			if b.Max <= v.Settings.SmallFileSize {
				mark = "small"
			}
			hist = append(hist, []string{"  " + sizeRange(b), strconv.Itoa(b.Files), humanBytes(b.Bytes), mark, textBar(int64(b.Files), most, 40)})
		}
		if err := o.table([]string{"  SIZE", "FILES", "BYTES", "", ""}, hist); err != nil {
			return err
		}
	}

	p := v.Partitions
	switch {
	case len(v.PartitionColumns) == 0:
		fmt.Fprintln(w, "\npartitions: none (the table has no partition columns)")
	case p.Count == 0:
		fmt.Fprintf(w, "\npartitions: none with files (partitioned by %s)\n", strings.Join(v.PartitionColumns, ", "))
	default:
		fmt.Fprintf(w, "\npartitions: %d by %s; bytes %s to %s (mean %s, largest %.2fx the mean)",
			p.Count, strings.Join(v.PartitionColumns, ", "), humanBytes(p.MinBytes), humanBytes(p.MaxBytes), humanBytes(p.MeanBytes), p.BytesSkew)
		if f.Rows > 0 {
			fmt.Fprintf(w, ", rows %d to %d (mean %d, largest %.2fx)", p.MinRows, p.MaxRows, p.MeanRows, p.RowsSkew)
		}
		fmt.Fprintln(w)
		parts := make([][]string, 0, len(p.Top))
		for _, pt := range p.Top {
			parts = append(parts, []string{"  " + pt.Name, strconv.Itoa(pt.Files), humanBytes(pt.Bytes), strconv.FormatInt(pt.Rows, 10),
				strconv.FormatInt(pt.DeletedRows, 10), strconv.Itoa(pt.SmallFiles), textBar(pt.Bytes, p.MaxBytes, 30)})
		}
		if err := o.table([]string{"  PARTITION", "FILES", "BYTES", "ROWS", "DELETED", "SMALL", ""}, parts); err != nil {
			return err
		}
		if len(p.Top) < p.Count {
			fmt.Fprintf(w, "  (the %d largest of %d)\n", len(p.Top), p.Count)
		}
	}

	d := v.DeletionVectors
	if d.Files == 0 {
		fmt.Fprintln(w, "\ndeletion vectors: none")
	} else {
		fmt.Fprintf(w, "\ndeletion vectors: %d file(s), %d row(s) deleted; %d file(s) (%s) over %g%% deleted",
			d.Files, d.DeletedRows, d.OverThreshold, humanBytes(d.OverThresholdBytes), v.Settings.MaxDeletedRowsRatio*100)
		if d.UnknownShare > 0 {
			fmt.Fprintf(w, "; %d without a row count", d.UnknownShare)
		}
		fmt.Fprintln(w)
		var most int64
		for _, b := range d.Histogram {
			most = max(most, int64(b.Files))
		}
		hist := make([][]string, 0, len(d.Histogram))
		for _, b := range d.Histogram {
			hist = append(hist, []string{"  " + shareRange(b), strconv.Itoa(b.Files), textBar(int64(b.Files), most, 40)})
		}
		if len(hist) > 0 {
			if err := o.table([]string{"  DELETED", "FILES", ""}, hist); err != nil {
				return err
			}
		}
		top := make([][]string, 0, len(d.Top))
		for _, t := range d.Top {
			top = append(top, []string{"  " + t.Path, strconv.FormatInt(t.Rows, 10), strconv.FormatInt(t.DeletedRows, 10), fmt.Sprintf("%.1f%%", t.Share*100)})
		}
		if len(top) > 0 {
			if err := o.table([]string{"  FILE", "ROWS", "DELETED", "SHARE"}, top); err != nil {
				return err
			}
		}
	}

	c := v.Commits
	if c.Read == 0 {
		fmt.Fprintln(w, "\ncommits: none read")
	} else {
		limited := ""
		if c.Limited {
			limited = fmt.Sprintf(", the newest %d (--history)", c.Read)
		}
		fmt.Fprintf(w, "\ncommits: %d read (versions %d-%d%s), %s to %s\n", c.Read, c.OldestVersion, c.NewestVersion, limited, c.First, c.Last)
		fmt.Fprintf(w, "operations: %s\n", opList(c.Operations))
		hours := c.Hours
		if len(hours) > reportTextHours {
			hours = hours[len(hours)-reportTextHours:]
		}
		var most int64
		for _, h := range hours {
			most = max(most, int64(h.Commits))
		}
		hrows := make([][]string, 0, len(hours))
		for _, h := range hours {
			start := h.Start
			if t, err := time.Parse(timeFormat, h.Start); err == nil {
				start = t.Format("2006-01-02 15:04")
			}
			hrows = append(hrows, []string{"  " + start, strconv.Itoa(h.Commits), textBar(int64(h.Commits), most, 30), opList(h.Operations)})
		}
		if err := o.table([]string{"  HOUR (UTC)", "COMMITS", "", "OPERATIONS"}, hrows); err != nil {
			return err
		}
		if len(hours) < len(c.Hours) {
			fmt.Fprintf(w, "  (the newest %d of %d hours with commits)\n", len(hours), len(c.Hours))
		}
	}

	l := v.Log
	cp := "no checkpoint"
	if l.CheckpointVersion >= 0 {
		cp = fmt.Sprintf("checkpoint of version %d", l.CheckpointVersion)
	}
	fmt.Fprintf(w, "\nlog: %s, %d commit(s) since (delta.checkpointInterval %d)", cp, l.CommitsSinceCheckpoint, v.Settings.CheckpointInterval)
	if len(l.SkippedCheckpoints) > 0 {
		fmt.Fprintf(w, "; unreadable checkpoint(s) %v", l.SkippedCheckpoints)
	}
	oldest := "none left"
	if l.OldestCommit >= 0 {
		oldest = strconv.FormatInt(l.OldestCommit, 10)
	}
	fmt.Fprintf(w, "\nlog retention: %s (delta.logRetentionDuration); oldest commit %s; %d expired log file(s) for cleanup\n",
		durationText(v.Settings.LogRetention), oldest, l.ExpiredLogFiles)

	vc := v.Vacuum
	fmt.Fprintf(w, "vacuum: retention %s (delta.deletedFileRetentionDuration)", durationText(v.Settings.DeletedFileRetention))
	if vc.Scanned {
		fmt.Fprintf(w, "; %d file(s) listed, %d (%s) deletable now", vc.ListedFiles, vc.Deletable, humanBytes(vc.DeletableBytes))
	} else {
		fmt.Fprint(w, "; storage not listed")
	}
	if vc.Pending > 0 {
		fmt.Fprintf(w, "; %d removed file(s) (%s) within the retention, the first deletable at %s", vc.Pending, humanBytes(vc.PendingBytes), vc.NextDeletable)
	}
	fmt.Fprintln(w)

	for _, n := range v.Notes {
		if err := o.note(n); err != nil {
			return err
		}
	}
	if v.HTML != "" {
		return o.note("HTML report written to " + v.HTML)
	}
	return nil
}

func (o *jsonOutput) Report(v *ReportView) error { return o.write(v) }
