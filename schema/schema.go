// Package schema holds the Delta table schema: the types of the spec section
// "Schema Serialization Format", parsed from and written to a metaData
// action's schemaString (Spark's StructType JSON).
//
// It sits below txlog, parquetio and table so that all three share one typed
// schema without importing each other.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/internal/jsonerr"
)

// ErrInvalidSchema is wrapped by every error that Parse returns.
var ErrInvalidSchema = errors.New("invalid Delta schema")

// Type is a Delta data type: *PrimitiveType, *DecimalType, *StructType,
// *ArrayType or *MapType.
type Type interface {
	// String returns the type as Spark names it in DDL ("long",
	// "decimal(10,2)", "array<string>", "struct<a:int>").
	String() string
	isType()
}

// Primitive type names as the spec spells them.
const (
	String       = "string"
	Long         = "long"
	Integer      = "integer"
	Short        = "short"
	Byte         = "byte"
	Float        = "float"
	Double       = "double"
	Boolean      = "boolean"
	Binary       = "binary"
	Date         = "date"
	Timestamp    = "timestamp"
	TimestampNTZ = "timestamp_ntz"
	Variant      = "variant"
	// Void is the type of a column that is always null and never stored in
	// data files (spec "Void Type"): readers produce nulls for it, writers
	// leave it out of data files.
	Void = "void"
)

var primitiveNames = map[string]bool{
	String: true, Long: true, Integer: true, Short: true, Byte: true, Float: true,
	Double: true, Boolean: true, Binary: true, Date: true, Timestamp: true,
	TimestampNTZ: true, Variant: true, Void: true,
}

// PrimitiveType is one of the named primitive types (String, Long, ...);
// decimals are DecimalType.
type PrimitiveType struct {
	Name string
}

func (t *PrimitiveType) String() string { return t.Name }
func (*PrimitiveType) isType()          {}

// DecimalType is decimal(Precision, Scale), 1 <= Precision <= 38.
type DecimalType struct {
	Precision int
	Scale     int
}

func (t *DecimalType) String() string { return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale) }
func (*DecimalType) isType()          {}

// ArrayType is an array of ElementType.
type ArrayType struct {
	ElementType  Type
	ContainsNull bool
}

func (t *ArrayType) String() string { return "array<" + t.ElementType.String() + ">" }
func (*ArrayType) isType()          {}

// MapType maps KeyType to ValueType. Keys are never null.
type MapType struct {
	KeyType           Type
	ValueType         Type
	ValueContainsNull bool
}

func (t *MapType) String() string {
	return "map<" + t.KeyType.String() + "," + t.ValueType.String() + ">"
}
func (*MapType) isType() {}

// StructField is one named field of a struct. Metadata holds the field's
// metadata map verbatim (column mapping ids and physical names, comments,
// generation expressions, ...): values are JSON values.
type StructField struct {
	Name     string
	Type     Type
	Nullable bool
	Metadata map[string]any
}

// StructType is an ordered list of fields. A table schema is a *StructType.
type StructType struct {
	Fields []*StructField
}

func (t *StructType) String() string {
	parts := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		parts[i] = f.Name + ":" + f.Type.String()
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}
func (*StructType) isType() {}

// Field returns the field with exactly this name, or nil.
func (t *StructType) Field(name string) *StructField {
	for _, f := range t.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// FieldIndex returns the index of the field with this name, or -1.
func (t *StructType) FieldIndex(name string) int {
	for i, f := range t.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// Column mapping metadata keys (spec "Column Mapping").
const (
	MetaColumnMappingID   = "delta.columnMapping.id"
	MetaColumnMappingName = "delta.columnMapping.physicalName"
)

// PhysicalName returns the field's name in data files under the given column
// mapping mode ("none", "name" or "id"): the physicalName metadata in name and
// id mode when present, else the logical name.
func (f *StructField) PhysicalName(mode string) string {
	if mode == "name" || mode == "id" {
		if s, ok := f.Metadata[MetaColumnMappingName].(string); ok && s != "" {
			return s
		}
	}
	return f.Name
}

// FieldID returns the column mapping id from the field's metadata, and
// whether it has one.
func (f *StructField) FieldID() (int64, bool) {
	switch v := f.Metadata[MetaColumnMappingID].(type) {
	case float64:
		return int64(v), true
	case int64:
		return v, true
	case int:
		return int64(v), true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	}
	return 0, false
}

// WalkFields calls fn for every struct field of t at any depth (inside
// structs, array elements, map keys and values), a field before the fields
// nested in its type.
func WalkFields(t Type, fn func(*StructField)) {
	switch t := t.(type) {
	case *StructType:
		for _, f := range t.Fields {
			fn(f)
			WalkFields(f.Type, fn)
		}
	case *ArrayType:
		WalkFields(t.ElementType, fn)
	case *MapType:
		WalkFields(t.KeyType, fn)
		WalkFields(t.ValueType, fn)
	}
}

// Primitive returns the primitive type with this name; it panics on an
// unknown name and is meant for literals in code. Use Parse for input.
func Primitive(name string) *PrimitiveType {
	if !primitiveNames[name] {
		panic("schema: unknown primitive type " + name)
	}
	return &PrimitiveType{Name: name}
}

// NewStruct returns a struct type with these fields.
func NewStruct(fields ...*StructField) *StructType { return &StructType{Fields: fields} }

// NewField returns a field without metadata.
func NewField(name string, t Type, nullable bool) *StructField {
	return &StructField{Name: name, Type: t, Nullable: nullable}
}

// wire forms, spec "Schema Serialization Format".
type jsonField struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable bool            `json:"nullable"`
	Metadata map[string]any  `json:"metadata"`
}

type jsonComplex struct {
	Type              string          `json:"type"`
	Fields            []jsonField     `json:"fields,omitempty"`
	ElementType       json.RawMessage `json:"elementType,omitempty"`
	ContainsNull      *bool           `json:"containsNull,omitempty"`
	KeyType           json.RawMessage `json:"keyType,omitempty"`
	ValueType         json.RawMessage `json:"valueType,omitempty"`
	ValueContainsNull *bool           `json:"valueContainsNull,omitempty"`
}

var decimalRE = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$`)

// Parse parses a schemaString into the table's struct type. Errors wrap
// ErrInvalidSchema and name the offending field path.
func Parse(schemaString string) (*StructType, error) {
	t, err := parseType([]byte(schemaString), "")
	if err != nil {
		return nil, err
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("%w: top-level type is %s, want struct", ErrInvalidSchema, t)
	}
	return st, nil
}

// ParseType parses one type in its JSON form ("long", {"type":"array",...}).
func ParseType(raw []byte) (Type, error) { return parseType(raw, "") }

func parseType(raw []byte, path string) (Type, error) {
	raw = []byte(strings.TrimSpace(string(raw)))
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: missing type at %q", ErrInvalidSchema, path)
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fmt.Errorf("%w: at %q: %v", ErrInvalidSchema, path, jsonerr.Describe(err))
		}
		return parseTypeName(name, path)
	}
	var c jsonComplex
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%w: at %q: %v", ErrInvalidSchema, path, jsonerr.Describe(err))
	}
	switch c.Type {
	case "struct":
		st := &StructType{Fields: make([]*StructField, 0, len(c.Fields))}
		seen := make(map[string]bool, len(c.Fields))
		for _, jf := range c.Fields {
			fp := jf.Name
			if path != "" {
				fp = path + "." + jf.Name
			}
			if seen[jf.Name] {
				return nil, fmt.Errorf("%w: duplicate field %q", ErrInvalidSchema, fp)
			}
			seen[jf.Name] = true
			ft, err := parseType(jf.Type, fp)
			if err != nil {
				return nil, err
			}
			st.Fields = append(st.Fields, &StructField{Name: jf.Name, Type: ft, Nullable: jf.Nullable, Metadata: jf.Metadata})
		}
		return st, nil
	case "array":
		et, err := parseType(c.ElementType, path+".element")
		if err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: et, ContainsNull: c.ContainsNull == nil || *c.ContainsNull}, nil
	case "map":
		kt, err := parseType(c.KeyType, path+".key")
		if err != nil {
			return nil, err
		}
		vt, err := parseType(c.ValueType, path+".value")
		if err != nil {
			return nil, err
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: c.ValueContainsNull == nil || *c.ValueContainsNull}, nil
	default:
		return nil, fmt.Errorf("%w: unknown complex type %q at %q", ErrInvalidSchema, c.Type, path)
	}
}

func parseTypeName(name, path string) (Type, error) {
	if primitiveNames[name] {
		return &PrimitiveType{Name: name}, nil
	}
	if name == "decimal" {
		return &DecimalType{Precision: 10, Scale: 0}, nil
	}
	if m := decimalRE.FindStringSubmatch(name); m != nil {
		p, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[2])
		if p < 1 || p > 38 || s > p {
			return nil, fmt.Errorf("%w: %s at %q: precision must be 1..38 and scale <= precision", ErrInvalidSchema, name, path)
		}
		return &DecimalType{Precision: p, Scale: s}, nil
	}
	return nil, fmt.Errorf("%w: unknown type %q at %q", ErrInvalidSchema, name, path)
}

// MarshalJSON writes the struct in the spec's schema serialization format.
func (t *StructType) MarshalJSON() ([]byte, error) { return json.Marshal(toJSON(t)) }

// Marshal returns the schemaString for this schema.
func Marshal(t *StructType) (string, error) {
	b, err := json.Marshal(toJSON(t))
	return string(b), err
}

func toJSON(t Type) any {
	switch t := t.(type) {
	case *PrimitiveType:
		return t.Name
	case *DecimalType:
		return t.String()
	case *ArrayType:
		return map[string]any{"type": "array", "elementType": toJSON(t.ElementType), "containsNull": t.ContainsNull}
	case *MapType:
		return map[string]any{"type": "map", "keyType": toJSON(t.KeyType), "valueType": toJSON(t.ValueType), "valueContainsNull": t.ValueContainsNull}
	case *StructType:
		fields := make([]map[string]any, len(t.Fields))
		for i, f := range t.Fields {
			md := f.Metadata
			if md == nil {
				md = map[string]any{}
			}
			fields[i] = map[string]any{"name": f.Name, "type": toJSON(f.Type), "nullable": f.Nullable, "metadata": md}
		}
		return map[string]any{"type": "struct", "fields": fields}
	}
	return nil
}
