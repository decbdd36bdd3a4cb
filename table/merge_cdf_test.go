package table

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// MERGE's change data (issue 15 item 4): buildCDFTable's versions 9 (every
// clause kind) and 10 (inserts only) are checked against the reference by
// TestChangesAfterDML, TestChangesColumnMapping and the delta-rs and Spark
// interop tests; here its metric, and the change data of a MERGE that
// evolves the schema, with and without column mapping.

// cdcActions returns the cdc actions of version v.
func cdcActions(t *testing.T, tbl *Table, v int64) []*txlog.AddCDCFile {
	t.Helper()
	actions, err := txlog.ReadCommit(context.Background(), tbl.Store(), v)
	if err != nil {
		t.Fatal(err)
	}
	var out []*txlog.AddCDCFile
	for _, a := range actions {
		if a.CDC != nil {
			out = append(out, a.CDC)
		}
	}
	return out
}

// commitMetric returns operationMetrics[key] of version v.
func commitMetric(t *testing.T, tbl *Table, v int64, key string) string {
	t.Helper()
	actions, err := txlog.ReadCommit(context.Background(), tbl.Store(), v)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if a.CommitInfo != nil {
			s, _ := a.CommitInfo.OperationMetrics[key].(string)
			return s
		}
	}
	t.Fatalf("version %d has no commitInfo", v)
	return ""
}

// numTargetChangeFilesAdded counts the MERGE's cdc files: some for the
// MERGE that changed target rows, none for the insert-only one.
func TestMergeChangeFilesMetric(t *testing.T) {
	for _, dv := range []bool{false, true} {
		c := buildCDFTable(t, objectstore.NewMem("cdf"), "metric", true, dv)
		for v, wantSome := range map[int64]bool{9: true, 10: false} {
			n := len(cdcActions(t, c.tbl, v))
			if (n > 0) != wantSome {
				t.Errorf("dv %v version %d: %d cdc files", dv, v, n)
			}
			if got := commitMetric(t, c.tbl, v, "numTargetChangeFilesAdded"); got != strconv.Itoa(n) {
				t.Errorf("dv %v version %d: numTargetChangeFilesAdded %q, the commit has %d cdc files", dv, v, got, n)
			}
		}
	}
}

// A MERGE with schema evolution on a change data feed table: the change
// rows have the new column (null in the preimage, the source's value in
// the postimage and the inserts), and under column mapping the new column
// gets a physical name of its own, in the data files and the change data
// files alike.
func TestChangesMergeSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"none", "name", "id"} {
		for _, partitioned := range []bool{false, true} {
			name := mode + map[bool]string{false: " flat", true: " partitioned"}[partitioned]
			t.Run(name, func(t *testing.T) {
				props := map[string]string{txlog.PropEnableChangeDataFeed: "true"}
				if mode != "none" {
					props[txlog.PropColumnMappingMode] = mode
				}
				tbl, _ := maintTable(t, partitioned, props)
				tbl, err := tbl.AppendRows(ctx, maintRowsFor(0, 10, "ams", "ber"))
				if err != nil {
					t.Fatal(err)
				}
				srcSch := &schema.StructType{Fields: append(slices.Clone(maintSchema().Fields),
					schema.NewField("note", schema.Primitive(schema.String), true))}
				src := []value.Row{{int64(3), "ams", 30.0, "n3"}, {int64(4), "ber", 40.0, "n4"}, {int64(20), "cph", 2.0, "n20"}}
				m := NewMerge(MergeRows(srcSch, src), MergeOn("id")).
					WhenMatched().If(Source("id").Eq(int64(4))).Delete().
					WhenMatched().UpdateAll().
					WhenNotMatched().InsertAll()
				tbl, res, err := tbl.Merge(ctx, m, WithSchemaEvolution())
				if err != nil {
					t.Fatal(err)
				}
				if res.InsertedRows != 1 || res.UpdatedRows != 1 || res.DeletedRows != 1 {
					t.Fatalf("merge result %+v", res)
				}
				v := tbl.Version()
				feed, err := tbl.Changes(ctx, v, v)
				if err != nil {
					t.Fatal(err)
				}
				var cols []string
				for _, f := range feed.Schema().Fields {
					cols = append(cols, f.Name)
				}
				if want := []string{"id", "city", "v", "note", ChangeTypeColumn, CommitVersionColumn, CommitTimestampColumn}; !slices.Equal(cols, want) {
					t.Fatalf("feed columns %v, want %v", cols, want)
				}
				keySch := &schema.StructType{Fields: feed.Schema().Fields[:6]}
				key := func(r value.Row) string { return interopRow(t, keySch, r) }
				want := []string{
					key(value.Row{int64(3), "ber", 0.75, nil, ChangeUpdatePreimage, v}),
					key(value.Row{int64(3), "ams", 30.0, "n3", ChangeUpdatePostimage, v}),
					key(value.Row{int64(4), "ams", 1.0, nil, ChangeDelete, v}),
					key(value.Row{int64(20), "cph", 2.0, "n20", ChangeInsert, v}),
				}
				slices.Sort(want)
				if got := feedKeys(t, feed, nil); !slices.Equal(got, want) {
					t.Errorf("changes:\n%s", diffRows(got, want))
				}
				cdcs := cdcActions(t, tbl, v)
				if len(cdcs) == 0 {
					t.Fatal("no cdc files")
				}
				if mode == "none" {
					return
				}
				note := tbl.Schema().Field("note")
				pn := note.PhysicalName(mode)
				if !strings.HasPrefix(pn, "col-") {
					t.Fatalf("new column note has physical name %q", pn)
				}
				if id, ok := note.FieldID(); !ok || id != 4 {
					t.Errorf("new column note has id %d (%v), want 4", id, ok)
				}
				// Every Parquet column of the new data and change data files
				// is a physical name (and has a field id in mode id), the
				// new column's among them; _change_type keeps its name.
				var paths []string
				for _, c := range cdcs {
					paths = append(paths, c.Path)
				}
				actions, err := txlog.ReadCommit(ctx, tbl.Store(), v)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range actions {
					if a.Add != nil {
						paths = append(paths, a.Add.Path)
					}
				}
				for _, p := range paths {
					k, _ := storeKey(tbl.Store().URI(), txlog.DecodePath(p))
					data, err := tbl.Store().Get(ctx, k, objectstore.FullObject)
					if err != nil {
						t.Fatal(err)
					}
					pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
					if err != nil {
						t.Fatal(err)
					}
					var names []string
					for _, f := range pf.Schema().Fields() {
						names = append(names, f.Name())
						if f.Name() == ChangeTypeColumn {
							continue
						}
						if !strings.HasPrefix(f.Name(), "col-") || (f.ID() != 0) != (mode == "id") {
							t.Errorf("file %s: column %q id %d", p, f.Name(), f.ID())
						}
					}
					isCDC := strings.HasPrefix(p, "_change_data/")
					if isCDC != slices.Contains(names, ChangeTypeColumn) {
						t.Errorf("file %s: columns %v", p, names)
					}
					if !slices.Contains(names, pn) {
						t.Errorf("file %s: columns %v lack the new column's physical name %s", p, names, pn)
					}
				}
			})
		}
	}
}

// A MERGE refused on a change data feed table (two source rows for one
// target row; a row that breaks a NOT NULL column) writes no file, change
// data files included.
func TestMergeChangeDataRefusedWritesNothing(t *testing.T) {
	ctx := context.Background()
	tbl, mem := maintTable(t, true, map[string]string{txlog.PropEnableChangeDataFeed: "true"})
	tbl, err := tbl.AppendRows(ctx, maintRowsFor(0, 6, "ams", "ber"))
	if err != nil {
		t.Fatal(err)
	}
	before := maintKeys(t, mem)
	dup := MergeRows(maintSchema(), []value.Row{{int64(1), "ams", 1.0}, {int64(1), "ber", 2.0}})
	if _, _, err := tbl.Merge(ctx, NewMerge(dup, MergeOn("id")).WhenMatched().UpdateAll()); !errors.Is(err, ErrMergeMultipleMatches) {
		t.Errorf("duplicate source keys: %v", err)
	}
	src := MergeRows(maintSchema(), []value.Row{{int64(2), "ams", 1.0}, {int64(9), "ams", 1.0}})
	_, _, err = tbl.Merge(ctx, NewMerge(src, MergeOn("id")).
		WhenMatched().UpdateAll().
		WhenNotMatched().Insert(map[string]Value{"city": Source("city")})) // id NOT NULL left null
	var re *RowError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "id") {
		t.Errorf("insert of a null id: %v, want a *RowError naming id", err)
	}
	if after := maintKeys(t, mem); !slices.Equal(after, before) {
		t.Errorf("refused MERGE changed the store:\nbefore %v\nafter  %v", before, after)
	}
}
