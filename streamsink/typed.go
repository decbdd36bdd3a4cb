package streamsink

import (
	"context"
	"errors"
	"fmt"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// WriteEpochOf writes one epoch of rows of the Go struct type T (or *T), as
// WriteEpoch does for untyped rows. Fields map to the table's columns as
// table.Append maps them (the delta tag, exact then case-insensitive; see
// table.RowsOf), against the schema of the table version the epoch is
// written to. An epoch the sink's snapshot already holds converts
// nothing (one that the refresh finds committed may have been partly
// encoded, see WriteEpoch, but stores nothing). A field without a column
// is added as a new column (of table.SchemaOf[T]'s type) when
// table.WithSchemaEvolution is among the sink's write options, in the
// epoch's commit, which merges table.DataSchemaOf[T] into the table's
// schema as table.Append does (a NOT NULL column stays NOT NULL unless its
// field can be nil); otherwise it is an error wrapping table.ErrSchemaMismatch
// that names the column, as is a field of a Go type its column cannot
// hold, and nothing is written.
//
// The data files are written as table.WriteFilesOf writes them: on an
// unpartitioned table without CHECK constraints whose columns are all
// top-level primitives, column by column straight from the struct fields,
// without building a table.Row per row (the cost WriteEpoch's rows carry);
// upsert epochs (WithMergeKeys) convert the rows for MERGE.
func WriteEpochOf[T any](ctx context.Context, s *Sink, epochID int64, rows []T) (*Result, error) {
	files := func(ctx context.Context, tbl *table.Table, wopts []table.WriteOption) (*table.Draft, []*table.Add, int64, error) {
		sch, err := table.DataSchemaOf[T]()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
		d, err := s.draft(ctx, tbl, epochID, sch, wopts)
		if err != nil {
			return nil, nil, 0, err
		}
		adds, err := table.WriteFilesOf(ctx, d, rows, wopts...)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("streamsink: query %s epoch %d: writing data files: %w", s.queryID, epochID, err)
		}
		return d, adds, int64(len(rows)), nil
	}
	return s.writeEpoch(ctx, epochID, func(tbl *table.Table) ([]table.Row, *schema.StructType, error) {
		out, err := table.RowsOf(tbl.Schema(), rows)
		if err == nil || !errors.Is(err, table.ErrSchemaMismatch) {
			return out, tbl.Schema(), err
		}
		// Rows of the schema of T's data, which the epoch's draft merges
		// into the table's (evolving it, or naming the column it lacks).
		sch, serr := table.DataSchemaOf[T]()
		if serr != nil {
			return nil, nil, err
		}
		if out, serr = table.RowsOf(sch, rows); serr != nil {
			return nil, nil, err
		}
		return out, sch, nil
	}, files, nil, nil, true)
}
