package table

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// stableIDs is the test's own reading of a table's stable row ids and row
// commit versions (spec "Reader Requirements for Row Tracking"): for every
// live row, by its id column, the materialized value when the file has the
// column and it is not null, else baseRowId + physical index and
// defaultRowCommitVersion.
type stableID struct{ rowID, version int64 }

func stableIDs(t *testing.T, tbl *Table) map[int64]stableID {
	t.Helper()
	ctx := context.Background()
	conf := tbl.Snapshot().Metadata().Configuration
	idCol, verCol := conf[txlog.PropMaterializedRowIDColumn], conf[txlog.PropMaterializedRowCommitVersionColumn]
	if idCol == "" || verCol == "" {
		t.Fatalf("materialized column names missing: %v", conf)
	}
	long := schema.Primitive(schema.Long)
	read := schema.NewStruct(schema.NewField("id", long, true), schema.NewField(idCol, long, true), schema.NewField(verCol, long, true))
	locs, err := newLocator(tbl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]stableID{}
	for _, a := range tbl.Snapshot().Files() {
		if a.BaseRowID == nil || a.DefaultRowCommitVersion == nil {
			t.Fatalf("file %s without baseRowId/defaultRowCommitVersion", a.Path)
		}
		var opts []parquetio.ReadOption
		if a.DeletionVector != nil {
			bm, err := locs.LoadDV(ctx, a.DeletionVector)
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, parquetio.WithSkipRows(func(i int64) bool { return bm.Contains(uint64(i)) }))
		}
		key, _ := storeKey(tbl.store.URI(), txlog.DecodePath(a.Path))
		pf, err := parquetio.Open(ctx, tbl.store, key, read, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for ir, err := range pf.IndexedRows(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			s := stableID{*a.BaseRowID + ir.Index, *a.DefaultRowCommitVersion}
			if v, ok := ir.Row[1].(int64); ok {
				s.rowID = v
			}
			if v, ok := ir.Row[2].(int64); ok {
				s.version = v
			}
			id := ir.Row[0].(int64)
			if _, dup := out[id]; dup {
				t.Fatalf("id %d twice", id)
			}
			out[id] = s
		}
		if strings.Contains(a.Stats, idCol) || strings.Contains(a.Stats, verCol) {
			t.Errorf("file %s has stats on a hidden column: %s", a.Path, a.Stats)
		}
	}
	seen := map[int64]int64{}
	for id, s := range out {
		if other, dup := seen[s.rowID]; dup {
			t.Errorf("row id %d held by ids %d and %d", s.rowID, other, id)
		}
		seen[s.rowID] = id
	}
	return out
}

// TestRowTrackingPreserved: on deltakit tables with row tracking enabled
// (with and without deletion vectors, partitioned), UPDATE, DELETE and
// OPTIMIZE keep every row's stable row id; copied and compacted rows keep
// their row commit version, updated rows take the update's version; ids
// stay unique; the hidden columns are not scanned as data; every commit
// carries delta.rowTracking.preserved=true.
func TestRowTrackingPreserved(t *testing.T) {
	long, str := schema.Primitive(schema.Long), schema.Primitive(schema.String)
	sch := schema.NewStruct(schema.NewField("id", long, true), schema.NewField("v", str, true), schema.NewField("p", str, true))
	for _, dv := range []bool{false, true} {
		name := "copy-on-write"
		if dv {
			name = "deletion-vectors"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			props := map[string]string{txlog.PropEnableRowTracking: "true"}
			if dv {
				props[txlog.PropEnableDeletionVectors] = "true"
			}
			tbl, err := Create(ctx, t.TempDir(), sch, WithPartitionColumns("p"), WithProperties(props))
			if err != nil {
				t.Fatal(err)
			}
			rows := func(lo, hi int64) []value.Row {
				var out []value.Row
				for i := lo; i <= hi; i++ {
					p := "a"
					if i%2 == 0 {
						p = "b"
					}
					out = append(out, value.Row{i, "s", p})
				}
				return out
			}
			for _, r := range [][2]int64{{1, 6}, {7, 12}} {
				if tbl, err = tbl.AppendRows(ctx, rows(r[0], r[1])); err != nil {
					t.Fatal(err)
				}
			}
			want := stableIDs(t, tbl)
			if len(want) != 12 {
				t.Fatalf("%d rows", len(want))
			}
			values := map[int64]string{}
			for id := range want {
				values[id] = "s"
			}
			// check compares the table with want and values after a commit.
			check := func(step string) {
				t.Helper()
				got := stableIDs(t, tbl)
				if !maps.Equal(got, want) {
					t.Fatalf("%s: stable row ids/versions\n got  %v\n want %v", step, got, want)
				}
				var scanned int
				for r, err := range tbl.Scan(ctx) {
					if err != nil {
						t.Fatal(err)
					}
					if len(r) != 3 || values[r[0].(int64)] != r[1] {
						t.Fatalf("%s: scanned row %v", step, r)
					}
					scanned++
				}
				if scanned != len(want) {
					t.Fatalf("%s: scanned %d rows, want %d", step, scanned, len(want))
				}
				rd, err := tbl.ScanArrow(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var arrowRows int64
				for rd.Next() {
					rec := rd.RecordBatch()
					if rec.NumCols() != 3 {
						t.Fatalf("%s: ScanArrow record has %d columns: %v", step, rec.NumCols(), rec.Schema())
					}
					arrowRows += rec.NumRows()
				}
				if err := rd.Err(); err != nil {
					t.Fatal(err)
				}
				rd.Release()
				if arrowRows != int64(len(want)) {
					t.Fatalf("%s: ScanArrow read %d rows, want %d", step, arrowRows, len(want))
				}
				actions, err := txlog.ReadCommit(ctx, tbl.Store(), tbl.Version())
				if err != nil {
					t.Fatal(err)
				}
				if tags := actions[0].CommitInfo.Extra["tags"]; !strings.Contains(string(tags), `"delta.rowTracking.preserved":"true"`) {
					t.Errorf("%s: commitInfo tags %s", step, tags)
				}
			}

			// UPDATE of one row: its id stays, its version is the update's.
			var res *DMLResult
			if tbl, res, err = tbl.Update(ctx, Col("id").Eq(int64(3)), map[string]Value{"v": Lit("u")}); err != nil || !res.Committed {
				t.Fatalf("update: %v %+v", err, res)
			}
			want[3] = stableID{want[3].rowID, tbl.Version()}
			values[3] = "u"
			check("update id 3")
			// The updated row again, now from a file with materialized ids
			// (copy-on-write: also its copied neighbours).
			if tbl, _, err = tbl.Update(ctx, Col("id").Le(int64(5)), map[string]Value{"v": Lit("w")}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []int64{1, 2, 3, 4, 5} {
				want[id] = stableID{want[id].rowID, tbl.Version()}
				values[id] = "w"
			}
			check("update id <= 5")
			// DELETE: the others keep id and version.
			if tbl, _, err = tbl.Delete(ctx, Or(Col("id").Eq(int64(8)), Col("id").Eq(int64(1)))); err != nil {
				t.Fatal(err)
			}
			delete(want, 8)
			delete(want, 1)
			check("delete ids 1, 8")
			// MERGE: matched rows 2 and 9 are updated (id kept, version the
			// merge's), 20 and 21 are inserted with fresh ids, every other
			// row keeps both.
			src := MergeRows(sch, []value.Row{{int64(2), "m", "b"}, {int64(9), "m", "a"}, {int64(20), "n", "b"}, {int64(21), "n", "a"}})
			var mres *MergeResult
			if tbl, mres, err = tbl.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll()); err != nil || !mres.Committed {
				t.Fatalf("merge: %v %+v", err, mres)
			}
			for _, id := range []int64{2, 9} {
				want[id] = stableID{want[id].rowID, tbl.Version()}
				values[id] = "m"
			}
			got := stableIDs(t, tbl)
			maxKept := int64(-1)
			for _, s := range want {
				maxKept = max(maxKept, s.rowID)
			}
			for _, id := range []int64{20, 21} {
				if got[id].rowID <= maxKept || got[id].version != tbl.Version() {
					t.Errorf("merge-inserted id %d: %+v (kept ids up to %d, version %d)", id, got[id], maxKept, tbl.Version())
				}
				want[id] = got[id]
				values[id] = "n"
			}
			check("merge")
			// OPTIMIZE: every row keeps both.
			var ores *OptimizeResult
			if tbl, ores, err = tbl.Optimize(ctx); err != nil || !ores.Committed {
				t.Fatalf("optimize: %v %+v", err, ores)
			}
			check("optimize")
			// Appended rows get fresh ids above every kept one.
			if tbl, err = tbl.AppendRows(ctx, rows(13, 14)); err != nil {
				t.Fatal(err)
			}
			got = stableIDs(t, tbl)
			maxOld := int64(-1)
			for _, s := range want {
				maxOld = max(maxOld, s.rowID)
			}
			for _, id := range []int64{13, 14} {
				if got[id].rowID <= maxOld || got[id].version != tbl.Version() {
					t.Errorf("appended id %d: %+v (kept ids up to %d, version %d)", id, got[id], maxOld, tbl.Version())
				}
				want[id] = got[id]
				values[id] = "s"
			}
			check("append")
		})
	}
}

// TestRowTrackingSupportedOnly: a table that only supports row tracking
// (no delta.enableRowTracking) gets fresh ids only: rewritten files carry
// no hidden columns and commits no preserved tag.
func TestRowTrackingSupportedOnly(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	tbl, err := Create(ctx, t.TempDir(), sch, WithProperties(map[string]string{"delta.feature.rowTracking": "supported"}))
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(1)}, {int64(2)}}); err != nil {
		t.Fatal(err)
	}
	if tbl, _, err = tbl.Delete(ctx, Col("id").Eq(int64(1))); err != nil {
		t.Fatal(err)
	}
	actions, err := txlog.ReadCommit(ctx, tbl.Store(), tbl.Version())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := actions[0].CommitInfo.Extra["tags"]; ok {
		t.Errorf("tags on a supported-only table: %s", actions[0].CommitInfo.Extra["tags"])
	}
	files := tbl.Snapshot().Files()
	if len(files) != 1 || files[0].BaseRowID == nil {
		t.Fatalf("files %+v", files)
	}
}

// TestRowTrackingVerify: a table whose files carry the materialized
// columns (after a copy-on-write UPDATE and an OPTIMIZE) verifies clean.
func TestRowTrackingVerify(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true), schema.NewField("v", schema.Primitive(schema.String), true))
	tbl, err := Create(ctx, t.TempDir(), sch, WithProperties(map[string]string{txlog.PropEnableRowTracking: "true"}))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(1), "a"}, {int64(2), "b"}}); err != nil {
			t.Fatal(err)
		}
	}
	if tbl, _, err = tbl.Update(ctx, Col("id").Eq(int64(1)), map[string]Value{"v": Lit("u")}); err != nil {
		t.Fatal(err)
	}
	if tbl, _, err = tbl.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(ctx, tbl.Store())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("verify: %+v", rep)
	}
}
