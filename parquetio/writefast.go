package parquetio

import (
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// fastKind is the Column slice of a top-level primitive field (see
// fillColumn and writeColumn); fastNone fields are shredded value by value.
type fastKind uint8

const (
	fastNone fastKind = iota
	fastLong
	fastTimestamp
	fastTimestampNTZ
	fastInteger
	fastShort
	fastByte
	fastDate
	fastFloat
	fastDouble
	fastBool
	fastString
	fastBinary
)

// fastKinds maps the primitive type names to their column kinds.
var fastKinds = map[string]fastKind{
	schema.Long: fastLong, schema.Timestamp: fastTimestamp, schema.TimestampNTZ: fastTimestampNTZ,
	schema.Integer: fastInteger, schema.Short: fastShort, schema.Byte: fastByte, schema.Date: fastDate,
	schema.Float: fastFloat, schema.Double: fastDouble, schema.Boolean: fastBool,
	schema.String: fastString, schema.Binary: fastBinary,
}

// fastKindOf returns the column kind of a top-level field of type t.
// Decimals, structs, arrays and maps are shredded value by value.
func fastKindOf(t schema.Type) fastKind {
	if p, ok := t.(*schema.PrimitiveType); ok {
		return fastKinds[p.Name]
	}
	return fastNone
}

// shredBatch shreds rows into cols (one slice of values per leaf column):
// each top-level primitive field is filled into its Column (rowCols[j])
// and then written by writeColumn, as WriteColumns writes a Column; the
// other fields are shredded row by row. Nothing reaches cols before the
// whole batch is validated. It returns the approximate size of the values
// in bytes, or the first invalid row (in row order, then field order, as
// shredding row by row would find it) and its error.
func (p *writePlan) shredBatch(rows []value.Row, rowCols []Column, cols [][]parquet.Value, batchBytes []int64) (size int64, bad int, err error) {
	limit := len(rows) // rows at or after limit are not shredded: an earlier row failed
	for i, row := range rows {
		if len(row) != len(p.fields) {
			limit = i
			err = fmt.Errorf("%w: row has %d values, schema has %d fields", ErrInvalidValue, len(row), len(p.fields))
			break
		}
	}
	for j, f := range p.fields {
		fbad, ferr := limit, error(nil)
		if f.fast != fastNone && !p.rowShred {
			fbad, ferr = f.fillColumn(rows[:limit], j, &rowCols[j])
		} else {
			for i, row := range rows[:limit] {
				n, e := f.shred(row[j], 0, 0, cols)
				if e != nil {
					fbad, ferr = i, e
					break
				}
				size += n
			}
		}
		if ferr != nil {
			// fbad < limit: this field fails in an earlier row than any
			// field before it. Later fields need only look at the rows
			// before it.
			limit, err = fbad, ferr
		}
	}
	if err != nil {
		return 0, limit, err
	}
	for j, f := range p.fields {
		if f.fast != fastNone && !p.rowShred {
			s, bad, err := f.writeColumn(&rowCols[j], 0, len(rows), cols, batchBytes)
			if err != nil {
				return 0, bad, err
			}
			size += s
		}
	}
	return size, 0, nil
}

// fieldErr wraps an encoder error as shred does.
func (n *wnode) fieldErr(err error) error { return fmt.Errorf("field %s: %w", n.path, err) }

// nullErr is shred's error for a null in a non-nullable field.
func (n *wnode) nullErr() error {
	return fmt.Errorf("%w: null in non-nullable field %s", ErrInvalidValue, n.path)
}

// safeUnixSeconds bounds the instants whose year is surely within
// ±maxTimestampYear in any location, so that the encoders' year check can
// be skipped.
const safeUnixSeconds = 9_000_000_000_000 // about year 287,000

// fastMicros returns t's microseconds for a timestamp (ntz false) or a
// timestamp_ntz in UTC, and false when the generic encoder must decide
// (a far year, or an ntz value in another location).
func fastMicros(t time.Time, ntz bool) (int64, bool) {
	if ntz && t.Location() != time.UTC {
		return 0, false
	}
	if s := t.Unix(); s > safeUnixSeconds || s < -safeUnixSeconds {
		return 0, false
	}
	return t.UnixMicro(), true
}

// fillColumn sets col to field j of rows, a top-level primitive field,
// validated and converted as the field's encoder converts them (the
// column's slices are reused). It returns the first invalid row and its
// error.
func (n *wnode) fillColumn(rows []value.Row, j int, col *Column) (int, error) {
	*col = Column{Int64: col.Int64[:0], Int32: col.Int32[:0], Float32: col.Float32[:0], Float64: col.Float64[:0],
		Bool: col.Bool[:0], String: col.String[:0], Null: col.Null[:0], checked: true}
	m := len(rows)
	switch n.fast {
	case fastLong, fastTimestamp, fastTimestampNTZ:
		col.Int64 = growSlice(col.Int64, m)
		return n.fillInt64(col, rows, j)
	case fastInteger, fastShort, fastByte, fastDate:
		col.Int32 = growSlice(col.Int32, m)
		return n.fillInt32(col, rows, j)
	case fastFloat:
		col.Float32 = growSlice(col.Float32, m)
		return fillValues(n, col, rows, j, col.Float32, n.float32Of)
	case fastDouble:
		col.Float64 = growSlice(col.Float64, m)
		return fillValues(n, col, rows, j, col.Float64, n.float64Of)
	case fastBool:
		col.Bool = growSlice(col.Bool, m)
		return fillValues(n, col, rows, j, col.Bool, n.boolOf)
	case fastString, fastBinary:
		col.String = growSlice(col.String, m)
		return n.fillString(col, rows, j)
	}
	return 0, fmt.Errorf("%w: field %s cannot be written as a column", ErrInvalidValue, n.path)
}

// The hot kinds have loops of their own that convert the usual Go type
// inline (an indirect call per value costs a third of Write's time) and
// call slowValue for the rest.

func (n *wnode) fillInt64(col *Column, rows []value.Row, j int) (int, error) {
	out := col.Int64[:len(rows)]
	long, ntz := n.fast == fastLong, n.fast == fastTimestampNTZ
	for i, row := range rows {
		v := row[j]
		if long {
			if x, ok := v.(int64); ok {
				out[i] = x
				continue
			}
		} else if t, ok := v.(time.Time); ok {
			if us, ok := fastMicros(t, ntz); ok {
				out[i] = us
				continue
			}
		}
		pv, err := n.slowValue(col, len(rows), i, v)
		if err != nil {
			return i, err
		}
		out[i] = pv.Int64()
	}
	return 0, nil
}

func (n *wnode) fillInt32(col *Column, rows []value.Row, j int) (int, error) {
	out := col.Int32[:len(rows)]
	for i, row := range rows {
		v := row[j]
		switch x := v.(type) {
		case int32:
			if n.fast == fastInteger {
				out[i] = x
				continue
			}
		case value.Date:
			if n.fast == fastDate {
				out[i] = int32(x)
				continue
			}
		}
		pv, err := n.slowValue(col, len(rows), i, v)
		if err != nil {
			return i, err
		}
		out[i] = pv.Int32()
	}
	return 0, nil
}

// fillString takes strings, and []byte viewed as strings (not copied; a
// nil []byte is an empty value).
func (n *wnode) fillString(col *Column, rows []value.Row, j int) (int, error) {
	out := col.String[:len(rows)]
	for i, row := range rows {
		switch x := row[j].(type) {
		case string:
			out[i] = x
		case []byte:
			out[i] = unsafe.String(unsafe.SliceData(x), len(x))
		case nil:
			if err := n.markNull(col, len(rows), i); err != nil {
				return i, err
			}
			out[i] = ""
		default:
			want := "string"
			if n.fast == fastBinary {
				want = "binary"
			}
			return i, n.fieldErr(invalid(x, want))
		}
	}
	return 0, nil
}

// slowValue converts v, of row i of m, with the field's encoder; a nil v
// is marked null (and yields a null Value).
func (n *wnode) slowValue(col *Column, m, i int, v any) (parquet.Value, error) {
	if v == nil {
		return parquet.Value{}, n.markNull(col, m, i)
	}
	pv, _, err := n.enc(v, nil)
	if err != nil {
		return pv, n.fieldErr(err)
	}
	return pv, nil
}

// markNull marks row i of m null in col, or returns the error of a null
// in a non-nullable field.
func (n *wnode) markNull(col *Column, m, i int) error {
	if !n.nullable {
		return n.nullErr()
	}
	if len(col.Null) == 0 {
		col.Null = growSlice(col.Null, m)
		clear(col.Null)
	}
	col.Null[i] = true
	return nil
}

// fillValues sets out[i] to conv of field j of row i, marking the nulls in
// col.Null; it returns the first row conv or a null in a non-nullable
// field refuses, and its error.
func fillValues[E any](n *wnode, col *Column, rows []value.Row, j int, out []E, conv func(any) (E, error)) (int, error) {
	out = out[:len(rows)]
	for i, row := range rows {
		v := row[j]
		if v == nil {
			if err := n.markNull(col, len(rows), i); err != nil {
				return i, err
			}
			continue
		}
		x, err := conv(v)
		if err != nil {
			return i, n.fieldErr(err)
		}
		out[i] = x
	}
	return 0, nil
}

func (n *wnode) float32Of(v any) (float32, error) {
	pv, _, err := n.enc(v, nil)
	return pv.Float(), err
}

func (n *wnode) float64Of(v any) (float64, error) {
	pv, _, err := n.enc(v, nil)
	return pv.Double(), err
}

func (n *wnode) boolOf(v any) (bool, error) {
	x, ok := v.(bool)
	if !ok {
		return false, invalid(v, "boolean")
	}
	return x, nil
}

// growSlice returns s with length n, reusing its array.
func growSlice[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n, max(n, writeBatch))
	}
	return s[:n]
}

// mergeInt records cnt integers whose min is lo and max is hi (nothing
// when c is nil).
func (c *colStats) mergeInt(lo, hi, cnt int64) {
	if c == nil || cnt == 0 {
		return
	}
	if c.count == 0 || lo < c.minI {
		c.minI = lo
	}
	if c.count == 0 || hi > c.maxI {
		c.maxI = hi
	}
	c.count += cnt
}

// mergeString records cnt strings whose min is lo and max is hi; they may
// alias the caller's bytes, so kept values are cloned.
func (c *colStats) mergeString(lo, hi string, cnt int64) {
	if cnt == 0 {
		return
	}
	if c.count == 0 || lo < c.minS {
		c.minS = strings.Clone(lo)
	}
	if c.count == 0 || hi > c.maxS {
		c.maxS = strings.Clone(hi)
	}
	c.count += cnt
}
