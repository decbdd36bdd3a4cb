package arrowio

import (
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/value"
)

// Value returns element i of arr in the value model (nil for a
// null): the inverse of RecordBuilder.Append for the produced types, and
// the natural Delta value for the input-only types of the package doc
// (large_utf8 gives a string, timestamp[ns, tz=X] a time.Time in UTC,
// date64 a value.Date, ...). Byte slices are copies. An Arrow type without
// a Delta mapping is an error wrapping ErrUnsupportedType; a timestamp[ns]
// that is not a whole number of microseconds (which Delta stores) is an
// error wrapping ErrInvalidValue, as pyarrow refuses that lossy cast.
func Value(arr arrow.Array, i int) (any, error) {
	if arr.IsNull(i) {
		return nil, nil
	}
	switch a := arr.(type) {
	case *array.Null:
		return nil, nil
	case *array.Int64, *array.Int32, *array.Int16, *array.Int8, *array.Float32, *array.Float64,
		*array.Boolean, *array.String, *array.LargeString, *array.StringView:
		// the Go value of the element type (int64 ... bool, string)
		return a.(interface{ ValueAsAny(int) any }).ValueAsAny(i), nil
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		return append([]byte{}, a.(interface{ Value(int) []byte }).Value(i)...), nil
	case *array.Date32:
		return value.Date(a.Value(i)), nil
	case *array.Date64:
		return value.DateOf(a.Value(i).ToTime()), nil
	case *array.Timestamp:
		return timestampValue(a, i)
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return value.Decimal{Unscaled: a.Value(i).BigInt(), Scale: scale}, nil
	case *array.Struct:
		row := make(value.Row, a.NumField())
		for f := range row {
			v, err := Value(a.Field(f), i)
			if err != nil {
				return nil, err
			}
			row[f] = v
		}
		return row, nil
	case *array.Map: // before the list cases: Map embeds List
		keys, items := a.Keys(), a.Items()
		start, end := a.ValueOffsets(i)
		out := make([]value.MapEntry, 0, end-start)
		for j := int(start); j < int(end); j++ {
			k, err := Value(keys, j)
			if err != nil {
				return nil, err
			}
			v, err := Value(items, j)
			if err != nil {
				return nil, err
			}
			out = append(out, value.MapEntry{Key: k, Value: v})
		}
		return out, nil
	case array.ListLike:
		vals := a.ListValues()
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := int(start); j < int(end); j++ {
			v, err := Value(vals, j)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("arrowio: %w: Arrow type %s", ErrUnsupportedType, arr.DataType())
}

// RowsOf returns the rows of the record batches recs, in order, as Rows
// returns each batch's (an empty, non-nil slice for no rows); a
// *ValueError's Row counts across the batches.
func RowsOf(recs []arrow.RecordBatch) ([]value.Row, error) {
	out := []value.Row{}
	for _, rec := range recs {
		rs, err := rowsAt(rec, len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// Rows returns the rows of a record batch in the value model, one
// value per column (see Value). An unsupported column type is an error
// wrapping ErrUnsupportedType naming the column; a value the model cannot
// hold is a *ValueError.
func Rows(rec arrow.RecordBatch) ([]value.Row, error) { return rowsAt(rec, 0) }

// ValueError reports an Arrow value that has no exact Delta value (a
// timestamp[ns] with nanoseconds): Column is the column's name, Row the
// value's 0-based row (in the batch for Rows, across the batches for
// RowsOf), Err the cause, wrapping ErrInvalidValue.
type ValueError struct {
	Column string
	Row    int
	Err    error
}

// Error returns "arrowio: column "c" row N: cause".
func (e *ValueError) Error() string {
	return fmt.Sprintf("arrowio: column %q row %d: %v", e.Column, e.Row, e.Err)
}

// Unwrap returns the cause.
func (e *ValueError) Unwrap() error { return e.Err }

// rowsAt is Rows, the rows of rec numbered from base in errors.
func rowsAt(rec arrow.RecordBatch, base int) ([]value.Row, error) {
	n := int(rec.NumRows())
	cols := rec.Columns()
	out := make([]value.Row, n)
	for r := range out {
		out[r] = make(value.Row, len(cols))
	}
	for c, col := range cols {
		for r := range n {
			v, err := Value(col, r)
			if errors.Is(err, ErrInvalidValue) {
				return nil, &ValueError{Column: rec.ColumnName(c), Row: base + r, Err: err}
			}
			if err != nil {
				return nil, fmt.Errorf("arrowio: column %s: %w: Arrow type %s", rec.ColumnName(c), ErrUnsupportedType, col.DataType())
			}
			out[r][c] = v
		}
	}
	return out, nil
}

// timestampValue is element i of a timestamp array as a time.Time in UTC,
// or an error wrapping ErrInvalidValue when it is not a whole number of
// microseconds (only a nanosecond unit can hold such values).
func timestampValue(a *array.Timestamp, i int) (any, error) {
	typ := a.DataType().(*arrow.TimestampType)
	v := a.Value(i)
	t := v.ToTime(typ.Unit).UTC()
	if typ.Unit == arrow.Nanosecond && v%1000 != 0 {
		return nil, fmt.Errorf("%w: %s value %d (%s) is not a whole number of microseconds, the precision Delta stores",
			ErrInvalidValue, typ, int64(v), t.Format(time.RFC3339Nano))
	}
	return t, nil
}
