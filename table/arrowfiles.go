package table

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/txlog"
)

// WriteFilesArrow writes the record batches recs (all of Arrow schema in)
// as data files of the draft's table and returns their add actions for
// Commit: the files, stats and errors of WriteFiles for the same rows
// (aligned with arrowio.DeltaSchema(in), which overrides any
// WithRowSchema in opts). When the table is unpartitioned without CHECK
// constraints and the columns fit AppendArrow's columnar path (exact Arrow
// types, no value that can fail validation), the arrays are written
// column by column; otherwise the batches are converted to rows
// (arrowio.Rows) and take WriteFiles' row path, which reports a bad value
// as a *RowError naming the column and the row's index in recs. The
// batches are neither retained nor released.
func (d *Draft) WriteFilesArrow(ctx context.Context, recs []arrow.RecordBatch, in *arrow.Schema, opts ...WriteOption) ([]*Add, error) {
	if d == nil {
		return nil, nilDraftError("write files")
	}
	adds, err := d.shadow.writeFilesArrow(ctx, recs, in, opts)
	d.recordKeys(adds)
	return adds, err
}

// WriteFilesArrow is WriteFiles for the rows of the record batches recs
// (all of Arrow schema in), aligned with arrowio.DeltaSchema(in) (which
// overrides any WithRowSchema in opts): the same files, stats and errors,
// written column by column when Draft.WriteFilesArrow's conditions hold.
// The batches are neither retained nor released.
func (t *Table) WriteFilesArrow(ctx context.Context, recs []arrow.RecordBatch, in *arrow.Schema, opts ...WriteOption) ([]*Add, error) {
	if t == nil {
		return nil, nilTableError("write files")
	}
	return t.writeFilesArrow(ctx, recs, in, opts)
}

func (t *Table) writeFilesArrow(ctx context.Context, recs []arrow.RecordBatch, in *arrow.Schema, opts []WriteOption) ([]*txlog.Add, error) {
	sch, err := arrowio.DeltaSchema(in)
	if err != nil {
		return nil, opError(ctx, "write files of", t.URI(), fmt.Errorf("arrow input: %w", err))
	}
	opts = append(opts[:len(opts):len(opts)], WithRowSchema(sch))
	cfg := newWriteConfig(opts)
	if t.columnarTable() {
		if target, changed, merr := t.mergeSchema(sch, cfg.evolve); merr == nil && !changed {
			if ac := newArrowColumns(recs, in, target); ac != nil {
				return t.writePreparedFiles(ctx, cfg, func() (*prepared, error) {
					return &prepared{schema: target, typed: ac}, nil
				})
			}
		}
	}
	rows, err := RowsOfBatches(recs)
	if err != nil {
		return nil, opError(ctx, "write files of", t.URI(), fmt.Errorf("arrow input: %w", err))
	}
	return t.WriteFiles(ctx, rows, opts...)
}
