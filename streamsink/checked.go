package streamsink

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// WriteEpochChecked is WriteEpochWith with a precondition on the table
// state the epoch commits on: check runs on every snapshot an attempt of
// the epoch starts from (the first one before any data file is written,
// each retry after a conflict before its commit), and an error from it
// ends the write, wrapped, with nothing committed (data files already
// written are orphans, as after any failed commit). Together with the
// extra txns being recorded as read, this makes "the table still holds
// what I expect for these appIds" hold at the commit: a concurrent commit
// that writes one of them after the snapshot fails this one with
// txlog.ErrConcurrentTransaction; one that landed before the snapshot is
// seen by check. The Kafka source uses it to fence a consumer that lost a
// partition to another one (see streamsink/kafkasink).
func (s *Sink) WriteEpochChecked(ctx context.Context, epochID int64, rows []parquetio.Row, check func(*table.Table) error, extra ...txlog.Txn) (*Result, error) {
	if err := s.checkExtra(extra); err != nil {
		return nil, err
	}
	if check == nil {
		return nil, fmt.Errorf("streamsink: query %s epoch %d: nil check", s.queryID, epochID)
	}
	if epochID < 0 {
		return nil, fmt.Errorf("streamsink: epoch %d: %w", epochID, ErrInvalidEpoch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var adds []*txlog.Add
	for round := 0; ; round++ {
		tbl, err := s.tbl.Refresh(ctx)
		if err != nil {
			return nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
		s.tbl = tbl
		if v := tbl.Snapshot().TxnVersion(s.queryID); epochID <= v {
			s.logger.Debug("streamsink: epoch already committed, skipping", "query", s.queryID, "epoch", epochID, "txnVersion", v)
			return &Result{Epoch: epochID, Skipped: true, Version: tbl.Version()}, nil
		}
		if err := check(tbl); err != nil {
			return nil, fmt.Errorf("streamsink: query %s epoch %d: precondition at table version %d: %w", s.queryID, epochID, tbl.Version(), err)
		}
		upd := table.StreamingUpdate{QueryID: s.queryID, EpochID: epochID, OutputMode: string(s.mode)}
		if adds == nil {
			wopts := append(slices.Clone(s.wopts), table.WithStreamingUpdate(upd))
			if adds, err = tbl.WriteFiles(ctx, rows, wopts...); err != nil {
				return nil, fmt.Errorf("streamsink: query %s epoch %d: writing data files: %w", s.queryID, epochID, err)
			}
			if adds == nil {
				adds = []*txlog.Add{}
			}
		}
		upd.Time = s.now()
		ntbl, cr, err := tbl.CommitFiles(ctx, adds,
			table.WithOperationParameters(s.params),
			table.WithStreamingUpdate(upd),
			table.WithExtraTxns(extra...),
			table.WithCommitOptions(s.txnOpts...))
		if err == nil {
			s.tbl = ntbl
			var bytes int64
			for _, a := range adds {
				bytes += a.Size
			}
			return &Result{Epoch: epochID, Version: cr.Version, Files: len(adds), Rows: int64(len(rows)), Bytes: bytes, Attempts: cr.Attempts}, nil
		}
		if errors.Is(err, txlog.ErrConcurrentTransaction) || !errors.Is(err, txlog.ErrConcurrentModification) || round >= s.retries {
			return nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
		s.logger.Info("streamsink: conflict, retrying epoch from a fresh snapshot", "query", s.queryID, "epoch", epochID, "err", err)
	}
}
