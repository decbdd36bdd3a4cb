package streamsink

import (
	"context"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// WriteEpochOf writes one epoch of rows of the Go struct type T (or *T), as
// WriteEpoch does for untyped rows. Fields map to the table's columns as
// table.Append maps them (the delta tag, exact then case-insensitive; see
// table.RowsOf), against the schema of the table version the epoch is
// written to; there is no schema evolution. A skipped epoch converts
// nothing. A field without a column, or of a Go type its column cannot
// hold, is an error wrapping table.ErrSchemaMismatch, and nothing is
// written.
func WriteEpochOf[T any](ctx context.Context, s *Sink, epochID int64, rows []T) (*Result, error) {
	return s.writeEpoch(ctx, epochID, func(tbl *table.Table) ([]table.Row, *schema.StructType, error) {
		out, err := table.RowsOf(tbl.Schema(), rows)
		return out, tbl.Schema(), err
	}, nil, nil, nil)
}
