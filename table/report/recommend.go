package report

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
)

// recommend fills Recommendations from what Build found: optimize when it
// would compact small files or drop many deleted rows, vacuum when files
// are past the retention, checkpoint when one is due or unreadable, log
// cleanup when log files have expired. Each reason names the threshold.
func (r *Report) recommend(parts map[string]*partAgg) {
	s := r.Settings
	var why []string
	var files, out, inParts int
	var bytes int64
	for _, p := range parts {
		if p.SmallFiles < 2 {
			continue // a lone small file has nothing to be compacted with
		}
		inParts++
		files += p.SmallFiles
		bytes += p.SmallBytes
		out += int((p.SmallBytes + s.SmallFileSize - 1) / s.SmallFileSize)
	}
	if files > 0 {
		where := ""
		if len(r.PartitionColumns) > 0 {
			where = fmt.Sprintf(" in %d partition(s)", inParts)
		}
		why = append(why, fmt.Sprintf("%d small files (%s) below %s%s compact into about %d: every file costs a scan a request and a footer read "+
			"(the small-file size is deltactl optimize's target; Spark's OPTIMIZE takes files below spark.databricks.delta.optimize.minFileSize, %s)",
			files, ibytes(bytes), ibytes(s.SmallFileSize), where, max(out, 1), ibytes(SparkOptimizeMinFileSize)))
	}
	if dv := r.DeletionVectors; dv.OverThreshold > 0 {
		why = append(why, fmt.Sprintf("%d file(s) (%s) have more than %g%% of their rows deleted by deletion vectors, which every scan reads and drops "+
			"(spark.databricks.delta.optimize.maxDeletedRowsRatio %g): optimize rewrites them without those rows",
			dv.OverThreshold, ibytes(dv.OverThresholdBytes), s.MaxDeletedRowsRatio*100, s.MaxDeletedRowsRatio))
	}
	if len(why) > 0 {
		r.Recommendations = append(r.Recommendations, Recommendation{Action: "optimize", Reason: strings.Join(why, "; ")})
	}

	if v := r.Vacuum; v.Deletable > 0 {
		r.Recommendations = append(r.Recommendations, Recommendation{Action: "vacuum", Reason: fmt.Sprintf(
			"%d data file(s) (%s) were removed from the table, or never committed, longer ago than delta.deletedFileRetentionDuration (%s): "+
				"no version within the retention reads them, vacuum deletes them", v.Deletable, ibytes(v.DeletableBytes), days(s.DeletedFileRetention))})
	}

	l := r.Log
	switch {
	case len(l.SkippedCheckpoints) > 0:
		r.Recommendations = append(r.Recommendations, Recommendation{Action: "checkpoint", Reason: fmt.Sprintf(
			"the checkpoint(s) of version(s) %s cannot be read: readers replay the commits around them; a new checkpoint of version %d gives them one to read",
			joinInts(l.SkippedCheckpoints), r.Version)})
	case r.Version-r.Version%s.CheckpointInterval > max(l.CheckpointVersion, 0):
		// Spark writes the checkpoint of every version divisible by the
		// interval: the last one due is missing.
		since := "no checkpoint"
		if l.CheckpointVersion >= 0 {
			since = fmt.Sprintf("the checkpoint of version %d", l.CheckpointVersion)
		}
		r.Recommendations = append(r.Recommendations, Recommendation{Action: "checkpoint", Reason: fmt.Sprintf(
			"%d commit(s) since %s: the checkpoint due at version %d (delta.checkpointInterval %d) was not written, so every reader "+
				"replays the commits one file at a time; a checkpoint of version %d lets it read one Parquet file instead",
			l.CommitsSinceCheckpoint, since, r.Version-r.Version%s.CheckpointInterval, s.CheckpointInterval, r.Version)})
	}

	if l.ExpiredLogFiles > 0 {
		r.Recommendations = append(r.Recommendations, Recommendation{Action: "cleanup", Reason: fmt.Sprintf(
			"%d log file(s) are older than delta.logRetentionDuration (%s) and precede the checkpoint of version %d: log cleanup deletes them "+
				"(versions from %d on stay readable; Spark does this after a checkpoint)", l.ExpiredLogFiles, days(s.LogRetention), l.CleanupKeepFrom, l.CleanupKeepFrom)})
	}
}

func ibytes(n int64) string { return humanize.IBytes(uint64(max(n, 0))) }

func joinInts(vs []int64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}
