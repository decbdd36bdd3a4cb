package structcodec

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// encFn converts a Go value (of the node's type) to the parquetio value
// model for the bound Delta type; nil means null.
type encFn func(v reflect.Value) (any, error)

// Encoder converts struct values into Rows aligned with a target struct
// type. It is immutable and safe for concurrent use.
type Encoder struct {
	target *schema.StructType
	src    []int        // per target field: index into the plan's fields, -1 when absent
	index  [][]int      // per target field: reflect field index path
	encs   []encFn      // per target field
	paths  []string     // per target field: column path for errors
	rt     reflect.Type // the Go struct type
}

// BindEncoder binds plan p to the target struct type (a table schema, or a
// nested struct of it at column path path; "" for a table schema). Every Go
// field must match a target field (by name, exact then case-insensitive)
// whose type it can be written as; target fields without a Go field must be
// nullable. Errors wrap ErrSchemaMismatch and name the field and column.
func BindEncoder(p *Plan, target *schema.StructType, path string) (*Encoder, error) {
	e := &Encoder{target: target, rt: p.rt,
		src: make([]int, len(target.Fields)), index: make([][]int, len(target.Fields)),
		encs: make([]encFn, len(target.Fields)), paths: make([]string, len(target.Fields))}
	for i := range e.src {
		e.src[i] = -1
	}
	for fi, f := range p.fields {
		ti := FieldByName(target, f.Name)
		if ti < 0 {
			return nil, fmt.Errorf("table: %w: field %s: column %q is not in the table schema (use WithSchemaEvolution to add it)",
				ErrSchemaMismatch, f.GoName, joinPath(path, f.Name))
		}
		if e.src[ti] >= 0 {
			return nil, fmt.Errorf("table: %w: fields %s and %s both map to column %q", ErrSchemaMismatch,
				p.fields[e.src[ti]].GoName, f.GoName, joinPath(path, target.Fields[ti].Name))
		}
		tf := target.Fields[ti]
		cpath := joinPath(path, tf.Name)
		enc, err := bindEncoder(f.Node, tf.Type, cpath, f.GoName)
		if err != nil {
			return nil, err
		}
		e.src[ti], e.index[ti], e.encs[ti], e.paths[ti] = fi, f.Index, enc, cpath
	}
	for i, tf := range target.Fields {
		if e.src[i] < 0 && !tf.Nullable {
			return nil, fmt.Errorf("table: %w: NOT NULL column %q has no field in Go type %s", ErrSchemaMismatch, joinPath(path, tf.Name), p.rt)
		}
	}
	return e, nil
}

// Target returns the struct type the encoder writes.
func (e *Encoder) Target() *schema.StructType { return e.target }

// Type returns the Go struct type the encoder reads.
func (e *Encoder) Type() reflect.Type { return e.rt }

// Sources returns, per target field, the index of its field in the plan's
// Fields, or -1 when no Go field writes it (the column is null). The slice
// must not be changed.
func (e *Encoder) Sources() []int { return e.src }

// Indexes returns, per target field, the reflect field index path of its Go
// field (nil when absent). The slices must not be changed.
func (e *Encoder) Indexes() [][]int { return e.index }

// Encode converts struct value v into a Row (into dst when it has the right
// length). Errors name the column.
func (e *Encoder) Encode(v reflect.Value, dst value.Row) (value.Row, error) {
	if len(dst) != len(e.target.Fields) {
		dst = make(value.Row, len(e.target.Fields))
	}
	for i, enc := range e.encs {
		if enc == nil {
			dst[i] = nil
			continue
		}
		fv := v.Field(e.index[i][0])
		for _, j := range e.index[i][1:] {
			fv = fv.Field(j)
		}
		x, err := enc(fv)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", e.paths[i], err)
		}
		dst[i] = x
	}
	return dst, nil
}

func mismatch(goName string, rt reflect.Type, t schema.Type, col string) error {
	return fmt.Errorf("table: %w: field %s of Go type %s cannot be written to column %q of type %s",
		ErrSchemaMismatch, goName, rt, col, t)
}

// bindEncoder returns the converter of node n's Go values to Delta type t
// (the encoder binder of n's kind, kinds.go).
func bindEncoder(n *Node, t schema.Type, col, goName string) (encFn, error) {
	enc, err := kinds[n.Kind].encoder(n, t, col, goName)
	if err == nil && enc == nil {
		err = mismatch(goName, n.Type, t, col)
	}
	return enc, err
}

func encodePtr(n *Node, t schema.Type, col, goName string) (encFn, error) {
	inner, err := bindEncoder(n.Elem, t, col, goName)
	if err != nil {
		return nil, err
	}
	return func(v reflect.Value) (any, error) {
		if v.IsNil() {
			return nil, nil
		}
		return inner(v.Elem())
	}, nil
}

// encodeInt writes any Go integer to any integer column, range checked per
// value, and to a decimal as an integral value.
func encodeInt(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	if _, ok := t.(*schema.DecimalType); ok {
		return func(v reflect.Value) (any, error) { return value.NewDecimal(v.Int(), 0), nil }, nil
	}
	switch primName(t) {
	case schema.Long:
		return func(v reflect.Value) (any, error) { return v.Int(), nil }, nil
	case schema.Integer:
		return narrowInt[int32](schema.Integer), nil
	case schema.Short:
		return narrowInt[int16](schema.Short), nil
	case schema.Byte:
		return narrowInt[int8](schema.Byte), nil
	}
	return nil, nil
}

// narrowInt converts to the integer type I of a column named name, an
// error when the value does not fit.
func narrowInt[I int32 | int16 | int8](name string) encFn {
	return func(v reflect.Value) (any, error) {
		x := v.Int()
		if int64(I(x)) != x {
			return nil, fmt.Errorf("%w: %d does not fit %s", ErrInvalidArgument, x, name)
		}
		return I(x), nil
	}
}

func encodeFloat(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	switch primName(t) {
	case schema.Double:
		return func(v reflect.Value) (any, error) { return v.Float(), nil }, nil
	case schema.Float:
		return func(v reflect.Value) (any, error) { return float32(v.Float()), nil }, nil
	}
	return nil, nil
}

func encodeBool(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	if primName(t) == schema.Boolean {
		return func(v reflect.Value) (any, error) { return v.Bool(), nil }, nil
	}
	return nil, nil
}

// isText reports whether t is a string or binary column.
func isText(t schema.Type) bool {
	n := primName(t)
	return n == schema.String || n == schema.Binary
}

// isTimestamp reports whether t is a timestamp or timestamp_ntz column.
func isTimestamp(t schema.Type) bool {
	n := primName(t)
	return n == schema.Timestamp || n == schema.TimestampNTZ
}

func isDecimal(t schema.Type) bool {
	_, ok := t.(*schema.DecimalType)
	return ok
}

// encodeString writes a string to a string or binary column, and to a
// decimal as its text (parsed when the row is checked).
func encodeString(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	if isText(t) || isDecimal(t) {
		return func(v reflect.Value) (any, error) { return v.String(), nil }, nil
	}
	return nil, nil
}

func encodeBytes(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	if !isText(t) {
		return nil, nil
	}
	return func(v reflect.Value) (any, error) {
		if v.IsNil() {
			return nil, nil
		}
		return v.Bytes(), nil
	}, nil
}

func encodeTime(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	switch {
	case isTimestamp(t):
		return func(v reflect.Value) (any, error) { return v.Interface().(time.Time), nil }, nil
	case primName(t) == schema.Date:
		return func(v reflect.Value) (any, error) { return value.DateOf(v.Interface().(time.Time)), nil }, nil
	}
	return nil, nil
}

func encodeDate(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	if primName(t) == schema.Date {
		return func(v reflect.Value) (any, error) { return value.Date(v.Int()), nil }, nil
	}
	return nil, nil
}

func encodeMicros(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	if isTimestamp(t) {
		return func(v reflect.Value) (any, error) { return time.UnixMicro(v.Int()).UTC(), nil }, nil
	}
	return nil, nil
}

func encodeDecimal(_ *Node, t schema.Type, _, _ string) (encFn, error) {
	if isDecimal(t) {
		return func(v reflect.Value) (any, error) { return v.Interface().(value.Decimal), nil }, nil
	}
	return nil, nil
}

func encodeStruct(n *Node, t schema.Type, col, _ string) (encFn, error) {
	se, ok, err := bindStruct(n, t, col, BindEncoder)
	if !ok || err != nil {
		return nil, err
	}
	return func(v reflect.Value) (any, error) { return se.Encode(v, nil) }, nil
}

func encodeSlice(n *Node, t schema.Type, col, goName string) (encFn, error) {
	ee, ok, err := bindElement(n, t, col, goName, bindEncoder)
	if !ok || err != nil {
		return nil, err
	}
	return func(v reflect.Value) (any, error) {
		if v.IsNil() {
			return nil, nil
		}
		out := make([]any, v.Len())
		for i := range out {
			x, err := ee(v.Index(i))
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out[i] = x
		}
		return out, nil
	}, nil
}

func encodeMap(n *Node, t schema.Type, col, goName string) (encFn, error) {
	ke, ve, ok, err := bindEntry(n, t, col, goName, bindEncoder)
	if !ok || err != nil {
		return nil, err
	}
	keyKind := n.Key.Kind
	return func(v reflect.Value) (any, error) {
		if v.IsNil() {
			return nil, nil
		}
		keys := v.MapKeys()
		sortKeys(keys, keyKind)
		out := make([]value.MapEntry, len(keys))
		for i, k := range keys {
			kx, err := ke(k)
			if err != nil {
				return nil, fmt.Errorf("key %v: %w", k, err)
			}
			vx, err := ve(v.MapIndex(k))
			if err != nil {
				return nil, fmt.Errorf("value of key %v: %w", k, err)
			}
			out[i] = value.MapEntry{Key: kx, Value: vx}
		}
		return out, nil
	}, nil
}

// sortKeys orders map keys so that files are deterministic.
func sortKeys(keys []reflect.Value, kind Kind) {
	switch kind {
	case Int, Micros, Date:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) })
	case Float:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Float(), b.Float()) })
	case String:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	case Bool:
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return cmp.Compare(boolInt(a.Bool()), boolInt(b.Bool()))
		})
	case Time:
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return a.Interface().(time.Time).Compare(b.Interface().(time.Time))
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bindStruct binds the plan of struct node n to t with bind (BindEncoder
// or BindDecoder): encodeStruct and decodeStruct. ok is false (and nothing
// bound) when t is not a struct type.
func bindStruct[C any](n *Node, t schema.Type, col string, bind func(*Plan, *schema.StructType, string) (C, error)) (c C, ok bool, err error) {
	st, ok := t.(*schema.StructType)
	if !ok {
		return c, false, nil
	}
	c, err = bind(n.Struct, st, col)
	return c, true, err
}

// bindElement binds the element of slice node n to t with bind
// (bindEncoder or bindDecoder): encodeSlice and decodeSlice. ok is false
// (and nothing bound) when t is not an array type.
func bindElement[F any](n *Node, t schema.Type, col, goName string, bind func(*Node, schema.Type, string, string) (F, error)) (elem F, ok bool, err error) {
	at, ok := t.(*schema.ArrayType)
	if !ok {
		return elem, false, nil
	}
	elem, err = bind(n.Elem, at.ElementType, col+".element", goName+"[]")
	return elem, true, err
}

// bindEntry binds the key and the value of map node n to t with bind
// (bindEncoder or bindDecoder): encodeMap and decodeMap. ok is false (and
// nothing bound) when t is not a map type.
func bindEntry[F any](n *Node, t schema.Type, col, goName string, bind func(*Node, schema.Type, string, string) (F, error)) (key, value F, ok bool, err error) {
	mt, ok := t.(*schema.MapType)
	if !ok {
		return key, value, false, nil
	}
	if key, err = bind(n.Key, mt.KeyType, col+".key", goName+"[key]"); err == nil {
		value, err = bind(n.Elem, mt.ValueType, col+".value", goName+"[value]")
	}
	return key, value, true, err
}
