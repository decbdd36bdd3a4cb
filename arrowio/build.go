package arrowio

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// RecordBuilder builds Arrow record batches from rows of the value model
// (package value). It is not safe for concurrent use.
type RecordBuilder struct {
	sch    *schema.StructType
	asch   *arrow.Schema
	b      *array.RecordBuilder
	append []appendFunc
	rows   int
}

type appendFunc func(v any) error

// NewRecordBuilder returns a builder for rows of sch, allocating from mem
// (memory.DefaultAllocator when nil). Its Arrow schema is Schema(sch).
func NewRecordBuilder(mem memory.Allocator, sch *schema.StructType) (*RecordBuilder, error) {
	asch, err := Schema(sch)
	if err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rb := &RecordBuilder{sch: sch, asch: asch, b: array.NewRecordBuilder(mem, asch)}
	rb.append = make([]appendFunc, len(sch.Fields))
	for i, f := range sch.Fields {
		fn, err := appender(rb.b.Field(i), f.Type, f.Nullable, f.Name)
		if err != nil {
			rb.b.Release()
			return nil, err
		}
		rb.append[i] = fn
	}
	return rb, nil
}

// Schema returns the Arrow schema of the batches.
func (rb *RecordBuilder) Schema() *arrow.Schema { return rb.asch }

// Len returns the number of rows appended since the last NewRecordBatch.
func (rb *RecordBuilder) Len() int { return rb.rows }

// Append adds one row (one value per field of the schema, nil for null).
// A value of the wrong Go type for its Delta type, or a null in a
// non-nullable field, is an error wrapping ErrInvalidValue naming the
// column; the builder must then be released (its columns may be ragged).
func (rb *RecordBuilder) Append(row value.Row) error {
	if len(row) != len(rb.append) {
		return fmt.Errorf("arrowio: %w: row has %d values for %d columns", ErrInvalidValue, len(row), len(rb.append))
	}
	for i, fn := range rb.append {
		if err := fn(row[i]); err != nil {
			return err
		}
	}
	rb.rows++
	return nil
}

// NewRecordBatch returns the rows appended so far as one record batch (the
// caller releases it) and resets the builder.
func (rb *RecordBuilder) NewRecordBatch() arrow.RecordBatch {
	rb.rows = 0
	return rb.b.NewRecordBatch()
}

// Release frees the builder's buffers.
func (rb *RecordBuilder) Release() { rb.b.Release() }

func badValue(path string, t schema.Type, v any) error {
	return fmt.Errorf("arrowio: column %s: %w: %T for %s", path, ErrInvalidValue, v, t)
}

// appender returns the function that appends a value of Delta type t to b.
func appender(b array.Builder, t schema.Type, nullable bool, path string) (appendFunc, error) {
	inner, err := valueAppender(b, t, path)
	if err != nil {
		return nil, err
	}
	return func(v any) error {
		if v == nil {
			if !nullable {
				return fmt.Errorf("arrowio: column %s: %w: null in a non-nullable field", path, ErrInvalidValue)
			}
			b.AppendNull()
			return nil
		}
		return inner(v)
	}, nil
}

// valueAppender appends non-null values. Primitive values go by the
// builder's Arrow type, which value.Codec.ArrowType chose (Schema).
func valueAppender(b array.Builder, t schema.Type, path string) (appendFunc, error) {
	switch x := t.(type) {
	case *schema.StructType:
		return structAppender(b.(*array.StructBuilder), x, path)
	case *schema.ArrayType:
		return listAppender(b.(*array.ListBuilder), x, path)
	case *schema.MapType:
		return mapAppender(b.(*array.MapBuilder), x, path)
	case *schema.DecimalType:
		return decimalAppender(b.(*array.Decimal128Builder), x, path), nil
	}
	if _, ok := b.(*array.NullBuilder); ok { // void: never a non-null value
		return func(v any) error { return badValue(path, t, v) }, nil
	}
	if fn := numberAppender(b, t, path); fn != nil {
		return fn, nil
	}
	if fn := otherAppender(b, t, path); fn != nil {
		return fn, nil
	}
	return nil, fmt.Errorf("arrowio: column %s: %w: Delta type %s", path, ErrUnsupportedType, t)
}

// numberAppender appends to the integer, float and boolean builders (nil
// for other builders). Each takes the canonical Go type only, long also int
// and int32.
func numberAppender(b array.Builder, t schema.Type, path string) appendFunc {
	if bb, ok := b.(*array.Int64Builder); ok {
		return func(v any) error {
			switch n := v.(type) {
			case int64:
				bb.Append(n)
			case int:
				bb.Append(int64(n))
			case int32:
				bb.Append(int64(n))
			default:
				return badValue(path, t, v)
			}
			return nil
		}
	}
	for _, exact := range exactAppenders {
		if fn := exact(b, t, path); fn != nil {
			return fn
		}
	}
	return nil
}

// exactAppenders are the appenders of the builders that take one Go type:
// int32, int16, int8, float32, float64 and bool.
var exactAppenders = []func(array.Builder, schema.Type, string) appendFunc{
	exactAppender[int32], exactAppender[int16], exactAppender[int8],
	exactAppender[float32], exactAppender[float64], exactAppender[bool],
}

// exactAppender appends values of Go type T to a builder whose Append takes
// a T, and refuses any other value; nil when b's Append takes no T.
func exactAppender[T any](b array.Builder, t schema.Type, path string) appendFunc {
	bb, ok := b.(interface{ Append(T) })
	if !ok {
		return nil
	}
	return func(v any) error {
		n, ok := v.(T)
		if !ok {
			return badValue(path, t, v)
		}
		bb.Append(n)
		return nil
	}
}

// otherAppender appends to the string, binary, date and timestamp builders
// (nil for other builders).
func otherAppender(b array.Builder, t schema.Type, path string) appendFunc {
	switch bb := b.(type) {
	case *array.StringBuilder:
		return bytesAppender(bb.BinaryBuilder, t, path)
	case *array.BinaryBuilder:
		return bytesAppender(bb, t, path)
	case *array.Date32Builder:
		return func(v any) error {
			switch d := v.(type) {
			case value.Date:
				bb.Append(arrow.Date32(d))
			case time.Time:
				bb.Append(arrow.Date32(value.DateOf(d)))
			default:
				return badValue(path, t, v)
			}
			return nil
		}
	case *array.TimestampBuilder:
		ntz := bb.Type().(*arrow.TimestampType).TimeZone == ""
		return func(v any) error {
			ts, ok := v.(time.Time)
			if !ok {
				return badValue(path, t, v)
			}
			if ntz {
				ts = value.WallClock(ts) // the wall clock in ts's own location, read as UTC
			}
			bb.Append(arrow.Timestamp(ts.UnixMicro()))
			return nil
		}
	}
	return nil
}

// bytesAppender appends strings and byte slices to a string or binary
// column (a StringBuilder appends through its BinaryBuilder).
func bytesAppender(bb *array.BinaryBuilder, t schema.Type, path string) appendFunc {
	return func(v any) error {
		switch s := v.(type) {
		case string:
			bb.AppendString(s)
		case []byte:
			bb.Append(s)
		default:
			return badValue(path, t, v)
		}
		return nil
	}
}

func decimalAppender(bb *array.Decimal128Builder, x *schema.DecimalType, path string) appendFunc {
	scale := int32(x.Scale)
	limit := value.Pow10(x.Precision)
	return func(v any) error {
		d, ok := v.(value.Decimal)
		if !ok {
			return badValue(path, x, v)
		}
		if d.Unscaled == nil {
			bb.Append(decimal128.Num{})
			return nil
		}
		if d.Scale != scale {
			r, ok := d.Rescale(scale)
			if !ok {
				return fmt.Errorf("arrowio: column %s: %w: %s does not fit %s", path, ErrInvalidValue, d, x)
			}
			d = r
		}
		if d.Unscaled.IsInt64() {
			n := d.Unscaled.Int64()
			if x.Precision >= 19 || n > -limit.Int64() && n < limit.Int64() {
				bb.Append(decimal128.FromI64(n))
				return nil
			}
		} else if d.Unscaled.CmpAbs(limit) < 0 {
			bb.Append(decimal128.FromBigInt(d.Unscaled))
			return nil
		}
		return fmt.Errorf("arrowio: column %s: %w: %s does not fit %s", path, ErrInvalidValue, d, x)
	}
}

func structAppender(sb *array.StructBuilder, x *schema.StructType, path string) (appendFunc, error) {
	fields := make([]appendFunc, len(x.Fields))
	for i, f := range x.Fields {
		fn, err := appender(sb.FieldBuilder(i), f.Type, f.Nullable, join(path, f.Name))
		if err != nil {
			return nil, err
		}
		fields[i] = fn
	}
	return func(v any) error {
		r, ok := v.(value.Row)
		if !ok || len(r) != len(fields) {
			return badValue(path, x, v)
		}
		sb.Append(true)
		for i, fn := range fields {
			if err := fn(r[i]); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func listAppender(lb *array.ListBuilder, x *schema.ArrayType, path string) (appendFunc, error) {
	elem, err := appender(lb.ValueBuilder(), x.ElementType, x.ContainsNull, path+".element")
	if err != nil {
		return nil, err
	}
	return func(v any) error {
		l, ok := v.([]any)
		if !ok {
			return badValue(path, x, v)
		}
		lb.Append(true)
		for _, e := range l {
			if err := elem(e); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func mapAppender(mb *array.MapBuilder, x *schema.MapType, path string) (appendFunc, error) {
	key, err := appender(mb.KeyBuilder(), x.KeyType, false, path+".key")
	if err != nil {
		return nil, err
	}
	val, err := appender(mb.ItemBuilder(), x.ValueType, x.ValueContainsNull, path+".value")
	if err != nil {
		return nil, err
	}
	return func(v any) error {
		m, ok := v.([]value.MapEntry)
		if !ok {
			return badValue(path, x, v)
		}
		mb.Append(true)
		for _, e := range m {
			if err := key(e.Key); err != nil {
				return err
			}
			if err := val(e.Value); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
