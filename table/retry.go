package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/deltakit/deltakit/txlog"
)

// ErrConflictRetriesExhausted is wrapped (together with the last
// *txlog.ConflictError and its kinds) by the error of a DELETE, UPDATE or
// MERGE run WithConflictRetries whose every attempt lost a retryable
// conflict.
var ErrConflictRetriesExhausted = errors.New("conflict retries exhausted")

// WithConflictRetries lets Delete, Update and Merge re-plan and retry, at
// most n times (n <= 0: never, the default), when their commit loses a
// retryable conflict to a concurrent commit. Each retry reads the table at
// its latest version (Refresh), runs the operation again from scratch on
// it (scans, matches and rewrites anew, so the files and rows it acts on
// are those of the new version) and commits that. The data, change data and
// deletion-vector files of the attempt that lost are deleted by the commit
// path before the retry. The result is that of the attempt that committed,
// and the table is as if the operations had been applied one after another
// in commit order (every attempt commits only on top of the version it
// read, or of later commits that do not conflict with it).
//
// Retryable are the conflicts a re-plan resolves, by Spark's conflict
// classes: ConcurrentAppendException (txlog.ErrConcurrentAppend),
// ConcurrentDeleteReadException (txlog.ErrConcurrentDeleteRead) and
// ConcurrentDeleteDeleteException (txlog.ErrConcurrentDeleteDelete). Not
// retried, as the operation was specified for a table that no longer
// exists or a re-run would repeat it: MetadataChangedException
// (txlog.ErrMetadataChanged: the schema, partitioning or properties
// changed), ProtocolChangedException (txlog.ErrProtocolChanged),
// concurrent metadata-domain changes (txlog.ErrConcurrentDomain) and
// ConcurrentTransactionException (txlog.ErrConcurrentTransaction: another
// run of the same WithTxn appId). A conflict of several kinds is retried
// only when every kind is retryable. Other errors are never retried.
//
// When the retries run out, the error wraps ErrConflictRetriesExhausted,
// names the attempts made, and wraps the last *txlog.ConflictError (so
// errors.Is(err, txlog.ErrConcurrentModification) and the kinds still
// match). Other options apply to every attempt; WithTxn is checked anew
// on each (a version committed meanwhile is skipped).
func WithConflictRetries(n int) WriteOption {
	return func(c *writeConfig) { c.conflictRetries = n }
}

// retryableConflict reports whether err is a *txlog.ConflictError whose
// every kind a re-plan on a newer snapshot resolves (WithConflictRetries).
func retryableConflict(err error) bool {
	var ce *txlog.ConflictError
	if !errors.As(err, &ce) || len(ce.Kinds) == 0 {
		return false
	}
	for _, k := range ce.Kinds {
		if k != txlog.ErrConcurrentAppend && k != txlog.ErrConcurrentDeleteRead && k != txlog.ErrConcurrentDeleteDelete {
			return false
		}
	}
	return true
}

// retryConflicts runs attempt on t and, while it fails with a retryable
// conflict, on t refreshed to its latest version, at most retries more
// times. verb names the operation in errors. attempt is called with the
// options of one attempt (WithConflictRetries(0) after opts). t is not
// nil (the entry points check).
func retryConflicts[R any](ctx context.Context, t *Table, verb string, retries int, opts []WriteOption,
	attempt func(t *Table, opts []WriteOption) (*Table, R, error)) (*Table, R, error) {
	var zero R
	once := append(append([]WriteOption(nil), opts...), WithConflictRetries(0))
	cur := t
	for i := 0; ; i++ {
		nt, res, err := attempt(cur, once)
		if err == nil || !retryableConflict(err) {
			return nt, res, err
		}
		if i == retries {
			return nil, zero, fmt.Errorf("table: %s %s: %w after %d attempt(s) (WithConflictRetries(%d)): %w",
				verb, t.URI(), ErrConflictRetriesExhausted, i+1, retries, err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, zero, fmt.Errorf("table: %s %s: %w (after %d attempt(s), last: %w)", verb, t.URI(), cerr, i+1, err)
		}
		t.cfg.logger.Debug("table: conflict, re-planning on the latest version", "operation", verb, "table", t.URI(),
			"attempt", i+1, "readVersion", cur.Version(), "error", err)
		if cur, err = cur.Refresh(ctx); err != nil {
			return nil, zero, fmt.Errorf("table: %s %s: refresh after a conflict: %w", verb, t.URI(), err)
		}
	}
}
