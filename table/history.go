package table

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/deltakit/deltakit/txlog"
)

// HistoryEntry is one commit of the table's history, from its commitInfo
// (spec "Commit Provenance Information").
type HistoryEntry struct {
	Version int64
	// Timestamp is the commit's time as time travel by timestamp
	// (AtTimestamp) sees it, as Spark's DESCRIBE HISTORY shows it: the
	// in-commit timestamp when the commit has one, else the commit file's
	// modification time made monotonic over the versions (a commit's time
	// is max(its modification time, the previous commit's time + 1 ms)).
	// Open with AtTimestamp(Timestamp) loads this version (or a later one
	// committed in the same millisecond). A copied table has new
	// modification times, so new timestamps.
	Timestamp time.Time
	// CommitInfoTimestamp is commitInfo.timestamp, the writer's clock when
	// it committed; zero when absent. Time travel does not use it.
	CommitInfoTimestamp time.Time
	// Operation is commitInfo.operation ("WRITE", "STREAMING UPDATE", ...);
	// "" when the commit has no commitInfo.
	Operation string
	// Parameters and Metrics are commitInfo.operationParameters and
	// operationMetrics; JSON numbers are json.Number.
	Parameters map[string]any
	Metrics    map[string]any
	// ReadVersion is commitInfo.readVersion, -1 when absent.
	ReadVersion int64
	// IsBlindAppend is commitInfo.isBlindAppend, nil when absent.
	IsBlindAppend *bool
	// EngineInfo names the writer, e.g. "deltakit/0.1.0" or
	// "Apache-Spark/3.5.3 Delta-Lake/3.2.0".
	EngineInfo string
	// Err is set, by LogHistory only, when the commit file cannot be read
	// or decoded: a *CorruptLogError naming the file and the reason, or
	// the store's error. Only Version and Timestamp are set then.
	Err error
}

// History returns the commits of the table up to t's version, newest first:
// at most limit of them (all when limit <= 0). Commits deleted by log
// cleanup are not in the history (OldestCommit tells where it starts).
// It lists the log once, again when the commits listed have a gap (for
// the modification times of every commit, from which the timestamps are
// made monotonic), and reads the commits it
// returns. Errors are those of reading the log; a commit that cannot be
// read or decoded is an error (LogHistory lists it in place instead).
func (t *Table) History(ctx context.Context, limit int) ([]HistoryEntry, error) {
	if t == nil {
		return nil, nilTableError("history")
	}
	out, err := history(ctx, t.store, t.Version(), limit)
	if err != nil {
		return nil, fmt.Errorf("table: history of %s: %w", t.URI(), err)
	}
	for _, e := range out {
		if e.Err != nil {
			return nil, fmt.Errorf("table: history of %s: %w", t.URI(), e.Err)
		}
	}
	return out, nil
}

// LogHistory returns the history of the table in store as History does,
// up to the latest commit file, without loading a snapshot, so that a log a
// snapshot cannot be built from (a corrupt commit or checkpoint) can still
// be inspected. A commit that cannot be read or decoded does not stop it:
// its entry, in place, has Version, Timestamp and Err (a *CorruptLogError
// naming the file and the reason, or the store's error) set and nothing
// else. Errors are those of listing the log, ErrTableNotFound when the log
// has neither a commit nor a checkpoint, and ctx's. deltactl's history and
// inspect commands use it on tables that may not open.
func LogHistory(ctx context.Context, store Store, limit int) ([]HistoryEntry, error) {
	out, err := history(ctx, store, -1, limit)
	if err != nil {
		return nil, fmt.Errorf("table: history of %s: %w", store.URI(), err)
	}
	return out, nil
}

// history lists the log (scanLog) and reads the commits of the contiguous run
// ending at version end (end < 0: the latest commit), newest first, at
// most limit of them (all when limit <= 0). A commit that cannot be read
// is an entry with Err set.
func history(ctx context.Context, store Store, end int64, limit int) ([]HistoryEntry, error) {
	ls, err := scanLog(ctx, store)
	if err != nil {
		return nil, err
	}
	if len(ls.commits) == 0 && len(ls.checkpoints) == 0 {
		return nil, ErrTableNotFound
	}
	if end < 0 && len(ls.commits) > 0 {
		end = ls.commits[len(ls.commits)-1]
	}
	times := commitTimes(ls)
	var versions []int64
	for _, v := range ls.commits {
		if v <= end {
			versions = append(versions, v)
		}
	}
	// Only the contiguous run of commits ending at end is history; an
	// older commit before a gap is not (cleanup leaves none).
	for i := len(versions) - 1; i > 0; i-- {
		if versions[i-1] != versions[i]-1 {
			versions = versions[i:]
			break
		}
	}
	if limit > 0 && len(versions) > limit {
		versions = versions[len(versions)-limit:]
	}
	out := make([]HistoryEntry, 0, len(versions))
	for _, v := range slices.Backward(versions) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		actions, err := txlog.ReadCommit(ctx, store, v)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out = append(out, HistoryEntry{Version: v, Timestamp: times[v], ReadVersion: -1, Err: err})
			continue
		}
		c := &txlog.Commit{Version: v, Actions: actions, ModTime: ls.commitInfo[v].ModTime}
		out = append(out, historyEntry(c, times[v]))
	}
	return out, nil
}

// OldestCommit returns the version of the oldest commit file in the log:
// 0 for a table whose log is complete, more when log cleanup removed the
// commits before it, -1 when no commit file is left (the log is only a
// checkpoint). The table's versions before the oldest checkpoint cannot
// be loaded then, and their commits are not in History.
func (t *Table) OldestCommit(ctx context.Context) (int64, error) {
	if t == nil {
		return -1, nilTableError("oldest commit")
	}
	return OldestCommitOf(ctx, t.store)
}

// OldestCommitOf is OldestCommit for the table in store, which need not
// load as a table (LogHistory's companion; deltactl history uses it).
func OldestCommitOf(ctx context.Context, store Store) (int64, error) {
	ls, err := scanLog(ctx, store)
	if err != nil {
		return 0, err
	}
	if len(ls.commits) == 0 {
		return -1, nil
	}
	return ls.commits[0], nil
}

// commitTimes returns the time travel timestamps of the listed commits
// (without in-commit timestamps, which historyEntry takes from the
// commits): their modification times made monotonic as txlog's
// AtTimestamp does, over the commits from the earliest reconstructable
// version (0, or the oldest checkpoint when commit 0 is gone); commits
// before it are made monotonic among themselves.
func commitTimes(ls *logScan) map[int64]time.Time {
	earliest := int64(0)
	if len(ls.commits) == 0 || ls.commits[0] != 0 {
		earliest = -1
		if len(ls.checkpoints) > 0 {
			earliest = ls.checkpoints[0]
		}
	}
	out := make(map[int64]time.Time, len(ls.commits))
	prev := int64(-1 << 62)
	restarted := false
	for _, v := range ls.commits {
		if !restarted && earliest >= 0 && v >= earliest {
			prev, restarted = -1<<62, true
		}
		ts := max(ls.commitInfo[v].ModTime.UnixMilli(), prev+1)
		prev = ts
		out[v] = time.UnixMilli(ts).UTC()
	}
	return out
}

func historyEntry(c *txlog.Commit, ts time.Time) HistoryEntry {
	if ts.IsZero() {
		ts = c.ModTime
	}
	e := HistoryEntry{Version: c.Version, Timestamp: ts, ReadVersion: -1}
	ci := c.CommitInfo()
	if ci == nil {
		return e
	}
	if ci.InCommitTimestamp != nil {
		e.Timestamp = time.UnixMilli(*ci.InCommitTimestamp).UTC()
	}
	if ci.Timestamp != 0 {
		e.CommitInfoTimestamp = time.UnixMilli(ci.Timestamp).UTC()
	}
	e.Operation = ci.Operation
	e.Parameters = ci.OperationParameters
	e.Metrics = ci.OperationMetrics
	e.IsBlindAppend = ci.IsBlindAppend
	e.EngineInfo = ci.EngineInfo
	if raw, ok := ci.Extra["readVersion"]; ok {
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			if v, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
				e.ReadVersion = v
			}
		}
	}
	return e
}
