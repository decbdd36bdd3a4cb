package parquetio

import (
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
)

// fastKind selects the typed column loop of a top-level primitive field
// (see shredColumn); fastNone fields are shredded value by value.
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

// fastKindOf returns the typed loop for a top-level field of type t.
// Decimals, structs, arrays and maps take the generic path.
func fastKindOf(t schema.Type) fastKind {
	p, ok := t.(*schema.PrimitiveType)
	if !ok {
		return fastNone
	}
	switch p.Name {
	case schema.Long:
		return fastLong
	case schema.Timestamp:
		return fastTimestamp
	case schema.TimestampNTZ:
		return fastTimestampNTZ
	case schema.Integer:
		return fastInteger
	case schema.Short:
		return fastShort
	case schema.Byte:
		return fastByte
	case schema.Date:
		return fastDate
	case schema.Float:
		return fastFloat
	case schema.Double:
		return fastDouble
	case schema.Boolean:
		return fastBool
	case schema.String:
		return fastString
	case schema.Binary:
		return fastBinary
	}
	return fastNone
}

// shredBatch appends the values of rows to cols (one slice per leaf column)
// field by field: top-level primitive fields go through a typed loop per
// column, the others through shred row by row. It returns the approximate
// size of the values in bytes, or the first invalid row (in row order, then
// field order, as shredding row by row would find it) and its error.
func (p *writePlan) shredBatch(rows []Row, cols [][]parquet.Value) (size int64, bad int, err error) {
	limit := len(rows) // rows at or after limit are not shredded: an earlier row failed
	for i, row := range rows {
		if len(row) != len(p.fields) {
			limit = i
			err = fmt.Errorf("%w: row has %d values, schema has %d fields", ErrInvalidValue, len(row), len(p.fields))
			break
		}
	}
	for j, f := range p.fields {
		var s int64
		var ferr error
		fbad := limit
		if f.fast != fastNone {
			s, fbad, ferr = f.shredColumn(rows[:limit], j, cols)
		} else {
			for i, row := range rows[:limit] {
				n, e := f.shred(row[j], 0, 0, cols)
				if e != nil {
					fbad, ferr = i, e
					break
				}
				s += n
			}
		}
		if ferr != nil {
			// fbad < limit: this field fails in an earlier row than any
			// field before it. Later fields need only look at the rows
			// before it.
			limit, err = fbad, ferr
		}
		size += s
	}
	if err != nil {
		return 0, limit, err
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

// shredColumn writes field j of rows, a top-level primitive field, to its
// column: the values with their levels, as shred would, and the field's
// stats. It returns the values' approximate size, or the first invalid row
// and its error.
func (n *wnode) shredColumn(rows []Row, j int, cols [][]parquet.Value) (size int64, bad int, err error) {
	c := n.col
	vals := cols[c]
	if cap(vals) < len(rows) {
		vals = make([]parquet.Value, len(rows), max(len(rows), writeBatch))
	}
	vals = vals[:len(rows)]
	cols[c] = vals
	null := parquet.Value{}.Level(0, 0, c)
	def := n.def
	st := n.stat
	var nulls int64
	// setNull records a null in row i, or returns false for a non-nullable
	// field.
	setNull := func(i int) bool {
		if !n.nullable {
			return false
		}
		nulls++
		vals[i] = null
		return true
	}

	switch n.fast {
	case fastLong, fastTimestamp, fastTimestampNTZ:
		var lo, hi, cnt int64
		for i, row := range rows {
			v := row[j]
			var x int64
			ok := false
			switch n.fast {
			case fastLong:
				x, ok = v.(int64)
			case fastTimestamp, fastTimestampNTZ:
				if t, isTime := v.(time.Time); isTime {
					x, ok = fastMicros(t, n.fast == fastTimestampNTZ)
				}
			}
			if !ok {
				if v == nil {
					if !setNull(i) {
						return 0, i, n.nullErr()
					}
					continue
				}
				pv, _, e := n.enc(v, nil)
				if e != nil {
					return 0, i, n.fieldErr(e)
				}
				x = pv.Int64()
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
		size = 8 * cnt
		if st != nil {
			st.mergeInt(lo, hi, cnt)
		}

	case fastInteger, fastShort, fastByte, fastDate:
		var lo, hi, cnt int64
		for i, row := range rows {
			v := row[j]
			var x int32
			ok := false
			switch n.fast {
			case fastInteger:
				x, ok = v.(int32)
			case fastShort:
				var y int16
				y, ok = v.(int16)
				x = int32(y)
			case fastByte:
				var y int8
				y, ok = v.(int8)
				x = int32(y)
			case fastDate:
				var y Date
				y, ok = v.(Date)
				x = int32(y)
			}
			if !ok {
				if v == nil {
					if !setNull(i) {
						return 0, i, n.nullErr()
					}
					continue
				}
				pv, _, e := n.enc(v, nil)
				if e != nil {
					return 0, i, n.fieldErr(e)
				}
				x = pv.Int32()
			}
			if cnt == 0 {
				lo, hi = int64(x), int64(x)
			} else if int64(x) < lo {
				lo = int64(x)
			} else if int64(x) > hi {
				hi = int64(x)
			}
			cnt++
			pv := parquet.Int32Value(x)
			pv.SetDefinitionLevel(def)
			pv.SetColumnIndex(c)
			vals[i] = pv
		}
		size = 4 * cnt
		if st != nil {
			st.mergeInt(lo, hi, cnt)
		}

	case fastFloat, fastDouble:
		var cnt int64
		for i, row := range rows {
			v := row[j]
			if v == nil {
				if !setNull(i) {
					return 0, i, n.nullErr()
				}
				continue
			}
			pv, _, e := n.enc(v, st)
			if e != nil {
				return 0, i, n.fieldErr(e)
			}
			cnt++
			pv.SetDefinitionLevel(def)
			pv.SetColumnIndex(c)
			vals[i] = pv
		}
		if n.fast == fastFloat {
			size = 4 * cnt
		} else {
			size = 8 * cnt
		}

	case fastBool:
		var cnt int64
		for i, row := range rows {
			v := row[j]
			x, ok := v.(bool)
			if !ok {
				if v == nil {
					if !setNull(i) {
						return 0, i, n.nullErr()
					}
					continue
				}
				return 0, i, n.fieldErr(invalid(v, "boolean"))
			}
			cnt++
			pv := parquet.BooleanValue(x)
			pv.SetDefinitionLevel(def)
			pv.SetColumnIndex(c)
			vals[i] = pv
		}
		size = cnt

	case fastString, fastBinary:
		var lo, hi string
		var cnt int64
		track := st != nil && n.fast == fastString
		for i, row := range rows {
			v := row[j]
			var b []byte
			switch v := v.(type) {
			case string:
				b = stringBytes(v)
			case []byte:
				b = v
				if b == nil && n.fast == fastBinary {
					b = []byte{}
				}
			case nil:
				if !setNull(i) {
					return 0, i, n.nullErr()
				}
				continue
			default:
				want := "string"
				if n.fast == fastBinary {
					want = "binary"
				}
				return 0, i, n.fieldErr(invalid(v, want))
			}
			if track {
				s := unsafe.String(unsafe.SliceData(b), len(b))
				if cnt == 0 {
					lo, hi = s, s
				} else if s < lo {
					lo = s
				} else if s > hi {
					hi = s
				}
			}
			cnt++
			size += int64(len(b)) + 4
			pv := parquet.ByteArrayValue(b)
			pv.SetDefinitionLevel(def)
			pv.SetColumnIndex(c)
			vals[i] = pv
		}
		if track {
			st.mergeString(lo, hi, cnt)
		}

	default:
		panic("parquetio: shredColumn of a non-primitive field")
	}
	if st != nil {
		st.nulls += nulls
	}
	return size + nulls, 0, nil
}

// mergeInt records cnt integers whose min is lo and max is hi.
func (c *colStats) mergeInt(lo, hi, cnt int64) {
	if cnt == 0 {
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
