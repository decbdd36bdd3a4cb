package streamsink

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// WriteEpochArrow writes one epoch from the record batches of reader as
// WriteEpochBatches writes them: the same exactly-once path (txn check,
// data files written once, committed with retries), files, stats and
// errors. Columns are matched to the table's by name (absent columns are
// null); a column the table lacks is added when table.WithSchemaEvolution
// is among the sink's write options (WithWriteOptions), in the epoch's
// commit, and refused otherwise with an error wrapping
// table.ErrSchemaMismatch that names the column; a column the table cannot
// take is such an error too, an Arrow type without a Delta type one
// wrapping arrowio.ErrUnsupportedType. Values are validated as WriteEpoch
// validates rows (a *table.RowError names the column and the row's index
// in the stream). Nothing is written on error.
//
// A skipped epoch (already committed) reads nothing from reader. Otherwise
// reader is read to its end before the first file is written. The reader
// is never released: that stays the caller's.
func (s *Sink) WriteEpochArrow(ctx context.Context, epochID int64, reader array.RecordReader) (*Result, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	read := sync.OnceValue(func() error {
		for reader.Next() {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			rec := reader.RecordBatch()
			rec.Retain()
			recs = append(recs, rec)
		}
		if err := reader.Err(); err != nil {
			return fmt.Errorf("reading arrow input: %w", err)
		}
		return nil
	})
	return s.writeEpochArrow(ctx, epochID, func() ([]arrow.RecordBatch, error) { return recs, read() }, reader.Schema())
}

// WriteEpochBatches writes one epoch of the rows of the record batches recs
// (all of Arrow schema in) as WriteEpoch writes the same rows aligned with
// table.SchemaOfArrow(in) (as WithRowSchema would align them): the same
// txn check, files, stats, commit, schema evolution (a column the table
// lacks is added only with table.WithSchemaEvolution among the sink's
// write options) and errors (a *table.RowError names the column and the
// row's index in the epoch). The arrays are written column by column when
// table.Draft.WriteFilesArrow can; with WithMergeKeys the epoch takes
// WriteEpoch's upsert path with the batches' rows. The batches are neither
// retained nor released.
func (s *Sink) WriteEpochBatches(ctx context.Context, epochID int64, recs []arrow.RecordBatch, in *arrow.Schema) (*Result, error) {
	return s.writeEpochArrow(ctx, epochID, func() ([]arrow.RecordBatch, error) { return recs, nil }, in)
}

// writeEpochArrow is WriteEpochBatches of the batches batches returns
// (called only when the epoch is not skipped).
func (s *Sink) writeEpochArrow(ctx context.Context, epochID int64, batches func() ([]arrow.RecordBatch, error), in *arrow.Schema) (*Result, error) {
	rowsOf := func(*table.Table) ([]table.Row, *schema.StructType, error) {
		sch, err := table.SchemaOfArrow(in)
		if err != nil {
			return nil, nil, err
		}
		recs, err := batches()
		if err != nil {
			return nil, nil, err
		}
		rows, err := table.RowsOfBatches(recs)
		return rows, sch, err
	}
	files := func(ctx context.Context, tbl *table.Table, wopts []table.WriteOption) (*table.Draft, []*table.Add, int64, error) {
		sch, err := table.SchemaOfArrow(in)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("streamsink: query %s epoch %d: arrow input: %w", s.queryID, epochID, err)
		}
		d, err := s.draft(ctx, tbl, epochID, sch, wopts)
		if err != nil {
			return nil, nil, 0, err
		}
		recs, err := batches()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
		adds, err := d.WriteFilesArrow(ctx, recs, in, wopts...)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("streamsink: query %s epoch %d: writing data files: %w", s.queryID, epochID, err)
		}
		var n int64
		for _, rec := range recs {
			n += rec.NumRows()
		}
		return d, adds, n, nil
	}
	return s.writeEpoch(ctx, epochID, rowsOf, files, nil, nil, false)
}
