// Package arrowio maps Delta schemas and values to Apache Arrow
// (github.com/apache/arrow-go/v18) and back. It is the one place where
// deltakit decides how a Delta type looks in Arrow: table.Table.ScanArrow,
// table.Table.AppendArrow and `deltactl cat -o arrow` all go through it, as
// parquetio is the one place for Delta ↔ Parquet.
//
// # Type mapping
//
//	Delta type       Arrow type (produced)              also accepted on input
//	long             int64
//	integer          int32
//	short            int16
//	byte             int8
//	float            float32
//	double           float64
//	boolean          bool
//	string           utf8                               large_utf8, utf8_view
//	binary           binary                             large_binary, binary_view, fixed_size_binary
//	date             date32                             date64
//	timestamp        timestamp[us, tz=UTC]              timestamp of any unit with a zone (whole us)
//	timestamp_ntz    timestamp[us] (no zone)            timestamp of any unit without a zone (whole us)
//	decimal(p,s)     decimal128(p,s)
//	struct<...>      struct (same field names)
//	array<T>         list<element: T>                   large_list, list_view
//	map<K,V>         map<K,V> (entries/key/value)
//	void             null
//
// Field names are the Delta logical names (never the physical names of
// column mapping), and Arrow nullability is the Delta nullability
// (containsNull for list elements, valueContainsNull for map values; map
// keys and map entries are never null). These are the types delta-rs's
// to_pyarrow_table() gives, list elements named "element" and map entries
// "entries" as there. Delta decimals have precision at most 38, so
// decimal128 always fits; decimal256 is never produced. Timestamps are
// microseconds since the Unix epoch, as Delta stores them: a timestamp_ntz
// is the wall clock reading taken as if it were UTC. On input a timestamp
// of any unit is converted to microseconds exactly (s, ms and us always
// are); a timestamp[ns] value that is not a whole number of microseconds
// is refused (ErrInvalidValue, a *ValueError naming the column and row), as
// pyarrow refuses that lossy cast, never truncated. Variant has no mapping
// (ErrUnsupportedType).
//
// Going from Arrow to Delta (DeltaSchema), the table's inverse holds, plus
// the "accepted on input" column; unsigned integers, float16, time,
// duration, interval, union, dictionary and extension types have no Delta
// type and are refused with ErrUnsupportedType, naming the field.
//
// # Values
//
// Values are the value model (see package value): a value.Row per record,
// int64 for long, time.Time (UTC) for both timestamps, value.Date,
// value.Decimal, []any for arrays, []value.MapEntry for maps, value.Row for
// structs. The Arrow type of each primitive type is value.Codec.ArrowType. RecordBuilder
// appends such rows to Arrow builders; Rows and Value read them back out of
// record batches, so a row survives Row → Arrow → Row unchanged.
package arrowio

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// ErrUnsupportedType is wrapped when a Delta type has no Arrow mapping
// (variant) or an Arrow type has no Delta one (unsigned integers, unions,
// ...). The error names the field.
var ErrUnsupportedType = errors.New("type has no Delta/Arrow mapping")

// ErrInvalidValue is wrapped when a value does not fit the type of its
// column: a Go value of the wrong type for the Delta type, a null in a
// non-nullable field, a decimal that does not fit its precision, an Arrow
// timestamp[ns] with nanoseconds (not a whole number of microseconds). It is
// parquetio.ErrInvalidValue, so the write paths match one sentinel.
var ErrInvalidValue = parquetio.ErrInvalidValue

// Names of the nested fields Arrow requires, as delta-rs and pyarrow name
// them.
const (
	listElementName = "element"
	mapEntriesName  = "entries"
	mapKeyName      = "key"
	mapValueName    = "value"
)

// UTC is the time zone of timestamp columns.
const UTC = "UTC"

// Schema returns the Arrow schema of a Delta schema: one field per
// top-level column, in order, with the types of the package doc.
func Schema(s *schema.StructType) (*arrow.Schema, error) {
	fields, err := structFields(s, "")
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

// Field returns the Arrow field of a Delta field.
func Field(f *schema.StructField) (arrow.Field, error) {
	t, err := typeAt(f.Type, f.Name)
	if err != nil {
		return arrow.Field{}, err
	}
	return arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}, nil
}

// Type returns the Arrow type of a Delta type.
func Type(t schema.Type) (arrow.DataType, error) { return typeAt(t, "") }

func structFields(s *schema.StructType, path string) ([]arrow.Field, error) {
	fields := make([]arrow.Field, len(s.Fields))
	for i, f := range s.Fields {
		t, err := typeAt(f.Type, join(path, f.Name))
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	}
	return fields, nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func typeAt(t schema.Type, path string) (arrow.DataType, error) {
	switch x := t.(type) {
	case *schema.PrimitiveType:
		if x.Name == schema.Void {
			return arrow.Null, nil
		}
		if c := value.CodecOf(x); c != nil && c.ArrowType() != nil {
			return c.ArrowType(), nil
		}
	case *schema.DecimalType:
		if at := value.CodecOf(x).ArrowType(); at != nil {
			return at, nil
		}
		return nil, fmt.Errorf("arrowio: column %s: %w: %s", path, ErrUnsupportedType, x)
	case *schema.StructType:
		fields, err := structFields(x, path)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	case *schema.ArrayType:
		e, err := typeAt(x.ElementType, path+".element")
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: listElementName, Type: e, Nullable: x.ContainsNull}), nil
	case *schema.MapType:
		k, err := typeAt(x.KeyType, path+".key")
		if err != nil {
			return nil, err
		}
		v, err := typeAt(x.ValueType, path+".value")
		if err != nil {
			return nil, err
		}
		return arrow.MapOfFields(arrow.Field{Name: mapKeyName, Type: k},
			arrow.Field{Name: mapValueName, Type: v, Nullable: x.ValueContainsNull}), nil
	}
	return nil, fmt.Errorf("arrowio: column %s: %w: Delta type %s", path, ErrUnsupportedType, t)
}

// DeltaSchema returns the Delta schema of an Arrow schema: the inverse of
// Schema, also accepting the input-only types of the package doc. Field
// metadata is not carried over.
func DeltaSchema(s *arrow.Schema) (*schema.StructType, error) {
	return deltaStruct(s.Fields(), "")
}

// DeltaType returns the Delta type of an Arrow type (see DeltaSchema).
func DeltaType(t arrow.DataType) (schema.Type, error) { return deltaTypeAt(t, "") }

func deltaStruct(fields []arrow.Field, path string) (*schema.StructType, error) {
	out := &schema.StructType{Fields: make([]*schema.StructField, len(fields))}
	for i, f := range fields {
		t, err := deltaTypeAt(f.Type, join(path, f.Name))
		if err != nil {
			return nil, err
		}
		out.Fields[i] = schema.NewField(f.Name, t, f.Nullable)
	}
	return out, nil
}

// arrowPrimitives are the Delta primitive types of the Arrow types that
// carry no parameter that matters (timestamps and decimals are switched on
// in deltaTypeAt).
var arrowPrimitives = map[arrow.Type]string{
	arrow.INT64: schema.Long, arrow.INT32: schema.Integer, arrow.INT16: schema.Short, arrow.INT8: schema.Byte,
	arrow.FLOAT32: schema.Float, arrow.FLOAT64: schema.Double, arrow.BOOL: schema.Boolean,
	arrow.STRING: schema.String, arrow.LARGE_STRING: schema.String, arrow.STRING_VIEW: schema.String,
	arrow.BINARY: schema.Binary, arrow.LARGE_BINARY: schema.Binary, arrow.BINARY_VIEW: schema.Binary,
	arrow.FIXED_SIZE_BINARY: schema.Binary, arrow.DATE32: schema.Date, arrow.DATE64: schema.Date,
	arrow.NULL: schema.Void,
}

func deltaTypeAt(t arrow.DataType, path string) (schema.Type, error) {
	p := schema.Primitive
	if name, ok := arrowPrimitives[t.ID()]; ok {
		return p(name), nil
	}
	switch x := t.(type) {
	case *arrow.TimestampType:
		if x.TimeZone == "" {
			return p(schema.TimestampNTZ), nil
		}
		return p(schema.Timestamp), nil
	case *arrow.NullType:
		return p(schema.Void), nil
	case *arrow.Decimal128Type:
		if x.Precision > 38 {
			break
		}
		return &schema.DecimalType{Precision: int(x.Precision), Scale: int(x.Scale)}, nil
	case *arrow.StructType:
		return deltaStruct(x.Fields(), path)
	case *arrow.MapType: // before ListType: MapType embeds it
		k, err := deltaTypeAt(x.KeyType(), path+".key")
		if err != nil {
			return nil, err
		}
		v, err := deltaTypeAt(x.ItemType(), path+".value")
		if err != nil {
			return nil, err
		}
		return &schema.MapType{KeyType: k, ValueType: v, ValueContainsNull: x.ItemField().Nullable}, nil
	case arrow.ListLikeType:
		e, err := deltaTypeAt(x.Elem(), path+".element")
		if err != nil {
			return nil, err
		}
		return &schema.ArrayType{ElementType: e, ContainsNull: x.ElemField().Nullable}, nil
	}
	return nil, fmt.Errorf("arrowio: column %s: %w: Arrow type %s", path, ErrUnsupportedType, t)
}
