package table

import (
	"context"
)

// Delete removes the rows of t where the predicate is true (SQL semantics:
// a row where it is null stays) and returns the table at the new version,
// with what it did. A nil predicate deletes every row.
//
// Files the predicate cannot match (by partition values or stats) are not
// read. A file whose partition values alone make the predicate true is
// removed without being read. Other touched files are read and, when the
// table has deletion vectors enabled (delta.enableDeletionVectors=true and
// the deletionVectors feature), get a deletion vector marking the deleted
// rows (spec "Deletion Vectors"): merged with the one they had, written to
// one deletion_vector_<uuid>.bin file for the commit, the file re-added with
// the new descriptor and the old add removed. Without deletion vectors they
// are rewritten without the deleted rows (copy-on-write; with row tracking
// enabled the copied rows keep their stable row ids and commit versions,
// rowtracking.go). A file left with no live row is removed.
//
// On a change data feed table (delta.enableChangeDataFeed=true) the deleted
// rows are also written to change data files (_change_type "delete") listed
// in cdc actions, unless the predicate is on partition columns alone and no
// touched file has a deletion vector: then whole files are removed unread
// and readers of the feed take the deleted rows from the removes, as for a
// Spark DELETE (spec "Change Data Files"; Changes).
//
// The commit is operation "DELETE" with parameter "predicate" and Spark's
// metrics (numDeletedRows, numRemovedFiles, numAddedFiles, numCopiedRows,
// numDeletionVectorsAdded, numDeletionVectorsUpdated,
// numDeletionVectorsRemoved, numRemovedBytes, numAddedBytes,
// executionTimeMs, scanTimeMs, rewriteTimeMs). It records the files and
// partitions it read, so a concurrent commit that removed one of them, or
// added (not blindly) to a partition the predicate may match, makes it fail
// with a *txlog.ConflictError (ErrConcurrentDeleteRead,
// ErrConcurrentDeleteDelete, ErrConcurrentAppend), as Spark's
// WriteSerializable isolation does; files it wrote are then deleted.
//
// When no row matches, nothing is committed: the result has Committed
// false and t is returned. Options: WithTxn (an idempotent delete, skipped
// when its version is committed), WithOperationParameters, and the file
// options of the rewrite (WithTargetFileSize, WithCompression, ...).
//
// Errors: an invalid predicate (unknown column, type mismatch:
// ErrInvalidArgument), ErrAppendOnly on a table with delta.appendOnly=true,
// txlog.ErrUnsupportedFeature for a table deltakit cannot write (all before
// anything is written), read and commit errors naming the file.
func (t *Table) Delete(ctx context.Context, where Expr, opts ...WriteOption) (*Table, *DMLResult, error) {
	if t == nil {
		return nil, nil, nilTableError("delete")
	}
	cfg := newWriteConfig(opts)
	if cfg.conflictRetries > 0 {
		return retryConflicts(ctx, t, "delete from", cfg.conflictRetries, opts, func(t *Table, o []WriteOption) (*Table, *DMLResult, error) { return t.Delete(ctx, where, o...) })
	}
	op, err := t.begin("DELETE", true, cfg)
	if err != nil {
		return nil, nil, err
	}
	if op.skip {
		return t.noDML(nil)
	}
	cdf := t.cdfEnabled()
	targets, rw, scanMs, err := t.dmlTargets(ctx, op, where, dmlRead{changeData: cdf}, "delete from")
	if err != nil || len(targets) == 0 {
		return t.noDML(err)
	}
	res := &DMLResult{}
	rw.reserve(targets)
	for _, tg := range targets {
		res.DeletedRows += rw.remove(tg)
		if cdf {
			rw.changes = append(rw.changes, changeRows(ChangeDelete, tg.matchedRows)...)
		}
	}
	return t.finishDML(ctx, op, rw, where, cfg, res, scanMs, "numDeletedRows", res.DeletedRows)
}
