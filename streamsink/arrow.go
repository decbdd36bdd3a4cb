package streamsink

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
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
	}, nil, nil, nil)
}

// WriteEpochBatches writes one epoch of the rows of the record batches recs
// (all of Arrow schema in) as WriteEpoch writes the same rows aligned with
// arrowio.DeltaSchema(in) (as WithRowSchema would align them): the same
// txn check, files, stats, commit and errors (a *table.RowError names the
// column and the row's index in the epoch). The arrays are written column
// by column when table.Table.WriteFilesArrow can; with WithMergeKeys the
// epoch takes WriteEpoch's upsert path with the batches' rows. The batches
// are neither retained nor released.
func (s *Sink) WriteEpochBatches(ctx context.Context, epochID int64, recs []arrow.RecordBatch, in *arrow.Schema) (*Result, error) {
	rowsOf := func(*table.Table) ([]table.Row, *schema.StructType, error) {
		sch, err := arrowio.DeltaSchema(in)
		if err != nil {
			return nil, nil, err
		}
		rows, err := arrowio.RowsOf(recs)
		return rows, sch, err
	}
	files := func(tbl *table.Table, wopts []table.WriteOption) ([]*table.Add, int64, error) {
		adds, err := tbl.WriteFilesArrow(ctx, recs, in, wopts...)
		if err != nil {
			return nil, 0, fmt.Errorf("streamsink: query %s epoch %d: writing data files: %w", s.queryID, epochID, err)
		}
		var n int64
		for _, rec := range recs {
			n += rec.NumRows()
		}
		return adds, n, nil
	}
	return s.writeEpoch(ctx, epochID, rowsOf, files, nil, nil)
}
