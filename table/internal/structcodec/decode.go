package structcodec

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// decFn stores parquetio value x into dst (settable). x is never nil: the
// callers (Decoder.Decode, the pointer, slice and map decoders) handle
// nulls, so that no converter repeats the check.
type decFn func(x any, dst reflect.Value) error

// RowDecoder returns a function converting Rows aligned with sch (a read
// schema, e.g. a table schema or a projection of it) into values of the Go
// struct type T (or *T, then a new struct per row). Every exported field of
// T must have a column in sch (matched by name as for writes, exact then
// case-insensitive) of a type it can hold; columns without a field are
// ignored. A null read into a non-pointer field leaves its zero value.
//
// It is called once per scan, and the returned function per row; the
// function is safe for concurrent use. Errors wrap ErrSchemaMismatch and
// name the field.
func RowDecoder[T any](sch *schema.StructType) (func(value.Row) (T, error), error) {
	rt := reflect.TypeFor[T]()
	ptr := rt.Kind() == reflect.Pointer
	p, err := PlanOf(rt)
	if err != nil {
		return nil, err
	}
	d, err := BindDecoder(p, sch, "")
	if err != nil {
		return nil, err
	}
	return func(row value.Row) (T, error) {
		var out T
		var dst reflect.Value
		if ptr {
			np := reflect.New(p.rt)
			reflect.ValueOf(&out).Elem().Set(np)
			dst = np.Elem()
		} else {
			dst = reflect.ValueOf(&out).Elem()
		}
		if err := d.Decode(row, dst); err != nil {
			var zero T
			return zero, err
		}
		return out, nil
	}, nil
}

// Decoder fills a struct from a Row aligned with a source struct type. It
// is immutable and safe for concurrent use.
type Decoder struct {
	width int
	src   []int   // per Go field: column index
	index [][]int // per Go field
	decs  []decFn
	names []string
}

// BindDecoder binds plan p to the source struct type src (nested at column
// path path; "" for a table schema). Every Go field needs a column of a
// type it can hold. Errors wrap ErrSchemaMismatch and name the field.
func BindDecoder(p *Plan, src *schema.StructType, path string) (*Decoder, error) {
	d := &Decoder{width: len(src.Fields)}
	for _, f := range p.fields {
		ci := FieldByName(src, f.Name)
		if ci < 0 {
			return nil, fmt.Errorf("table: %w: field %s: no column %q in the schema %s", ErrSchemaMismatch, f.GoName, joinPath(path, f.Name), src)
		}
		cpath := joinPath(path, src.Fields[ci].Name)
		dec, err := bindDecoder(f.Node, src.Fields[ci].Type, cpath, f.GoName)
		if err != nil {
			return nil, err
		}
		d.src = append(d.src, ci)
		d.index = append(d.index, f.Index)
		d.decs = append(d.decs, dec)
		d.names = append(d.names, cpath)
	}
	return d, nil
}

// Decode stores row into struct value dst (settable). A null leaves the
// field's zero value. Errors name the column.
func (d *Decoder) Decode(row value.Row, dst reflect.Value) error {
	if len(row) != d.width {
		return fmt.Errorf("table: %w: row has %d values, schema has %d columns", ErrSchemaMismatch, len(row), d.width)
	}
	for i, dec := range d.decs {
		fv := dst.Field(d.index[i][0])
		for _, j := range d.index[i][1:] {
			fv = fv.Field(j)
		}
		x := row[d.src[i]]
		if x == nil {
			fv.SetZero()
			continue
		}
		if err := dec(x, fv); err != nil {
			return fmt.Errorf("column %q: %w", d.names[i], err)
		}
	}
	return nil
}

func badValue(x any, dst reflect.Value) error {
	return fmt.Errorf("table: %w: value %v of Go type %T cannot be stored in %s", ErrSchemaMismatch, x, x, dst.Type())
}

// bindDecoder returns the converter of values of Delta type t into node n
// (the decoder binder of n's kind, kinds.go).
func bindDecoder(n *Node, t schema.Type, col, goName string) (decFn, error) {
	dec, err := kinds[n.Kind].decoder(n, t, col, goName)
	if err == nil && dec == nil {
		err = fmt.Errorf("table: %w: column %q of type %s cannot be read into field %s of Go type %s",
			ErrSchemaMismatch, col, t, goName, n.Type)
	}
	return dec, err
}

func decodePtr(n *Node, t schema.Type, col, goName string) (decFn, error) {
	inner, err := bindDecoder(n.Elem, t, col, goName)
	if err != nil {
		return nil, err
	}
	et := n.Elem.Type
	return func(x any, dst reflect.Value) error {
		p := reflect.New(et)
		if err := inner(x, p.Elem()); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}, nil
}

func isInteger(t schema.Type) bool {
	switch primName(t) {
	case schema.Long, schema.Integer, schema.Short, schema.Byte:
		return true
	}
	return false
}

// scalarDecoder is the decoder binder of a scalar kind: it binds the
// columns whose type match accepts, and their values are stored by set,
// which reports false for a value of a Go type it cannot store (a
// badValue error then).
func scalarDecoder(match func(schema.Type) bool, set func(x any, dst reflect.Value) bool) func(*Node, schema.Type, string, string) (decFn, error) {
	return func(_ *Node, t schema.Type, _, _ string) (decFn, error) {
		if !match(t) {
			return nil, nil
		}
		return func(x any, dst reflect.Value) error {
			if !set(x, dst) {
				return badValue(x, dst)
			}
			return nil
		}, nil
	}
}

// primIs matches the primitive types named names.
func primIs(names ...string) func(schema.Type) bool {
	return func(t schema.Type) bool { return slices.Contains(names, primName(t)) }
}

func decodeInt(_ *Node, t schema.Type, _, _ string) (decFn, error) {
	if !isInteger(t) {
		return nil, nil
	}
	return func(x any, dst reflect.Value) error {
		// The read model holds int64 for long columns and int32, int16
		// and int8 for the narrower ones; value.ToInt64 is a type switch
		// (a reflect.Value fallback measured twice as slow: 27 vs 14 ns a
		// value on the shared 2-core machine).
		n, ok := value.ToInt64(x)
		if !ok {
			return badValue(x, dst)
		}
		if dst.OverflowInt(n) {
			return fmt.Errorf("table: %w: %d overflows %s", ErrSchemaMismatch, n, dst.Type())
		}
		dst.SetInt(n)
		return nil
	}, nil
}

var decodeFloat = scalarDecoder(primIs(schema.Float, schema.Double), func(x any, dst reflect.Value) bool {
	switch f := x.(type) {
	case float64:
		dst.SetFloat(f)
	case float32:
		dst.SetFloat(float64(f))
	default:
		return false
	}
	return true
})

var decodeBool = scalarDecoder(primIs(schema.Boolean), func(x any, dst reflect.Value) bool {
	b, ok := x.(bool)
	if ok {
		dst.SetBool(b)
	}
	return ok
})

// decodeString reads a string, binary or decimal (as its text) column.
var decodeString = scalarDecoder(func(t schema.Type) bool { return isText(t) || isDecimal(t) }, func(x any, dst reflect.Value) bool {
	switch s := x.(type) {
	case string:
		dst.SetString(s)
	case []byte:
		dst.SetString(string(s))
	case value.Decimal:
		dst.SetString(s.String())
	default:
		return false
	}
	return true
})

var decodeBytes = scalarDecoder(isText, func(x any, dst reflect.Value) bool {
	switch b := x.(type) {
	case []byte:
		dst.SetBytes(slices.Clone(b))
	case string:
		dst.SetBytes([]byte(b))
	default:
		return false
	}
	return true
})

// decodeTime reads a timestamp or date column into a time.Time.
var decodeTime = scalarDecoder(primIs(schema.Timestamp, schema.TimestampNTZ, schema.Date), func(x any, dst reflect.Value) bool {
	switch v := x.(type) {
	case time.Time:
		dst.Set(reflect.ValueOf(v))
	case value.Date:
		dst.Set(reflect.ValueOf(v.Time()))
	default:
		return false
	}
	return true
})

var decodeMicros = scalarDecoder(isTimestamp, func(x any, dst reflect.Value) bool {
	v, ok := x.(time.Time)
	if ok {
		dst.SetInt(v.UnixMicro())
	}
	return ok
})

// decodeDate reads a date column into an integer field (days since the
// epoch).
var decodeDate = scalarDecoder(primIs(schema.Date), func(x any, dst reflect.Value) bool {
	if t, ok := x.(time.Time); ok {
		dst.SetInt(int64(value.DateOf(t)))
		return true
	}
	d, ok := x.(value.Date)
	if ok {
		dst.SetInt(int64(d))
	}
	return ok
})

var decodeDecimal = scalarDecoder(isDecimal, func(x any, dst reflect.Value) bool {
	v, ok := x.(value.Decimal)
	if ok {
		dst.Set(reflect.ValueOf(v))
	}
	return ok
})

func decodeStruct(n *Node, t schema.Type, col, _ string) (decFn, error) {
	sd, ok, err := bindStruct(n, t, col, BindDecoder)
	if !ok || err != nil {
		return nil, err
	}
	return func(x any, dst reflect.Value) error {
		row, ok := x.(value.Row)
		if !ok {
			return badValue(x, dst)
		}
		return sd.Decode(row, dst)
	}, nil
}

func decodeSlice(n *Node, t schema.Type, col, goName string) (decFn, error) {
	ed, ok, err := bindElement(n, t, col, goName, bindDecoder)
	if !ok || err != nil {
		return nil, err
	}
	return func(x any, dst reflect.Value) error {
		list, ok := x.([]any)
		if !ok {
			return badValue(x, dst)
		}
		s := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, e := range list {
			if e == nil {
				continue // a new slice holds zero values
			}
			if err := ed(e, s.Index(i)); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		dst.Set(s)
		return nil
	}, nil
}

func decodeMap(n *Node, t schema.Type, col, goName string) (decFn, error) {
	kd, vd, ok, err := bindEntry(n, t, col, goName, bindDecoder)
	if !ok || err != nil {
		return nil, err
	}
	kt, vt := n.Key.Type, n.Elem.Type
	return func(x any, dst reflect.Value) error {
		entries, ok := x.([]value.MapEntry)
		if !ok {
			return badValue(x, dst)
		}
		m := reflect.MakeMapWithSize(dst.Type(), len(entries))
		for _, e := range entries {
			k := reflect.New(kt).Elem()
			if err := decodeNullable(kd, e.Key, k); err != nil {
				return fmt.Errorf("key: %w", err)
			}
			v := reflect.New(vt).Elem()
			if err := decodeNullable(vd, e.Value, v); err != nil {
				return fmt.Errorf("value of key %v: %w", k, err)
			}
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
		return nil
	}, nil
}

// decodeNullable is dec for a fresh zero value dst: a null leaves it.
func decodeNullable(dec decFn, x any, dst reflect.Value) error {
	if x == nil {
		return nil
	}
	return dec(x, dst)
}
