package table

import (
	"context"
	"encoding/json"
	"errors"
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
	// Timestamp is the commit's time: its in-commit timestamp when present,
	// else commitInfo.timestamp, else the commit file's modification time.
	Timestamp time.Time
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
}

// History returns the commits of the table up to t's version, newest first:
// at most limit of them (all when limit <= 0). Commits deleted by log
// cleanup are not in the history. Errors are those of reading the log.
func (t *Table) History(ctx context.Context, limit int) ([]HistoryEntry, error) {
	end := t.Version()
	start := int64(0)
	if limit > 0 {
		start = max(0, end-int64(limit)+1)
	}
	out, err := t.history(ctx, start, end)
	var nf *txlog.VersionNotFoundError
	if errors.As(err, &nf) && nf.Version == start {
		// Log cleanup deleted start: list the whole log once to find the
		// oldest commit left, and start there.
		ls, lerr := scanLog(ctx, t.store)
		if lerr != nil {
			return nil, lerr
		}
		out, err = nil, nil // no commit of [start, end] is left: an empty history
		if i, _ := slices.BinarySearch(ls.commits, start); i < len(ls.commits) && ls.commits[i] <= end {
			out, err = t.history(ctx, ls.commits[i], end)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("table: history of %s: %w", t.URI(), err)
	}
	slices.Reverse(out)
	return out, nil
}

// history reads the commits [start, end] in ascending order; it lists the
// log from start only, so a short history of a long log stays cheap.
func (t *Table) history(ctx context.Context, start, end int64) ([]HistoryEntry, error) {
	var out []HistoryEntry
	for c, err := range txlog.Commits(ctx, t.store, start, end) {
		if err != nil {
			return nil, err
		}
		out = append(out, historyEntry(c))
	}
	return out, nil
}

func historyEntry(c *txlog.Commit) HistoryEntry {
	e := HistoryEntry{Version: c.Version, Timestamp: c.ModTime, ReadVersion: -1}
	ci := c.CommitInfo()
	if ci == nil {
		return e
	}
	switch {
	case ci.InCommitTimestamp != nil:
		e.Timestamp = time.UnixMilli(*ci.InCommitTimestamp)
	case ci.Timestamp != 0:
		e.Timestamp = time.UnixMilli(ci.Timestamp)
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
