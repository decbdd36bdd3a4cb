package parquetio

import (
	"bytes"
	"math/big"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// annotated gives a group node the logical type of another node (LIST or
// MAP) while keeping its own children, to build legacy layouts.
type annotated struct {
	parquet.Node
	t parquet.Type
}

func (a annotated) Type() parquet.Type { return a.t }

func group(fields ...any) *groupNode {
	g := &groupNode{}
	for i := 0; i < len(fields); i += 2 {
		g.fields = append(g.fields, &namedField{Node: fields[i+1].(parquet.Node), name: fields[i].(string)})
	}
	return g
}

func lv(v parquet.Value, rep, def, col int) parquet.Value { return v.Level(rep, def, col) }

// TestReadLegacyLayouts reads a file with the list and map layouts older
// writers use (LogicalTypes.md backward-compatibility rules), BYTE_ARRAY
// decimals, millisecond and nanosecond timestamps, unsigned and widened
// integer columns.
func TestReadLegacyLayouts(t *testing.T) {
	listType := parquet.List(parquet.Leaf(parquet.Int32Type)).Type()
	mapType := parquet.Map(parquet.String(), parquet.Leaf(parquet.Int32Type)).Type()
	root := group(
		// 2-level list of a primitive: the repeated field is the element.
		"a", parquet.Optional(annotated{group("array", parquet.Repeated(parquet.Leaf(parquet.Int32Type))), listType}),
		// The repeated group is named "array": it is the element (a struct).
		"b", parquet.Optional(annotated{group("array", parquet.Repeated(group("str", parquet.Optional(parquet.String())))), listType}),
		// The repeated group is named <list>_tuple: it is the element.
		"c", parquet.Optional(annotated{group("c_tuple", parquet.Repeated(group("x", parquet.Required(parquet.Leaf(parquet.Int64Type))))), listType}),
		// An unannotated repeated field is a list of required elements.
		"d", parquet.Repeated(parquet.Leaf(parquet.Int32Type)),
		// Spark 1.x nullable layout: repeated group bag { optional array }.
		"e", parquet.Optional(annotated{group("bag", parquet.Repeated(group("array", parquet.Optional(parquet.Leaf(parquet.Int32Type))))), listType}),
		// Map with the legacy repeated group name "map".
		"f", parquet.Optional(annotated{group("map", parquet.Repeated(group("key", parquet.Required(parquet.String()), "value", parquet.Optional(parquet.Leaf(parquet.Int32Type))))), mapType}),
		"g", parquet.Optional(parquet.Decimal(2, 20, parquet.ByteArrayType)),
		"h", parquet.Optional(parquet.Timestamp(parquet.Millisecond)),
		"i", parquet.Optional(parquet.TimestampAdjusted(parquet.Nanosecond, false)),
		"j", parquet.Optional(parquet.Uint(32)),
		"k", parquet.Optional(parquet.Date()),
		"l", parquet.Optional(parquet.Leaf(parquet.Int32Type)),
		"m", parquet.Optional(parquet.Leaf(parquet.FloatType)),
	)
	big19 := new(big.Int).Add(pow10(19), big.NewInt(1))
	i32, i64, str := parquet.Int32Value, parquet.Int64Value, func(s string) parquet.Value { return parquet.ByteArrayValue([]byte(s)) }
	null := parquet.Value{}
	rows := []parquet.Row{
		{ // row 0
			lv(i32(1), 0, 2, 0), lv(i32(2), 1, 2, 0),
			lv(str("x"), 0, 3, 1), lv(null, 1, 2, 1),
			lv(i64(5), 0, 2, 2),
			lv(null, 0, 0, 3),
			lv(i32(1), 0, 3, 4), lv(null, 1, 2, 4),
			lv(str("k"), 0, 2, 5), lv(str("n"), 1, 2, 5),
			lv(i32(1), 0, 3, 6), lv(null, 1, 2, 6),
			lv(parquet.ByteArrayValue([]byte{0xcf, 0xc7}), 0, 1, 7), // -12345
			lv(i64(1500), 0, 1, 8),
			lv(i64(1_500_000_999), 0, 1, 9),
			lv(i32(-1), 0, 1, 10),
			lv(i32(1), 0, 1, 11),
			lv(i32(7), 0, 1, 12),
			lv(parquet.FloatValue(1.25), 0, 1, 13),
		},
		{ // row 1: nulls, d = [3]
			lv(null, 0, 0, 0), lv(null, 0, 0, 1), lv(null, 0, 0, 2), lv(i32(3), 0, 1, 3), lv(null, 0, 0, 4),
			lv(null, 0, 0, 5), lv(null, 0, 0, 6), lv(null, 0, 0, 7), lv(null, 0, 0, 8), lv(null, 0, 0, 9),
			lv(null, 0, 0, 10), lv(null, 0, 0, 11), lv(null, 0, 0, 12), lv(null, 0, 0, 13),
		},
		{ // row 2: empty collections
			lv(null, 0, 1, 0), lv(null, 0, 1, 1),
			lv(i64(6), 0, 2, 2), lv(i64(7), 1, 2, 2),
			lv(i32(4), 0, 1, 3), lv(i32(5), 1, 1, 3),
			lv(null, 0, 1, 4), lv(null, 0, 1, 5), lv(null, 0, 1, 6),
			lv(parquet.ByteArrayValue(append([]byte{0}, big19.Bytes()...)), 0, 1, 7), // sign byte: 10^19+1 > 2^63
			lv(i64(-1), 0, 1, 8), lv(i64(-1), 0, 1, 9),
			lv(null, 0, 0, 10), lv(null, 0, 0, 11), lv(null, 0, 0, 12), lv(null, 0, 0, 13),
		},
	}
	var buf bytes.Buffer
	cfg, err := parquet.NewWriterConfig(parquet.NewSchema("legacy", root))
	if err != nil {
		t.Fatal(err)
	}
	w := newParquetWriter(&buf, cfg)
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	arr := func(e schema.Type) *schema.ArrayType { return &schema.ArrayType{ElementType: e, ContainsNull: true} }
	sch := schema.NewStruct(
		field("a", arr(prim(schema.Integer)), true),
		field("b", arr(schema.NewStruct(field("str", prim(schema.String), true))), true),
		field("c", arr(schema.NewStruct(field("x", prim(schema.Long), true))), true),
		field("d", arr(prim(schema.Integer)), true),
		field("e", arr(prim(schema.Integer)), true),
		field("f", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Integer), ValueContainsNull: true}, true),
		field("g", &schema.DecimalType{Precision: 20, Scale: 2}, true),
		field("h", prim(schema.Timestamp), true),
		field("i", prim(schema.TimestampNTZ), true),
		field("j", prim(schema.Long), true),
		field("k", prim(schema.TimestampNTZ), true),
		field("l", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		field("m", prim(schema.Double), true),
	)
	got := readBytes(t, buf.Bytes(), sch)
	if len(got) != 3 {
		t.Fatalf("%d rows", len(got))
	}
	checkRow(t, "row 0", sch, got[0], value.Row{
		[]any{int32(1), int32(2)},
		[]any{value.Row{"x"}, value.Row{nil}},
		[]any{value.Row{int64(5)}},
		[]any{},
		[]any{int32(1), nil},
		[]value.MapEntry{{Key: "k", Value: int32(1)}, {Key: "n", Value: nil}},
		dec("-123.45"),
		time.UnixMilli(1500).UTC(),
		time.UnixMicro(1_500_000).UTC(),
		int64(4294967295),
		time.Date(1970, 1, 2, 0, 0, 0, 0, time.UTC),
		dec("7.00"),
		1.25,
	})
	checkRow(t, "row 1", sch, got[1], value.Row{nil, nil, nil, []any{int32(3)}, nil, nil, nil, nil, nil, nil, nil, nil, nil})
	checkRow(t, "row 2", sch, got[2], value.Row{
		[]any{}, []any{}, []any{value.Row{int64(6)}, value.Row{int64(7)}}, []any{int32(4), int32(5)}, []any{}, []value.MapEntry{},
		dec("100000000000000000.01"), time.UnixMilli(-1).UTC(), time.UnixMicro(-1).UTC(), nil, nil, nil, nil,
	})
}
