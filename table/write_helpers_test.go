package table

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// readAllRows reads every live row of tbl straight from its data files with
// parquetio (independent of the scan side), partition values filled in from
// the log, rows in schema order, sorted by their fmt rendering.
func readAllRows(t testing.TB, tbl *Table) []value.Row {
	t.Helper()
	ctx := context.Background()
	sch := tbl.Schema()
	parts := tbl.PartitionColumns()
	data := &schema.StructType{}
	for _, f := range sch.Fields {
		if !slices.Contains(parts, f.Name) {
			data.Fields = append(data.Fields, f)
		}
	}
	var out []value.Row
	for _, add := range tbl.Snapshot().Files() {
		key := txlog.DecodePath(add.Path)
		n := 0
		for r, err := range parquetio.ReadFile(ctx, tbl.Store(), key, data) {
			if err != nil {
				t.Fatalf("read %s: %v", key, err)
			}
			n++
			row := make(value.Row, len(sch.Fields))
			di := 0
			for i, f := range sch.Fields {
				if slices.Contains(parts, f.Name) {
					v, err := ParsePartitionValue(f.Type, add.PartitionValues[f.Name])
					if err != nil {
						t.Fatalf("partition value %s=%q: %v", f.Name, add.PartitionValues[f.Name], err)
					}
					row[i] = v
					continue
				}
				row[i] = r[di]
				di++
			}
			out = append(out, row)
		}
		if rec, ok := add.NumRecords(); !ok || rec != int64(n) {
			t.Errorf("%s: stats numRecords %d (ok %v), file has %d rows", add.Path, rec, ok, n)
		}
	}
	sortRows(out)
	return out
}

func sortRows(rows []value.Row) {
	type keyed struct {
		key string
		row value.Row
	}
	ks := make([]keyed, len(rows))
	for i, r := range rows {
		ks[i] = keyed{renderRow(r), r}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	for i := range ks {
		rows[i] = ks[i].row
	}
}

// renderRow renders a row canonically for comparisons: times in UTC with
// nanoseconds, decimals in plain text, bytes as Go syntax.
func renderRow(r value.Row) string {
	var b strings.Builder
	for i, v := range r {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(renderValue(v))
	}
	return b.String()
}

func renderValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case value.Decimal:
		return "dec:" + x.String()
	case value.Date:
		return "date:" + x.String()
	case []byte:
		return fmt.Sprintf("bin:%x", x)
	case string:
		return fmt.Sprintf("%q", x)
	case value.Row:
		return "{" + renderRow(x) + "}"
	case []value.MapEntry:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = renderValue(e.Key) + ": " + renderValue(e.Value)
		}
		return "map[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// assertRows compares two row sets after sorting both.
func assertRows(t testing.TB, got, want []value.Row) {
	t.Helper()
	g := make([]string, len(got))
	for i, r := range got {
		g[i] = renderRow(r)
	}
	w := make([]string, len(want))
	for i, r := range want {
		w[i] = renderRow(r)
	}
	slices.Sort(g)
	slices.Sort(w)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		t.Fatalf("rows differ\n got (%d):\n  %s\nwant (%d):\n  %s", len(g), strings.Join(g, "\n  "), len(w), strings.Join(w, "\n  "))
	}
}

// rawCommit returns the decoded JSON lines of commit v.
func rawCommit(t testing.TB, store objectstore.Store, v int64) []map[string]json.RawMessage {
	t.Helper()
	data, err := store.Get(context.Background(), txlog.CommitKey(v), objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("commit %d line %q: %v", v, line, err)
		}
		out = append(out, m)
	}
	return out
}

// commitActions decodes commit v.
func commitActions(t testing.TB, store objectstore.Store, v int64) []txlog.Action {
	t.Helper()
	acts, err := txlog.ReadCommit(context.Background(), store, v)
	if err != nil {
		t.Fatal(err)
	}
	return acts
}

// listKeys lists every key of the store under prefix (sorted).
func listKeys(t testing.TB, store objectstore.Store, prefix string) []string {
	t.Helper()
	var out []string
	for info, err := range store.List(context.Background(), prefix, "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, info.Key)
	}
	return out
}

// dataKeys lists the data files (everything outside _delta_log/).
func dataKeys(t testing.TB, store objectstore.Store) []string {
	var out []string
	for _, k := range listKeys(t, store, "") {
		if !strings.HasPrefix(k, "_delta_log/") {
			out = append(out, k)
		}
	}
	return out
}

func newMemTable(t testing.TB, sch *schema.StructType, opts ...Option) *Table {
	t.Helper()
	store := objectstore.NewMem(strings.ReplaceAll(t.Name(), "/", "_"))
	tbl, err := Create(context.Background(), "", sch, append([]Option{WithStore(store)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func field(name string, typ schema.Type, nullable bool) *schema.StructField {
	return schema.NewField(name, typ, nullable)
}

func prim(name string) schema.Type { return schema.Primitive(name) }
