package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func prim(name string) schema.Type { return schema.Primitive(name) }

func field(name string, t schema.Type, nullable bool) *schema.StructField {
	return schema.NewField(name, t, nullable)
}

// allTypesSchema has every Delta type, nullable and not, nested.
func allTypesSchema() *schema.StructType {
	return schema.NewStruct(
		field("long", prim(schema.Long), true),
		field("int", prim(schema.Integer), true),
		field("short", prim(schema.Short), true),
		field("byte", prim(schema.Byte), true),
		field("float", prim(schema.Float), true),
		field("double", prim(schema.Double), true),
		field("bool", prim(schema.Boolean), true),
		field("string", prim(schema.String), true),
		field("binary", prim(schema.Binary), true),
		field("date", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("dec9", &schema.DecimalType{Precision: 9, Scale: 2}, true),
		field("dec18", &schema.DecimalType{Precision: 18, Scale: 6}, true),
		field("dec38", &schema.DecimalType{Precision: 38, Scale: 10}, true),
		field("req_long", prim(schema.Long), false),
		field("struct", schema.NewStruct(
			field("a", prim(schema.String), true),
			field("b", schema.NewStruct(field("c", prim(schema.Integer), false)), true),
		), true),
		field("arr", &schema.ArrayType{ElementType: prim(schema.Integer), ContainsNull: true}, true),
		field("arr_req", &schema.ArrayType{ElementType: prim(schema.String), ContainsNull: false}, false),
		field("arr_arr", &schema.ArrayType{ElementType: &schema.ArrayType{ElementType: prim(schema.Long), ContainsNull: true}, ContainsNull: true}, true),
		field("arr_struct", &schema.ArrayType{ElementType: schema.NewStruct(field("x", prim(schema.Long), true), field("y", prim(schema.String), true)), ContainsNull: true}, true),
		field("map", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Long), ValueContainsNull: true}, true),
		field("map_bin", &schema.MapType{KeyType: prim(schema.Binary), ValueType: &schema.ArrayType{ElementType: prim(schema.Integer), ContainsNull: true}, ValueContainsNull: true}, true),
		field("map_map", &schema.MapType{KeyType: prim(schema.Integer), ValueType: &schema.MapType{KeyType: prim(schema.String), ValueType: &schema.DecimalType{Precision: 20, Scale: 2}, ValueContainsNull: true}, ValueContainsNull: false}, true),
	)
}

func allTypesRows(n int) []value.Row {
	rows := make([]value.Row, 0, n)
	for i := range n {
		if i%7 == 3 {
			// all nullable fields null
			rows = append(rows, value.Row{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
				int64(-i), nil, nil, []any{}, nil, nil, nil, nil, nil})
			continue
		}
		s := fmt.Sprintf("s%03d-é€😀", i)
		neg := 1
		if i%2 == 1 {
			neg = -1
		}
		rows = append(rows, value.Row{
			int64(i) * 1_000_000_007 * int64(neg),
			int32(i * neg),
			int16(i * 100 * neg),
			int8(i % 128 * neg),
			float32(i) / 3,
			float64(i) * math.Pi * float64(neg),
			i%3 == 0,
			s,
			[]byte{byte(i), 0, 255},
			value.Date(i*1000*neg - 365),
			time.UnixMicro(int64(i) * 86_400_123_457 * int64(neg)).UTC(),
			time.Date(2024, 2, 29, 23, 59, 58, i*1000, time.UTC),
			value.NewDecimal(int64(i*12345*neg), 2),
			value.NewDecimal(int64(i)*123456789012*int64(neg), 6),
			mustRescale(value.MustParseDecimal(fmt.Sprintf("%d%s.0000000001", neg*i, strings.Repeat("9", 20))), 10),
			int64(i),
			value.Row{s, value.Row{int32(i)}},
			[]any{int32(i), nil, int32(-i)},
			[]any{"a", s},
			[]any{[]any{int64(i)}, nil, []any{}, []any{nil, int64(1)}},
			[]any{value.Row{int64(i), nil}, nil, value.Row{nil, "y"}},
			[]value.MapEntry{{Key: "k" + s, Value: int64(i)}, {Key: "n", Value: nil}},
			[]value.MapEntry{{Key: []byte{0, byte(i)}, Value: []any{int32(1), nil}}, {Key: []byte{}, Value: nil}},
			[]value.MapEntry{{Key: int32(i), Value: []value.MapEntry{{Key: "x", Value: value.NewDecimal(int64(-i), 2)}, {Key: "y", Value: nil}}}, {Key: int32(-1), Value: []value.MapEntry{}}},
		})
	}
	return rows
}

func mustRescale(d value.Decimal, s int32) value.Decimal {
	r, ok := d.Rescale(s)
	if !ok {
		panic("rescale")
	}
	return r
}

func writeToBytes(t testing.TB, sch *schema.StructType, rows []value.Row, opts ...WriteOption) ([]byte, *Stats) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, sch, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	st, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), st
}

func readBytes(t testing.TB, data []byte, sch *schema.StructType, opts ...ReadOption) []value.Row {
	t.Helper()
	var rows []value.Row
	for row, err := range ReadReaderAt(context.Background(), bytes.NewReader(data), int64(len(data)), "mem.parquet", sch, opts...) {
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	return rows
}

func TestWriteRoundTripAllTypes(t *testing.T) {
	sch := allTypesSchema()
	rows := allTypesRows(100)
	for _, opts := range [][]WriteOption{
		nil,
		{WithDictionary(false), WithCompression(Zstd)},
		{WithRowGroupRows(7), WithPageSize(100), WithCompression(Uncompressed)},
		{WithCompression(Gzip)},
		{WithCompression(LZ4Raw)},
	} {
		data, st := writeToBytes(t, sch, rows, opts...)
		if st.NumRecords != int64(len(rows)) {
			t.Errorf("NumRecords %d", st.NumRecords)
		}
		got := readBytes(t, data, sch)
		if len(got) != len(rows) {
			t.Fatalf("%d rows back, want %d", len(got), len(rows))
		}
		for i := range rows {
			checkRow(t, fmt.Sprintf("row %d", i), sch, got[i], rows[i])
		}
	}
}

// TestWriteParquetSchema checks the Parquet layout against Spark's.
func TestWriteParquetSchema(t *testing.T) {
	sch := schema.NewStruct(
		field("l", prim(schema.Long), true),
		field("i", prim(schema.Integer), false),
		field("s", prim(schema.Short), true),
		field("b", prim(schema.Byte), true),
		field("str", prim(schema.String), true),
		field("bin", prim(schema.Binary), true),
		field("d", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("d5", &schema.DecimalType{Precision: 5, Scale: 2}, true),
		field("d10", &schema.DecimalType{Precision: 10, Scale: 5}, true),
		field("d20", &schema.DecimalType{Precision: 20, Scale: 10}, true),
		field("d38", &schema.DecimalType{Precision: 38, Scale: 0}, true),
		field("zz", schema.NewStruct(field("y", prim(schema.Float), true), field("a", prim(schema.Double), true)), true),
		field("arr", &schema.ArrayType{ElementType: prim(schema.Boolean), ContainsNull: true}, true),
		field("m", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Long), ValueContainsNull: true}, true),
	)
	data, _ := writeToBytes(t, sch, nil)
	f, err := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "x", sch)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var walk func(n *pnode, indent string)
	walk = func(n *pnode, indent string) {
		line := indent + n.repetition.String() + " " + n.name
		if n.leaf {
			line += " " + n.physical().String()
			if l, ok := n.elem.TypeLength.Get(); ok {
				line += fmt.Sprintf("(%d)", l)
			}
		}
		if a := n.elem.LogicalType.String(); a != "" {
			line += " " + a
		}
		lines = append(lines, line)
		for _, c := range n.children {
			walk(c, indent+"  ")
		}
	}
	for _, c := range f.root.children {
		walk(c, "")
	}
	// As Spark lays the types out, except that parquet-go also annotates
	// plain INT32/INT64 columns INT(32|64, signed) and records the bit width
	// of non-FLBA types in type_length (both harmless to readers).
	want := `OPTIONAL l INT64(64) INT(64,true)
REQUIRED i INT32(32) INT(32,true)
OPTIONAL s INT32(16) INT(16,true)
OPTIONAL b INT32(8) INT(8,true)
OPTIONAL str BYTE_ARRAY STRING
OPTIONAL bin BYTE_ARRAY
OPTIONAL d INT32(32) DATE
OPTIONAL ts INT64(64) TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)
OPTIONAL ntz INT64(64) TIMESTAMP(isAdjustedToUTC=false,unit=MICROS)
OPTIONAL d5 INT32(32) DECIMAL(5,2)
OPTIONAL d10 INT64(64) DECIMAL(10,5)
OPTIONAL d20 FIXED_LEN_BYTE_ARRAY(9) DECIMAL(20,10)
OPTIONAL d38 FIXED_LEN_BYTE_ARRAY(16) DECIMAL(38,0)
OPTIONAL zz
  OPTIONAL y FLOAT(32)
  OPTIONAL a DOUBLE(64)
OPTIONAL arr LIST
  REPEATED list
    OPTIONAL element BOOLEAN(1)
OPTIONAL m MAP
  REPEATED key_value
    REQUIRED key BYTE_ARRAY STRING
    OPTIONAL value INT64(64) INT(64,true)`
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("parquet schema:\n%s\nwant:\n%s", got, want)
	}
	if f.root.name != "spark_schema" {
		t.Errorf("root %q", f.root.name)
	}
	if !strings.HasPrefix(f.CreatedBy(), "deltakit version ") {
		t.Errorf("created_by %q", f.CreatedBy())
	}
}

func TestFLBADecimalBytes(t *testing.T) {
	// Spark's Decimal.minBytesForPrecision for 19..38 (the corpus files
	// have 9 bytes for precision 20, 11 for 25, 15 for 35, 16 for 38).
	want := map[int]int{19: 9, 20: 9, 21: 9, 22: 10, 23: 10, 24: 11, 25: 11, 26: 11, 27: 12, 28: 12, 29: 13, 30: 13, 31: 13, 32: 14, 33: 14, 34: 15, 35: 15, 36: 16, 37: 16, 38: 16}
	for p, n := range want {
		if got := flbaDecimalBytes(p); got != n {
			t.Errorf("precision %d: %d bytes, want %d", p, got, n)
		}
	}
}

func TestWriteInvalidValues(t *testing.T) {
	sch := schema.NewStruct(
		field("i", prim(schema.Integer), false),
		field("d", &schema.DecimalType{Precision: 4, Scale: 2}, true),
		field("s", schema.NewStruct(field("x", prim(schema.Long), false)), true),
		field("m", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Long), ValueContainsNull: false}, true),
	)
	for name, row := range map[string]value.Row{
		"null in required":   {nil, nil, nil, nil},
		"wrong go type":      {"1", nil, nil, nil},
		"int out of range":   {int64(math.MaxInt32) + 1, nil, nil, nil},
		"decimal too big":    {int32(1), dec("100.00"), nil, nil},
		"decimal too scaled": {int32(1), dec("1.001"), nil, nil},
		"struct arity":       {int32(1), nil, value.Row{}, nil},
		"null nested req":    {int32(1), nil, value.Row{nil}, nil},
		"null map key":       {int32(1), nil, nil, []value.MapEntry{{Key: nil, Value: int64(1)}}},
		"null map value":     {int32(1), nil, nil, []value.MapEntry{{Key: "k", Value: nil}}},
		"row arity":          {int32(1)},
	} {
		w, err := NewWriter(&bytes.Buffer{}, sch)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Write([]value.Row{{int32(5), dec("1.5"), nil, nil}, row})
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "row 1") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err2 := w.Close(); err2 == nil {
			t.Errorf("%s: Close after a failed Write succeeded", name)
		}
	}
	// Accepted alternative Go types.
	ok := []value.Row{{int(7), "12.3", value.Row{int32(1)}, []value.MapEntry{}}, {int16(1), int64(12), nil, nil}}
	data, _ := writeToBytes(t, sch, ok)
	got := readBytes(t, data, sch)
	checkRow(t, "row 0", sch, got[0], value.Row{int32(7), dec("12.30"), value.Row{int64(1)}, []value.MapEntry{}})
	checkRow(t, "row 1", sch, got[1], value.Row{int32(1), dec("12.00"), nil, nil})
}

func TestWriteTimestampNTZKeepsWallClock(t *testing.T) {
	sch := schema.NewStruct(field("ntz", prim(schema.TimestampNTZ), true), field("ts", prim(schema.Timestamp), true), field("d", prim(schema.Date), true))
	loc := time.FixedZone("X", -7*3600)
	in := time.Date(2024, 1, 2, 3, 4, 5, 123456789, loc)
	data, _ := writeToBytes(t, sch, []value.Row{{in, in, in}})
	got := readBytes(t, data, sch)[0]
	checkRow(t, "row", sch, got, value.Row{
		time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC),
		time.Date(2024, 1, 2, 10, 4, 5, 123456000, time.UTC),
		value.DateOf(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)),
	})
}

func TestWriteFileToStore(t *testing.T) {
	store := objectstore.NewMem("t")
	sch := allTypesSchema()
	rows := allTypesRows(20)
	wf, err := WriteFile(context.Background(), store, "part-00000.snappy.parquet", sch, rows)
	if err != nil {
		t.Fatal(err)
	}
	info, err := store.Stat(context.Background(), wf.Key)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != wf.Size || wf.Rows != 20 {
		t.Errorf("size %d vs stat %d, rows %d", wf.Size, info.Size, wf.Rows)
	}
	i := 0
	for row, err := range ReadFile(context.Background(), store, wf.Key, sch) {
		if err != nil {
			t.Fatal(err)
		}
		checkRow(t, fmt.Sprintf("row %d", i), sch, row, rows[i])
		i++
	}
	if i != 20 {
		t.Errorf("%d rows", i)
	}
}

// TestWriteColumnMapping writes physical names and field ids and reads them
// back by id and by name.
func TestWriteColumnMapping(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__table-with-columnmapping-mode-name")
	rows := tbl.readRows(t, tbl.data)
	for _, mode := range []string{"name", "id"} {
		data, st := writeToBytes(t, tbl.data, rows, WithWriteColumnMapping(mode))
		got := readBytes(t, data, tbl.data, WithColumnMapping(mode))
		for i := range rows {
			checkRow(t, fmt.Sprintf("%s row %d", mode, i), tbl.data, got[i], rows[i])
		}
		if mode == "id" {
			got = readBytes(t, data, renamePhysical(tbl.data), WithColumnMapping("id"))
			for i := range rows {
				checkRow(t, fmt.Sprintf("by id row %d", i), tbl.data, got[i], rows[i])
			}
		}
		// Physical names in the stats.
		if _, ok := st.Lookup("nullCount", "col-33314a5e-7dc1-438a-8f4d-df8c417071d6"); !ok {
			t.Errorf("%s: no physical name in stats", mode)
		}
		// Logical names do not find the columns.
		for _, r := range readBytes(t, data, tbl.data) {
			checkRow(t, "logical", tbl.data, r, make(value.Row, len(tbl.data.Fields)))
		}
	}
}

// TestWriteDictionaryFallback writes more distinct strings than a 1 MiB
// dictionary holds: the column falls back to PLAIN pages mid-chunk.
func TestWriteDictionaryFallback(t *testing.T) {
	sch := schema.NewStruct(field("s", prim(schema.String), true), field("b", prim(schema.Binary), false))
	rows := make([]value.Row, 150_000)
	for i := range rows {
		s := fmt.Sprintf("distinct-value-%012d", i)
		var v any = s
		if i%10 == 0 {
			v = nil
		}
		rows[i] = value.Row{v, []byte(s)}
	}
	data, st := writeToBytes(t, sch, rows)
	got := readBytes(t, data, sch)
	if len(got) != len(rows) {
		t.Fatalf("%d rows", len(got))
	}
	for i := range rows {
		if !valuesEqual(got[i], rows[i]) {
			t.Fatalf("row %d: %s, want %s", i, show(got[i]), show(rows[i]))
		}
	}
	if v, _ := st.Lookup("nullCount", "s"); v != int64(15_000) {
		t.Errorf("nullCount %v", v)
	}
	f, _ := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "x", sch)
	encs := fmt.Sprint(f.pf.Metadata().RowGroups[0].Columns[0].MetaData.Encoding)
	if !strings.Contains(encs, "RLE_DICTIONARY") || !strings.Contains(encs, "PLAIN") {
		t.Errorf("encodings %s, want dictionary then plain", encs)
	}
}

func TestWriteEmptyFile(t *testing.T) {
	sch := allTypesSchema()
	data, st := writeToBytes(t, sch, nil)
	if st.NumRecords != 0 {
		t.Errorf("NumRecords %d", st.NumRecords)
	}
	f, err := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "empty", sch)
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != 0 || f.NumRowGroups() != 0 {
		t.Errorf("%d rows, %d row groups", f.NumRows(), f.NumRowGroups())
	}
	if rows := readBytes(t, data, sch); len(rows) != 0 {
		t.Errorf("%d rows", len(rows))
	}
}
