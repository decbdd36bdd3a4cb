package table

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// MergeArrow returns a MERGE source of Arrow record batches: every batch of
// reader is read (into memory, as the other sources are), with the Delta
// schema of the reader's Arrow schema (the mapping of package arrowio:
// timestamp[us, tz=UTC] is timestamp, timestamp[us] timestamp_ntz, ...).
// Errors, before anything is written: a batch whose schema differs from the
// reader's (ErrSchemaMismatch), an Arrow type without a Delta type
// (arrowio.ErrUnsupportedType), a reading error of reader, ctx's error.
// The reader is not released.
func MergeArrow(ctx context.Context, reader array.RecordReader) (*MergeSource, error) {
	if reader == nil {
		return nil, fmt.Errorf("table: merge source: %w: nil Arrow reader", ErrInvalidArgument)
	}
	rows, sch, err := readArrowRows(ctx, reader)
	if err != nil {
		return nil, fmt.Errorf("table: merge source: %w", err)
	}
	return &MergeSource{schema: sch, rows: rows}, nil
}
