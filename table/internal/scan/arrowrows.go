package scan

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/value"
)

// rowBoxer turns record batches into rows (batchRows), keeping what it
// learnt of each column from one batch to the next.
type rowBoxer struct {
	interns []value.Interner // by column
}

// batchRows turns a batch of the scan's reader into Scan's rows, in the
// value model arrowio.Value gives (the row reader's: int64 ... bool,
// string, []byte copies, value.Date, value.Decimal, time.Time in UTC,
// value.Row, []any and []value.MapEntry for nested columns, nil for null).
// The rows' values share one slab per batch; strings alias the batch's
// bytes, which the scan's allocator never recycles (arrowalloc.go). Every
// row is a distinct slice with its own capacity, so rows do not alias.
//
// Boxing a cell into an any allocates for most values, so b saves what it
// can across the batches of one scan: a string column's boxed values are
// interned while its values repeat (a dictionary-encoded column), and an
// int64 or timestamp value equal to the row before reuses its box.
func (b *rowBoxer) batchRows(rec arrow.RecordBatch) ([]value.Row, error) {
	nr, nc := int(rec.NumRows()), int(rec.NumCols())
	if len(b.interns) < nc {
		b.interns = make([]value.Interner, nc)
	}
	cols := make([]func(int) (any, error), nc)
	for c := range cols {
		cols[c] = boxer(rec.Column(c), &b.interns[c])
	}
	slab := make([]any, nr*nc)
	out := make([]value.Row, nr)
	for r := range out {
		out[r] = value.Row(slab[r*nc : (r+1)*nc : (r+1)*nc])
	}
	for c, f := range cols {
		for r := range nr {
			v, err := f(r)
			if err != nil {
				return nil, err
			}
			slab[r*nc+c] = v
		}
	}
	return out, nil
}

// boxer returns the accessor of element i of arr in the value model:
// typed for the flat types the scan produces, arrowio.Value for the others.
// The switch repeats part of arrowio.Value's type dispatch because it is
// Scan's per-cell hot loop: boxing every cell through arrowio.Value made
// Scan of the 1-file flights table slower than the row reader it replaced
// (CPU 1.37/1.13 s against 1.13/0.96 s); with the typed accessors, the
// interner and the reused boxes it is 0.75x of it (BENCHMARKS.md, "P8 —
// Deliver 5").
func boxer(arr arrow.Array, in *value.Interner) func(int) (any, error) {
	switch a := arr.(type) {
	case *array.Int64:
		return boxedRuns(a, a.Value)
	case *array.Int32:
		return boxed(a, a.Value)
	case *array.Int16:
		return boxed(a, a.Value)
	case *array.Int8:
		return boxed(a, a.Value)
	case *array.Float64:
		return boxed(a, a.Value)
	case *array.Float32:
		return boxed(a, a.Value)
	case *array.Boolean:
		return boxed(a, a.Value)
	case *array.String:
		return func(i int) (any, error) {
			if a.IsNull(i) {
				return nil, nil
			}
			return in.String(a.Value(i)), nil
		}
	case *array.Date32:
		return boxed(a, func(i int) value.Date { return value.Date(a.Value(i)) })
	case *array.Timestamp:
		if a.DataType().(*arrow.TimestampType).Unit == arrow.Microsecond {
			var last arrow.Timestamp
			var box any
			return func(i int) (any, error) {
				if a.IsNull(i) {
					return nil, nil
				}
				if v := a.Value(i); box == nil || v != last {
					last, box = v, time.UnixMicro(int64(v)).UTC()
				}
				return box, nil
			}
		}
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return boxed(a, func(i int) value.Decimal { return value.Decimal{Unscaled: a.Value(i).BigInt(), Scale: scale} })
	}
	return func(i int) (any, error) { return arrowio.Value(arr, i) }
}

// boxed is the accessor of a flat array with value function v.
func boxed[T any](a arrow.Array, v func(int) T) func(int) (any, error) {
	if a.NullN() == 0 {
		return func(i int) (any, error) { return v(i), nil }
	}
	return func(i int) (any, error) {
		if a.IsNull(i) {
			return nil, nil
		}
		return v(i), nil
	}
}

// boxedRuns is boxed for a comparable value type: a value equal to the
// one asked for before shares its box (time.Time and the integers are
// immutable as any).
func boxedRuns[T comparable](a arrow.Array, v func(int) T) func(int) (any, error) {
	var last T
	var box any
	return func(i int) (any, error) {
		if a.IsNull(i) {
			return nil, nil
		}
		if x := v(i); box == nil || x != last {
			last, box = x, x
		}
		return box, nil
	}
}
