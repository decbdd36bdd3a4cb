package streamsink

import (
	"context"
	"fmt"

	"github.com/deltakit/deltakit/table"
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
// table.ErrConcurrentTransaction; one that landed before the snapshot is
// seen by check. The Kafka source uses it to fence a consumer that lost a
// partition to another one (see streamsink/kafkasink).
func (s *Sink) WriteEpochChecked(ctx context.Context, epochID int64, rows []table.Row, check func(*table.Table) error, extra ...table.Txn) (*Result, error) {
	if err := s.checkExtra(extra); err != nil {
		return nil, err
	}
	if check == nil {
		return nil, fmt.Errorf("streamsink: query %s epoch %d: nil check", s.queryID, epochID)
	}
	return s.writeEpoch(ctx, epochID, untyped(rows), nil, extra, check, true)
}
