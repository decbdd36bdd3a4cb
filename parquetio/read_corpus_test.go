package parquetio

import (
	"context"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

func dec(s string) value.Decimal { return value.MustParseDecimal(s) }

func itoa(i int) string { return strconv.Itoa(i) }

// checkRow compares a row with the expected values, naming the fields.
func checkRow(t *testing.T, what string, st *schema.StructType, got, want value.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d values, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		if !valuesEqual(got[i], want[i]) {
			t.Errorf("%s: field %s = %s, want %s", what, st.Fields[i].Name, show(got[i]), show(want[i]))
		}
	}
}

// rowsByKey indexes rows by the value of field k (nil key -> "null").
func rowsByKey(t *testing.T, rows []value.Row, k int) map[string]value.Row {
	t.Helper()
	out := map[string]value.Row{}
	for _, r := range rows {
		key := "null"
		if r[k] != nil {
			key = show(r[k])
		}
		if _, dup := out[key]; dup {
			t.Fatalf("duplicate key %s", key)
		}
		out[key] = r
	}
	return out
}

func TestReadCorpusPrimitives(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__data-reader-primitives")
	rows := tbl.readRows(t, tbl.data)
	if len(rows) != 11 {
		t.Fatalf("%d rows, want 11", len(rows))
	}
	byInt := rowsByKey(t, rows, 0)
	for i := range 10 {
		r, ok := byInt[show(int32(i))]
		if !ok {
			t.Fatalf("no row with as_int %d", i)
		}
		want := value.Row{int32(i), int64(i), int8(i), int16(i), i%2 == 0, float32(i), float64(i), itoa(i), []byte{byte(i), byte(i)}, value.NewDecimal(int64(i), 0)}
		checkRow(t, "row "+itoa(i), tbl.data, r, want)
	}
	checkRow(t, "null row", tbl.data, byInt["null"], make(value.Row, 10))
}

func TestReadCorpusAllTypes(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__parquet-all-types")
	rows := tbl.readRows(t, tbl.data)
	if len(rows) != 200 {
		t.Fatalf("%d rows, want 200", len(rows))
	}
	idx := func(name string) int { return tbl.data.FieldIndex(name) }
	for i, r := range rows {
		check := func(field string, null bool, want any) {
			t.Helper()
			if null {
				want = nil
			}
			if got := r[idx(field)]; !valuesEqual(got, want) {
				t.Errorf("row %d %s = %s, want %s", i, field, show(got), show(want))
			}
		}
		check("ByteType", i%72 == 0, int8(i))
		check("IntegerType", i%23 == 0, int32(i))
		check("LongType", i%25 == 0, int64(i+1))
		check("StringType", i%57 == 0, itoa(i))
		check("TimestampNTZType", i%69 == 0, time.Unix(int64(i)*234234, 200000).UTC())
		// The file holds only nulls in its collection columns (its footer
		// and Spark's nullCount of 200 agree).
		for _, c := range []string{"array_of_prims", "array_of_arrays", "array_of_structs", "map_of_prims", "map_of_rows", "map_of_arrays"} {
			check(c, true, nil)
		}
	}
	// Row 1 in full (values from the generator's formulas, as Spark reads them).
	want := value.Row{int8(1), int16(1), int32(1), int64(2), float32(0.234), 234234.23, dec("123.52"), false, "1", []byte("1"),
		value.Date(0), time.Date(1970, 1, 1, 6, 30, 23, 523000000, time.UTC), time.Date(1970, 1, 3, 17, 3, 54, 200000, time.UTC),
		value.Row{"1", value.Row{int32(1)}}, nil, nil, nil, nil, nil, nil}
	checkRow(t, "row 1", tbl.data, rows[1], want)
	checkRow(t, "row 0", tbl.data, rows[0], make(value.Row, 20))
}

func TestReadCorpusProjectionAndMissingColumns(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__parquet-all-types")
	// Names differ in case from the file (as in delta kernel's test), two
	// fields are absent from the file, order differs from the file.
	rs := schema.NewStruct(
		schema.NewField("booleanType", schema.Primitive(schema.Boolean), true),
		schema.NewField("integerType", schema.Primitive(schema.Integer), true),
		schema.NewField("missing_column_struct", schema.NewStruct(schema.NewField("ab", schema.Primitive(schema.Integer), true)), true),
		schema.NewField("longType", schema.Primitive(schema.Long), true),
		schema.NewField("missing_column_primitive", schema.Primitive(schema.Date), true),
		schema.NewField("nested_struct", schema.NewStruct(
			schema.NewField("ac", schema.NewStruct(schema.NewField("aca", schema.Primitive(schema.Integer), true)), true),
			schema.NewField("zz", schema.Primitive(schema.String), true),
		), true),
	)
	rows := tbl.readRows(t, rs)
	if len(rows) != 200 {
		t.Fatalf("%d rows", len(rows))
	}
	checkRow(t, "row 1", rs, rows[1], value.Row{false, int32(1), nil, int64(2), nil, value.Row{value.Row{int32(1)}, nil}})
	checkRow(t, "row 2", rs, rows[2], value.Row{true, int32(2), nil, int64(3), nil, value.Row{value.Row{int32(2)}, nil}})
	// A struct none of whose requested fields is in the file keeps its
	// nullness from the file.
	only := schema.NewStruct(schema.NewField("nested_struct", schema.NewStruct(schema.NewField("nope", schema.Primitive(schema.Long), true)), true))
	rows = tbl.readRows(t, only)
	nulls := 0
	for _, r := range rows {
		switch v := r[0].(type) {
		case nil:
			nulls++
		case value.Row:
			if len(v) != 1 || v[0] != nil {
				t.Fatalf("nested_struct = %s", show(v))
			}
		}
	}
	// Spark's stats: nested_struct.aa has 14 nulls; the struct itself is
	// null at least in the all-null row 0.
	if nulls == 0 || nulls > 14 {
		t.Errorf("%d null structs", nulls)
	}
	// Nothing requested that the file has: rows still counted.
	none := schema.NewStruct(schema.NewField("x", schema.Primitive(schema.Long), true))
	if got := len(tbl.readRows(t, none)); got != 200 {
		t.Errorf("%d rows of absent columns, want 200", got)
	}
}

func TestReadCorpusArrayComplexObjects(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__data-reader-array-complex-objects")
	rows := tbl.readRows(t, tbl.data)
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10", len(rows))
	}
	fill := func(v any, n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, r := range rows {
		i := int(r[0].(int32))
		v := int32(i)
		d3 := fill(fill(fill(v, 3), 2), 2)
		d4 := fill(d3, 2)
		maps := fill([]value.MapEntry{{Key: itoa(i), Value: int64(i)}}, 2)
		recs := fill(value.Row{v}, 3)
		checkRow(t, "row "+itoa(i), tbl.data, r, value.Row{v, d3, d4, maps, recs})
	}
}

func TestReadCorpusArrayPrimitives(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__data-reader-array-primitives")
	rows := tbl.readRows(t, tbl.data)
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10", len(rows))
	}
	seen := map[int]bool{}
	for _, r := range rows {
		i := int(r[0].([]any)[0].(int32))
		seen[i] = true
		want := value.Row{[]any{int32(i)}, []any{int64(i)}, []any{int8(i)}, []any{int16(i)}, []any{i%2 == 0},
			[]any{float32(i)}, []any{float64(i)}, []any{itoa(i)}, []any{[]byte{byte(i), byte(i)}}, []any{value.NewDecimal(int64(i), 0)}}
		checkRow(t, "row "+itoa(i), tbl.data, r, want)
	}
	if len(seen) != 10 {
		t.Errorf("rows for %v, want 0..9", seen)
	}
}

func TestReadCorpusMap(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__data-reader-map")
	rows := tbl.readRows(t, tbl.data)
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10", len(rows))
	}
	for _, r := range rows {
		i := int(r[0].(int32))
		one := func(k, v any) []value.MapEntry { return []value.MapEntry{{Key: k, Value: v}} }
		want := value.Row{int32(i), one(int32(i), int32(i)), one(int64(i), int8(i)), one(int16(i), i%2 == 0),
			one(float32(i), float64(i)), one(itoa(i), value.NewDecimal(int64(i), 0)),
			one(int32(i), []any{value.Row{int32(i)}, value.Row{int32(i)}, value.Row{int32(i)}})}
		checkRow(t, "row "+itoa(i), tbl.data, r, want)
	}
}

func TestReadCorpusNestedStruct(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__data-reader-nested-struct")
	rows := tbl.readRows(t, tbl.data)
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10", len(rows))
	}
	for _, r := range rows {
		i := int(r[1].(int32))
		checkRow(t, "row "+itoa(i), tbl.data, r, value.Row{value.Row{itoa(i), itoa(i), value.Row{int32(i), int64(i)}}, int32(i)})
	}
}

func TestReadCorpusBasicDecimal(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__basic-decimal-table")
	rows := tbl.readRows(t, tbl.data) // col1, col2, col3 (part is a partition column)
	want := map[string]value.Row{
		"1.00":    {dec("1.00"), dec("2.00000"), dec("3.0000000000")},
		"111.11":  {dec("111.11"), dec("22222.22222"), dec("3333333333.3333333333")},
		"0.00":    {dec("0.00"), dec("0.00000"), dec("0.0000000000")},
		"-999.99": {dec("-999.99"), dec("-99999.99999"), dec("-9999999999.9999999999")},
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for _, r := range rows {
		k := r[0].(value.Decimal).String()
		w, ok := want[k]
		if !ok {
			t.Fatalf("unexpected row %s", show(r))
		}
		checkRow(t, "row "+k, tbl.data, r, w)
		delete(want, k)
	}
}

func TestReadCorpusDecimalVariousScalePrecision(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__decimal-various-scale-precision")
	rows := tbl.readRows(t, tbl.data)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	checkRow(t, "row 0", tbl.data, rows[0], make(value.Row, len(tbl.data.Fields)))
	// The source compares with Spark's own read; Spark's stats in the log
	// hold the positive (max) and negative (min) row exactly.
	stats := parseSparkStats(t, tbl.stats[tbl.keys[0]])
	for i, f := range tbl.data.Fields {
		dt := f.Type.(*schema.DecimalType)
		for _, r := range rows[1:] {
			if d, ok := r[i].(value.Decimal); ok && int(d.Scale) != dt.Scale {
				t.Errorf("%s: scale %d, want %d", f.Name, d.Scale, dt.Scale)
			}
		}
		wantMin, okMin := stats.min[f.Name]
		wantMax, okMax := stats.max[f.Name]
		if !okMin || !okMax {
			if rows[1][i] != nil || rows[2][i] != nil {
				t.Errorf("%s: values %s %s but no stats", f.Name, show(rows[1][i]), show(rows[2][i]))
			}
			continue
		}
		a, b := rows[1][i].(value.Decimal), rows[2][i].(value.Decimal)
		lo, hi := a, b
		if a.Cmp(b) > 0 {
			lo, hi = b, a
		}
		if !ratEq(lo, wantMin) || !ratEq(hi, wantMax) {
			t.Errorf("%s: read %s and %s, Spark's stats say min %s max %s", f.Name, a, b, wantMin, wantMax)
		}
	}
	// Two exact values in full.
	if got := rows[1][tbl.data.FieldIndex("decimal_38_36")].(value.Decimal).String(); got != "0.000000000000000003241836000000000000" {
		t.Errorf("decimal_38_36 = %s", got)
	}
	if got := rows[2][tbl.data.FieldIndex("decimal_35_24")].(value.Decimal).String(); got != "-22827907.000000000000000000000000" {
		t.Errorf("decimal_35_24 = %s", got)
	}
}

// ratEq compares a decimal with a JSON number's text (which may have an
// exponent, as Java's BigDecimal.toString writes).
func ratEq(d value.Decimal, text string) bool {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return false
	}
	x := new(big.Rat).SetFrac(d.Unscaled, pow10(int(d.Scale)))
	return x.Cmp(r) == 0
}

func TestReadCorpusDecimalDictionaries(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 rows")
	}
	tbl := loadCorpusTable(t, "golden__parquet-decimal-dictionaries")
	store, err := objectstore.NewLocal(tbl.dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ir, err := range mustOpen(t, store, tbl.keys[0], tbl.data).IndexedRows(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		i := int(ir.Index)
		want := value.Row{int32(i), value.NewDecimal(int64(i%5), 0), value.NewDecimal(int64(i%6), 0), value.NewDecimal(int64(i%2), 0)}
		if !valuesEqual(ir.Row, want) {
			t.Fatalf("row %d = %s, want %s", i, show(ir.Row), show(want))
		}
		n++
	}
	if n != 1_000_000 {
		t.Errorf("%d rows, want 1000000", n)
	}
}

func mustOpen(t *testing.T, store objectstore.Store, key string, rs *schema.StructType, opts ...ReadOption) *File {
	t.Helper()
	f, err := Open(context.Background(), store, key, rs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadCorpusTimestampINT96(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__kernel-timestamp-INT96")
	rows := tbl.readRows(t, tbl.data) // id, time
	want := map[int32]any{
		0: time.UnixMicro(1580544550000000).UTC(),
		1: time.UnixMicro(915181200000000).UTC(),
		2: time.UnixMicro(946717200000000).UTC(),
		3: time.UnixMicro(-31536000000000).UTC(),
		4: nil,
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5", len(rows))
	}
	for _, r := range rows {
		id := r[0].(int32)
		if !valuesEqual(r[1], want[id]) {
			t.Errorf("id %d: time %s, want %s", id, show(r[1]), show(want[id]))
		}
		if tm, ok := r[1].(time.Time); ok && tm.Location() != time.UTC {
			t.Errorf("id %d: location %v, want UTC", id, tm.Location())
		}
	}
}

func TestReadCorpusEdgeTimestamps(t *testing.T) {
	tbl := loadCorpusTable(t, "deltars__table_with_edge_timestamps")
	rows := tbl.readRows(t, tbl.data)
	want := []value.Row{
		{time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC), int32(1)},
		{time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC), time.Date(2022, 2, 1, 0, 0, 0, 0, time.UTC), int32(2)},
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		checkRow(t, "SOME_VALUE "+show(r[2]), tbl.data, r, want[r[2].(int32)-1])
	}
}

// columnMappingRow returns row i (0..4) of golden__table-with-columnmapping-mode-name.
func columnMappingRow(i int) value.Row {
	v := int32(i)
	l := int64(i)
	return value.Row{
		int8(i), int16(i), v, l, float32(i), float64(i), value.NewDecimal(int64(i)*100, 2), i%2 == 0, itoa(i), []byte(itoa(i)),
		value.DateOf(time.Date(2021, 11, 18, 0, 0, 0, 0, time.UTC)), time.UnixMilli(l).UTC(),
		value.Row{itoa(i), value.Row{v}},
		[]any{v, v + 1},
		[]any{[]any{v, v + 1}, []any{v + 2, v + 3}},
		[]any{[]value.MapEntry{{Key: v, Value: []any{int32(2), int32(3)}}, {Key: v + 1, Value: []any{int32(4), int32(5)}}}},
		[]any{value.Row{v}, value.Row{v}},
		value.Row{[]any{v, v + 1}, []value.MapEntry{{Key: []any{v, v + 1}, Value: value.Row{v + 2}}}},
		[]value.MapEntry{{Key: v, Value: l + 1}, {Key: v + 2, Value: l + 3}},
		[]value.MapEntry{{Key: v + 1, Value: value.Row{l * 20}}},
		[]value.MapEntry{{Key: l, Value: []any{v, nil, v + 1}}, {Key: l + 1, Value: []any{}}},
		[]value.MapEntry{{Key: l, Value: []value.MapEntry{{Key: v, Value: v}}}, {Key: l + 1, Value: []value.MapEntry{{Key: v + 2, Value: v}}}},
	}
}

func TestReadCorpusColumnMappingName(t *testing.T) {
	tbl := loadCorpusTable(t, "golden__table-with-columnmapping-mode-name")
	if tbl.mode != "name" {
		t.Fatalf("mode %q", tbl.mode)
	}
	check := func(t *testing.T, rows []value.Row) {
		t.Helper()
		if len(rows) != 6 {
			t.Fatalf("%d rows, want 6", len(rows))
		}
		byInt := rowsByKey(t, rows, 2)
		for i := range 5 {
			checkRow(t, "row "+itoa(i), tbl.data, byInt[show(int32(i))], columnMappingRow(i))
		}
		checkRow(t, "null row", tbl.data, byInt["null"], make(value.Row, 22))
	}
	t.Run("name", func(t *testing.T) { check(t, tbl.readRows(t, tbl.data)) })
	t.Run("id", func(t *testing.T) {
		// In id mode the field_id decides, whatever the physical names say.
		check(t, tbl.readRows(t, renamePhysical(tbl.data), WithColumnMapping("id")))
	})
	t.Run("logical names find nothing", func(t *testing.T) {
		rows := tbl.readRows(t, tbl.data, WithColumnMapping("none"))
		for _, r := range rows {
			checkRow(t, "row", tbl.data, r, make(value.Row, 22))
		}
	})
}

// renamePhysical returns a copy of st whose physical names are all wrong.
func renamePhysical(st *schema.StructType) *schema.StructType {
	out := &schema.StructType{}
	for _, f := range st.Fields {
		md := map[string]any{}
		for k, v := range f.Metadata {
			md[k] = v
		}
		md[schema.MetaColumnMappingName] = "wrong-" + f.Name
		typ := f.Type
		if s, ok := typ.(*schema.StructType); ok {
			typ = renamePhysical(s)
		}
		out.Fields = append(out.Fields, &schema.StructField{Name: f.Name, Type: typ, Nullable: f.Nullable, Metadata: md})
	}
	return out
}

func TestReadCorpusCOVID(t *testing.T) {
	if testing.Short() {
		t.Skip("1.1M rows")
	}
	tbl := loadCorpusTable(t, "deltars__COVID-19_NYT")
	store, err := objectstore.NewLocal(tbl.dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var maxCases int32
	for _, key := range tbl.keys {
		for row, err := range ReadFile(context.Background(), store, key, tbl.data) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if _, ok := row[0].(string); !ok {
				t.Fatalf("date = %s", show(row[0]))
			}
			if c, ok := row[4].(int32); ok && c > maxCases {
				maxCases = c
			}
		}
	}
	if n != 1_111_930 {
		t.Errorf("%d rows, want 1111930", n)
	}
	if maxCases <= 0 {
		t.Errorf("max cases %d", maxCases)
	}
}

// TestReadCorpusReaderAtMatchesStore reads each small table's files through
// an *os.File and through the store and expects the same rows.
func TestReadCorpusReaderAtMatchesStore(t *testing.T) {
	for _, name := range []string{"golden__parquet-all-types", "golden__data-reader-map", "golden__table-with-columnmapping-mode-name", "golden__kernel-timestamp-INT96"} {
		tbl := loadCorpusTable(t, name)
		want := tbl.readRows(t, tbl.data)
		var got []value.Row
		for _, key := range tbl.keys {
			f, err := os.Open(filepath.Join(tbl.dir, filepath.FromSlash(key)))
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.Stat()
			for row, err := range ReadReaderAt(context.Background(), f, st.Size(), key, tbl.data, WithColumnMapping(tbl.mode)) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, row)
			}
			f.Close()
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows via ReaderAt, %d via store", name, len(got), len(want))
		}
		for i := range got {
			if !valuesEqual(got[i], want[i]) {
				t.Fatalf("%s row %d: %s vs %s", name, i, show(got[i]), show(want[i]))
			}
		}
	}
}
