package parquetio

import (
	"fmt"
	"math"
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

	// checked marks a Column that Write filled from validated values:
	// its timestamps need no range check.
	checked bool
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
// produces: Write shreds its rows into the same Columns and both go through
// the same column writer, so the values, pages, row groups and stats JSON
// do not depend on which of the two wrote them.
//
// The schema must satisfy CanWriteColumns. Errors wrap ErrInvalidValue: a
// missing column or value slice, a null in a non-nullable field, a short or
// byte out of range; value errors name the row (0-based, counted over all
// Write and WriteColumns calls) and the field. As with Write, the Writer is
// broken after an error.
func (w *Writer) WriteColumns(n int, cols []Column) (err error) {
	if err := w.begin(); err != nil {
		return err
	}
	defer w.recoverInto(&err, "write columns")
	defer w.dropValues()
	if n < 0 {
		return fmt.Errorf("%w: %d rows", ErrInvalidValue, n)
	}
	if len(cols) != len(w.plan.fields) {
		return fmt.Errorf("%w: %d columns, schema has %d fields", ErrInvalidValue, len(cols), len(w.plan.fields))
	}
	for j, f := range w.plan.fields {
		if f.fast == fastNone {
			return fmt.Errorf("%w: field %s of type %s cannot be written as a column", ErrInvalidValue, f.path, w.sch.Fields[j].Type)
		}
		if err := cols[j].check(f.fast, n); err != nil {
			return fmt.Errorf("field %s: %w", f.path, err)
		}
	}
	if w.pw == nil {
		if err := w.open(columnSampler(n, cols)); err != nil {
			return err
		}
	}
	for start := 0; start < n; {
		end := min(n, start+writeBatch)
		var size int64
		for j, f := range w.plan.fields {
			s, bad, err := f.writeColumn(&cols[j], start, end, w.cols, w.batchBytes)
			if err != nil {
				return fmt.Errorf("row %d: %w", w.numRows+int64(bad-start), err)
			}
			size += s
		}
		if err := w.writeValues(end-start, size); err != nil {
			return err
		}
		start = end
	}
	for _, f := range w.plan.fields {
		clear(f.views) // drop references to the caller's bytes
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

// writeColumn is the column writer of every top-level primitive field,
// whether its values came from WriteColumns or from rows (Write shreds
// them into a Column first, see fillColumn): it sets cols[n.col] to the
// Parquet values of rows [a, b) of col and records them in the field's
// stats, the one place a primitive column's stats are computed; it sets
// batchBytes[n.col] to the bytes of its byte-array values (0 for other
// kinds), which writeValues counts against dictFlushBytes. It returns
// the values' approximate size (8, 4 or 1 bytes a number or boolean, length
// + 4 a string or binary, 1 a null), or the first invalid row and its
// error.
func (n *wnode) writeColumn(col *Column, a, b int, cols [][]parquet.Value, batchBytes []int64) (size int64, bad int, err error) {
	c := n.col
	vals := cols[c]
	if cap(vals) < b-a {
		vals = make([]parquet.Value, b-a, max(b-a, writeBatch))
	}
	vals = vals[:b-a]
	cols[c] = vals
	var nulls int64
	var nullFlags []bool
	if len(col.Null) > 0 {
		nullFlags = col.Null[a:b]
		null := parquet.Value{}.Level(0, 0, c)
		for i, isNull := range nullFlags {
			if isNull {
				if !n.nullable {
					return 0, a + i, n.nullErr()
				}
				nulls++
				vals[i] = null
			}
		}
	}
	if nulls < int64(b-a) {
		var i int
		size, i, err = n.columnValues(col, a, b, vals, nullFlags)
		if err != nil {
			return 0, a + i, err
		}
	}
	if n.stat != nil {
		n.stat.nulls += nulls
	}
	batchBytes[c] = 0
	if n.fast == fastString || n.fast == fastBinary {
		batchBytes[c] = size - 4*(int64(b-a)-nulls) // size is length + 4 per value
	}
	return size + nulls, 0, nil
}

// columnValues sets the non-null entries of vals to rows [a, b) of col and
// records them in the field's stats; it returns their size, or the index
// (from a) of the first invalid value and its error. Each kind's loop is a
// small function of its own: in one big switch the loop variables live on
// the stack.
func (n *wnode) columnValues(col *Column, a, b int, vals []parquet.Value, null []bool) (int64, int, error) {
	c, def, st := n.col, n.def, n.stat
	switch n.fast {
	case fastLong, fastTimestamp, fastTimestampNTZ:
		xs := col.Int64[a:b]
		lo, hi, cnt := longValues(vals, xs, null, def, c)
		if n.fast != fastLong && !col.checked && cnt > 0 && (lo < minTimestampMicros || hi > maxTimestampMicros) {
			// Write refuses these times too (maxTimestampYear).
			for i, x := range xs {
				if (null == nil || !null[i]) && (x < minTimestampMicros || x > maxTimestampMicros) {
					return 0, i, n.fieldErr(invalid(x, fmt.Sprintf("microseconds of a time in the years %d to %d", -maxTimestampYear, maxTimestampYear)))
				}
			}
		}
		st.mergeInt(lo, hi, cnt)
		return 8 * cnt, 0, nil

	case fastInteger, fastShort, fastByte, fastDate:
		bound := int64(math.MaxInt32)
		switch n.fast {
		case fastShort:
			bound = math.MaxInt16
		case fastByte:
			bound = math.MaxInt8
		}
		lo, hi, cnt, bad := intValues(vals, col.Int32[a:b], null, def, c, bound)
		if bad >= 0 {
			return 0, bad, n.fieldErr(invalid(col.Int32[a+bad], fmt.Sprintf("an integer in [%d, %d]", -bound-1, bound)))
		}
		st.mergeInt(lo, hi, cnt)
		return 4 * cnt, 0, nil

	case fastFloat:
		return 4 * floatValues(vals, col.Float32[a:b], null, def, c, st, true), 0, nil

	case fastDouble:
		return 8 * floatValues(vals, col.Float64[a:b], null, def, c, st, false), 0, nil

	case fastBool:
		return boolValues(vals, col.Bool[a:b], null, def, c), 0, nil

	case fastString, fastBinary:
		track := st != nil && n.fast == fastString
		xs := col.String
		if xs == nil {
			n.views = stringViews(n.views, col.Bytes[a:b])
			xs, a, b = n.views, 0, b-a
		}
		lo, hi, have, cnt, size := stringValues(vals, xs[a:b], null, def, c, track)
		if track && have {
			st.mergeString(lo, hi, cnt)
		}
		return size, 0, nil
	}
	return 0, 0, fmt.Errorf("%w: field %s cannot be written as a column", ErrInvalidValue, n.path)
}

// floatValues sets vals[i] to xs[i] (FLOAT when float is set, else DOUBLE)
// where null is not set, records them in st (when not nil) and returns
// their count.
func floatValues[E float32 | float64](vals []parquet.Value, xs []E, null []bool, def, c int, st *colStats, float bool) (cnt int64) {
	vals = vals[:len(xs)]
	for i, x := range xs {
		if null != nil && null[i] {
			continue
		}
		if st != nil {
			st.observeFloat(float64(x))
		}
		cnt++
		var pv parquet.Value
		if float {
			pv = parquet.FloatValue(float32(x))
		} else {
			pv = parquet.DoubleValue(float64(x))
		}
		pv.SetDefinitionLevel(def)
		pv.SetColumnIndex(c)
		vals[i] = pv
	}
	return cnt
}

// boolValues sets vals[i] to xs[i] where null is not set and returns their
// count.
func boolValues(vals []parquet.Value, xs []bool, null []bool, def, c int) (cnt int64) {
	vals = vals[:len(xs)]
	for i, x := range xs {
		if null != nil && null[i] {
			continue
		}
		cnt++
		pv := parquet.BooleanValue(x)
		pv.SetDefinitionLevel(def)
		pv.SetColumnIndex(c)
		vals[i] = pv
	}
	return cnt
}

// longValues sets vals[i] to the INT64 value xs[i] (definition level def,
// column c) where null is not set and returns the min, max and count of
// those values. It is intValues for INT64 (no range check): the long and
// timestamp columns are the hottest loop of a columnar write, and one
// generic loop choosing the physical type per value ran at half the speed.
func longValues(vals []parquet.Value, xs []int64, null []bool, def, c int) (lo, hi, cnt int64) {
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

// intValues sets vals[i] to the INT32 value xs[i] (definition level def,
// column c) where null is not set and returns the min, max and count of
// those values, and the index of the first value outside [-bound-1, bound]
// (-1 when none).
func intValues(vals []parquet.Value, xs []int32, null []bool, def, c int, bound int64) (lo, hi, cnt int64, bad int) {
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
		// Built in place: a Value built in a local and then copied costs
		// a store-forwarding stall per value (its fields are stored one by
		// one and loaded 16 bytes at a time) and, while the GC marks, a
		// bulk write barrier for the copy (3x the loop's time).
		pv := &vals[i]
		*pv = parquet.ByteArrayValue(stringBytes(s))
		pv.SetDefinitionLevel(def)
		pv.SetColumnIndex(c)
	}
	return lo, hi, have, cnt, size
}

// stringViews returns xs as strings that view their bytes (a nil slice
// is an empty string), in scratch's array.
func stringViews(scratch []string, xs [][]byte) []string {
	out := growSlice(scratch, len(xs))
	for i, v := range xs {
		out[i] = unsafe.String(unsafe.SliceData(v), len(v))
	}
	return out
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
