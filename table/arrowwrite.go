package table

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// AppendArrow appends the record batches of reader to t, as AppendRows
// appends rows, and returns the table at the new version (t itself stays
// valid at its version). Only a nil or empty reader commits a version
// without files.
//
// The reader's columns are matched to the table's by name (as
// WithRowSchema matches them), with the Delta types of
// arrowio.DeltaSchema(reader.Schema()) (the input-only Arrow types of
// package arrowio are accepted: large_utf8, timestamps of any unit,
// date64, ...; a timestamp[ns] value that is not a whole number of
// microseconds, which Delta stores, is refused as a *RowError, never
// truncated). Table columns the reader lacks are null; a column the
// table lacks, or of a type its column cannot take, is refused with
// ErrSchemaMismatch naming the column, unless WithSchemaEvolution lets
// the write add or widen it. An Arrow type with no Delta type (unsigned
// integers, unions, dictionaries, ...) is refused wrapping
// arrowio.ErrUnsupportedType, naming the column.
//
// When the table is unpartitioned without CHECK constraints, every column
// is a top-level primitive, every input column has exactly the Arrow type
// of its table column and no value can fail validation, the arrays are
// written column by column (arrowcolumns.go), without a row per value.
// Otherwise the rows take the row path: every row is validated before
// anything is written (a null in a NOT NULL column, a value out of range,
// a CHECK constraint or invariant it violates: a *RowError naming the
// column and the row's 0-based index in the whole stream, counted across
// batches), rows are split by partition values. Either way each file's
// add action carries the stats AppendRows writes for the same rows. Every
// batch is read (and retained) before the first file is written, so the
// input is held in memory. The reader is read to its end but not
// released: that stays the caller's.
func (t *Table) AppendArrow(ctx context.Context, reader array.RecordReader, opts ...WriteOption) (*Table, error) {
	if t == nil {
		return nil, nilTableError("append")
	}
	return writeArrow(ctx, t, modeAppend, reader, opts)
}

// OverwriteArrow replaces the table's rows with the record batches of
// reader, as OverwriteRows does with rows (WithReplaceWhere replaces only
// the matching partitions). Columns, validation, errors and memory are
// those of AppendArrow.
func (t *Table) OverwriteArrow(ctx context.Context, reader array.RecordReader, opts ...WriteOption) (*Table, error) {
	if t == nil {
		return nil, nilTableError("overwrite")
	}
	return writeArrow(ctx, t, modeOverwrite, reader, opts)
}

func writeArrow(ctx context.Context, t *Table, mode writeMode, reader array.RecordReader, opts []WriteOption) (*Table, error) {
	recs, sch, err := readArrowBatches(ctx, reader)
	defer func() {
		for _, r := range recs {
			if r != nil {
				r.Release()
			}
		}
	}()
	if err == nil && sch != nil && t.columnarTable() {
		// The columnar path (arrowcolumns.go) when the input allows it.
		cfg := newWriteConfig(opts)
		if target, changed, merr := mergeSchemas(t.Schema(), sch, cfg.evolve); merr == nil {
			if ac := newArrowColumns(recs, reader.Schema(), target); ac != nil {
				return t.writeCommit(ctx, mode, &prepared{schema: target, schemaChanged: changed, typed: ac}, cfg)
			}
		}
	}
	var rows []value.Row
	if err == nil && sch != nil {
		rows = []value.Row{}
		for k, rec := range recs {
			rs, rerr := arrowio.Rows(rec)
			if rerr != nil {
				err = fmt.Errorf("arrow input: %w", arrowRowError(rerr, len(rows)))
				break
			}
			rows = append(rows, rs...)
			rec.Release()
			recs[k] = nil
		}
	}
	if err != nil {
		return nil, opError(ctx, mode.op(), t.URI(), fmt.Errorf("table: %s %s: %w", mode.op(), t.URI(), err))
	}
	if sch != nil {
		opts = append(opts[:len(opts):len(opts)], WithRowSchema(sch))
	}
	if mode == modeOverwrite {
		return t.OverwriteRows(ctx, rows, opts...)
	}
	return t.AppendRows(ctx, rows, opts...)
}

// readArrowBatches reads every batch of reader, retained (the caller
// releases them), with the Delta schema of the reader's schema (nil for a
// nil reader).
func readArrowBatches(ctx context.Context, reader array.RecordReader) ([]arrow.RecordBatch, *schema.StructType, error) {
	var recs []arrow.RecordBatch
	sch, err := eachArrowBatch(ctx, reader, func(rec arrow.RecordBatch) error {
		rec.Retain()
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		for _, r := range recs {
			r.Release()
		}
		return nil, nil, err
	}
	return recs, sch, nil
}

// readArrowRows reads every batch of reader into rows of the parquetio
// value model, with the Delta schema of the reader's schema (nil for a nil
// reader).
func readArrowRows(ctx context.Context, reader array.RecordReader) ([]value.Row, *schema.StructType, error) {
	var rows []value.Row
	sch, err := eachArrowBatch(ctx, reader, func(rec arrow.RecordBatch) error {
		rs, err := arrowio.Rows(rec)
		if err != nil {
			return fmt.Errorf("arrow input: %w", arrowRowError(err, len(rows)))
		}
		rows = append(rows, rs...)
		return nil
	})
	if err != nil || sch == nil {
		return nil, nil, err
	}
	if rows == nil {
		rows = []value.Row{}
	}
	return rows, sch, nil
}

// SchemaOfArrow returns the Delta schema of the Arrow schema s, as the
// Arrow writes (AppendArrow, Draft.WriteFilesArrow, streamsink's
// WriteEpochBatches) derive it: each field's Delta type is the one package
// arrowio maps its Arrow type to (arrowio.DeltaSchema; the input-only types
// large_utf8, timestamps of any unit, date64, ... included), nullability
// and field metadata kept. An Arrow type with no Delta type (unsigned
// integers, unions, dictionaries, ...) wraps arrowio.ErrUnsupportedType,
// naming the field.
func SchemaOfArrow(s *arrow.Schema) (*schema.StructType, error) { return arrowio.DeltaSchema(s) }

// RowsOfBatches returns the rows of the record batches recs, in order, in
// the value model (arrowio.RowsOf; one value per column of the batch, of
// the Delta type arrowio.DeltaSchema gives it), as the Arrow writes read
// them: a value without an exact Delta value (a timestamp[ns] with a
// nanosecond remainder) is a *RowError naming the column and the row's
// index across recs, wrapping ErrInvalidArgument, as the write's
// validation reports a bad value; an Arrow type without a Delta type
// wraps arrowio.ErrUnsupportedType. No rows is an empty, non-nil slice.
// The batches are neither retained nor released.
func RowsOfBatches(recs []arrow.RecordBatch) ([]Row, error) {
	rows, err := arrowio.RowsOf(recs)
	if err != nil {
		return nil, arrowRowError(err, 0)
	}
	return rows, nil
}

// arrowRowError returns err of converting Arrow values to rows (arrowio.Rows
// of a batch whose first row is row off of the stream, or arrowio.RowsOf
// with off 0): a value without an exact Delta value (*arrowio.ValueError)
// becomes a *RowError naming the column and wrapping ErrInvalidArgument, as
// the write's validation reports a bad value; other errors are returned as
// they are.
func arrowRowError(err error, off int) error {
	var ve *arrowio.ValueError
	if errors.As(err, &ve) {
		return &RowError{Row: off + ve.Row, Err: fmt.Errorf("column %q: %w: %w", ve.Column, ErrInvalidArgument, ve.Err)}
	}
	return err
}

// eachArrowBatch calls fn with every batch of reader (valid until fn
// returns) and returns the Delta schema of the reader's schema (nil for a
// nil reader). A batch whose schema is not the reader's is an error
// wrapping ErrSchemaMismatch.
func eachArrowBatch(ctx context.Context, reader array.RecordReader, fn func(arrow.RecordBatch) error) (*schema.StructType, error) {
	if reader == nil {
		return nil, nil
	}
	sch, err := arrowio.DeltaSchema(reader.Schema())
	if err != nil {
		return nil, fmt.Errorf("arrow input: %w", err)
	}
	for batch := 0; reader.Next(); batch++ {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		rec := reader.RecordBatch()
		if !rec.Schema().Equal(reader.Schema()) {
			return nil, fmt.Errorf("%w: arrow input: batch %d has schema %s, the reader's is %s",
				ErrSchemaMismatch, batch, rec.Schema(), reader.Schema())
		}
		if err := fn(rec); err != nil {
			return nil, err
		}
	}
	if err := reader.Err(); err != nil {
		return nil, fmt.Errorf("arrow input: reading batches: %w", err)
	}
	return sch, nil
}

// RowsOfArrow reads every record batch of reader and returns the rows
// aligned with sch (a table's schema, for WriteFiles): columns are matched
// by name, absent ones are null, values are converted as WithRowSchema
// converts them. A column sch lacks, or of a type its column cannot take,
// is an error wrapping ErrSchemaMismatch; an Arrow type without a Delta
// type wraps arrowio.ErrUnsupportedType. The values themselves (nulls in
// NOT NULL columns, ranges) are checked by the write. The reader is not
// released.
func RowsOfArrow(ctx context.Context, sch *schema.StructType, reader array.RecordReader) ([]Row, error) {
	rows, in, err := readArrowRows(ctx, reader)
	if err != nil || in == nil {
		return rows, err
	}
	target, changed, err := mergeSchemas(sch, in, false)
	if err != nil {
		return nil, err
	}
	if changed {
		return nil, fmt.Errorf("table: %w: arrow input does not fit the table schema", ErrSchemaMismatch)
	}
	proj := structProjector(in, target)
	if proj == nil {
		return rows, nil
	}
	for i, r := range rows {
		if i%cancelCheckRows == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if rows[i], err = proj(r); err != nil {
			var re *RowError
			if errors.As(err, &re) {
				return nil, err
			}
			return nil, fmt.Errorf("table: %w", &RowError{Row: i, Err: err})
		}
	}
	return rows, nil
}
