package streamsink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// Upsert mode: each epoch is a MERGE by key (Spark's foreachBatch upsert).

// MergeOperation is the commitInfo.operation of an epoch commit in upsert
// mode, as Spark writes a foreachBatch MERGE.
const MergeOperation = "MERGE"

// ErrUpsertMode is returned by the two-phase methods (Prepare, Commit) of a
// sink in upsert mode: a MERGE's files depend on the table version it
// commits on, so they cannot be written ahead of the commit.
var ErrUpsertMode = errors.New("not supported in upsert mode")

// WithMergeKeys puts the sink in upsert mode: each epoch's rows are MERGEd
// into the table by the key columns keys (target.k = source.k for each),
// updating every column of the matched rows and inserting the rest (WHEN
// MATCHED UPDATE SET *, WHEN NOT MATCHED INSERT *; see table.Table.Merge), so
// that the table holds the latest row of every key. The MERGE commits with
// the txn {appId: queryId, version: epochId} (and WriteEpochWith's extra
// txns) in the same commit, so a replayed epoch is skipped and a crash
// never applies an epoch twice, as with appends.
//
// Within one epoch the latest row of a key wins: the rows are deduplicated
// in arrival order before the MERGE (table.MergeSource.LatestPerKey),
// since a target row matched by two source rows is an error for MERGE (in
// Spark too: a foreachBatch upsert deduplicates its batch first). Rows with
// a null key match nothing and are all inserted, as in Spark.
//
// The commit is operation MERGE with Spark's MERGE parameters and metrics,
// plus queryId and epochId in commitInfo.operationParameters (where the
// sink's STREAMING UPDATE commits have them; Spark's foreachBatch MERGE
// records the txn only) and WithOperationParameters' entries. An epoch that
// changes nothing (no rows) still commits, recording the epoch.
//
// Every key must be a column of the table (nested: "a.b") of a type a
// merge key can have; New refuses others before anything is written. Upsert
// mode needs OutputMode Append (the default) and has no two-phase commit
// (Prepare and Commit return ErrUpsertMode). WithWriteOptions' file
// options apply to the MERGE's files; table.WithSchemaEvolution lets the
// rows' columns that the table lacks be added (use WithRowSchema, not
// table.WithRowSchema, for rows not aligned with the table schema).
func WithMergeKeys(keys ...string) Option {
	return func(s *Sink) { s.mergeKeys = append(append([]string{}, s.mergeKeys...), keys...) }
}

// WithRowSchema says that the untyped rows of WriteEpoch, WriteEpochWith
// and WriteEpochChecked are aligned with sch instead of the table schema
// (see table.WithRowSchema: columns matched by name, missing ones null);
// columns of sch the table lacks need table.WithSchemaEvolution among the
// write options (see Sink).
// In upsert mode sch is the MERGE source's schema.
func WithRowSchema(sch *schema.StructType) Option { return func(s *Sink) { s.rowSchema = sch } }

// MergeKeys returns the sink's merge keys, nil when it appends.
func (s *Sink) MergeKeys() []string { return slices.Clone(s.mergeKeys) }

// checkUpsert validates the upsert options against the sink's table.
func (s *Sink) checkUpsert() error {
	if s.mergeKeys == nil {
		return nil
	}
	if len(s.mergeKeys) == 0 {
		return fmt.Errorf("streamsink: query %s: %w: WithMergeKeys without a key", s.queryID, table.ErrInvalidArgument)
	}
	if s.mode != Append {
		return fmt.Errorf("streamsink: query %s: %w: upsert mode (WithMergeKeys) needs output mode Append, not %s", s.queryID, table.ErrInvalidArgument, s.mode)
	}
	sch, uri := s.schemaURI()
	if _, _, err := table.MergeRows(sch, nil).LatestPerKey(s.mergeKeys...); err != nil {
		return fmt.Errorf("streamsink: query %s: merge keys of table %s: %w", s.queryID, uri, err)
	}
	if s.rowSchema != nil {
		if _, _, err := table.MergeRows(s.rowSchema, nil).LatestPerKey(s.mergeKeys...); err != nil {
			return fmt.Errorf("streamsink: query %s: merge keys of the row schema: %w", s.queryID, err)
		}
	}
	return nil
}

// upsertEpoch is writeEpoch in upsert mode (s.mu held): one MERGE per
// attempt, each from a fresh snapshot, since its files depend on the
// target rows.
func (s *Sink) upsertEpoch(ctx context.Context, epochID int64, rowsOf rowsFunc, extra []table.Txn, check func(*table.Table) error) (*Result, error) {
	var src *table.MergeSource
	var nrows int64
	for round := 0; ; round++ {
		tbl, skipped, err := s.beginAttempt(ctx, epochID, check)
		if err != nil || skipped != nil {
			return skipped, err
		}
		if src == nil {
			rows, rsch, err := rowsOf(tbl)
			if err != nil {
				return nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
			}
			if rsch == nil {
				if rsch = s.rowSchema; rsch == nil {
					rsch = tbl.Schema()
				}
			}
			nrows = int64(len(rows))
			if src, _, err = table.MergeRows(rsch, rows).LatestPerKey(s.mergeKeys...); err != nil {
				return nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
			}
		}
		m := table.NewMerge(src, table.MergeOn(s.mergeKeys...)).WhenMatched().UpdateAll().WhenNotMatched().InsertAll()
		params := maps.Clone(s.params)
		if params == nil {
			params = map[string]string{}
		}
		params["queryId"], params["epochId"] = s.queryID, strconv.FormatInt(epochID, 10)
		opts := append(slices.Clone(s.wopts),
			table.WithTxn(s.queryID, epochID),
			table.WithTxnTime(s.now()),
			table.WithExtraTxns(extra...),
			table.WithOperationParameters(params),
			table.WithCommitOptions(s.txnOpts...))
		ntbl, mr, err := tbl.Merge(ctx, m, opts...)
		if err != nil {
			if s.retryable(err, round) {
				s.logger.Info("streamsink: conflict, retrying upsert epoch from a fresh snapshot", "query", s.queryID, "epoch", epochID, "err", err)
				continue
			}
			return nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
		if !mr.Committed {
			// The snapshot Merge began from already held the epoch (it
			// checks on its own transaction): a replay.
			return &Result{Epoch: epochID, Skipped: true, Version: mr.Version}, nil
		}
		s.tbl = ntbl
		bytes, _ := strconv.ParseInt(mr.Metrics["numTargetBytesAdded"], 10, 64)
		return &Result{Epoch: epochID, Version: mr.Version, Files: mr.AddedFiles, Rows: nrows, Bytes: bytes, Attempts: round + 1, Merge: mr}, nil
	}
}
