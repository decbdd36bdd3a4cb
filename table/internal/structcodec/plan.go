package structcodec

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// plans caches planEntry per reflect.Type. Entries are immutable once
// stored: plans per Go type are computed once; binding a plan to a table
// schema happens once per call, never per row.
var plans sync.Map // reflect.Type → planEntry

type planEntry struct {
	plan *Plan
	err  error
}

// Plan is the plan of one Go struct type: its columns in field order.
type Plan struct {
	rt     reflect.Type
	fields []*Field
}

// Type returns the struct type (never a pointer).
func (p *Plan) Type() reflect.Type { return p.rt }

// Fields returns the columns of the struct, in field order. The slice and
// its elements must not be changed.
func (p *Plan) Fields() []*Field { return p.fields }

// Field is one column of a struct plan.
type Field struct {
	GoName  string // the Go field path from the struct type, for errors ("Flight.Base.ID")
	Name    string // the column name
	Index   []int  // reflect field index path (promoted fields have several)
	NotNull bool   // tagged notnull
	Node    *Node  // the field's Go type
}

// Kind is the shape of a Go type in a plan.
type Kind uint8

// The kinds of Node.
const (
	Int     Kind = iota + 1 // any signed integer kind
	Float                   // float32, float64
	Bool                    // bool
	String                  // string kinds
	Bytes                   // []byte
	Time                    // time.Time
	Date                    // value.Date
	Decimal                 // value.Decimal
	Struct                  // a struct: Node.Struct
	Slice                   // a slice: Node.Elem
	Map                     // a map: Node.Key, Node.Elem
	Ptr                     // a pointer: Node.Elem
	Micros                  // int64 or int holding microseconds since the epoch, tagged timestamp or timestamp_ntz
	numKinds
)

// Node is the shape of one Go type and the Delta type it declares.
type Node struct {
	Kind   Kind
	Type   reflect.Type
	Delta  schema.Type // the declared Delta type
	Elem   *Node       // Ptr: pointee; Slice: element; Map: value
	Key    *Node       // Map
	Struct *Plan       // Struct
}

// canBeNull reports whether a Go value of this node can be nil.
func (n *Node) canBeNull() bool {
	return n.Kind == Ptr || n.Kind == Slice || n.Kind == Map || n.Kind == Bytes
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	dateType    = reflect.TypeFor[value.Date]()
	decimalType = reflect.TypeFor[value.Decimal]()
)

// PlanOf returns the cached plan of struct type rt (or *struct). Errors
// wrap ErrInvalidArgument and name the field of an unsupported Go type or a
// bad tag.
func PlanOf(rt reflect.Type) (*Plan, error) {
	if rt == nil {
		return nil, fmt.Errorf("table: %w: nil type", ErrInvalidArgument)
	}
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if e, ok := plans.Load(rt); ok {
		return e.(planEntry).plan, e.(planEntry).err
	}
	if rt.Kind() != reflect.Struct || rt == timeType || rt == decimalType {
		return nil, fmt.Errorf("table: %w: typed rows need a struct type, got %s", ErrInvalidArgument, rt)
	}
	b := &planBuilder{inProgress: map[reflect.Type]bool{}}
	p, err := b.structPlan(rt, rt.Name())
	e, _ := plans.LoadOrStore(rt, planEntry{plan: p, err: err})
	return e.(planEntry).plan, e.(planEntry).err
}

type planBuilder struct {
	inProgress map[reflect.Type]bool
}

func (b *planBuilder) structPlan(rt reflect.Type, path string) (*Plan, error) {
	if b.inProgress[rt] {
		return nil, fmt.Errorf("table: %w: field %s: recursive struct type %s is not supported", ErrInvalidArgument, path, rt)
	}
	b.inProgress[rt] = true
	defer delete(b.inProgress, rt)
	p := &Plan{rt: rt}
	if err := b.addFields(p, rt, nil, path); err != nil {
		return nil, err
	}
	seen := map[string]string{}
	for _, f := range p.fields {
		k := strings.ToLower(f.Name)
		if other, ok := seen[k]; ok {
			return nil, fmt.Errorf("table: %w: fields %s and %s of %s both map to column %q", ErrInvalidArgument, other, f.GoName, rt, f.Name)
		}
		seen[k] = f.GoName
	}
	return p, nil
}

func (b *planBuilder) addFields(p *Plan, rt reflect.Type, index []int, path string) error {
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
			promoted, err := b.addEmbedded(p, sf, idx, fpath)
			if err != nil {
				return err
			}
			if promoted {
				continue
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
		p.fields = append(p.fields, &Field{GoName: fpath, Name: name, Index: idx, NotNull: opts.notNull, Node: node})
	}
	return nil
}

// addEmbedded promotes the fields of an embedded struct without a tag name,
// as encoding/json does, and reports whether it did; other embedded types
// are fields of their own.
func (b *planBuilder) addEmbedded(p *Plan, sf reflect.StructField, idx []int, fpath string) (bool, error) {
	switch {
	case sf.Type.Kind() == reflect.Struct && sf.Type != timeType && sf.Type != decimalType:
		if b.inProgress[sf.Type] {
			return false, fmt.Errorf("table: %w: field %s: recursive struct type %s is not supported", ErrInvalidArgument, fpath, sf.Type)
		}
		b.inProgress[sf.Type] = true
		defer delete(b.inProgress, sf.Type)
		return true, b.addFields(p, sf.Type, idx, fpath)
	case sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.Struct:
		return false, fmt.Errorf("table: %w: field %s: embedded pointer %s needs a delta tag name (it becomes a nested struct column)", ErrInvalidArgument, fpath, sf.Type)
	}
	return false, nil
}

// tagOptions are the parsed options of a delta tag.
type tagOptions struct {
	name    string
	skip    bool
	notNull bool
	leaf    schema.Type // timestamp/timestamp_ntz/date/decimal override
}

// splitTag splits a delta tag at commas outside parentheses.
func splitTag(tag string) []string {
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
	return append(parts, tag[start:])
}

// parseTag parses a delta tag: the column name, then options.
func parseTag(tag string) (tagOptions, error) {
	parts := splitTag(tag)
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

// leafUsed reports whether a type override reached a time.Time or Decimal.
func leafUsed(n *Node) bool {
	switch n.Kind {
	case Time, Decimal, Micros:
		return true
	case Ptr, Slice:
		return leafUsed(n.Elem)
	case Map:
		return leafUsed(n.Elem) || leafUsed(n.Key)
	}
	return false
}

// primitiveKinds are the Go kinds that map to one Delta primitive type
// whatever the tag says (int64 and int are in node: they may be Micros).
var primitiveKinds = map[reflect.Kind]struct {
	kind  Kind
	delta string
}{
	reflect.Int32:   {Int, schema.Integer},
	reflect.Int16:   {Int, schema.Short},
	reflect.Int8:    {Int, schema.Byte},
	reflect.Float32: {Float, schema.Float},
	reflect.Float64: {Float, schema.Double},
	reflect.Bool:    {Bool, schema.Boolean},
	reflect.String:  {String, schema.String},
}

// node builds the plan of Go type rt; leaf overrides the Delta type of a
// time.Time or Decimal at the leaves.
func (b *planBuilder) node(rt reflect.Type, leaf schema.Type, path string) (*Node, error) {
	unsupported := func(why string) (*Node, error) {
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
		return &Node{Kind: Time, Type: rt, Delta: t}, nil
	case dateType:
		return &Node{Kind: Date, Type: rt, Delta: schema.Primitive(schema.Date)}, nil
	case decimalType:
		dt, ok := leaf.(*schema.DecimalType)
		if !ok {
			return unsupported(" without a decimal(p,s) tag option")
		}
		return &Node{Kind: Decimal, Type: rt, Delta: dt}, nil
	}
	if pk, ok := primitiveKinds[rt.Kind()]; ok {
		return &Node{Kind: pk.kind, Type: rt, Delta: schema.Primitive(pk.delta)}, nil
	}
	switch rt.Kind() {
	case reflect.Int64, reflect.Int:
		if n := primName(leaf); n == schema.Timestamp || n == schema.TimestampNTZ {
			return &Node{Kind: Micros, Type: rt, Delta: leaf}, nil
		}
		return &Node{Kind: Int, Type: rt, Delta: schema.Primitive(schema.Long)}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return unsupported(" (Delta has no unsigned integers; use a signed type)")
	case reflect.Slice:
		return b.sliceNode(rt, leaf, path)
	case reflect.Map:
		return b.mapNode(rt, leaf, path, unsupported)
	case reflect.Pointer:
		if rt.Elem().Kind() == reflect.Pointer {
			return unsupported(" (pointer to pointer)")
		}
		e, err := b.node(rt.Elem(), leaf, path)
		if err != nil {
			return nil, err
		}
		return &Node{Kind: Ptr, Type: rt, Elem: e, Delta: e.Delta}, nil
	case reflect.Struct:
		st, err := b.structPlan(rt, path)
		if err != nil {
			return nil, err
		}
		return &Node{Kind: Struct, Type: rt, Struct: st, Delta: st.Schema()}, nil
	}
	return unsupported("")
}

func (b *planBuilder) sliceNode(rt reflect.Type, leaf schema.Type, path string) (*Node, error) {
	if rt.Elem().Kind() == reflect.Uint8 {
		return &Node{Kind: Bytes, Type: rt, Delta: schema.Primitive(schema.Binary)}, nil
	}
	e, err := b.node(rt.Elem(), leaf, path+"[]")
	if err != nil {
		return nil, err
	}
	return &Node{Kind: Slice, Type: rt, Elem: e,
		Delta: &schema.ArrayType{ElementType: e.Delta, ContainsNull: e.canBeNull()}}, nil
}

func (b *planBuilder) mapNode(rt reflect.Type, leaf schema.Type, path string, unsupported func(string) (*Node, error)) (*Node, error) {
	k, err := b.node(rt.Key(), nil, path+"[key]")
	if err != nil {
		return nil, err
	}
	if k.Kind == Ptr || k.Kind == Struct {
		return unsupported(" (map keys must be primitive)")
	}
	v, err := b.node(rt.Elem(), leaf, path+"[value]")
	if err != nil {
		return nil, err
	}
	return &Node{Kind: Map, Type: rt, Key: k, Elem: v,
		Delta: &schema.MapType{KeyType: k.Delta, ValueType: v.Delta, ValueContainsNull: v.canBeNull()}}, nil
}

// Schema returns the declared Delta struct of the plan (table.SchemaOf): a
// field is nullable unless tagged notnull.
func (p *Plan) Schema() *schema.StructType { return p.schema(false) }

// DataSchema returns the Delta struct the Go data can hold, for schema
// merging: a field is nullable only when its Go value can be nil and it is
// not tagged notnull, and so are nested elements and values.
func (p *Plan) DataSchema() *schema.StructType { return p.schema(true) }

func (p *Plan) schema(mayBeNull bool) *schema.StructType {
	st := &schema.StructType{Fields: make([]*schema.StructField, len(p.fields))}
	for i, f := range p.fields {
		nullable := !f.NotNull
		t := f.Node.Delta
		if mayBeNull {
			nullable = nullable && f.Node.canBeNull()
			t = f.Node.dataType()
		}
		st.Fields[i] = schema.NewField(f.Name, t, nullable)
	}
	return st
}

// dataType is the Delta type with nested nullability as the Go data can
// hold it.
func (n *Node) dataType() schema.Type {
	switch n.Kind {
	case Ptr:
		return n.Elem.dataType()
	case Struct:
		return n.Struct.schema(true)
	case Slice:
		return &schema.ArrayType{ElementType: n.Elem.dataType(), ContainsNull: n.Elem.canBeNull()}
	case Map:
		return &schema.MapType{KeyType: n.Key.dataType(), ValueType: n.Elem.dataType(), ValueContainsNull: n.Elem.canBeNull()}
	}
	return n.Delta
}

// FieldByName finds the column for a Go field in a struct type: by exact
// name first, then case-insensitively (Spark's resolution).
func FieldByName(st *schema.StructType, name string) int {
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

func primName(t schema.Type) string {
	if p, ok := t.(*schema.PrimitiveType); ok {
		return p.Name
	}
	return ""
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
