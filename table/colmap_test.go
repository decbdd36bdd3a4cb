package table

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Column mapping writes (spec "Column Mapping"): tables deltakit creates in
// name and id mode get appends (one adding a column), DELETE, UPDATE,
// RENAME COLUMN, DROP COLUMNS, a column re-added under a dropped name,
// OPTIMIZE; every reader must see the reference rows computed here from
// the inputs, under the logical names.

// colmapRef is the reference table: rows as maps by logical column name
// (the struct column s as a map too), renamed and dropped along with the
// table.
type colmapRef []map[string]any

func (r colmapRef) rename(from, to string) {
	for _, m := range r {
		m[to] = m[from]
		delete(m, from)
	}
}

func (r colmapRef) filter(keep func(map[string]any) bool) colmapRef {
	var out colmapRef
	for _, m := range r {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// rows renders the reference in the order of sch's columns (struct
// fields by name too); absent columns are null.
func (r colmapRef) rows(sch *schema.StructType) []value.Row {
	var conv func(st *schema.StructType, m map[string]any) value.Row
	conv = func(st *schema.StructType, m map[string]any) value.Row {
		row := make(value.Row, len(st.Fields))
		for i, f := range st.Fields {
			v := m[f.Name]
			if sub, ok := f.Type.(*schema.StructType); ok && v != nil {
				v = conv(sub, v.(map[string]any))
			}
			row[i] = v
		}
		return row
	}
	out := make([]value.Row, len(r))
	for i, m := range r {
		out[i] = conv(sch, m)
	}
	return out
}

func colmapSchema() *schema.StructType {
	return schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("city", schema.Primitive(schema.String), true),
		schema.NewField("v", schema.Primitive(schema.Double), true),
		schema.NewField("s", schema.NewStruct(
			schema.NewField("a", schema.Primitive(schema.Long), true),
			schema.NewField("b", schema.Primitive(schema.String), true)), true),
	)
}

// colmapInput returns ids [from, to) as rows of colmapSchema and as
// reference maps.
func colmapInput(from, to int) ([]value.Row, colmapRef) {
	cities := []string{"ams", "ber", "cph"}
	var rows []value.Row
	var ref colmapRef
	for i := from; i < to; i++ {
		id := int64(i)
		city, v := cities[i%3], float64(i)/4
		rows = append(rows, value.Row{id, city, v, value.Row{id * 10, fmt.Sprint("b", i)}})
		ref = append(ref, map[string]any{"id": id, "city": city, "v": v, "s": map[string]any{"a": id * 10, "b": fmt.Sprint("b", i)}})
	}
	return rows, ref
}

// colmapTable is one table the column mapping scenario built.
type colmapTable struct {
	name string
	tbl  *Table
	ref  colmapRef
}

// writeColmapTables runs the scenario on a table per mode (name, id, and
// "enabled": created without column mapping, mode name set by
// SetProperties after the first appends) and layout (unpartitioned;
// partitioned by city with deletion vectors, which makes the enabled
// table's upgrade the table features one).
func writeColmapTables(t *testing.T, newStore func(name string) objectstore.Store) []colmapTable {
	ctx := context.Background()
	var out []colmapTable
	for _, mode := range []string{"name", "id", "enabled"} {
		for _, partitioned := range []bool{false, true} {
			name := fmt.Sprintf("colmap-%s-part%v", mode, partitioned)
			props := map[string]string{txlog.PropColumnMappingMode: mode}
			if mode == "enabled" {
				props = map[string]string{}
			}
			opts := []Option{WithStore(newStore(name))}
			if partitioned {
				opts = append(opts, WithPartitionColumns("city"))
				props["delta.enableDeletionVectors"] = "true"
			}
			opts = append(opts, WithProperties(props))
			tbl, err := Create(ctx, "", colmapSchema(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, colmapTable{name, runColmapScenario(t, tbl, mode), nil})
			out[len(out)-1].ref = colmapScenarioRef()
		}
	}
	return out
}

// runColmapScenario runs the writes of the scenario on tbl (created with
// colmapSchema) and checks the log on the way; colmapScenarioRef is what
// the table then holds. Mode "enabled" sets delta.columnMapping.mode=name
// after the first two appends.
func runColmapScenario(t *testing.T, tbl *Table, mode string) *Table {
	t.Helper()
	ctx := context.Background()
	must := func(nt *Table, err error) *Table {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return nt
	}
	mustDML := func(nt *Table, res *DMLResult, err error) *Table {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !res.Committed {
			t.Fatalf("DML committed nothing: %+v", res)
		}
		return nt
	}
	rows, _ := colmapInput(0, 30)
	tbl = must(tbl.AppendRows(ctx, rows[:15]))
	tbl = must(tbl.AppendRows(ctx, rows[15:]))
	enabled := mode == "enabled"
	if enabled {
		tbl = must(tbl.SetProperties(ctx, map[string]string{txlog.PropColumnMappingMode: "name"}))
		mode = "name"
	}
	// A new column by schema evolution.
	withExtra := colmapSchema()
	withExtra.Fields = append(withExtra.Fields, schema.NewField("extra", schema.Primitive(schema.String), true))
	rows, _ = colmapInput(30, 40)
	for i := range rows {
		rows[i] = append(rows[i], fmt.Sprint("x", 30+i))
	}
	tbl = must(tbl.AppendRows(ctx, rows, WithRowSchema(withExtra), WithSchemaEvolution()))
	tbl = mustDML(tbl.Delete(ctx, Col("id").Lt(5)))
	tbl = mustDML(tbl.Update(ctx, Col("id").Ge(35), map[string]Value{"v": Times(Col("v"), -1)}))
	tbl = mustDML(tbl.Update(ctx, Col("id").Lt(8), map[string]Value{"city": Lit("osl")}))
	tbl = must(tbl.RenameColumn(ctx, "v", "value"))
	tbl = must(tbl.RenameColumn(ctx, "s.b", "bee"))
	tbl = must(tbl.RenameColumn(ctx, "city", "town"))
	tbl = must(tbl.DropColumn(ctx, "extra"))
	// Appends after: the dropped name comes back as a new column (a new
	// physical name: old files' values of the dropped column stay hidden).
	after := &schema.StructType{Fields: append(slices.Clone(tbl.Schema().Fields), schema.NewField("extra", schema.Primitive(schema.Long), true))}
	var more []value.Row
	for i := 40; i < 46; i++ {
		more = append(more, value.Row{int64(i), "ams", float64(i) / 4, value.Row{int64(i) * 10, fmt.Sprint("b", i)}, int64(i)})
	}
	tbl = must(tbl.AppendRows(ctx, more, WithRowSchema(after), WithSchemaEvolution()))
	// DML on the renamed columns (stats keyed by physical names skip files).
	tbl = mustDML(tbl.Delete(ctx, Or(Col("value").Between(5.0, 6.0), Col("s").Field("bee").Eq("b20"))))
	tbl = mustDML(tbl.Update(ctx, Col("town").Eq("osl"), map[string]Value{"extra": Lit(int64(-1))}))
	// MERGE on the renamed columns: id 10 updated, 11 deleted, 50 inserted.
	msrc := MergeRows(schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("value", schema.Primitive(schema.Double), true)),
		[]value.Row{{int64(10), 99.5}, {int64(11), -1.0}, {int64(50), 1.5}})
	nt, mres, err := tbl.Merge(ctx, NewMerge(msrc, MergeOn("id")).
		WhenMatched().If(Source("value").Lt(0.0)).Delete().
		WhenMatched().Update(map[string]Value{"value": Source("value")}).
		WhenNotMatched().Insert(map[string]Value{"id": Source("id"), "value": Source("value"), "town": Lit("zrh")}))
	if err != nil {
		t.Fatal(err)
	}
	if mres.UpdatedRows != 1 || mres.DeletedRows != 1 || mres.InsertedRows != 1 {
		t.Fatalf("merge: %+v", mres)
	}
	tbl = nt
	if tbl, _, err = tbl.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	checkColmapLog(t, tbl, mode, enabled)
	return tbl
}

// colmapScenarioRef is the reference of runColmapScenario, computed from
// the inputs.
func colmapScenarioRef() colmapRef {
	_, ref := colmapInput(0, 40)
	for _, m := range ref[30:] {
		m["extra"] = fmt.Sprint("x", m["id"])
	}
	ref = ref.filter(func(m map[string]any) bool { return m["id"].(int64) >= 5 })
	for _, m := range ref {
		id := m["id"].(int64)
		if id >= 35 {
			m["v"] = -m["v"].(float64)
		}
		if id < 8 {
			m["city"] = "osl"
		}
	}
	ref.rename("v", "value")
	for _, m := range ref {
		s := m["s"].(map[string]any)
		s["bee"] = s["b"]
		delete(s, "b")
	}
	ref.rename("city", "town")
	for _, m := range ref {
		delete(m, "extra")
	}
	for i := 40; i < 46; i++ {
		id := int64(i)
		ref = append(ref, map[string]any{"id": id, "town": "ams", "value": float64(i) / 4,
			"s": map[string]any{"a": id * 10, "bee": fmt.Sprint("b", i)}, "extra": id})
	}
	ref = ref.filter(func(m map[string]any) bool {
		v := m["value"].(float64)
		return !(v >= 5 && v <= 6) && m["s"].(map[string]any)["bee"] != "b20"
	})
	for _, m := range ref {
		if m["town"] == "osl" {
			m["extra"] = int64(-1)
		}
		if m["id"] == int64(10) {
			m["value"] = 99.5
		}
	}
	ref = ref.filter(func(m map[string]any) bool { return m["id"] != int64(11) })
	ref = append(ref, map[string]any{"id": int64(50), "town": "zrh", "value": 1.5, "s": nil, "extra": nil})
	return ref
}

// checkColmapLog checks the table's log: every field has an id and a
// physical name, maxColumnId is the highest id, and every live file's
// partition values, stats and Parquet columns use physical names (and
// field ids in id mode). On a table whose column mapping was enabled
// after creation (enabled), the columns of colmapSchema keep their
// original names as physical names.
func checkColmapLog(t *testing.T, tbl *Table, mode string, enabled bool) {
	t.Helper()
	ctx := context.Background()
	sch := tbl.Schema()
	original := map[string]bool{}
	if enabled {
		walkFields(colmapSchema(), func(f *schema.StructField) { original[f.Name] = true })
	}
	physical := func(pn string) bool { return strings.HasPrefix(pn, "col-") || original[pn] }
	var maxID int64
	phys := map[string]bool{}
	walkFields(sch, func(f *schema.StructField) {
		id, ok := f.FieldID()
		pn, _ := f.Metadata[schema.MetaColumnMappingName].(string)
		if !ok || !physical(pn) {
			t.Errorf("field %s: id %v (%v), physical name %q", f.Name, id, ok, pn)
		}
		if phys[pn] {
			t.Errorf("physical name %s twice", pn)
		}
		phys[pn] = true
		maxID = max(maxID, id)
	})
	conf := tbl.Snapshot().Metadata().Configuration
	// 6 fields at creation (s and its two), extra (3 + ... ): ids 1..7,
	// the re-added extra gets 8.
	if got := conf[PropColumnMappingMaxColumnID]; got != "8" || maxID != 8 {
		t.Errorf("maxColumnId %q, highest id %d, want 8", got, maxID)
	}
	if p := tbl.Snapshot().Protocol(); !slices.Contains(p.EffectiveWriterFeatures(), txlog.FeatureColumnMapping) {
		t.Errorf("protocol %+v does not support columnMapping", p)
	}
	top := map[string]*schema.StructField{}
	for _, f := range sch.Fields {
		top[f.Name] = f
	}
	for _, a := range tbl.Snapshot().Files() {
		for k := range a.PartitionValues {
			if k != top["town"].PhysicalName(mode) {
				t.Errorf("file %s: partitionValues key %q, want the physical name of town", a.Path, k)
			}
		}
		var st struct {
			MinValues map[string]any `json:"minValues"`
		}
		if err := json.Unmarshal([]byte(a.Stats), &st); err != nil {
			t.Fatal(err)
		}
		for k := range st.MinValues {
			if !physical(k) {
				t.Errorf("file %s: stats key %q is not a physical name", a.Path, k)
			}
		}
		if _, ok := st.MinValues[top["id"].PhysicalName(mode)]; !ok {
			t.Errorf("file %s: no minValues of id under its physical name: %s", a.Path, a.Stats)
		}
		key, _ := storeKey(tbl.Store().URI(), txlog.DecodePath(a.Path))
		data, err := tbl.Store().Get(ctx, key, objectstore.FullObject)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var walk func(fs []parquet.Field)
		walk = func(fs []parquet.Field) {
			for _, f := range fs {
				if !physical(f.Name()) {
					t.Errorf("file %s: Parquet column %q is not a physical name", a.Path, f.Name())
				}
				if id := f.ID(); (id != 0) != (mode == "id") {
					t.Errorf("file %s: column %s has field id %d in mode %s", a.Path, f.Name(), id, mode)
				}
				if !f.Leaf() {
					walk(f.Fields())
				}
			}
		}
		walk(pf.Schema().Fields())
	}
}

// TestColumnMappingWrites: the scenario's tables read back by deltakit
// (Scan, ScanArrow's rows) to the reference.
func TestColumnMappingWrites(t *testing.T) {
	tables := writeColmapTables(t, func(name string) objectstore.Store { return objectstore.NewMem(name) })
	for _, ct := range tables {
		t.Run(ct.name, func(t *testing.T) {
			want := ct.ref.rows(ct.tbl.Schema())
			if got, w := sparkRefRows(scanAll(t, ct.tbl)), sparkRefRows(want); !slices.Equal(got, w) {
				t.Fatalf("deltakit read %d rows, want %d:\n got %v\nwant %v", len(got), len(w), got, w)
			}
			// ScanArrow reads the same rows (Arrow field names checked by
			// arrowRows against the logical schema).
			ar, err := arrowRows(t, ct.tbl)
			if err != nil {
				t.Fatal(err)
			}
			if got, w := sparkRefRows(ar), sparkRefRows(want); !slices.Equal(got, w) {
				t.Errorf("ScanArrow read %v, want %v", got, w)
			}
			names := []string{}
			for _, f := range ct.tbl.Schema().Fields {
				names = append(names, f.Name)
			}
			if want := []string{"id", "town", "value", "s", "extra"}; !slices.Equal(names, want) {
				t.Errorf("columns %v, want %v", names, want)
			}
			// A filter on a renamed column.
			var n int
			for _, err := range ct.tbl.Scan(context.Background(), WithFilter(Col("value").Lt(0.0))) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if w := len(ct.ref.filter(func(m map[string]any) bool { return m["value"].(float64) < 0 })); n != w || n == 0 {
				t.Errorf("value < 0: %d rows, want %d", n, w)
			}
		})
	}
}

// TestColumnMappingRefusals: bad RENAME/DROP and column mapping modes are
// refused, naming the reason, and commit nothing.
func TestColumnMappingRefusals(t *testing.T) {
	ctx := context.Background()
	plain, _ := maintTable(t, false, nil)
	if _, err := plain.RenameColumn(ctx, "v", "w"); !errors.Is(err, ErrColumnMappingRequired) {
		t.Errorf("rename without column mapping: %v", err)
	}
	if _, err := plain.DropColumn(ctx, "v"); !errors.Is(err, ErrColumnMappingRequired) {
		t.Errorf("drop without column mapping: %v", err)
	}
	if _, err := Create(ctx, "", maintSchema(), WithStore(objectstore.NewMem("bad")),
		WithProperties(map[string]string{txlog.PropColumnMappingMode: "names"})); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("mode names: %v", err)
	}
	tbl, _ := maintTable(t, true, map[string]string{txlog.PropColumnMappingMode: "name", "delta.constraints.vpos": "v >= 0"})
	tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams", "ber"))
	v := tbl.Version()
	for _, c := range []struct {
		name string
		do   func() (*Table, error)
		msg  string
	}{
		{"rename to an existing name", func() (*Table, error) { return tbl.RenameColumn(ctx, "id", "City") }, "already exists"},
		{"rename a missing column", func() (*Table, error) { return tbl.RenameColumn(ctx, "nope", "x") }, "does not exist"},
		{"rename to a path", func() (*Table, error) { return tbl.RenameColumn(ctx, "id", "a.b") }, "no dots"},
		{"rename a constrained column", func() (*Table, error) { return tbl.RenameColumn(ctx, "v", "w") }, "CHECK constraint vpos"},
		{"drop a constrained column", func() (*Table, error) { return tbl.DropColumn(ctx, "v") }, "CHECK constraint vpos"},
		{"drop a partition column", func() (*Table, error) { return tbl.DropColumn(ctx, "city") }, "partition column"},
		{"drop a missing column", func() (*Table, error) { return tbl.DropColumn(ctx, "nope") }, "does not exist"},
		{"drop nothing", func() (*Table, error) { return tbl.DropColumn(ctx) }, "no column"},
		{"drop every data column", func() (*Table, error) { return tbl.DropColumn(ctx, "id", "v") }, "CHECK constraint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.do()
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want ErrInvalidArgument with %q", err, c.msg)
			}
			if !strings.Contains(err.Error(), tbl.URI()) {
				t.Errorf("error %q does not name the table", err)
			}
			nt, err := Open(ctx, "", WithStore(tbl.Store()))
			if err != nil {
				t.Fatal(err)
			}
			if nt.Version() != v {
				t.Errorf("version %d after a refusal, want %d", nt.Version(), v)
			}
		})
	}
	// The partition column can be renamed: it stays the partition column.
	nt, err := tbl.RenameColumn(ctx, "city", "town")
	if err != nil {
		t.Fatal(err)
	}
	if got := nt.PartitionColumns(); !slices.Equal(got, []string{"town"}) {
		t.Errorf("partition columns %v after the rename", got)
	}
	e, err := nt.History(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if h := e[0]; h.Operation != RenameColumnOperation || h.Parameters["oldColumnPath"] != "city" || h.Parameters["newColumnPath"] != "town" {
		t.Errorf("history %+v", h)
	}
	if got := maintScan(t, nt); len(got) != 10 {
		t.Errorf("%d rows after the rename", len(got))
	}
}

// TestColumnMappingSchemaEvolutionIgnoresInputIDs: a new column whose
// input field carries another table's column mapping metadata gets this
// table's own id and physical name.
func TestColumnMappingSchemaEvolutionIgnoresInputIDs(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, map[string]string{txlog.PropColumnMappingMode: "id"})
	idPhys := tbl.Schema().Fields[0].PhysicalName("id")
	in := &schema.StructType{Fields: append(slices.Clone(tbl.Schema().Fields), &schema.StructField{Name: "n", Type: schema.Primitive(schema.Long), Nullable: true,
		Metadata: map[string]any{schema.MetaColumnMappingID: float64(1), schema.MetaColumnMappingName: idPhys}})}
	nt, err := tbl.AppendRows(ctx, []value.Row{{int64(1), "ams", 1.0, int64(7)}}, WithRowSchema(in), WithSchemaEvolution())
	if err != nil {
		t.Fatal(err)
	}
	f := nt.Schema().Field("n")
	if id, _ := f.FieldID(); id != 4 || f.PhysicalName("id") == idPhys {
		t.Errorf("new column: id %d, physical name %s", id, f.PhysicalName("id"))
	}
	if got := maintScan(t, nt); !slices.Equal(got, []string{"1ams1 7"}) {
		t.Errorf("rows %v", got)
	}
}

// interopColmapScript prints delta-rs's rows of each table, read through
// its DataFusion QueryBuilder: delta-rs 1.6.6's to_pyarrow_table reads
// every column of a column-mapped table as null (it looks the logical names
// up in the files), its DataFusion reader maps them.
const interopColmapScript = interopNormPy + `
import sys, deltalake, pyarrow as pa
args = json.loads(sys.argv[1])
out = {}
for name, uri in args["tables"].items():
    try:
        dt = deltalake.DeltaTable(uri)
        tbl = pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
        out[name] = {"version": dt.version(), "columns": tbl.column_names,
                     "rows": [json.dumps(norm(r), sort_keys=True) for r in tbl.to_pylist()]}
    except Exception as e:
        out[name] = {"error": f"{type(e).__name__}: {e}"}
print(json.dumps(out))
`

// TestInteropColumnMappingLocal: delta-rs reads the scenario's tables
// (local filesystem) to the reference rows, under the logical names.
func TestInteropColumnMappingLocal(t *testing.T) {
	py := testsupport.Python(t)
	newStore, uris := interopLocalStores(t)
	tables := writeColmapTables(t, newStore)
	argJSON, _ := json.Marshal(map[string]any{"tables": uris})
	out := testsupport.RunPython(t, py, interopColmapScript, string(argJSON))
	var res map[string]struct {
		Error   string   `json:"error"`
		Version int64    `json:"version"`
		Columns []string `json:"columns"`
		Rows    []string `json:"rows"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, ct := range tables {
		t.Run(ct.name, func(t *testing.T) {
			r := res[ct.name]
			if r.Error != "" {
				t.Fatalf("delta-rs: %s", r.Error)
			}
			if r.Version != ct.tbl.Version() {
				t.Errorf("delta-rs version %d, deltakit %d", r.Version, ct.tbl.Version())
			}
			cols := slices.Clone(r.Columns)
			slices.Sort(cols)
			if want := []string{"extra", "id", "s", "town", "value"}; !slices.Equal(cols, want) {
				t.Errorf("delta-rs columns %v, want %v", r.Columns, want)
			}
			got := make([]string, len(r.Rows))
			for i, row := range r.Rows {
				got[i] = canonicalJSON(t, row)
			}
			var want []string
			for _, row := range ct.ref.rows(ct.tbl.Schema()) {
				want = append(want, canonicalJSON(t, interopRow(t, ct.tbl.Schema(), row)))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("delta-rs read %d rows, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
			}
		})
	}
}

// TestSparkColumnMapping: Spark reads the scenario's tables (name and id
// mode, renamed and dropped columns, a dropped name re-added) to the
// reference rows; and tables Spark creates with column mapping, then
// renames and drops a column in, get deltakit appends, a DELETE and an
// UPDATE that Spark reads back to the reference. Two Spark batches.
func TestSparkColumnMapping(t *testing.T) {
	spark := testsupport.Spark(t)
	ctx := context.Background()
	root := t.TempDir()
	dirs := map[string]string{}
	tables := writeColmapTables(t, func(name string) objectstore.Store {
		dir := filepath.Join(root, name)
		s, err := objectstore.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		dirs[name] = dir
		return s
	})
	// Spark's tables: created, filled, renamed and dropped in by Spark.
	type sparkTable struct {
		name, mode, dir string
		partitioned     bool
	}
	var sts []sparkTable
	var setup []map[string]any
	for _, mode := range []string{"name", "id"} {
		for _, partitioned := range []bool{false, true} {
			st := sparkTable{fmt.Sprintf("spark-%s-part%v", mode, partitioned), mode, "", partitioned}
			st.dir = filepath.Join(root, st.name)
			part := ""
			if partitioned {
				part = "PARTITIONED BY (city)"
			}
			var vals []string
			for i := range 20 {
				vals = append(vals, fmt.Sprintf("(%d, '%s', %d.25, 'x%d')", i, []string{"ams", "ber"}[i%2], i, i))
			}
			setup = append(setup,
				testsupport.SQLRequest(fmt.Sprintf("CREATE TABLE delta.`%s` (id BIGINT, city STRING, v DOUBLE, extra STRING) USING delta %s "+
					"TBLPROPERTIES ('delta.columnMapping.mode' = '%s')", st.dir, part, mode)),
				testsupport.SQLRequest(fmt.Sprintf("INSERT INTO delta.`%s` VALUES %s", st.dir, strings.Join(vals, ", "))),
				testsupport.SQLRequest(fmt.Sprintf("ALTER TABLE delta.`%s` RENAME COLUMN v TO value", st.dir)),
				testsupport.SQLRequest(fmt.Sprintf("ALTER TABLE delta.`%s` DROP COLUMN extra", st.dir)))
			sts = append(sts, st)
		}
	}
	_, errs, err := spark.Batch(setup)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("Spark setup %v: %v", setup[i], e)
		}
	}
	var checks []sparkCheck
	for _, st := range sts {
		tbl, err := Open(ctx, st.dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := tbl.Snapshot().Metadata().Configuration[PropColumnMappingMaxColumnID]; got != "4" {
			t.Errorf("%s: Spark's maxColumnId %q, want 4", st.name, got)
		}
		var rows []value.Row
		for i := 20; i < 30; i++ {
			rows = append(rows, value.Row{int64(i), []string{"ams", "cph"}[i%2], float64(i) + 0.25})
		}
		if tbl, err = tbl.AppendRows(ctx, rows); err != nil {
			t.Fatalf("%s: append: %v", st.name, err)
		}
		if tbl, _, err = tbl.Delete(ctx, Or(Col("id").Lt(3), Col("id").Eq(27))); err != nil {
			t.Fatalf("%s: delete: %v", st.name, err)
		}
		if tbl, _, err = tbl.Update(ctx, Col("value").Ge(24.0), map[string]Value{"value": Times(Col("value"), -1)}); err != nil {
			t.Fatalf("%s: update: %v", st.name, err)
		}
		// MERGE: id 5 updated (moved to ams), 6 deleted, 40 inserted.
		msrc := MergeRows(schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true),
			schema.NewField("city", schema.Primitive(schema.String), true),
			schema.NewField("value", schema.Primitive(schema.Double), true)),
			[]value.Row{{int64(5), "ams", 555.25}, {int64(6), "ber", -1.0}, {int64(40), "cph", 40.25}})
		var mres *MergeResult
		if tbl, mres, err = tbl.Merge(ctx, NewMerge(msrc, MergeOn("id")).
			WhenMatched().If(Source("value").Lt(0.0)).Delete().
			WhenMatched().UpdateAll().
			WhenNotMatched().InsertAll()); err != nil {
			t.Fatalf("%s: merge: %v", st.name, err)
		}
		if mres.UpdatedRows != 1 || mres.DeletedRows != 1 || mres.InsertedRows != 1 {
			t.Fatalf("%s: merge: %+v", st.name, mres)
		}
		if tbl, err = tbl.RenameColumn(ctx, "value", "val"); err != nil {
			t.Fatalf("%s: rename: %v", st.name, err)
		}
		var want []value.Row
		for i := range 30 {
			city := []string{"ams", "ber"}[i%2]
			if i >= 20 {
				city = []string{"ams", "cph"}[i%2]
			}
			v := float64(i) + 0.25
			if i < 3 || i == 27 {
				continue
			}
			if v >= 24 {
				v = -v
			}
			switch i {
			case 5:
				city, v = "ams", 555.25
			case 6:
				continue
			}
			want = append(want, value.Row{int64(i), city, v})
		}
		want = append(want, value.Row{int64(40), "cph", 40.25})
		if got, w := sparkRefRows(scanAll(t, tbl)), sparkRefRows(want); !slices.Equal(got, w) {
			t.Errorf("%s: deltakit read %v, want %v", st.name, got, w)
		}
		checks = append(checks, sparkCheck{st.name, testsupport.SQLRequest(fmt.Sprintf("SELECT id, city, val FROM delta.`%s`", st.dir)),
			wantSparkRows(want, []string{"id", "city", "val"})})
	}
	for _, ct := range tables {
		var want []value.Row
		for _, m := range ct.ref {
			s, _ := m["s"].(map[string]any)
			want = append(want, value.Row{m["id"], m["town"], m["value"], s["a"], s["bee"], m["extra"]})
		}
		checks = append(checks, sparkCheck{ct.name, testsupport.SQLRequest(fmt.Sprintf(
			"SELECT id, town, value, s.a AS a, s.bee AS bee, extra FROM delta.`%s`", dirs[ct.name])),
			wantSparkRows(want, []string{"id", "town", "value", "a", "bee", "extra"})})
		checks = append(checks, sparkCheck{ct.name + "/history", testsupport.SQLRequest(fmt.Sprintf("DESCRIBE HISTORY delta.`%s`", dirs[ct.name])),
			func(t *testing.T, res *testsupport.SparkResult) {
				var ops []string
				for _, e := range sparkHistory(t, res) {
					ops = append(ops, e.operation)
				}
				for _, op := range []string{RenameColumnOperation, DropColumnsOperation} {
					if !slices.Contains(ops, op) {
						t.Errorf("Spark's history has no %s: %v", op, ops)
					}
				}
			}})
	}
	runSparkChecks(t, spark, checks)
}
