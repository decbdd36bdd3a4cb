package table

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/deltakit/deltakit/txlog"
)

// The table properties maintenance is scheduled by, and their defaults
// (Spark's): how often a checkpoint is due, how long log files and removed
// data files are kept. Vacuum, CleanupLog and the commit path read them;
// these methods say what they apply, for reports (package table/report).

// DefaultLogRetention is the default of delta.logRetentionDuration
// ("interval 30 days"): how long log files stay before CleanupLog deletes
// them (spec "Metadata Cleanup").
const DefaultLogRetention = txlog.DefaultLogRetention

// Table property names of maintenance.
const (
	PropCheckpointInterval           = txlog.PropCheckpointInterval
	PropLogRetentionDuration         = txlog.PropLogRetentionDuration
	PropDeletedFileRetentionDuration = txlog.PropDeletedFileRetentionDuration
)

// CheckpointInterval returns the table's delta.checkpointInterval, the
// number of commits between checkpoints: 10 (Spark's default) when
// the property is unset or not a positive integer, as the commit path reads it.
func (t *Table) CheckpointInterval() int64 {
	if t == nil {
		return 0
	}
	return t.snap.CheckpointInterval()
}

// LogRetention returns the table's delta.logRetentionDuration, as
// CleanupLog applies it (DefaultLogRetention when unset). A value that is
// not an interval (txlog.ParseInterval) gives the default, which CleanupLog
// then applies, and an error wrapping ErrInvalidArgument naming the
// property and the value.
func (t *Table) LogRetention() (time.Duration, error) {
	if t == nil {
		return DefaultLogRetention, nilTableError("log retention")
	}
	return t.intervalProperty(PropLogRetentionDuration, DefaultLogRetention)
}

// DeletedFileRetention returns the table's
// delta.deletedFileRetentionDuration, Vacuum's default retention
// (DefaultDeletedFileRetention when unset). A value that is not an
// interval gives the default and an error wrapping ErrInvalidArgument
// naming the property and the value (Vacuum refuses to run then).
func (t *Table) DeletedFileRetention() (time.Duration, error) {
	if t == nil {
		return DefaultDeletedFileRetention, nilTableError("deleted file retention")
	}
	return t.intervalProperty(PropDeletedFileRetentionDuration, DefaultDeletedFileRetention)
}

func (t *Table) intervalProperty(key string, def time.Duration) (time.Duration, error) {
	s, ok := t.snap.Metadata().Configuration[key]
	if !ok || strings.TrimSpace(s) == "" {
		return def, nil
	}
	d, err := txlog.ParseInterval(s)
	if err != nil {
		return def, fmt.Errorf("table %s: %w: %s=%q: %v", t.URI(), ErrInvalidArgument, key, s, err)
	}
	return d, nil
}

// LatestCheckpoint lists the log and returns the version of the newest
// checkpoint at or below t's version, by the log's file names (-1 when
// there is none): the one a reader loading t's version starts from, unless
// it cannot be read. t.Snapshot().CheckpointVersion is the checkpoint t's
// snapshot was replayed from, older than this when t came from commits
// made since (a checkpoint written by the commit path does not move it).
// Errors are the store's, wrapped.
func (t *Table) LatestCheckpoint(ctx context.Context) (int64, error) {
	if t == nil {
		return -1, nilTableError("latest checkpoint")
	}
	ls, err := scanLog(ctx, t.store)
	if err != nil {
		return -1, err
	}
	latest := int64(-1)
	for _, v := range ls.checkpoints {
		if v <= t.Version() {
			latest = max(latest, v)
		}
	}
	return latest, nil
}
