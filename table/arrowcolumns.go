package table

import (
	"context"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
)

// The columnar path of AppendArrow and OverwriteArrow: when the table is
// unpartitioned and has no CHECK constraints, every table column is a
// top-level primitive parquetio.Writer.WriteColumns takes, every input
// column has the exact Arrow type of its table column (arrowio.Type) and
// no value can fail validation (no null in a NOT NULL column, timestamps
// within the row path's range), the batches' arrays are handed to
// WriteColumns as they are (numbers and timestamps without a copy, strings
// as views of the Arrow buffers), through the same file writer and file
// splitting as Append[T]'s columnar path: the files and stats are the row
// path's. Anything else takes the row path, which then reports the
// validation errors (naming column and row) exactly as AppendRows does.

// arrowColumns is the columnar input of an Arrow write.
type arrowColumns struct {
	recs   []arrow.RecordBatch
	starts []int // starts[k]: index of recs[k]'s first row; starts[len(recs)] = n
	n      int
	cols   []*arrowCol // by table column
}

// arrowCol is one table column of an arrowColumns.
type arrowCol struct {
	dst  string           // primitive type name of the table column
	in   int              // input column index, -1: absent (nulls)
	buf  parquetio.Column // the block WriteColumns gets
	own  parquetio.Column // scratch slices of copies, reused across blocks (never Arrow buffers)
	null []bool
}

// newArrowColumns returns the columnar input for recs (all of schema in,
// whose Delta schema is inSch) written to target, or nil when the row
// path must write them.
func newArrowColumns(recs []arrow.RecordBatch, in *arrow.Schema, target *schema.StructType) *arrowColumns {
	if !parquetio.CanWriteColumns(target) {
		return nil
	}
	ar := &arrowColumns{recs: recs, starts: make([]int, len(recs)+1)}
	for k, r := range recs {
		ar.starts[k+1] = ar.starts[k] + int(r.NumRows())
	}
	ar.n = ar.starts[len(recs)]
	used := 0
	for _, f := range target.Fields {
		pt, ok := f.Type.(*schema.PrimitiveType)
		if !ok {
			return nil
		}
		c := &arrowCol{dst: pt.Name, in: -1}
		if idx := in.FieldIndices(f.Name); len(idx) == 1 {
			want, err := arrowio.Type(f.Type)
			if err != nil || !arrow.TypeEqual(in.Field(idx[0]).Type, want) {
				return nil
			}
			c.in = idx[0]
			used++
		} else if len(idx) > 1 {
			return nil
		}
		if !f.Nullable && (c.in < 0 && ar.n > 0) {
			return nil
		}
		for _, r := range recs {
			if c.in < 0 {
				break
			}
			a := r.Column(c.in)
			if !f.Nullable && a.NullN() > 0 {
				return nil // the row path names the row
			}
			if ts, ok := a.(*array.Timestamp); ok {
				for _, v := range ts.TimestampValues() {
					if !microsInRange(int64(v)) {
						return nil
					}
				}
			}
		}
		ar.cols = append(ar.cols, c)
	}
	if used != len(in.Fields()) {
		return nil // a column matched by a case-insensitive name, or not at all
	}
	return ar
}

func (ar *arrowColumns) numRows() int { return ar.n }

// check: newArrowColumns took only input that cannot fail; the validation
// size is the sum of rowSize.
func (ar *arrowColumns) check(ctx context.Context) (int64, error) {
	var total int64
	for k, r := range ar.recs {
		if err := ctx.Err(); err != nil {
			return 0, context.Cause(ctx)
		}
		for _, c := range ar.cols {
			total += c.batchSize(r, ar.starts[k+1]-ar.starts[k])
		}
	}
	return total, nil
}

// valueLener is a variable-width Arrow array (*array.String,
// *array.Binary).
type valueLener interface{ ValueLen(i int) int }

// batchSize is the validation size of column c in all of r's rows.
func (c *arrowCol) batchSize(r arrow.RecordBatch, n int) int64 {
	if c.in < 0 {
		return 0
	}
	a := r.Column(c.in)
	if v, ok := a.(valueLener); ok {
		var s int64
		for i := range n {
			if a.IsValid(i) {
				s += int64(v.ValueLen(i)) + 4
			}
		}
		return s
	}
	return validationSize(c.dst) * int64(n-a.NullN())
}

// at returns the batch index and row within it of row i.
func (ar *arrowColumns) at(i int) (int, int) {
	lo, hi := 0, len(ar.recs)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ar.starts[mid] <= i {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, i - ar.starts[lo]
}

func (ar *arrowColumns) rowSize(i int) int64 {
	k, j := ar.at(i)
	var s int64
	for _, c := range ar.cols {
		if c.in < 0 {
			continue
		}
		a := ar.recs[k].Column(c.in)
		if a.IsNull(j) {
			continue
		}
		switch a := a.(type) {
		case valueLener:
			s += int64(a.ValueLen(j)) + 4
		default:
			s += validationSize(c.dst)
		}
	}
	return s
}

// write writes rows [start, end) in blocks of typedBlock rows (pages
// break where the row path breaks them), each block's columns taken from
// the batches it spans.
func (ar *arrowColumns) write(ctx context.Context, pw *parquetio.Writer, start, end int) error {
	cols := make([]parquetio.Column, len(ar.cols))
	return writeBlocks(ctx, pw, start, end, cols, func(a, b int) error {
		for ci, c := range ar.cols {
			c.fill(ar, a, b)
			cols[ci] = c.buf
		}
		return nil
	})
}

// fill sets c.buf to rows [a, b): the arrays' own value slices when the
// block lies in one batch, else copies.
func (c *arrowCol) fill(ar *arrowColumns, a, b int) {
	m := b - a
	c.buf = parquetio.Column{Int64: c.own.Int64[:0], Int32: c.own.Int32[:0], Float32: c.own.Float32[:0],
		Float64: c.own.Float64[:0], Bool: c.own.Bool[:0], String: c.own.String[:0], Bytes: c.own.Bytes[:0]}
	if c.in < 0 {
		c.fillNull(m)
		c.own = c.buf
		c.own.Null = nil
		return
	}
	k0, j0 := ar.at(a)
	// single: the block lies in one batch, and the fixed-width values are
	// views of its arrays (not kept in c.own, which must never alias them).
	single := j0+m <= int(ar.recs[k0].NumRows())
	hasNull := false
	for i := a; i < b; {
		k, j := ar.at(i)
		n := min(b-i, int(ar.recs[k].NumRows())-j)
		if ar.recs[k].Column(c.in).NullN() > 0 {
			hasNull = true
		}
		i += n
	}
	if hasNull {
		c.null = grow(c.null, m)
		clear(c.null)
		c.buf.Null = c.null
	}
	for i := a; i < b; {
		k, j := ar.at(i)
		n := min(b-i, int(ar.recs[k].NumRows())-j)
		arr := ar.recs[k].Column(c.in)
		if hasNull && arr.NullN() > 0 {
			off := i - a
			for x := range n {
				c.null[off+x] = arr.IsNull(j + x)
			}
		}
		c.appendValues(arr, j, n, single)
		i += n
	}
	if !single || c.dst == schema.Short || c.dst == schema.Byte {
		c.own.Int64, c.own.Int32, c.own.Float32, c.own.Float64 = c.buf.Int64, c.buf.Int32, c.buf.Float32, c.buf.Float64
	}
	c.own.Bool, c.own.String, c.own.Bytes = c.buf.Bool, c.buf.String, c.buf.Bytes
}

// fillNull sets c.buf to m nulls, with a value slice of the column's type
// (WriteColumns wants one).
func (c *arrowCol) fillNull(m int) {
	c.null = grow(c.null, m)
	for i := range c.null {
		c.null[i] = true
	}
	c.buf.Null = c.null
	switch c.dst {
	case schema.Long, schema.Timestamp, schema.TimestampNTZ:
		c.buf.Int64 = grow(c.buf.Int64, m)
	case schema.Integer, schema.Short, schema.Byte, schema.Date:
		c.buf.Int32 = grow(c.buf.Int32, m)
	case schema.Float:
		c.buf.Float32 = grow(c.buf.Float32, m)
	case schema.Double:
		c.buf.Float64 = grow(c.buf.Float64, m)
	case schema.Boolean:
		c.buf.Bool = grow(c.buf.Bool, m)
	case schema.String:
		c.buf.String = grow(c.buf.String, m)
	case schema.Binary:
		c.buf.Bytes = grow(c.buf.Bytes, m)
	}
}

// appendValues appends rows [j, j+n) of arr to c.buf, or (single) sets
// c.buf's slice to a view of arr's fixed-width values.
func (c *arrowCol) appendValues(arr arrow.Array, j, n int, single bool) {
	switch arr := arr.(type) {
	case *array.Int64:
		c.buf.Int64 = viewOrAppend(c.buf.Int64, arr.Int64Values()[j:j+n], single)
	case *array.Timestamp:
		v := arr.TimestampValues()[j : j+n]
		c.buf.Int64 = viewOrAppend(c.buf.Int64, unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(v))), len(v)), single)
	case *array.Int32:
		c.buf.Int32 = viewOrAppend(c.buf.Int32, arr.Int32Values()[j:j+n], single)
	case *array.Date32:
		v := arr.Date32Values()[j : j+n]
		c.buf.Int32 = viewOrAppend(c.buf.Int32, unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(v))), len(v)), single)
	case *array.Int16:
		for _, v := range arr.Int16Values()[j : j+n] {
			c.buf.Int32 = append(c.buf.Int32, int32(v))
		}
	case *array.Int8:
		for _, v := range arr.Int8Values()[j : j+n] {
			c.buf.Int32 = append(c.buf.Int32, int32(v))
		}
	case *array.Float32:
		c.buf.Float32 = viewOrAppend(c.buf.Float32, arr.Float32Values()[j:j+n], single)
	case *array.Float64:
		c.buf.Float64 = viewOrAppend(c.buf.Float64, arr.Float64Values()[j:j+n], single)
	case *array.Boolean:
		for x := range n {
			c.buf.Bool = append(c.buf.Bool, arr.Value(j+x))
		}
	case *array.String:
		for x := range n {
			c.buf.String = append(c.buf.String, arr.Value(j+x))
		}
	case *array.Binary:
		for x := range n {
			c.buf.Bytes = append(c.buf.Bytes, arr.Value(j+x)) // a nil value is an empty binary for WriteColumns
		}
	}
}

// viewOrAppend returns vals itself when single (a view of the Arrow
// buffer), else buf with vals appended.
func viewOrAppend[E any](buf, vals []E, single bool) []E {
	if single {
		return vals
	}
	return append(buf, vals...)
}
