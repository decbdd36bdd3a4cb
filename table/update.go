package table

import (
	"context"
	"fmt"
	"slices"

	"github.com/deltakit/deltakit/table/internal/rowtrack"
	"github.com/deltakit/deltakit/value"
)

// Update sets columns of the rows of t where the predicate is true (nil:
// every row) and returns the table at the new version, with what it did.
// set maps top-level column names to Values: literals (Lit, converted to
// the column type as filter literals are), other columns, or arithmetic
// (Plus, Minus, Times, Div); every Value sees the row before the update.
//
// The matched rows are written, updated, into new data files (a partition
// column that changes moves the row to its new partition); their old
// copies are removed as Delete removes rows: by deletion vectors when the
// table has them enabled, else by rewriting the touched files without them
// (copy-on-write); a file whose every row matched is removed. The updated
// rows are validated as appended rows are (NOT NULL, types, ranges). With
// row tracking enabled, updated rows keep their stable row ids and get the
// commit's row commit version; copied rows keep both (rowtracking.go).
//
// The commit is operation "UPDATE" with parameter "predicate" and Spark's
// metrics (numUpdatedRows, numCopiedRows, numAddedFiles, numRemovedFiles,
// numDeletionVectorsAdded, ..., executionTimeMs, scanTimeMs,
// rewriteTimeMs); conflicts are detected as for Delete. When no row
// matches, nothing is committed (Committed false). Options as for Delete.
//
// Errors, all before anything is written: an invalid predicate, a SET of
// an unknown column or one named twice, a Value whose type does not fit
// its column or NULL into a NOT NULL column (ErrInvalidArgument),
// ErrAppendOnly, txlog.ErrUnsupportedFeature; an updated row that fails
// validation is a *RowError (nothing is committed, files written are
// deleted); arithmetic overflow is ErrInvalidArgument.
//
// On a change data feed table (delta.enableChangeDataFeed=true) every
// updated row is also written to change data files twice, as it was
// (_change_type "update_preimage", in its old partition) and as it is
// ("update_postimage", in its new one), listed in cdc actions (spec
// "Change Data Files"; Changes reads them).
func (t *Table) Update(ctx context.Context, where Expr, set map[string]Value, opts ...WriteOption) (*Table, *DMLResult, error) {
	if t == nil {
		return nil, nil, nilTableError("update")
	}
	cfg := newWriteConfig(opts)
	if cfg.conflictRetries > 0 {
		return retryConflicts(ctx, t, "update", cfg.conflictRetries, opts, func(t *Table, o []WriteOption) (*Table, *DMLResult, error) { return t.Update(ctx, where, set, o...) })
	}
	op, err := t.begin("UPDATE", true, cfg)
	if err != nil {
		return nil, nil, err
	}
	sets, err := bindSet(t.Schema(), t.PartitionColumns(), set)
	if err != nil {
		return nil, nil, fmt.Errorf("table: update %s: %w", t.URI(), err)
	}
	slices.SortFunc(sets, func(a, b setClause) int { return a.top - b.top })
	if op.skip {
		return t.noDML(nil)
	}
	cdf := t.cdfEnabled()
	targets, rw, scanMs, err := t.dmlTargets(ctx, op, where, dmlRead{matchedRows: true, readWhole: true}, "update")
	if err != nil || len(targets) == 0 {
		return t.noDML(err)
	}
	res := &DMLResult{}
	var updated []value.Row
	var tracks []rowtrack.Track
	for _, tg := range targets {
		for i, row := range tg.matchedRows {
			nr := slices.Clone(row)
			for _, s := range sets {
				v, err := s.val.eval(row)
				if err != nil {
					return nil, nil, fmt.Errorf("table: update %s: data file %s: %w", t.URI(), tg.f.Path, err)
				}
				nr[s.top] = v
			}
			updated = append(updated, nr)
			if cdf {
				rw.changes = append(rw.changes, changeRow{typ: ChangeUpdatePreimage, row: row}, changeRow{typ: ChangeUpdatePostimage, row: nr})
			}
			if tg.matchedTracks != nil {
				tracks = append(tracks, tg.matchedTracks[i].Updated())
			}
		}
		res.UpdatedRows += rw.remove(tg)
	}
	rw.addRows(updated, tracks)
	return t.finishDML(ctx, op, rw, where, cfg, res, scanMs, "numUpdatedRows", res.UpdatedRows)
}
