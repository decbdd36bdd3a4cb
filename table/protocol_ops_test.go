package table

import (
	"context"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// TestOperationsKeepReaderVersion2 (issue 38): every operation that can
// commit a protocol, on a column-mapping table at reader version 2 (the
// protocol Spark writes: (2,7) listing appendOnly, columnMapping,
// invariants), leaves reader version 2 and the features as they are
// (spec "Column Mapping": reader version 2 supports it; no operation here
// adds a reader feature); a CHECK constraint adds checkConstraints to
// writerFeatures only. Each operation is one commit after the previous
// one, as a user would run them.
func TestOperationsKeepReaderVersion2(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, map[string]string{txlog.PropColumnMappingMode: "name"})
	base := []string{"appendOnly", "columnMapping", "invariants"}
	withCheck := []string{"appendOnly", "checkConstraints", "columnMapping", "invariants"}
	wide := schema.NewStruct(append(slices.Clone(maintSchema().Fields), schema.NewField("w", schema.Primitive(schema.Long), true))...)
	ops := []struct {
		name   string
		do     func(*Table) (*Table, error)
		writer []string
	}{
		{"append", func(t *Table) (*Table, error) { return t.AppendRows(ctx, maintRowsFor(0, 6, "ams", "ber")) }, base},
		{"append evolving the schema", func(t *Table) (*Table, error) {
			return t.AppendRows(ctx, []value.Row{{int64(9), "cph", 1.5, int64(7)}}, WithRowSchema(wide), WithSchemaEvolution())
		}, base},
		{"delete", func(t *Table) (*Table, error) { nt, _, err := t.Delete(ctx, Col("id").Eq(int64(1))); return nt, err }, base},
		{"update", func(t *Table) (*Table, error) {
			nt, _, err := t.Update(ctx, Col("id").Eq(int64(2)), map[string]Value{"v": Plus(Col("v"), 1.0)})
			return nt, err
		}, base},
		{"merge", func(t *Table) (*Table, error) {
			src := MergeRows(wide, []value.Row{{int64(3), "ams", 9.0, int64(1)}, {int64(30), "ber", 3.0, nil}})
			nt, _, err := t.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll())
			return nt, err
		}, base},
		{"optimize", func(t *Table) (*Table, error) { nt, _, err := t.Optimize(ctx); return nt, err }, base},
		{"restore", func(t *Table) (*Table, error) { nt, _, err := t.Restore(ctx, ToVersion(2)); return nt, err }, base},
		{"rename column", func(t *Table) (*Table, error) { return t.RenameColumn(ctx, "city", "town") }, base},
		{"drop column", func(t *Table) (*Table, error) { return t.DropColumn(ctx, "w") }, base},
		{"set a property", func(t *Table) (*Table, error) {
			return t.SetProperties(ctx, map[string]string{txlog.PropCheckpointInterval: "20"})
		}, base},
		{"unset a property", func(t *Table) (*Table, error) {
			return t.UnsetProperties(ctx, false, txlog.PropCheckpointInterval)
		}, base},
		{"add a CHECK constraint", func(t *Table) (*Table, error) {
			return t.SetProperties(ctx, map[string]string{"delta.constraints.idpos": "id >= 0"})
		}, withCheck},
		{"append after the constraint", func(t *Table) (*Table, error) { return t.AppendRows(ctx, maintRowsFor(40, 2, "ams")) }, withCheck},
	}
	if p := tbl.Snapshot().Protocol(); p.MinReaderVersion != 2 || p.MinWriterVersion != 7 || !slices.Equal(p.WriterFeatures, base) {
		t.Fatalf("created with column mapping: %+v, want (2,7) %v", p, base)
	}
	for _, op := range ops {
		before := tbl.Version()
		nt, err := op.do(tbl)
		if err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		if nt.Version() != before+1 {
			t.Fatalf("%s: version %d, want %d", op.name, nt.Version(), before+1)
		}
		tbl = nt
		p := tbl.Snapshot().Protocol()
		if p.MinReaderVersion != 2 || p.MinWriterVersion != 7 || len(p.ReaderFeatures) != 0 || !slices.Equal(p.WriterFeatures, op.writer) {
			t.Errorf("after %s: protocol %+v, want (2,7) writer features %v", op.name, p, op.writer)
		}
	}
}
