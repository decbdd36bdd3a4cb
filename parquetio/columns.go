package parquetio

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
)

// Column holds the values of one top-level field for Writer.WriteColumns,
// in the slice of the field's type (the others stay nil):
//
//   - Int64: long; timestamp and timestamp_ntz as microseconds since
//     1970-01-01 00:00:00 (UTC for timestamp, the wall clock for ntz);
//   - Int32: integer, short, byte (range checked); date as days since
//     1970-01-01;
//   - Float32: float; Float64: double; Bool: boolean;
//   - String or Bytes: string and binary (a nil []byte is an empty binary,
//     not a null).
//
// Null, when not nil, marks the null rows: Null[i] true makes row i null
// and its slot in the value slice is ignored. The slices must hold at least
// as many entries as the rows written. Strings and byte slices are not
// kept after WriteColumns returns.
type Column struct {
	Int64   []int64
	Int32   []int32
	Float32 []float32
	Float64 []float64
	Bool    []bool
	String  []string
	Bytes   [][]byte
	Null    []bool
}

// CanWriteColumns reports whether Writer.WriteColumns can write rows of sch:
// every field is of a primitive type other than decimal and variant
// (long, integer, short, byte, float, double, boolean, string, binary,
// date, timestamp, timestamp_ntz).
func CanWriteColumns(sch *schema.StructType) bool {
	if sch == nil {
		return false
	}
	for _, f := range sch.Fields {
		if fastKindOf(f.Type) == fastNone {
			return false
		}
	}
	return true
}

// WriteColumns appends n rows given column by column, one Column per schema
// field in schema order (see Column for the slice each type uses). The file
// and its stats are the same as Write of the same rows in the value model
// produces: the values, pages, row groups and stats JSON do not depend on
// which of the two wrote them.
//
// The schema must satisfy CanWriteColumns. Errors wrap ErrInvalidValue: a
// missing column or value slice, a null in a non-nullable field, a short or
// byte out of range; value errors name the row (0-based, counted over all
// Write and WriteColumns calls) and the field. As with Write, the Writer is
// broken after an error.
func (w *Writer) WriteColumns(n int, cols []Column) (err error) {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("parquetio: write after close")
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("parquetio: write columns: %v\n%s", p, debug.Stack())
		}
		if err != nil {
			w.err = err
		}
	}()
	if n < 0 {
		return fmt.Errorf("%w: %d rows", ErrInvalidValue, n)
	}
	if len(cols) != len(w.plan.fields) {
		return fmt.Errorf("%w: %d columns, schema has %d fields", ErrInvalidValue, len(cols), len(w.plan.fields))
	}
	kinds := make([]fastKind, len(cols))
	for j, f := range w.plan.fields {
		kinds[j] = fastKindOf(w.sch.Fields[j].Type)
		if kinds[j] == fastNone || f.kind != asmLeaf {
			return fmt.Errorf("%w: field %s of type %s cannot be written as a column", ErrInvalidValue, f.path, w.sch.Fields[j].Type)
		}
		if err := cols[j].check(kinds[j], n); err != nil {
			return fmt.Errorf("field %s: %w", f.path, err)
		}
	}
	for start := 0; start < n; {
		end := min(n, start+writeBatch)
		var size int64
		for j, f := range w.plan.fields {
			s, bad, err := f.writeColumn(kinds[j], &cols[j], start, end, w.cols)
			if err != nil {
				return fmt.Errorf("row %d: %w", w.numRows+int64(bad-start), err)
			}
			size += s
		}
		cws := w.pw.ColumnWriters()
		for c, vals := range w.cols {
			if len(vals) == 0 {
				continue
			}
			if _, err := cws[c].WriteRowValues(vals); err != nil {
				return fmt.Errorf("parquetio: write column %d: %w", c, err)
			}
		}
		rows := int64(end - start)
		w.numRows += rows
		w.rgRows += rows
		w.rgBytes += size
		if w.rgBytes >= w.cfg.rowGroupBytes || (w.cfg.rowGroupRows > 0 && w.rgRows >= w.cfg.rowGroupRows) {
			if err := w.pw.Flush(); err != nil {
				return fmt.Errorf("parquetio: flush row group: %w", err)
			}
			w.rgRows, w.rgBytes = 0, 0
		}
		start = end
	}
	for _, vals := range w.cols {
		clear(vals) // drop references to the caller's bytes (each batch overwrites all its values)
	}
	return nil
}

// check reports a value slice of the wrong type for kind or shorter than n.
func (c *Column) check(kind fastKind, n int) error {
	if c.Null != nil && len(c.Null) < n {
		return fmt.Errorf("%w: %d null flags for %d rows", ErrInvalidValue, len(c.Null), n)
	}
	var have int
	var want string
	switch kind {
	case fastLong, fastTimestamp, fastTimestampNTZ:
		have, want = len(c.Int64), "Int64"
	case fastInteger, fastShort, fastByte, fastDate:
		have, want = len(c.Int32), "Int32"
	case fastFloat:
		have, want = len(c.Float32), "Float32"
	case fastDouble:
		have, want = len(c.Float64), "Float64"
	case fastBool:
		have, want = len(c.Bool), "Bool"
	case fastString, fastBinary:
		have, want = len(c.Bytes), "Bytes" // writeColumn reads String when it is set
		if c.String != nil {
			have, want = len(c.String), "String"
		}
	}
	if have < n && !c.allNull(n) {
		return fmt.Errorf("%w: %s holds %d values for %d rows", ErrInvalidValue, want, have, n)
	}
	return nil
}

// allNull reports whether rows [0, n) are all null.
func (c *Column) allNull(n int) bool {
	if c.Null == nil {
		return n == 0
	}
	for _, null := range c.Null[:n] {
		if !null {
			return false
		}
	}
	return true
}

// writeColumn sets cols[n.col] to the Parquet values of rows [a, b) of col,
// a column of kind, and records them in the field's stats. It returns the
// values' approximate size as shredColumn counts it, or the first invalid
// row and its error.
func (n *wnode) writeColumn(kind fastKind, col *Column, a, b int, cols [][]parquet.Value) (size int64, bad int, err error) {
	c := n.col
	vals := cols[c]
	if cap(vals) < b-a {
		vals = make([]parquet.Value, b-a, max(b-a, writeBatch))
	}
	vals = vals[:b-a]
	cols[c] = vals
	null := parquet.Value{}.Level(0, 0, c)
	def := n.def
	st := n.stat
	var nulls, cnt int64
	var nullFlags []bool
	if col.Null != nil {
		nullFlags = col.Null[a:b]
		for i, isNull := range nullFlags {
			if isNull {
				if !n.nullable {
					return 0, a + i, n.nullErr()
				}
				nulls++
				vals[i] = null
			}
		}
		if nulls == int64(b-a) {
			if st != nil {
				st.nulls += nulls
			}
			return nulls, 0, nil
		}
	}
	// Each kind's loop is a small function of its own: in one big switch
	// the loop variables live on the stack.
	switch kind {
	case fastLong, fastTimestamp, fastTimestampNTZ:
		lo, hi, k := int64Values(vals, col.Int64[a:b], nullFlags, def, c)
		if kind != fastLong && k > 0 && (lo < minTimestampMicros || hi > maxTimestampMicros) {
			// Write refuses these times too (maxTimestampYear).
			for i, x := range col.Int64[a:b] {
				if (nullFlags == nil || !nullFlags[i]) && (x < minTimestampMicros || x > maxTimestampMicros) {
					return 0, a + i, n.fieldErr(invalid(x, fmt.Sprintf("microseconds of a time in the years %d to %d", -maxTimestampYear, maxTimestampYear)))
				}
			}
		}
		cnt, size = k, 8*k
		if st != nil {
			st.mergeInt(lo, hi, cnt)
		}

	case fastInteger, fastShort, fastByte, fastDate:
		bound := int64(math.MaxInt32)
		switch kind {
		case fastShort:
			bound = math.MaxInt16
		case fastByte:
			bound = math.MaxInt8
		}
		lo, hi, k, bad := int32Values(vals, col.Int32[a:b], nullFlags, def, c, bound)
		if bad >= 0 {
			x := col.Int32[a+bad]
			return 0, a + bad, n.fieldErr(invalid(x, fmt.Sprintf("an integer in [%d, %d]", -bound-1, bound)))
		}
		cnt, size = k, 4*k
		if st != nil {
			st.mergeInt(lo, hi, cnt)
		}

	case fastFloat:
		for i, x := range col.Float32[a:b] {
			if nullFlags != nil && nullFlags[i] {
				continue
			}
			if st != nil {
				st.observeFloat(float64(x))
			}
			cnt++
			pv := parquet.FloatValue(x)
			pv.SetDefinitionLevel(def)
			pv.SetColumnIndex(c)
			vals[i] = pv
		}
		size = 4 * cnt

	case fastDouble:
		for i, x := range col.Float64[a:b] {
			if nullFlags != nil && nullFlags[i] {
				continue
			}
			if st != nil {
				st.observeFloat(x)
			}
			cnt++
			pv := parquet.DoubleValue(x)
			pv.SetDefinitionLevel(def)
			pv.SetColumnIndex(c)
			vals[i] = pv
		}
		size = 8 * cnt

	case fastBool:
		for i, x := range col.Bool[a:b] {
			if nullFlags != nil && nullFlags[i] {
				continue
			}
			cnt++
			pv := parquet.BooleanValue(x)
			pv.SetDefinitionLevel(def)
			pv.SetColumnIndex(c)
			vals[i] = pv
		}
		size = cnt

	case fastString, fastBinary:
		track := st != nil && kind == fastString
		var lo, hi string
		var have bool
		if col.String != nil {
			lo, hi, have, cnt, size = stringValues(vals, col.String[a:b], nullFlags, def, c, track)
		} else {
			lo, hi, have, cnt, size = bytesValues(vals, col.Bytes[a:b], nullFlags, def, c, track)
		}
		if track && have {
			st.mergeString(lo, hi, cnt)
		}

	default:
		return 0, a, fmt.Errorf("%w: field %s cannot be written as a column", ErrInvalidValue, n.path)
	}
	if st != nil {
		st.nulls += nulls
	}
	return size + nulls, 0, nil
}

// int64Values sets vals[i] to xs[i] (definition level def, column c) where
// null is not set and returns the min, max and count of those values.
func int64Values(vals []parquet.Value, xs []int64, null []bool, def, c int) (lo, hi, cnt int64) {
	vals = vals[:len(xs)]
	for i, x := range xs {
		if null != nil && null[i] {
			continue
		}
		if cnt == 0 {
			lo, hi = x, x
		} else if x < lo {
			lo = x
		} else if x > hi {
			hi = x
		}
		cnt++
		pv := parquet.Int64Value(x)
		pv.SetDefinitionLevel(def)
		pv.SetColumnIndex(c)
		vals[i] = pv
	}
	return lo, hi, cnt
}

// int32Values is int64Values for INT32 values within [-bound-1, bound]; it
// returns the index of the first value out of range (-1 when none).
func int32Values(vals []parquet.Value, xs []int32, null []bool, def, c int, bound int64) (lo, hi, cnt int64, bad int) {
	vals = vals[:len(xs)]
	for i, x := range xs {
		if null != nil && null[i] {
			continue
		}
		y := int64(x)
		if y > bound || y < -bound-1 {
			return 0, 0, cnt, i
		}
		if cnt == 0 {
			lo, hi = y, y
		} else if y < lo {
			lo = y
		} else if y > hi {
			hi = y
		}
		cnt++
		pv := parquet.Int32Value(x)
		pv.SetDefinitionLevel(def)
		pv.SetColumnIndex(c)
		vals[i] = pv
	}
	return lo, hi, cnt, -1
}

// stringValues sets vals[i] to the bytes of xs[i] where null is not set and
// returns, when track is set, the min and max (have reports one was seen),
// and the count and size (length + 4 each) of the values.
func stringValues(vals []parquet.Value, xs []string, null []bool, def, c int, track bool) (lo, hi string, have bool, cnt, size int64) {
	vals = vals[:len(xs)]
	var prev *byte // data of the last tracked value: repeats need no compare
	prevLen := -1
	for i, s := range xs {
		if null != nil && null[i] {
			continue
		}
		if track && (unsafe.StringData(s) != prev || len(s) != prevLen) {
			prev, prevLen = unsafe.StringData(s), len(s)
			if !have {
				lo, hi, have = s, s, true
			} else if strLess(s, lo) {
				lo = s
			} else if strLess(hi, s) {
				hi = s
			}
		}
		cnt++
		size += int64(len(s)) + 4
		pv := parquet.ByteArrayValue(stringBytes(s))
		pv.SetDefinitionLevel(def)
		pv.SetColumnIndex(c)
		vals[i] = pv
	}
	return lo, hi, have, cnt, size
}

// bytesValues is stringValues for byte slices; a nil slice is an empty
// value.
func bytesValues(vals []parquet.Value, xs [][]byte, null []bool, def, c int, track bool) (lo, hi string, have bool, cnt, size int64) {
	vals = vals[:len(xs)]
	for i, v := range xs {
		if null != nil && null[i] {
			continue
		}
		if v == nil {
			v = []byte{}
		}
		if track {
			s := unsafe.String(unsafe.SliceData(v), len(v))
			if !have {
				lo, hi, have = s, s, true
			} else if strLess(s, lo) {
				lo = s
			} else if strLess(hi, s) {
				hi = s
			}
		}
		cnt++
		size += int64(len(v)) + 4
		pv := parquet.ByteArrayValue(v)
		pv.SetDefinitionLevel(def)
		pv.SetColumnIndex(c)
		vals[i] = pv
	}
	return lo, hi, have, cnt, size
}

// strLess is a < b, deciding on the first bytes inline when they differ
// (most comparisons against a running min or max do).
func strLess(a, b string) bool {
	if len(a) > 0 && len(b) > 0 && a[0] != b[0] {
		return a[0] < b[0]
	}
	return a < b
}

// minTimestampMicros and maxTimestampMicros bound the microseconds of a
// timestamp column as Write bounds time.Time values: years within
// ±maxTimestampYear.
var (
	minTimestampMicros = time.Date(-maxTimestampYear, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxTimestampMicros = time.Date(maxTimestampYear+1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() - 1
)
