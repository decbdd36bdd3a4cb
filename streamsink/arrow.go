package streamsink

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// WriteEpochArrow writes one epoch from the record batches of reader, on
// WriteEpoch's exactly-once path: the same txn check, data files written
// once (table.WriteFiles) and committed with retries (table.CommitFiles).
// Columns are matched to the table's by name, against the schema of the
// table version the epoch is written to (table.RowsOfArrow): absent
// columns are null; a column the table lacks or cannot take is an error
// wrapping table.ErrSchemaMismatch, an Arrow type without a Delta type one
// wrapping arrowio.ErrUnsupportedType; there is no schema evolution. Values
// are validated as WriteEpoch validates rows (a *table.RowError names the
// column and the row's index in the stream). Nothing is written on error.
//
// A skipped epoch (already committed) reads nothing from reader. Otherwise
// reader is read to its end before the first file is written. The reader
// is never released: that stays the caller's.
func (s *Sink) WriteEpochArrow(ctx context.Context, epochID int64, reader array.RecordReader) (*Result, error) {
	return s.writeEpoch(ctx, epochID, func(tbl *table.Table) ([]table.Row, *schema.StructType, error) {
		out, err := table.RowsOfArrow(ctx, tbl.Schema(), reader)
		return out, tbl.Schema(), err
	}, nil, nil)
}
