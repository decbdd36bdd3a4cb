package table

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrNilTable is wrapped, with ErrInvalidArgument, by the error of every
// function and method of this package given a nil *Table: the table that
// a failed call (Open, Append, Merge, ...) returns with its error, used
// without checking that error. Accessors of a nil *Table return zero
// values (Version -1) and its Close does nothing.
var ErrNilTable = errors.New("nil *table.Table (the table returned with an earlier call's error?)")

// errNilDraft is the reason of the errors of a nil *Draft's methods.
var errNilDraft = errors.New("nil *table.Draft (the draft returned with an earlier call's error?)")

// nilTableError is the error of operation op on a nil *Table.
func nilTableError(op string) error {
	return fmt.Errorf("table: %s: %w: %w", op, ErrInvalidArgument, ErrNilTable)
}

// nilDraftError is the error of operation op on a nil *Draft.
func nilDraftError(op string) error {
	return fmt.Errorf("table: draft %s: %w: %w", op, ErrInvalidArgument, errNilDraft)
}

// failedReader is the RecordReader ScanArrow returns with a planning
// error: empty (Next is false, Err is the error), with Retain and Release
// doing nothing, so that a Release deferred before the error is checked
// does not panic.
type failedReader struct{ err error }

func (r failedReader) Retain()                        {}
func (r failedReader) Release()                       {}
func (r failedReader) Schema() *arrow.Schema          { return arrow.NewSchema(nil, nil) }
func (r failedReader) Next() bool                     { return false }
func (r failedReader) RecordBatch() arrow.RecordBatch { return nil }
func (r failedReader) Record() arrow.RecordBatch      { return nil }
func (r failedReader) Err() error                     { return r.err }

var _ array.RecordReader = failedReader{}
