package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// allTypesSchema has a column of every primitive type plus nested ones.
func allTypesSchema() *schema.StructType {
	return schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("i", prim(schema.Integer), true),
		field("s", prim(schema.Short), true),
		field("b", prim(schema.Byte), true),
		field("f", prim(schema.Float), true),
		field("d", prim(schema.Double), true),
		field("ok", prim(schema.Boolean), true),
		field("str", prim(schema.String), true),
		field("bin", prim(schema.Binary), true),
		field("day", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("d52", &schema.DecimalType{Precision: 5, Scale: 2}, true),
		field("d204", &schema.DecimalType{Precision: 20, Scale: 4}, true),
		field("d3810", &schema.DecimalType{Precision: 38, Scale: 10}, true),
		field("st", schema.NewStruct(field("x", prim(schema.Long), true), field("y", prim(schema.String), true)), true),
		field("arr", &schema.ArrayType{ElementType: prim(schema.Long), ContainsNull: true}, true),
		field("m", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Double), ValueContainsNull: true}, true),
	)
}

func allTypesRows() []value.Row {
	ts := time.Date(2024, 2, 29, 23, 59, 58, 123456000, time.UTC)
	return []value.Row{
		{int64(1), int32(-7), int16(300), int8(-128), float32(1.5), 2.25, true, "héllo", []byte{0, 1, 0xff},
			value.DateOf(ts), ts, ts, value.MustParseDecimal("-999.99"), value.MustParseDecimal("1234567890123456.7890"),
			value.MustParseDecimal("1234567890123456789012345678.0123456789"),
			value.Row{int64(5), "five"}, []any{int64(1), nil, int64(3)},
			[]value.MapEntry{{Key: "a", Value: 1.0}, {Key: "b", Value: nil}}},
		{int64(2), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(3), int32(math.MaxInt32), int16(math.MinInt16), int8(127), float32(math.Copysign(0, -1)), math.Inf(1), false, "", []byte{},
			value.Date(-1), time.Unix(0, 0).UTC(), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), value.MustParseDecimal("0.01"),
			value.MustParseDecimal("-0.0001"), value.MustParseDecimal("0E-10"[:1]),
			value.Row{nil, nil}, []any{}, []value.MapEntry{}},
	}
}

func TestAppendRowsRoundTrip(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	tbl := newMemTable(t, allTypesSchema(), WithClock(func() time.Time { return clock }))
	rows := allTypesRows()
	t1, err := tbl.AppendRows(ctx, rows[:2])
	if err != nil {
		t.Fatal(err)
	}
	if t1.Version() != 1 || tbl.Version() != 0 {
		t.Fatalf("versions: new %d old %d", t1.Version(), tbl.Version())
	}
	t2, err := t1.AppendRows(ctx, rows[2:])
	if err != nil {
		t.Fatal(err)
	}
	got := readAllRows(t, t2)
	// Decimals read back with the column scale.
	want := allTypesRows()
	want[2][14] = value.MustParseDecimal("0.0000000000")
	assertRows(t, got, want)
	assertRows(t, readAllRows(t, t1), allTypesRows()[:2])

	// The commit: commitInfo first, WRITE/Append, blind, metrics; one add.
	acts := commitActions(t, tbl.Store(), 1)
	ci := acts[0].CommitInfo
	if ci == nil || ci.Operation != "WRITE" {
		t.Fatalf("first action %+v, want commitInfo WRITE", acts[0])
	}
	if ci.OperationParameters["mode"] != "Append" || ci.OperationParameters["partitionBy"] != "[]" {
		t.Errorf("operationParameters %v", ci.OperationParameters)
	}
	if ci.IsBlindAppend == nil || !*ci.IsBlindAppend {
		t.Errorf("isBlindAppend %v, want true", ci.IsBlindAppend)
	}
	var adds []*txlog.Add
	for _, a := range acts {
		if a.Add != nil {
			adds = append(adds, a.Add)
		}
	}
	if len(adds) != 1 {
		t.Fatalf("%d adds, want 1", len(adds))
	}
	a := adds[0]
	info, err := tbl.Store().Stat(ctx, txlog.DecodePath(a.Path))
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != info.Size || !a.DataChange || a.ModificationTime != clock.UnixMilli() {
		t.Errorf("add %+v; file size %d", a, info.Size)
	}
	if !strings.HasPrefix(a.Path, "part-00000-") || !strings.HasSuffix(a.Path, "-c000.snappy.parquet") {
		t.Errorf("path %q", a.Path)
	}
	wantMetrics := map[string]any{"numFiles": "1", "numOutputRows": "2", "numOutputBytes": fmt.Sprint(a.Size)}
	for k, v := range wantMetrics {
		if ci.OperationMetrics[k] != v {
			t.Errorf("operationMetrics[%s] = %v, want %v", k, ci.OperationMetrics[k], v)
		}
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(a.Stats), &st); err != nil {
		t.Fatalf("stats %q: %v", a.Stats, err)
	}
	if st["numRecords"] != 2.0 {
		t.Errorf("stats %s", a.Stats)
	}
	if _, ok := st["tightBounds"]; ok {
		t.Errorf("tightBounds written on a table without deletion vectors: %s", a.Stats)
	}
}

func TestAppendEmptyAndOrder(t *testing.T) {
	ctx := context.Background()
	tbl := newMemTable(t, schema.NewStruct(field("x", prim(schema.Long), true)))
	t1, err := tbl.AppendRows(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if t1.Version() != 1 || t1.Snapshot().NumFiles() != 0 {
		t.Fatalf("empty append: version %d files %d", t1.Version(), t1.Snapshot().NumFiles())
	}
	// Row order within a file is the input order.
	rows := make([]value.Row, 1000)
	for i := range rows {
		rows[i] = value.Row{int64(1000 - i)}
	}
	t2, err := t1.AppendRows(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	add := t2.Snapshot().Files()[0]
	i := 0
	for r, err := range parquetio.ReadFile(ctx, t2.Store(), txlog.DecodePath(add.Path), t2.Schema()) {
		if err != nil {
			t.Fatal(err)
		}
		if r[0] != int64(1000-i) {
			t.Fatalf("row %d = %v", i, r[0])
		}
		i++
	}
}

func TestPartitionedWritePaths(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(
		field("p", prim(schema.String), true),
		field("n", prim(schema.Integer), true),
		field("v", prim(schema.Long), false),
	)
	tbl := newMemTable(t, sch, WithPartitionColumns("p", "n"))
	cases := []struct {
		p       any
		n       any
		wantDir string // unencoded relative directory
		wantPV  map[string]any
	}{
		{"plain", int32(1), "p=plain/n=1", map[string]any{"p": "plain", "n": "1"}},
		{"a b", int32(2), "p=a b/n=2", map[string]any{"p": "a b", "n": "2"}},
		{"x/y", int32(3), "p=x%2Fy/n=3", map[string]any{"p": "x/y", "n": "3"}},
		{"50%", int32(4), "p=50%25/n=4", map[string]any{"p": "50%", "n": "4"}},
		{"k=v", int32(5), "p=k%3Dv/n=5", map[string]any{"p": "k=v", "n": "5"}},
		{"ünï©ødé 日本", int32(6), "p=ünï©ødé 日本/n=6", map[string]any{"p": "ünï©ødé 日本", "n": "6"}},
		{"a:b?c#d", int32(7), "p=a%3Ab%3Fc%23d/n=7", map[string]any{"p": "a:b?c#d", "n": "7"}},
		{nil, int32(8), "p=__HIVE_DEFAULT_PARTITION__/n=8", map[string]any{"p": nil, "n": "8"}},
		{"", nil, "p=__HIVE_DEFAULT_PARTITION__/n=__HIVE_DEFAULT_PARTITION__", map[string]any{"p": nil, "n": nil}},
	}
	var rows []value.Row
	for i, c := range cases {
		rows = append(rows, value.Row{c.p, c.n, int64(i)})
	}
	t1, err := tbl.AppendRows(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	// Raw commit: partitionValues with JSON null, path encoded exactly once.
	lines := rawCommit(t, t1.Store(), 1)
	byDir := map[string]map[string]any{}
	for _, l := range lines {
		raw, ok := l["add"]
		if !ok {
			continue
		}
		var a struct {
			Path            string         `json:"path"`
			PartitionValues map[string]any `json:"partitionValues"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		dec := txlog.DecodePath(a.Path)
		if enc := encodeAddPath(dec); enc != a.Path {
			t.Errorf("path %q is not the single encoding of %q", a.Path, dec)
		}
		if _, err := t1.Store().Stat(ctx, dec); err != nil {
			t.Errorf("add path %q: decoded key %q: %v", a.Path, dec, err)
		}
		byDir[dec[:strings.LastIndexByte(dec, '/')]] = a.PartitionValues
	}
	for _, c := range cases {
		pv, ok := byDir[c.wantDir]
		if !ok {
			t.Errorf("no file under %q; dirs %v", c.wantDir, keysOf(byDir))
			continue
		}
		if fmt.Sprint(pv) != fmt.Sprint(c.wantPV) {
			t.Errorf("%s: partitionValues %v, want %v", c.wantDir, pv, c.wantPV)
		}
	}
	// Read back: "" reads as null, as the spec says.
	want := make([]value.Row, len(rows))
	for i, r := range rows {
		want[i] = value.Row{r[0], r[1], r[2]}
		if r[0] == "" {
			want[i][0] = nil
		}
	}
	assertRows(t, readAllRows(t, t1), want)
	if got := t1.Snapshot().CommitInfo().OperationParameters["partitionBy"]; got != `["p","n"]` {
		t.Errorf("partitionBy %v", got)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestPartitionByDateAndTimestamp(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(
		field("day", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("dec", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		field("flag", prim(schema.Boolean), true),
		field("v", prim(schema.String), true),
	)
	tbl := newMemTable(t, sch, WithPartitionColumns("day", "ts", "ntz", "dec", "flag"))
	berlin := time.FixedZone("CET", 3600)
	rows := []value.Row{
		{value.DateOf(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)), time.Date(2024, 1, 2, 3, 4, 5, 123456000, berlin),
			time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), value.MustParseDecimal("12.3"), true, "a"},
		{value.Date(-719162), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC),
			value.MustParseDecimal("-0.01"), false, "b"},
		{nil, nil, nil, nil, nil, "c"},
	}
	t1, err := tbl.AppendRows(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	if n := t1.Snapshot().NumFiles(); n != 3 {
		t.Fatalf("%d files, want 3", n)
	}
	want := []value.Row{
		{rows[0][0], rows[0][1].(time.Time).UTC(), rows[0][2], value.MustParseDecimal("12.30"), true, "a"},
		{rows[1][0], rows[1][1], rows[1][2], rows[1][3], false, "b"},
		rows[2],
	}
	assertRows(t, readAllRows(t, t1), want)
	var sawTS bool
	for _, f := range t1.Snapshot().Files() {
		if f.PartitionValues["ts"] == "2024-01-02T02:04:05.123456Z" {
			sawTS = true
			if !strings.Contains(txlog.DecodePath(f.Path), "ts=2024-01-02T02%3A04%3A05.123456Z/ntz=2024-01-02 03%3A04%3A05/") {
				t.Errorf("path %s", f.Path)
			}
		}
	}
	if !sawTS {
		t.Errorf("no file with the UTC timestamp partition value: %v", t1.Snapshot().Files())
	}
}

func TestFileRolling(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("s", prim(schema.String), true))
	tbl := newMemTable(t, sch)
	const n = 40000
	rows := make([]value.Row, n)
	for i := range rows {
		rows[i] = value.Row{int64(i), fmt.Sprintf("value-%d-%x", i, i*7919)}
	}
	const target = 64 << 10
	t1, err := tbl.AppendRows(ctx, rows, WithTargetFileSize(target))
	if err != nil {
		t.Fatal(err)
	}
	files := t1.Snapshot().Files()
	if len(files) < 4 {
		t.Fatalf("%d files for ~%d raw bytes at target %d", len(files), n*30, target)
	}
	var total int64
	for _, f := range files {
		rec, _ := f.NumRecords()
		total += rec
		if f.Size > 3*target {
			t.Errorf("file %s has %d bytes, target %d", f.Path, f.Size, target)
		}
	}
	if total != n {
		t.Fatalf("files hold %d rows, want %d", total, n)
	}
	assertRows(t, readAllRows(t, t1), rows)
	if ci := t1.Snapshot().CommitInfo(); ci.OperationMetrics["numFiles"] != fmt.Sprint(len(files)) {
		t.Errorf("numFiles %v, %d files", ci.OperationMetrics["numFiles"], len(files))
	}
}

func TestSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("name", prim(schema.String), false),
		field("st", schema.NewStruct(field("a", prim(schema.Long), true)), true),
	)
	tbl := newMemTable(t, sch)
	t1, err := tbl.AppendRows(ctx, []value.Row{{int64(1), "one", value.Row{int64(10)}}})
	if err != nil {
		t.Fatal(err)
	}
	// Input with a new top-level column, a new nested field, columns in a
	// different order, and name nullable.
	in := schema.NewStruct(
		field("name", prim(schema.String), true),
		field("st", schema.NewStruct(field("b", prim(schema.String), true), field("a", prim(schema.Long), true)), true),
		field("id", prim(schema.Long), false),
		field("extra", prim(schema.TimestampNTZ), false),
	)
	ntz := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	newRows := []value.Row{{nil, value.Row{"bee", int64(20)}, int64(2), ntz}}

	_, err = t1.AppendRows(ctx, newRows, WithRowSchema(in))
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "WithSchemaEvolution") {
		t.Fatalf("without evolution: %v", err)
	}
	t2, err := t1.AppendRows(ctx, newRows, WithRowSchema(in), WithSchemaEvolution())
	if err != nil {
		t.Fatal(err)
	}
	got := t2.Schema()
	wantSchema := schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("name", prim(schema.String), true),
		field("st", schema.NewStruct(field("a", prim(schema.Long), true), field("b", prim(schema.String), true)), true),
		field("extra", prim(schema.TimestampNTZ), true),
	)
	gs, _ := schema.Marshal(got)
	ws, _ := schema.Marshal(wantSchema)
	if gs != ws {
		t.Fatalf("schema\n got %s\nwant %s", gs, ws)
	}
	// metaData and protocol upgrade in the same commit as the data.
	var sawMeta, sawProto, sawAdd bool
	for _, a := range commitActions(t, t2.Store(), 2) {
		sawMeta = sawMeta || a.Metadata != nil
		sawAdd = sawAdd || a.Add != nil
		if a.Protocol != nil {
			sawProto = a.Protocol.HasReaderFeature(txlog.FeatureTimestampNTZ) && a.Protocol.HasWriterFeature(txlog.FeatureTimestampNTZ) &&
				a.Protocol.HasWriterFeature(txlog.FeatureInvariants) && a.Protocol.HasWriterFeature(txlog.FeatureAppendOnly)
		}
	}
	if !sawMeta || !sawProto || !sawAdd {
		t.Fatalf("commit 2: metaData %v, protocol with timestampNtz %v, add %v", sawMeta, sawProto, sawAdd)
	}
	if t2.Snapshot().Metadata().ID != t1.Snapshot().Metadata().ID {
		t.Error("table id changed")
	}
	assertRows(t, readAllRows(t, t2), []value.Row{
		{int64(1), "one", value.Row{int64(10), nil}, nil},
		{int64(2), nil, value.Row{int64(20), "bee"}, ntz},
	})
	// After evolution, plain appends in table order work.
	t3, err := t2.AppendRows(ctx, []value.Row{{int64(3), nil, nil, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if len(readAllRows(t, t3)) != 3 {
		t.Fatal("third append lost")
	}
	// Type changes are refused even with evolution.
	bad := schema.NewStruct(field("id", prim(schema.String), false), field("name", prim(schema.String), true))
	if _, err := t3.AppendRows(ctx, []value.Row{{"x", "y"}}, WithRowSchema(bad), WithSchemaEvolution()); !errors.Is(err, ErrSchemaMismatch) ||
		!strings.Contains(err.Error(), `"id"`) {
		t.Fatalf("type change: %v", err)
	}
	// A missing NOT NULL column is refused.
	missing := schema.NewStruct(field("name", prim(schema.String), true))
	if _, err := t3.AppendRows(ctx, []value.Row{{"x"}}, WithRowSchema(missing)); !errors.Is(err, ErrSchemaMismatch) ||
		!strings.Contains(err.Error(), `NOT NULL column "id"`) {
		t.Fatalf("missing NOT NULL: %v", err)
	}
	// WriteFiles refuses a schema change.
	if _, err := t3.WriteFiles(ctx, newRows, WithRowSchema(schema.NewStruct(field("id", prim(schema.Long), false), field("new", prim(schema.Long), true))),
		WithSchemaEvolution()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("WriteFiles with schema change: %v", err)
	}
}

func TestOverwrite(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("p", prim(schema.String), true), field("v", prim(schema.Long), true))
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tbl := newMemTable(t, sch, WithPartitionColumns("p"), WithClock(func() time.Time { return clock }))
	t1, err := tbl.AppendRows(ctx, []value.Row{{"a", int64(1)}, {"b", int64(2)}, {nil, int64(3)}})
	if err != nil {
		t.Fatal(err)
	}
	old := t1.Snapshot().Files()
	t2, err := t1.OverwriteRows(ctx, []value.Row{{"c", int64(4)}})
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, t2), []value.Row{{"c", int64(4)}})
	ci := t2.Snapshot().CommitInfo()
	// Spark's WRITE metrics, also for an overwrite (the removes are not
	// counted: DeltaOperationMetrics.WRITE).
	if ci.Operation != "WRITE" || ci.OperationParameters["mode"] != "Overwrite" ||
		!maps.EqualFunc(ci.OperationMetrics, map[string]any{"numFiles": "1", "numOutputRows": "1", "numOutputBytes": fmt.Sprint(t2.Snapshot().Files()[0].Size)},
			func(a, b any) bool { return a == b }) {
		t.Errorf("commitInfo %+v", ci)
	}
	if ci.IsBlindAppend == nil || *ci.IsBlindAppend {
		t.Errorf("overwrite is not a blind append: %v", ci.IsBlindAppend)
	}
	removes := map[string]*txlog.Remove{}
	for _, a := range commitActions(t, t2.Store(), 2) {
		if a.Remove != nil {
			removes[a.Remove.Path] = a.Remove
		}
	}
	if len(removes) != len(old) {
		t.Fatalf("%d removes for %d files", len(removes), len(old))
	}
	for _, f := range old {
		r := removes[f.Path]
		if r == nil {
			t.Fatalf("no remove for %s", f.Path)
		}
		if !r.DataChange || r.DeletionTimestamp == nil || *r.DeletionTimestamp != clock.UnixMilli() ||
			r.ExtendedFileMetadata == nil || !*r.ExtendedFileMetadata || r.Size == nil || *r.Size != f.Size ||
			fmt.Sprint(r.PartitionValues) != fmt.Sprint(f.PartitionValues) {
			t.Errorf("remove %+v for add %+v", r, f)
		}
	}
	// The null partition value of a remove is JSON null too.
	for _, l := range rawCommit(t, t2.Store(), 2) {
		if raw, ok := l["remove"]; ok && strings.Contains(string(raw), "__HIVE_DEFAULT_PARTITION__") &&
			!strings.Contains(string(raw), `"partitionValues":{"p":null}`) {
			t.Errorf("remove of the null partition: %s", raw)
		}
	}
	// Append-only tables refuse overwrites.
	ao := newMemTable(t, sch, WithProperties(map[string]string{"delta.appendOnly": "true"}))
	if _, err := ao.OverwriteRows(ctx, nil); !errors.Is(err, ErrAppendOnly) {
		t.Fatalf("overwrite of append-only table: %v", err)
	}
}

func TestReplaceWhere(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("day", prim(schema.Date), true), field("region", prim(schema.String), true), field("v", prim(schema.Long), true))
	tbl := newMemTable(t, sch, WithPartitionColumns("day", "region"))
	d1 := value.DateOf(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	d2 := d1 + 1
	t1, err := tbl.AppendRows(ctx, []value.Row{
		{d1, "eu", int64(1)}, {d1, "us", int64(2)}, {d2, "eu", int64(3)}, {d2, nil, int64(4)},
	})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := t1.OverwriteRows(ctx, []value.Row{{d1, "eu", int64(10)}, {d1, "eu", int64(11)}},
		WithReplaceWhere(And(Col("day").Eq(d1), Col("region").Eq("eu"))))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, t2), []value.Row{
		{d1, "eu", int64(10)}, {d1, "eu", int64(11)}, {d1, "us", int64(2)}, {d2, "eu", int64(3)}, {d2, nil, int64(4)},
	})
	ci := t2.Snapshot().CommitInfo()
	if ci.OperationParameters["mode"] != "Overwrite" || !strings.Contains(fmt.Sprint(ci.OperationParameters["predicate"]), "day = DATE '2024-01-01'") {
		t.Errorf("operationParameters %v", ci.OperationParameters)
	}
	// Null partitions can be replaced with IsNull.
	t3, err := t2.OverwriteRows(ctx, []value.Row{{d2, nil, int64(40)}}, WithReplaceWhere(Col("region").IsNull()))
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, t3), []value.Row{
		{d1, "eu", int64(10)}, {d1, "eu", int64(11)}, {d1, "us", int64(2)}, {d2, "eu", int64(3)}, {d2, nil, int64(40)},
	})

	before := dataKeys(t, t3.Store())
	bad := []struct {
		name string
		rows []value.Row
		pred Expr
		want string
	}{
		{"row outside predicate", []value.Row{{d1, "eu", int64(1)}, {d2, "eu", int64(2)}}, Col("day").Eq(d1), "do not satisfy"},
		{"data column", []value.Row{{d1, "eu", int64(1)}}, Col("v").Gt(0), "not a partition column"},
		{"unknown column", []value.Row{{d1, "eu", int64(1)}}, Col("nope").Eq(1), "nope"},
		{"bad literal", []value.Row{{d1, "eu", int64(1)}}, Col("day").Eq(true), "does not fit"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := t3.OverwriteRows(ctx, c.rows, WithReplaceWhere(c.pred))
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalidArgument with %q", err, c.want)
			}
		})
	}
	if after := dataKeys(t, t3.Store()); len(after) != len(before) {
		t.Fatalf("failed overwrites left files: %d before, %d after", len(before), len(after))
	}
	if _, err := t3.AppendRows(ctx, nil, WithReplaceWhere(Col("day").Eq(d1))); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("append with replaceWhere: %v", err)
	}
	unpart := newMemTable(t, schema.NewStruct(field("v", prim(schema.Long), true)))
	if _, err := unpart.OverwriteRows(ctx, nil, WithReplaceWhere(Col("v").Eq(1))); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("replaceWhere on unpartitioned table: %v", err)
	}
}

func TestConcurrentReplaceWhereSamePartition(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("p", prim(schema.Long), true), field("v", prim(schema.String), true))
	for _, name := range []string{"same partition", "different partitions"} {
		t.Run(name, func(t *testing.T) {
			tbl := newMemTable(t, sch, WithPartitionColumns("p"))
			base, err := tbl.AppendRows(ctx, []value.Row{{int64(1), "old1"}, {int64(2), "old2"}})
			if err != nil {
				t.Fatal(err)
			}
			same := name == "same partition"
			writers := 2
			var wg sync.WaitGroup
			errs := make([]error, writers)
			start := make(chan struct{})
			for w := range writers {
				p := int64(1)
				if !same {
					p = int64(w + 1)
				}
				wg.Go(func() {
					<-start
					_, errs[w] = base.OverwriteRows(ctx, []value.Row{{p, fmt.Sprintf("w%d", w)}}, WithReplaceWhere(Col("p").Eq(p)))
				})
			}
			close(start)
			wg.Wait()
			latest, err := base.Refresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !same {
				for _, err := range errs {
					if err != nil {
						t.Fatalf("disjoint replaceWhere overwrites conflicted: %v", err)
					}
				}
				assertRows(t, readAllRows(t, latest), []value.Row{{int64(1), "w0"}, {int64(2), "w1"}})
				return
			}
			var wins, losses int
			for _, err := range errs {
				switch {
				case err == nil:
					wins++
				case errors.Is(err, txlog.ErrConcurrentDeleteRead):
					losses++
				default:
					t.Fatalf("unexpected error %v", err)
				}
			}
			if wins != 1 || losses != 1 {
				t.Fatalf("wins %d losses %d: %v", wins, losses, errs)
			}
			got := readAllRows(t, latest)
			if len(got) != 2 || got[0][0] != int64(1) || got[1][1] != "old2" {
				t.Fatalf("rows %v", got)
			}
			// The loser's data file was deleted: only live files remain
			// besides the replaced one.
			if n := len(dataKeys(t, latest.Store())); n != 3 {
				t.Errorf("%d data files in the store, want 3 (2 live + 1 replaced): %v", n, dataKeys(t, latest.Store()))
			}
		})
	}
}

func TestConcurrentBlindAppends(t *testing.T) {
	ctx := context.Background()
	tbl := newMemTable(t, schema.NewStruct(field("v", prim(schema.Long), true)))
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			_, errs[w] = tbl.AppendRows(ctx, []value.Row{{int64(w)}})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	latest, err := tbl.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if latest.Version() != writers || len(readAllRows(t, latest)) != writers {
		t.Fatalf("version %d", latest.Version())
	}
}

// TestBadInputFirstError: with several bad rows, the error names the first
// bad row, and within it the first bad data column, then the partition
// column, as a row-by-row check would, across validation blocks of 256
// rows (700 rows: three blocks).
func TestBadInputFirstError(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("p", prim(schema.String), false),
		field("small", prim(schema.Byte), true),
		field("dec", &schema.DecimalType{Precision: 5, Scale: 2}, true),
	)
	tbl := newMemTable(t, sch, WithPartitionColumns("p"))
	badID := func(r value.Row) { r[0] = "x" }
	nullP := func(r value.Row) { r[1] = nil }
	badSmall := func(r value.Row) { r[2] = 300 }
	badDec := func(r value.Row) { r[3] = value.MustParseDecimal("1000.00") }
	cases := []struct {
		name  string
		bad   map[int][]func(value.Row)
		short int // a row of one value, -1 none
		row   int
		want  string
	}{
		{"earlier row, later column", map[int][]func(value.Row){299: {badDec}, 300: {badSmall}}, -1, 299, `column "dec"`},
		{"one row, two columns", map[int][]func(value.Row){300: {badSmall, badID}}, -1, 300, `column "id"`},
		{"data before partition", map[int][]func(value.Row){300: {nullP, badSmall}}, -1, 300, `column "small"`},
		{"partition in an earlier row", map[int][]func(value.Row){299: {nullP}, 300: {badID}}, -1, 299, `column "p"`},
		{"short row first", map[int][]func(value.Row){257: {badID}}, 256, 256, "row has 1 values"},
		{"bad row before short", map[int][]func(value.Row){255: {nullP}}, 256, 255, `column "p"`},
		{"first block", map[int][]func(value.Row){10: {badSmall}, 600: {badID}}, -1, 10, `column "small"`},
		{"last block", map[int][]func(value.Row){699: {badDec}}, -1, 699, `column "dec"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := make([]value.Row, 700)
			for i := range rows {
				rows[i] = value.Row{int64(i), fmt.Sprint("k", i%3), int8(i % 100), nil}
				for _, f := range c.bad[i] {
					f(rows[i])
				}
			}
			if c.short >= 0 {
				rows[c.short] = value.Row{int64(1)}
			}
			_, err := tbl.AppendRows(ctx, rows)
			var re *RowError
			if !errors.As(err, &re) || re.Row != c.row || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want *RowError for row %d naming %s", err, c.row, c.want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("p", prim(schema.String), false),
		field("small", prim(schema.Byte), true),
		field("st", schema.NewStruct(field("req", prim(schema.String), false)), true),
		field("arr", &schema.ArrayType{ElementType: prim(schema.Long), ContainsNull: false}, true),
		field("dec", &schema.DecimalType{Precision: 5, Scale: 2}, true),
	)
	tbl := newMemTable(t, sch, WithPartitionColumns("p"))
	ok := value.Row{int64(1), "a", nil, nil, nil, nil}
	cases := []struct {
		name    string
		bad     value.Row
		wantErr error
		want    string
	}{
		{"short row", value.Row{int64(1)}, ErrInvalidArgument, "row has 1 values"},
		{"null in NOT NULL", value.Row{nil, "a", nil, nil, nil, nil}, ErrInvalidArgument, `column "id"`},
		{"wrong Go type", value.Row{"1", "a", nil, nil, nil, nil}, ErrSchemaMismatch, `column "id"`},
		{"out of range", value.Row{int64(1), "a", 300, nil, nil, nil}, ErrInvalidArgument, `column "small"`},
		{"nested NOT NULL", value.Row{int64(1), "a", nil, value.Row{nil}, nil, nil}, ErrInvalidArgument, `column "req"`},
		{"struct arity", value.Row{int64(1), "a", nil, value.Row{"x", "y"}, nil, nil}, ErrInvalidArgument, "struct value has 2 fields"},
		{"null element", value.Row{int64(1), "a", nil, nil, []any{int64(1), nil}, nil}, ErrInvalidArgument, "element 1"},
		{"decimal too wide", value.Row{int64(1), "a", nil, nil, nil, value.MustParseDecimal("1000.00")}, ErrInvalidArgument, `column "dec"`},
		{"decimal scale", value.Row{int64(1), "a", nil, nil, nil, value.MustParseDecimal("1.001")}, ErrInvalidArgument, `column "dec"`},
		{"null partition NOT NULL", value.Row{int64(1), nil, nil, nil, nil, nil}, ErrInvalidArgument, `column "p"`},
		{"empty partition NOT NULL", value.Row{int64(1), "", nil, nil, nil, nil}, ErrInvalidArgument, `column "p"`},
		{"partition wrong type", value.Row{int64(1), 5, nil, nil, nil, nil}, ErrSchemaMismatch, `"p"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, write := range []func([]value.Row) error{
				func(r []value.Row) error { _, err := tbl.AppendRows(ctx, r); return err },
				func(r []value.Row) error { _, err := tbl.OverwriteRows(ctx, r); return err },
				func(r []value.Row) error { _, err := tbl.WriteFiles(ctx, r); return err },
			} {
				err := write([]value.Row{ok, ok, c.bad})
				var re *RowError
				if !errors.As(err, &re) || re.Row != 2 || !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("err = %v; want *RowError for row 2 wrapping %v and naming %s", err, c.wantErr, c.want)
				}
			}
		})
	}
	if keys := dataKeys(t, tbl.Store()); len(keys) != 0 {
		t.Errorf("bad writes left data files: %v", keys)
	}
	if latest, _ := tbl.Refresh(ctx); latest.Version() != 0 {
		t.Errorf("bad writes committed: version %d", latest.Version())
	}
	// Create refuses partition columns outside the schema and nested ones.
	for _, pc := range []string{"nope", "st", "id"} {
		opts := []Option{WithStore(objectstore.NewMem("bad-create-" + pc)), WithPartitionColumns(pc)}
		s := sch
		if pc == "id" {
			s = schema.NewStruct(field("id", prim(schema.Long), false))
		}
		if _, err := Create(ctx, "", s, opts...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Create partitioned by %q: %v", pc, err)
		}
	}
}

func TestWriteNeverPanics(t *testing.T) {
	ctx := context.Background()
	tbl := newMemTable(t, allTypesSchema())
	weird := []any{nil, 1, int64(1), "s", []byte("b"), 1.5, float32(1), true, struct{}{}, map[string]int{}, []any{1},
		value.Row{}, []value.MapEntry{{}}, time.Time{}, value.Decimal{}, (*value.Decimal)(nil), make(chan int), func() {}}
	for i := range len(allTypesSchema().Fields) {
		for _, w := range weird {
			row := slices_clone(allTypesRows()[0])
			row[i] = w
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("panic for column %d value %T: %v", i, w, p)
					}
				}()
				_, _ = tbl.WriteFiles(ctx, []value.Row{row})
			}()
		}
	}
}

func slices_clone(r value.Row) value.Row { return append(value.Row(nil), r...) }

func TestWithTxn(t *testing.T) {
	ctx := context.Background()
	tbl := newMemTable(t, schema.NewStruct(field("v", prim(schema.Long), true)))
	t1, err := tbl.AppendRows(ctx, []value.Row{{int64(1)}}, WithTxn("app", 5))
	if err != nil {
		t.Fatal(err)
	}
	if got := t1.Snapshot().TxnVersion("app"); got != 5 {
		t.Fatalf("TxnVersion %d", got)
	}
	txns := t1.Snapshot().Txns()
	if txns["app"].LastUpdated == nil {
		t.Error("txn without lastUpdated")
	}
	// Replaying the same or an older version writes nothing.
	for _, v := range []int64{5, 4} {
		t2, err := t1.AppendRows(ctx, []value.Row{{int64(2)}}, WithTxn("app", v))
		if err != nil || t2.Version() != t1.Version() {
			t.Fatalf("replay of version %d: version %d err %v", v, t2.Version(), err)
		}
	}
	if n := len(dataKeys(t, t1.Store())); n != 1 {
		t.Fatalf("%d data files after skipped writes", n)
	}
	// Two writers of the same appId from one snapshot: one fails with
	// ErrConcurrentTransaction.
	_, errA := t1.AppendRows(ctx, []value.Row{{int64(3)}}, WithTxn("app", 6))
	_, errB := t1.AppendRows(ctx, []value.Row{{int64(4)}}, WithTxn("app", 7))
	if errA != nil || !errors.Is(errB, txlog.ErrConcurrentTransaction) {
		t.Fatalf("errA %v errB %v", errA, errB)
	}
	// Other appIds do not conflict.
	if _, err := t1.AppendRows(ctx, []value.Row{{int64(5)}}, WithTxn("other", 1)); err != nil {
		t.Fatal(err)
	}
}

func TestWriteFilesAppendFiles(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("p", prim(schema.Long), true), field("v", prim(schema.String), true))
	tbl := newMemTable(t, sch, WithPartitionColumns("p"))
	adds, err := tbl.WriteFiles(ctx, []value.Row{{int64(1), "a"}, {int64(2), "b"}, {int64(1), "c"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(adds) != 2 {
		t.Fatalf("%d adds", len(adds))
	}
	if tbl2, _ := tbl.Refresh(ctx); tbl2.Version() != 0 {
		t.Fatal("WriteFiles committed")
	}
	// The streaming sink's path: NewTransaction + Commit.
	tx := tbl.NewTransaction("STREAMING UPDATE")
	if v := tx.TxnVersion("q"); v != -1 {
		t.Fatalf("TxnVersion %d", v)
	}
	now := time.Now().UnixMilli()
	tx.Add(txlog.Action{Txn: &txlog.Txn{AppID: "q", Version: 0, LastUpdated: &now}})
	for _, a := range adds {
		tx.Add(txlog.Action{Add: a})
	}
	t1, _, err := tbl.Commit(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, t1), []value.Row{{int64(1), "a"}, {int64(2), "b"}, {int64(1), "c"}})
	// AppendFiles commits WRITE with metrics.
	more, err := t1.WriteFiles(ctx, []value.Row{{int64(3), "d"}})
	if err != nil {
		t.Fatal(err)
	}
	t2, err := t1.AppendFiles(ctx, more, WithTxn("q", 1), WithOperationParameters(map[string]string{"note": "x"}))
	if err != nil {
		t.Fatal(err)
	}
	ci := t2.Snapshot().CommitInfo()
	if ci.OperationParameters["note"] != "x" || ci.OperationParameters["mode"] != "Append" || ci.OperationMetrics["numOutputRows"] != "1" {
		t.Errorf("commitInfo %+v", ci)
	}
	if t2.Snapshot().TxnVersion("q") != 1 {
		t.Error("txn not committed")
	}
}

// TestCheckpointAfterWrites: the due checkpoints of a table's writes are
// written in the background by default (in the store after Close) and
// inside the commit WithSyncCheckpoints (in the store at once).
func TestCheckpointAfterWrites(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("p", prim(schema.String), true), field("v", prim(schema.Long), true))
	for _, tc := range []struct {
		name string
		opts []Option
		sync bool
	}{
		{"background (default)", nil, false},
		{"WithSyncCheckpoints", []Option{WithSyncCheckpoints()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := newMemTable(t, sch, append([]Option{WithPartitionColumns("p"), WithProperties(map[string]string{"delta.checkpointInterval": "2"})}, tc.opts...)...)
			cur := tbl
			var want []value.Row
			for i := range 5 {
				rows := []value.Row{{fmt.Sprintf("p%d", i%2), int64(i)}, {nil, int64(100 + i)}}
				want = append(want, rows...)
				var err error
				if cur, err = cur.AppendRows(ctx, rows); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.sync {
				if err := cur.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			st, ok := cur.CheckpointStats()
			if ok == tc.sync || !tc.sync && (st.Queued != 2 || st.Written+st.Coalesced != 2 || st.LastVersion != 4) {
				t.Fatalf("checkpoint stats %+v (background %v)", st, ok)
			}
			reopened, err := Open(ctx, "", WithStore(tbl.Store()))
			if err != nil {
				t.Fatal(err)
			}
			if reopened.Snapshot().CheckpointVersion() != 4 {
				t.Fatalf("checkpoint version %d", reopened.Snapshot().CheckpointVersion())
			}
			assertRows(t, readAllRows(t, reopened), want)
		})
	}
}

func TestWriteFailureCleansUp(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("p", prim(schema.Long), true), field("v", prim(schema.String), true))
	faulty := faultstore.New(objectstore.NewMem(t.Name()))
	tbl, err := Create(ctx, "", sch, WithStore(faulty), WithPartitionColumns("p"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []value.Row
	for p := range 6 {
		rows = append(rows, value.Row{int64(p), "x"})
	}
	// The third data file's Put fails: no commit, and the files already
	// written are deleted.
	faulty.Inject(faultstore.Fault{Op: faultstore.OpPut, Nth: 3, Kind: faultstore.Fail})
	_, err = tbl.AppendRows(ctx, rows, WithWriteConcurrency(1))
	if !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("err %v, want the injected fault", err)
	}
	if keys := dataKeys(t, faulty.Inner()); len(keys) != 0 {
		t.Errorf("data files left after a failed write: %v", keys)
	}
	if latest, _ := tbl.Refresh(ctx); latest.Version() != 0 {
		t.Errorf("failed write committed version %d", latest.Version())
	}
	// A cancelled context writes and commits nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tbl.AppendRows(cctx, rows); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if keys := dataKeys(t, faulty.Inner()); len(keys) != 0 {
		t.Errorf("data files left after a cancelled write: %v", keys)
	}
	// The table is still writable afterwards.
	t1, err := tbl.AppendRows(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, t1), rows)
}

func TestFloatPartitionValues(t *testing.T) {
	for _, c := range []struct {
		typ  schema.Type
		v    any
		want string
	}{
		{prim(schema.Double), math.Inf(1), "Infinity"},
		{prim(schema.Double), math.Inf(-1), "-Infinity"},
		{prim(schema.Double), math.NaN(), "NaN"},
		{prim(schema.Double), 0.1, "0.1"},
		{prim(schema.Float), float32(0.1), "0.1"},
		{prim(schema.Double), 1e21, "1e+21"},
	} {
		s, ok, err := SerializePartitionValue(c.typ, c.v)
		if err != nil || !ok || s != c.want {
			t.Errorf("%v: %q %v %v, want %q", c.v, s, ok, err, c.want)
			continue
		}
		back, err := ParsePartitionValue(c.typ, s)
		if err != nil || fmt.Sprint(back) != fmt.Sprint(c.v) {
			t.Errorf("%q parses to %v (%v), want %v", s, back, err, c.v)
		}
	}
}

func TestAppendFilesRefusesForeignAdds(t *testing.T) {
	ctx := context.Background()
	tbl := newMemTable(t, schema.NewStruct(field("p", prim(schema.Long), true), field("v", prim(schema.String), true)), WithPartitionColumns("p"))
	for _, adds := range [][]*txlog.Add{
		{nil},
		{{Path: "a.parquet", PartitionValues: map[string]string{}}},
		{{Path: "a.parquet", PartitionValues: map[string]string{"q": "1"}}},
		{{Path: "a.parquet", PartitionValues: map[string]string{"p": "1", "q": "1"}}},
	} {
		if _, err := tbl.AppendFiles(ctx, adds); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("AppendFiles(%v): %v", adds, err)
		}
	}
}
