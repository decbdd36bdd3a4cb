package table

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
)

// typePlans caches *typeInfo (or the error) per reflect.Type. Entries are
// immutable once stored. Plans per Go type are computed once; binding a
// plan to a table schema happens once per call, never per row.
var typePlans sync.Map // reflect.Type → typePlanEntry

type typePlanEntry struct {
	info *typeInfo
	err  error
}

// typeInfo is the plan of one Go struct type.
type typeInfo struct {
	rt     reflect.Type
	fields []*fieldInfo
}

// fieldInfo is one column of a struct plan.
type fieldInfo struct {
	goName  string
	name    string // column name
	index   []int  // reflect field index path (promoted fields have several)
	notNull bool
	node    *typeNode
}

type nodeKind uint8

const (
	kInt nodeKind = iota + 1 // any signed integer kind
	kFloat
	kBool
	kString
	kBytes
	kTime
	kDate
	kDecimal
	kStruct
	kSlice
	kMap
	kPtr
	kMicros // int64 or int holding microseconds since the epoch, tagged timestamp or timestamp_ntz
)

// typeNode is the shape of one Go type and the Delta type it declares.
type typeNode struct {
	kind  nodeKind
	rt    reflect.Type
	delta schema.Type // declared Delta type
	elem  *typeNode   // kPtr: pointee; kSlice: element; kMap: value
	key   *typeNode   // kMap
	st    *typeInfo   // kStruct
}

// canBeNull reports whether a Go value of this node can be nil.
func (n *typeNode) canBeNull() bool {
	return n.kind == kPtr || n.kind == kSlice || n.kind == kMap || n.kind == kBytes
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	dateType    = reflect.TypeFor[parquetio.Date]()
	decimalType = reflect.TypeFor[parquetio.Decimal]()
)

// SchemaOf returns the Delta schema of the Go struct type T (or *T):
// columns in field order, nullable unless tagged notnull. Use it to create
// a table for T:
//
//	sch, err := table.SchemaOf[Flight]()
//	tbl, err := table.Create(ctx, uri, sch, table.WithPartitionColumns("date"))
//
// Errors wrap ErrInvalidArgument and name the field of an unsupported Go
// type or a bad tag.
//
// # Typed rows: Go structs and Delta rows
//
// The rules below hold for SchemaOf and for every typed call (Append,
// Overwrite, ScanAs, RowsOf, ...).
//
// A struct type maps to a Delta struct, field by field, in declaration
// order. The column name and options come from the `delta` tag:
//
//	type Flight struct {
//		Date     time.Time          `delta:"date,timestamp_ntz"`
//		Delay    int64              `delta:"delay,notnull"`
//		Price    parquetio.Decimal  `delta:"price,decimal(10,2)"`
//		Origin   *string            // column "Origin", nullable
//		Internal string             `delta:"-"` // not a column
//	}
//
// Tag name: the column name ("" keeps the Go field name; "-" skips the
// field). Tag options, comma separated:
//   - notnull: the column is NOT NULL (default: nullable). A nil pointer,
//     slice or map in such a field is an error when writing.
//   - timestamp (the default for time.Time), timestamp_ntz, date: the Delta
//     type of a time.Time field (also of the elements of a []time.Time or
//     the values of a map). timestamp and timestamp_ntz also apply to an
//     int64 or int field, which then holds microseconds since 1970-01-01
//     00:00:00 (UTC for timestamp; the wall clock for timestamp_ntz), the
//     values Delta stores.
//   - decimal(p,s): the Delta type of a parquetio.Decimal field (required
//     for them).
//
// Go types: int64 and int → long; int32 → integer; int16 → short; int8 →
// byte; float32 → float; float64 → double; bool → boolean; string →
// string; []byte → binary; time.Time → timestamp; parquetio.Date → date;
// parquetio.Decimal → decimal(p,s) from the tag; a struct → struct; a slice
// []T → array<T>; a map[K]V → map<K,V>; a pointer *T → T, nullable. Named
// types with these underlying kinds work as their kind does. Unsigned
// integers, complex numbers, channels, functions, interfaces, arrays and
// unsafe pointers are refused with an error naming the field, as are
// recursive struct types. Unexported fields are ignored; the fields of an
// embedded struct without a tag are promoted, as encoding/json does.
//
// Null: a nil pointer, slice or map is written as null. Other fields are
// never null when written. Reading a null into a non-pointer field leaves
// its zero value.
func SchemaOf[T any]() (*schema.StructType, error) {
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	return info.schema(false), nil
}

// planOf returns the cached plan of struct type rt (or *struct).
func planOf(rt reflect.Type) (*typeInfo, error) {
	if rt == nil {
		return nil, fmt.Errorf("table: %w: nil type", ErrInvalidArgument)
	}
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if e, ok := typePlans.Load(rt); ok {
		return e.(typePlanEntry).info, e.(typePlanEntry).err
	}
	if rt.Kind() != reflect.Struct || rt == timeType || rt == decimalType {
		return nil, fmt.Errorf("table: %w: typed rows need a struct type, got %s", ErrInvalidArgument, rt)
	}
	b := &planBuilder{inProgress: map[reflect.Type]bool{}}
	info, err := b.structPlan(rt, rt.Name())
	e, _ := typePlans.LoadOrStore(rt, typePlanEntry{info: info, err: err})
	return e.(typePlanEntry).info, e.(typePlanEntry).err
}

type planBuilder struct {
	inProgress map[reflect.Type]bool
}

// tagOptions are the parsed options of a delta tag.
type tagOptions struct {
	name    string
	skip    bool
	notNull bool
	leaf    schema.Type // timestamp/timestamp_ntz/date/decimal override
}

// parseTag splits a delta tag at commas outside parentheses.
func parseTag(tag string) (tagOptions, error) {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(tag); i++ {
		switch tag[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, tag[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, tag[start:])
	o := tagOptions{name: strings.TrimSpace(parts[0])}
	if o.name == "-" && len(parts) == 1 {
		o.skip = true
		return o, nil
	}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		switch strings.ToLower(p) {
		case "":
		case "notnull", "not null", "required":
			o.notNull = true
		case "nullable":
		case schema.Timestamp:
			o.leaf = schema.Primitive(schema.Timestamp)
		case schema.TimestampNTZ, "timestampntz":
			o.leaf = schema.Primitive(schema.TimestampNTZ)
		case schema.Date:
			o.leaf = schema.Primitive(schema.Date)
		default:
			t, err := schema.ParseType([]byte(strconv.Quote(strings.ReplaceAll(p, " ", ""))))
			if dt, ok := t.(*schema.DecimalType); err == nil && ok {
				o.leaf = dt
				continue
			}
			return o, fmt.Errorf("unknown delta tag option %q", p)
		}
	}
	return o, nil
}

func (b *planBuilder) structPlan(rt reflect.Type, path string) (*typeInfo, error) {
	if b.inProgress[rt] {
		return nil, fmt.Errorf("table: %w: field %s: recursive struct type %s is not supported", ErrInvalidArgument, path, rt)
	}
	b.inProgress[rt] = true
	defer delete(b.inProgress, rt)
	info := &typeInfo{rt: rt}
	if err := b.addFields(info, rt, nil, path); err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, f := range info.fields {
		k := strings.ToLower(f.name)
		if other, ok := seen[k]; ok {
			return nil, fmt.Errorf("table: %w: fields %s and %s of %s both map to column %q", ErrInvalidArgument, other, f.goName, rt, f.name)
		}
		seen[k] = f.goName
	}
	return info, nil
}

func (b *planBuilder) addFields(info *typeInfo, rt reflect.Type, index []int, path string) error {
	for i := range rt.NumField() {
		sf := rt.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, hasTag := sf.Tag.Lookup("delta")
		opts, err := parseTag(tag)
		fpath := path + "." + sf.Name
		if err != nil {
			return fmt.Errorf("table: %w: field %s: %v", ErrInvalidArgument, fpath, err)
		}
		if opts.skip {
			continue
		}
		idx := append(slices.Clone(index), i)
		if sf.Anonymous && (!hasTag || opts.name == "") {
			switch {
			case sf.Type.Kind() == reflect.Struct && sf.Type != timeType && sf.Type != decimalType:
				if b.inProgress[sf.Type] {
					return fmt.Errorf("table: %w: field %s: recursive struct type %s is not supported", ErrInvalidArgument, fpath, sf.Type)
				}
				b.inProgress[sf.Type] = true
				err := b.addFields(info, sf.Type, idx, fpath)
				delete(b.inProgress, sf.Type)
				if err != nil {
					return err
				}
				continue
			case sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct:
				return fmt.Errorf("table: %w: field %s: embedded pointer %s needs a delta tag name (it becomes a nested struct column)", ErrInvalidArgument, fpath, sf.Type)
			}
		}
		name := opts.name
		if name == "" {
			name = sf.Name
		}
		node, err := b.node(sf.Type, opts.leaf, fpath)
		if err != nil {
			return err
		}
		if opts.leaf != nil && !leafUsed(node) {
			return fmt.Errorf("table: %w: field %s: tag option %s does not apply to Go type %s", ErrInvalidArgument, fpath, opts.leaf, sf.Type)
		}
		info.fields = append(info.fields, &fieldInfo{goName: fpath, name: name, index: idx, notNull: opts.notNull, node: node})
	}
	return nil
}

// leafUsed reports whether a type override reached a time.Time or Decimal.
func leafUsed(n *typeNode) bool {
	switch n.kind {
	case kTime, kDecimal, kMicros:
		return true
	case kPtr, kSlice:
		return leafUsed(n.elem)
	case kMap:
		return leafUsed(n.elem) || leafUsed(n.key)
	}
	return false
}

// node builds the plan of Go type rt; leaf overrides the Delta type of a
// time.Time or Decimal at the leaves.
func (b *planBuilder) node(rt reflect.Type, leaf schema.Type, path string) (*typeNode, error) {
	unsupported := func(why string) (*typeNode, error) {
		return nil, fmt.Errorf("table: %w: field %s: Go type %s is not supported%s", ErrInvalidArgument, path, rt, why)
	}
	switch rt {
	case timeType:
		t := leaf
		if t == nil {
			t = schema.Primitive(schema.Timestamp)
		}
		if _, ok := t.(*schema.DecimalType); ok {
			return unsupported(" as a decimal")
		}
		return &typeNode{kind: kTime, rt: rt, delta: t}, nil
	case dateType:
		return &typeNode{kind: kDate, rt: rt, delta: schema.Primitive(schema.Date)}, nil
	case decimalType:
		dt, ok := leaf.(*schema.DecimalType)
		if !ok {
			return unsupported(" without a decimal(p,s) tag option")
		}
		return &typeNode{kind: kDecimal, rt: rt, delta: dt}, nil
	}
	switch rt.Kind() {
	case reflect.Int64, reflect.Int:
		if n := primName(leaf); n == schema.Timestamp || n == schema.TimestampNTZ {
			return &typeNode{kind: kMicros, rt: rt, delta: leaf}, nil
		}
		return &typeNode{kind: kInt, rt: rt, delta: schema.Primitive(schema.Long)}, nil
	case reflect.Int32:
		return &typeNode{kind: kInt, rt: rt, delta: schema.Primitive(schema.Integer)}, nil
	case reflect.Int16:
		return &typeNode{kind: kInt, rt: rt, delta: schema.Primitive(schema.Short)}, nil
	case reflect.Int8:
		return &typeNode{kind: kInt, rt: rt, delta: schema.Primitive(schema.Byte)}, nil
	case reflect.Float32:
		return &typeNode{kind: kFloat, rt: rt, delta: schema.Primitive(schema.Float)}, nil
	case reflect.Float64:
		return &typeNode{kind: kFloat, rt: rt, delta: schema.Primitive(schema.Double)}, nil
	case reflect.Bool:
		return &typeNode{kind: kBool, rt: rt, delta: schema.Primitive(schema.Boolean)}, nil
	case reflect.String:
		return &typeNode{kind: kString, rt: rt, delta: schema.Primitive(schema.String)}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return unsupported(" (Delta has no unsigned integers; use a signed type)")
	case reflect.Slice:
		if rt.Elem().Kind() == reflect.Uint8 {
			return &typeNode{kind: kBytes, rt: rt, delta: schema.Primitive(schema.Binary)}, nil
		}
		e, err := b.node(rt.Elem(), leaf, path+"[]")
		if err != nil {
			return nil, err
		}
		return &typeNode{kind: kSlice, rt: rt, elem: e,
			delta: &schema.ArrayType{ElementType: e.delta, ContainsNull: e.canBeNull()}}, nil
	case reflect.Map:
		k, err := b.node(rt.Key(), nil, path+"[key]")
		if err != nil {
			return nil, err
		}
		if k.kind == kPtr || k.kind == kStruct {
			return unsupported(" (map keys must be primitive)")
		}
		v, err := b.node(rt.Elem(), leaf, path+"[value]")
		if err != nil {
			return nil, err
		}
		return &typeNode{kind: kMap, rt: rt, key: k, elem: v,
			delta: &schema.MapType{KeyType: k.delta, ValueType: v.delta, ValueContainsNull: v.canBeNull()}}, nil
	case reflect.Pointer:
		if rt.Elem().Kind() == reflect.Pointer {
			return unsupported(" (pointer to pointer)")
		}
		e, err := b.node(rt.Elem(), leaf, path)
		if err != nil {
			return nil, err
		}
		return &typeNode{kind: kPtr, rt: rt, elem: e, delta: e.delta}, nil
	case reflect.Struct:
		st, err := b.structPlan(rt, path)
		if err != nil {
			return nil, err
		}
		return &typeNode{kind: kStruct, rt: rt, st: st, delta: st.schema(false)}, nil
	}
	return unsupported("")
}

// schema returns the Delta struct of the plan. With mayBeNull false a field
// is nullable unless tagged notnull (the declared schema, SchemaOf); with
// mayBeNull true a field is nullable only when its Go value can be nil and
// it is not tagged notnull (what the data can hold, for schema merging).
func (info *typeInfo) schema(mayBeNull bool) *schema.StructType {
	st := &schema.StructType{Fields: make([]*schema.StructField, len(info.fields))}
	for i, f := range info.fields {
		nullable := !f.notNull
		t := f.node.delta
		if mayBeNull {
			nullable = nullable && f.node.canBeNull()
			t = f.node.dataType()
		}
		st.Fields[i] = schema.NewField(f.name, t, nullable)
	}
	return st
}

// dataType is the Delta type with nested nullability as the Go data can
// hold it.
func (n *typeNode) dataType() schema.Type {
	switch n.kind {
	case kPtr:
		return n.elem.dataType()
	case kStruct:
		return n.st.schema(true)
	case kSlice:
		return &schema.ArrayType{ElementType: n.elem.dataType(), ContainsNull: n.elem.canBeNull()}
	case kMap:
		return &schema.MapType{KeyType: n.key.dataType(), ValueType: n.elem.dataType(), ValueContainsNull: n.elem.canBeNull()}
	}
	return n.delta
}

// fieldByName finds the column for a Go field in a struct type: by exact
// name first, then case-insensitively (Spark's resolution).
func fieldByName(st *schema.StructType, name string) int {
	if i := st.FieldIndex(name); i >= 0 {
		return i
	}
	for i, f := range st.Fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// ---- encoding: Go values → parquetio values ----

// encFn converts a Go value (of the node's type) to the parquetio value
// model for the bound Delta type; nil means null.
type encFn func(v reflect.Value) (any, error)

// structEncoder converts a struct value into a Row aligned with a target
// struct type.
type structEncoder struct {
	target *schema.StructType
	src    []int        // per target field: index into info.fields, -1 when absent
	index  [][]int      // per target field: reflect field index path
	encs   []encFn      // per target field
	paths  []string     // per target field: column path for errors
	rt     reflect.Type // the Go struct type
}

// bindStructEncoder binds plan info to the target struct type (a table
// schema or a nested struct of it). Every Go field must match a target field
// whose type it can be written as; target fields without a Go field must be
// nullable. Errors wrap ErrSchemaMismatch and name the field.
func bindStructEncoder(info *typeInfo, target *schema.StructType, path string) (*structEncoder, error) {
	e := &structEncoder{target: target, rt: info.rt,
		src: make([]int, len(target.Fields)), index: make([][]int, len(target.Fields)),
		encs: make([]encFn, len(target.Fields)), paths: make([]string, len(target.Fields))}
	for i := range e.src {
		e.src[i] = -1
	}
	for fi, f := range info.fields {
		ti := fieldByName(target, f.name)
		if ti < 0 {
			return nil, fmt.Errorf("table: %w: field %s: column %q is not in the table schema (use WithSchemaEvolution to add it)",
				ErrSchemaMismatch, f.goName, joinPath(path, f.name))
		}
		if e.src[ti] >= 0 {
			return nil, fmt.Errorf("table: %w: fields %s and %s both map to column %q", ErrSchemaMismatch,
				info.fields[e.src[ti]].goName, f.goName, joinPath(path, target.Fields[ti].Name))
		}
		tf := target.Fields[ti]
		cpath := joinPath(path, tf.Name)
		enc, err := bindEncoder(f.node, tf.Type, cpath, f.goName)
		if err != nil {
			return nil, err
		}
		e.src[ti], e.index[ti], e.encs[ti], e.paths[ti] = fi, f.index, enc, cpath
	}
	for i, tf := range target.Fields {
		if e.src[i] < 0 && !tf.Nullable {
			return nil, fmt.Errorf("table: %w: NOT NULL column %q has no field in Go type %s", ErrSchemaMismatch, joinPath(path, tf.Name), info.rt)
		}
	}
	return e, nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// encode converts struct value v into a Row (into dst when it has the right
// length).
func (e *structEncoder) encode(v reflect.Value, dst parquetio.Row) (parquetio.Row, error) {
	if len(dst) != len(e.target.Fields) {
		dst = make(parquetio.Row, len(e.target.Fields))
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

// bindEncoder returns the converter of node n's Go values to Delta type t.
func bindEncoder(n *typeNode, t schema.Type, col, goName string) (encFn, error) {
	switch n.kind {
	case kPtr:
		inner, err := bindEncoder(n.elem, t, col, goName)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value) (any, error) {
			if v.IsNil() {
				return nil, nil
			}
			return inner(v.Elem())
		}, nil
	case kInt:
		pt, ok := t.(*schema.PrimitiveType)
		if !ok {
			if _, ok := t.(*schema.DecimalType); ok {
				return func(v reflect.Value) (any, error) { return parquetio.NewDecimal(v.Int(), 0), nil }, nil
			}
			return nil, mismatch(goName, n.rt, t, col)
		}
		var lo, hi int64
		switch pt.Name {
		case schema.Long:
			return func(v reflect.Value) (any, error) { return v.Int(), nil }, nil
		case schema.Integer, schema.Short, schema.Byte:
			lo, hi = intRange(pt.Name)
		default:
			return nil, mismatch(goName, n.rt, t, col)
		}
		name := pt.Name
		return func(v reflect.Value) (any, error) {
			x := v.Int()
			if x < lo || x > hi {
				return nil, fmt.Errorf("%w: %d does not fit %s", ErrInvalidArgument, x, name)
			}
			switch name {
			case schema.Integer:
				return int32(x), nil
			case schema.Short:
				return int16(x), nil
			}
			return int8(x), nil
		}, nil
	case kFloat:
		switch primName(t) {
		case schema.Double:
			return func(v reflect.Value) (any, error) { return v.Float(), nil }, nil
		case schema.Float:
			return func(v reflect.Value) (any, error) { return float32(v.Float()), nil }, nil
		}
	case kBool:
		if primName(t) == schema.Boolean {
			return func(v reflect.Value) (any, error) { return v.Bool(), nil }, nil
		}
	case kString:
		switch primName(t) {
		case schema.String, schema.Binary:
			return func(v reflect.Value) (any, error) { return v.String(), nil }, nil
		}
		if _, ok := t.(*schema.DecimalType); ok {
			return func(v reflect.Value) (any, error) { return v.String(), nil }, nil
		}
	case kBytes:
		switch primName(t) {
		case schema.String, schema.Binary:
			return func(v reflect.Value) (any, error) {
				if v.IsNil() {
					return nil, nil
				}
				return v.Bytes(), nil
			}, nil
		}
	case kTime:
		switch primName(t) {
		case schema.Timestamp, schema.TimestampNTZ:
			return func(v reflect.Value) (any, error) { return v.Interface().(time.Time), nil }, nil
		case schema.Date:
			return func(v reflect.Value) (any, error) { return parquetio.DateOf(v.Interface().(time.Time)), nil }, nil
		}
	case kDate:
		if primName(t) == schema.Date {
			return func(v reflect.Value) (any, error) { return parquetio.Date(v.Int()), nil }, nil
		}
	case kMicros:
		switch primName(t) {
		case schema.Timestamp, schema.TimestampNTZ:
			return func(v reflect.Value) (any, error) { return time.UnixMicro(v.Int()).UTC(), nil }, nil
		}
	case kDecimal:
		if _, ok := t.(*schema.DecimalType); ok {
			return func(v reflect.Value) (any, error) { return v.Interface().(parquetio.Decimal), nil }, nil
		}
	case kStruct:
		st, ok := t.(*schema.StructType)
		if !ok {
			return nil, mismatch(goName, n.rt, t, col)
		}
		se, err := bindStructEncoder(n.st, st, col)
		if err != nil {
			return nil, err
		}
		return func(v reflect.Value) (any, error) { return se.encode(v, nil) }, nil
	case kSlice:
		at, ok := t.(*schema.ArrayType)
		if !ok {
			return nil, mismatch(goName, n.rt, t, col)
		}
		ee, err := bindEncoder(n.elem, at.ElementType, col+".element", goName+"[]")
		if err != nil {
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
	case kMap:
		mt, ok := t.(*schema.MapType)
		if !ok {
			return nil, mismatch(goName, n.rt, t, col)
		}
		ke, err := bindEncoder(n.key, mt.KeyType, col+".key", goName+"[key]")
		if err != nil {
			return nil, err
		}
		ve, err := bindEncoder(n.elem, mt.ValueType, col+".value", goName+"[value]")
		if err != nil {
			return nil, err
		}
		keyKind := n.key.kind
		return func(v reflect.Value) (any, error) {
			if v.IsNil() {
				return nil, nil
			}
			keys := v.MapKeys()
			sortKeys(keys, keyKind)
			out := make([]parquetio.MapEntry, len(keys))
			for i, k := range keys {
				kx, err := ke(k)
				if err != nil {
					return nil, fmt.Errorf("key %v: %w", k, err)
				}
				vx, err := ve(v.MapIndex(k))
				if err != nil {
					return nil, fmt.Errorf("value of key %v: %w", k, err)
				}
				out[i] = parquetio.MapEntry{Key: kx, Value: vx}
			}
			return out, nil
		}, nil
	}
	return nil, mismatch(goName, n.rt, t, col)
}

// sortKeys orders map keys so that files are deterministic.
func sortKeys(keys []reflect.Value, kind nodeKind) {
	switch kind {
	case kInt, kMicros, kDate:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Int(), b.Int()) })
	case kFloat:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return cmp.Compare(a.Float(), b.Float()) })
	case kString:
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	case kBool:
		slices.SortFunc(keys, func(a, b reflect.Value) int {
			return cmp.Compare(boolInt(a.Bool()), boolInt(b.Bool()))
		})
	case kTime:
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

func primName(t schema.Type) string {
	if p, ok := t.(*schema.PrimitiveType); ok {
		return p.Name
	}
	return ""
}

// encodeRows converts typed rows into Rows aligned with target. rows is a
// []T or []*T; a nil *T is an error. Errors name the row index and column.
func encodeRows(ctx context.Context, rv reflect.Value, enc *structEncoder) ([]parquetio.Row, error) {
	n := rv.Len()
	k := len(enc.target.Fields)
	var backing []any
	out := make([]parquetio.Row, n)
	ptr := rv.Type().Elem().Kind() == reflect.Pointer
	for i := range n {
		if j := i % cancelCheckRows; j == 0 {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			// The values of the next block of rows: allocated block by
			// block, so that a cancel is not stuck zeroing one huge array.
			backing = make([]any, min(cancelCheckRows, n-i)*k)
		}
		v := rv.Index(i)
		if ptr {
			if v.IsNil() {
				return nil, &RowError{Row: i, Err: fmt.Errorf("%w: nil *%s", ErrInvalidArgument, enc.rt)}
			}
			v = v.Elem()
		}
		j := i % cancelCheckRows
		row, err := enc.encode(v, backing[j*k:(j+1)*k:(j+1)*k])
		if err != nil {
			return nil, &RowError{Row: i, Err: err}
		}
		out[i] = row
	}
	return out, nil
}

// ---- decoding: parquetio values → Go values ----

// decFn stores parquetio value x (nil for null) into dst (settable).
type decFn func(x any, dst reflect.Value) error

// rowDecoder returns a function converting Rows aligned with sch (a read
// schema, e.g. a table schema or a projection of it) into values of the Go
// struct type T (or *T, then a new struct per row). Every exported field of
// T must have a column in sch (matched by name as for writes, exact then
// case-insensitive) of a type it can hold; columns without a field are
// ignored. A null read into a non-pointer field leaves its zero value.
//
// The scan side (typed scans) calls it once per scan and then the returned
// function per row; the function is safe for concurrent use. Errors wrap
// ErrSchemaMismatch and name the field.
func rowDecoder[T any](sch *schema.StructType) (func(parquetio.Row) (T, error), error) {
	rt := reflect.TypeFor[T]()
	ptr := rt.Kind() == reflect.Pointer
	info, err := planOf(rt)
	if err != nil {
		return nil, err
	}
	sd, err := bindStructDecoder(info, sch, "")
	if err != nil {
		return nil, err
	}
	return func(row parquetio.Row) (T, error) {
		var out T
		var dst reflect.Value
		if ptr {
			p := reflect.New(info.rt)
			reflect.ValueOf(&out).Elem().Set(p)
			dst = p.Elem()
		} else {
			dst = reflect.ValueOf(&out).Elem()
		}
		if err := sd.decode(row, dst); err != nil {
			var zero T
			return zero, err
		}
		return out, nil
	}, nil
}

// structDecoder fills a struct from a Row aligned with a source struct type.
type structDecoder struct {
	width int
	src   []int   // per Go field: column index
	index [][]int // per Go field
	decs  []decFn
	names []string
}

func bindStructDecoder(info *typeInfo, src *schema.StructType, path string) (*structDecoder, error) {
	d := &structDecoder{width: len(src.Fields)}
	for _, f := range info.fields {
		ci := fieldByName(src, f.name)
		if ci < 0 {
			return nil, fmt.Errorf("table: %w: field %s: no column %q in the schema %s", ErrSchemaMismatch, f.goName, joinPath(path, f.name), src)
		}
		cpath := joinPath(path, src.Fields[ci].Name)
		dec, err := bindDecoder(f.node, src.Fields[ci].Type, cpath, f.goName)
		if err != nil {
			return nil, err
		}
		d.src = append(d.src, ci)
		d.index = append(d.index, f.index)
		d.decs = append(d.decs, dec)
		d.names = append(d.names, cpath)
	}
	return d, nil
}

func (d *structDecoder) decode(row parquetio.Row, dst reflect.Value) error {
	if len(row) != d.width {
		return fmt.Errorf("table: %w: row has %d values, schema has %d columns", ErrSchemaMismatch, len(row), d.width)
	}
	for i, dec := range d.decs {
		fv := dst.Field(d.index[i][0])
		for _, j := range d.index[i][1:] {
			fv = fv.Field(j)
		}
		if err := dec(row[d.src[i]], fv); err != nil {
			return fmt.Errorf("column %q: %w", d.names[i], err)
		}
	}
	return nil
}

func badValue(x any, dst reflect.Value) error {
	return fmt.Errorf("table: %w: value %v of Go type %T cannot be stored in %s", ErrSchemaMismatch, x, x, dst.Type())
}

// bindDecoder returns the converter of values of Delta type t into node n.
func bindDecoder(n *typeNode, t schema.Type, col, goName string) (decFn, error) {
	incompatible := func() (decFn, error) {
		return nil, fmt.Errorf("table: %w: column %q of type %s cannot be read into field %s of Go type %s",
			ErrSchemaMismatch, col, t, goName, n.rt)
	}
	switch n.kind {
	case kPtr:
		inner, err := bindDecoder(n.elem, t, col, goName)
		if err != nil {
			return nil, err
		}
		et := n.elem.rt
		return func(x any, dst reflect.Value) error {
			if x == nil {
				dst.SetZero()
				return nil
			}
			p := reflect.New(et)
			if err := inner(x, p.Elem()); err != nil {
				return err
			}
			dst.Set(p)
			return nil
		}, nil
	case kInt:
		switch primName(t) {
		case schema.Long, schema.Integer, schema.Short, schema.Byte:
		default:
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			if x == nil {
				dst.SetZero()
				return nil
			}
			n, ok := toInt64(x)
			if !ok {
				return badValue(x, dst)
			}
			if dst.OverflowInt(n) {
				return fmt.Errorf("table: %w: %d overflows %s", ErrSchemaMismatch, n, dst.Type())
			}
			dst.SetInt(n)
			return nil
		}, nil
	case kFloat:
		switch primName(t) {
		case schema.Float, schema.Double:
		default:
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			if x == nil {
				dst.SetZero()
				return nil
			}
			f, ok := toFloat64(x)
			if !ok {
				return badValue(x, dst)
			}
			dst.SetFloat(f)
			return nil
		}, nil
	case kBool:
		if primName(t) != schema.Boolean {
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			if x == nil {
				dst.SetZero()
				return nil
			}
			b, ok := x.(bool)
			if !ok {
				return badValue(x, dst)
			}
			dst.SetBool(b)
			return nil
		}, nil
	case kString:
		if _, dec := t.(*schema.DecimalType); !dec {
			switch primName(t) {
			case schema.String, schema.Binary:
			default:
				return incompatible()
			}
		}
		return func(x any, dst reflect.Value) error {
			switch s := x.(type) {
			case nil:
				dst.SetZero()
			case string:
				dst.SetString(s)
			case []byte:
				dst.SetString(string(s))
			case parquetio.Decimal:
				dst.SetString(s.String())
			default:
				return badValue(x, dst)
			}
			return nil
		}, nil
	case kBytes:
		switch primName(t) {
		case schema.String, schema.Binary:
		default:
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			switch b := x.(type) {
			case nil:
				dst.SetZero()
			case []byte:
				dst.SetBytes(slices.Clone(b))
			case string:
				dst.SetBytes([]byte(b))
			default:
				return badValue(x, dst)
			}
			return nil
		}, nil
	case kTime:
		switch primName(t) {
		case schema.Timestamp, schema.TimestampNTZ, schema.Date:
		default:
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			switch v := x.(type) {
			case nil:
				dst.SetZero()
			case time.Time:
				dst.Set(reflect.ValueOf(v))
			case parquetio.Date:
				dst.Set(reflect.ValueOf(v.Time()))
			default:
				return badValue(x, dst)
			}
			return nil
		}, nil
	case kMicros:
		switch primName(t) {
		case schema.Timestamp, schema.TimestampNTZ:
		default:
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			switch v := x.(type) {
			case nil:
				dst.SetZero()
			case time.Time:
				dst.SetInt(v.UnixMicro())
			default:
				return badValue(x, dst)
			}
			return nil
		}, nil
	case kDate:
		if primName(t) != schema.Date {
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			switch v := x.(type) {
			case nil:
				dst.SetZero()
			case parquetio.Date:
				dst.SetInt(int64(v))
			case time.Time:
				dst.SetInt(int64(parquetio.DateOf(v)))
			default:
				return badValue(x, dst)
			}
			return nil
		}, nil
	case kDecimal:
		if _, ok := t.(*schema.DecimalType); !ok {
			return incompatible()
		}
		return func(x any, dst reflect.Value) error {
			switch v := x.(type) {
			case nil:
				dst.SetZero()
			case parquetio.Decimal:
				dst.Set(reflect.ValueOf(v))
			default:
				return badValue(x, dst)
			}
			return nil
		}, nil
	case kStruct:
		st, ok := t.(*schema.StructType)
		if !ok {
			return incompatible()
		}
		sd, err := bindStructDecoder(n.st, st, col)
		if err != nil {
			return nil, err
		}
		return func(x any, dst reflect.Value) error {
			if x == nil {
				dst.SetZero()
				return nil
			}
			row, ok := x.(parquetio.Row)
			if !ok {
				return badValue(x, dst)
			}
			return sd.decode(row, dst)
		}, nil
	case kSlice:
		at, ok := t.(*schema.ArrayType)
		if !ok {
			return incompatible()
		}
		ed, err := bindDecoder(n.elem, at.ElementType, col+".element", goName+"[]")
		if err != nil {
			return nil, err
		}
		return func(x any, dst reflect.Value) error {
			if x == nil {
				dst.SetZero()
				return nil
			}
			list, ok := x.([]any)
			if !ok {
				return badValue(x, dst)
			}
			s := reflect.MakeSlice(dst.Type(), len(list), len(list))
			for i, e := range list {
				if err := ed(e, s.Index(i)); err != nil {
					return fmt.Errorf("element %d: %w", i, err)
				}
			}
			dst.Set(s)
			return nil
		}, nil
	case kMap:
		mt, ok := t.(*schema.MapType)
		if !ok {
			return incompatible()
		}
		kd, err := bindDecoder(n.key, mt.KeyType, col+".key", goName+"[key]")
		if err != nil {
			return nil, err
		}
		vd, err := bindDecoder(n.elem, mt.ValueType, col+".value", goName+"[value]")
		if err != nil {
			return nil, err
		}
		kt, vt := n.key.rt, n.elem.rt
		return func(x any, dst reflect.Value) error {
			if x == nil {
				dst.SetZero()
				return nil
			}
			entries, ok := x.([]parquetio.MapEntry)
			if !ok {
				return badValue(x, dst)
			}
			m := reflect.MakeMapWithSize(dst.Type(), len(entries))
			for _, e := range entries {
				k := reflect.New(kt).Elem()
				if err := kd(e.Key, k); err != nil {
					return fmt.Errorf("key: %w", err)
				}
				v := reflect.New(vt).Elem()
				if err := vd(e.Value, v); err != nil {
					return fmt.Errorf("value of key %v: %w", k, err)
				}
				m.SetMapIndex(k, v)
			}
			dst.Set(m)
			return nil
		}, nil
	}
	return incompatible()
}

// ---- typed writes ----

// Append appends rows of the Go struct type T (or *T) to the table and
// returns the table at the new version. Columns are matched by name (the
// delta tag, exact then case-insensitive); table columns without a field
// are written as null and must be nullable; a field without a column is an
// error unless WithSchemaEvolution is given, which adds it. Go types are
// checked against the column types before anything is written: an integer
// field fits any integer column (range checked per value), a float field
// float or double, a time.Time timestamp, timestamp_ntz or date.
// Everything else is as AppendRows.
func Append[T any](ctx context.Context, t *Table, rows []T, opts ...WriteOption) (*Table, error) {
	return writeTyped(ctx, t, rows, modeAppend, opts)
}

// Overwrite replaces the table's rows (or, with WithReplaceWhere, the rows of
// the matching partitions) with rows of the Go struct type T, as
// OverwriteRows does for untyped rows; columns match as in Append.
func Overwrite[T any](ctx context.Context, t *Table, rows []T, opts ...WriteOption) (*Table, error) {
	return writeTyped(ctx, t, rows, modeOverwrite, opts)
}

func writeTyped[T any](ctx context.Context, t *Table, rows []T, mode writeMode, opts []WriteOption) (*Table, error) {
	return writeTypedPath(ctx, t, rows, mode, opts, true)
}

// writeTypedPath is writeTyped; columnar false always takes the row path
// (encodeRows), which tests compare the columnar path with.
func writeTypedPath[T any](ctx context.Context, t *Table, rows []T, mode writeMode, opts []WriteOption, columnar bool) (*Table, error) {
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		return nil, err
	}
	cfg := newWriteConfig(opts)
	target, changed, err := t.mergeSchema(info.schema(true), cfg.evolve)
	if err != nil {
		// Prefer the error that names the Go field.
		if _, berr := bindStructEncoder(info, t.Schema(), ""); berr != nil {
			return nil, berr
		}
		return nil, err
	}
	enc, err := bindStructEncoder(info, target, "")
	if err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(rows)
	// CHECK constraints are evaluated on rows: such tables take the row path.
	if columnar && len(t.PartitionColumns()) == 0 && !HasConstraints(t.snap.Metadata()) {
		if tr := newTypedRows(rv, info, enc); tr != nil {
			return t.writeCommit(ctx, mode, &prepared{schema: target, schemaChanged: changed, typed: tr}, cfg)
		}
	}
	prows, err := encodeRows(ctx, rv, enc)
	if err != nil {
		return nil, opError(ctx, mode.op(), t.URI(), fmt.Errorf("table: %w", err))
	}
	return t.writeCommit(ctx, mode, &prepared{schema: target, schemaChanged: changed, rows: prows}, cfg)
}
