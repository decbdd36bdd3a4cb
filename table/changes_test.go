package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// cdfCase is a change data feed table deltakit wrote, with the change rows
// it must return, computed in the test from the input rows (not from
// deltakit's reader).
type cdfCase struct {
	name        string
	partitioned bool
	dv          bool
	tbl         *Table
	// want are the change rows of versions 1 to the latest, canonical
	// (cdfRowKey); byVersion the same per version.
	want      []string
	byVersion map[int64][]string
	// wantRows are the same rows as id, city, v, _change_type,
	// _commit_version values (for Spark's table_changes).
	wantRows []value.Row
	// cdcVersions are the versions that must have cdc actions.
	cdcVersions []int64
}

// cdfRowKey renders a change row of maintSchema (id, city, v) as
// feedKeys and the delta-rs script (interopNormPy) do: canonical JSON of
// the columns without _commit_timestamp.
func cdfRowKey(id int64, city any, v float64, typ string, version int64) string {
	b, _ := json.Marshal(map[string]any{"id": strconv.FormatInt(id, 10), "city": city, "v": v,
		"_change_type": typ, "_commit_version": strconv.FormatInt(version, 10)})
	return string(b)
}

// buildCDFTable creates a change data feed table in store and changes it:
// appends, a DELETE of rows inside files, an UPDATE, a DELETE of whole
// files (by partition on a partitioned table), an UPDATE that moves a row
// to another partition, an overwrite and an append. The expected change
// rows are derived from a model of the live rows.
//
// mapping is the delta.columnMapping.mode of the table ("": none).
func buildCDFTable(t *testing.T, store objectstore.Store, name string, partitioned, dv bool, mapping ...string) *cdfCase {
	t.Helper()
	ctx := context.Background()
	props := map[string]string{txlog.PropEnableChangeDataFeed: "true"}
	if dv {
		props[txlog.PropEnableDeletionVectors] = "true"
	}
	if len(mapping) > 0 && mapping[0] != "" {
		props[txlog.PropColumnMappingMode] = mapping[0]
	}
	opts := []Option{WithStore(store), WithProperties(props), WithTxnOptions(txlog.WithoutAutoCheckpoint())}
	if partitioned {
		opts = append(opts, WithPartitionColumns("city"))
	}
	tbl, err := Create(ctx, "", maintSchema(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := &cdfCase{name: name, partitioned: partitioned, dv: dv, byVersion: map[int64][]string{}}
	live := map[int64]value.Row{}
	record := func(v int64, typ string, r value.Row) {
		k := cdfRowKey(r[0].(int64), r[1], r[2].(float64), typ, v)
		c.want = append(c.want, k)
		c.byVersion[v] = append(c.byVersion[v], k)
		c.wantRows = append(c.wantRows, value.Row{r[0], r[1], r[2], typ, v})
	}
	sortedLive := func(match func(value.Row) bool) []value.Row {
		var out []value.Row
		for _, r := range live {
			if match(r) {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b value.Row) int { return int(a[0].(int64) - b[0].(int64)) })
		return out
	}
	appendRows := func(rows []value.Row) {
		t.Helper()
		if tbl, err = tbl.AppendRows(ctx, rows); err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			live[r[0].(int64)] = r
			record(tbl.Version(), ChangeInsert, r)
		}
	}
	dml := func(nt *Table, res *DMLResult, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if !res.Committed {
			t.Fatal("DML committed nothing")
		}
		tbl = nt
	}
	del := func(where Expr, match func(value.Row) bool) {
		t.Helper()
		gone := sortedLive(match)
		dml(tbl.Delete(ctx, where))
		for _, r := range gone {
			delete(live, r[0].(int64))
			record(tbl.Version(), ChangeDelete, r)
		}
	}
	update := func(where Expr, set map[string]Value, match func(value.Row) bool, apply func(value.Row) value.Row) {
		t.Helper()
		old := sortedLive(match)
		dml(tbl.Update(ctx, where, set))
		for _, r := range old {
			nr := apply(slices.Clone(r))
			live[r[0].(int64)] = nr
			record(tbl.Version(), ChangeUpdatePreimage, r)
			record(tbl.Version(), ChangeUpdatePostimage, nr)
		}
	}

	appendRows(maintRowsFor(0, 30, "ams", "ber", "cph")) // v1
	appendRows(maintRowsFor(30, 10, "dub"))              // v2
	// v3: rows inside files (DVs or copy-on-write): cdc files.
	del(Col("id").Lt(int64(5)), func(r value.Row) bool { return r[0].(int64) < 5 })
	c.cdcVersions = append(c.cdcVersions, tbl.Version())
	// v4: UPDATE: preimages and postimages.
	update(Col("id").Between(int64(10), int64(14)), map[string]Value{"v": Plus(Col("v"), Lit(100.0))},
		func(r value.Row) bool { id := r[0].(int64); return id >= 10 && id <= 14 },
		func(r value.Row) value.Row { r[2] = r[2].(float64) + 100; return r })
	c.cdcVersions = append(c.cdcVersions, tbl.Version())
	// v5: whole files. By partition on a partitioned table: removes only,
	// no cdc file (Spark's metadata-only delete); by a data predicate
	// otherwise: a cdc file.
	if partitioned {
		del(Col("city").Eq("dub"), func(r value.Row) bool { return r[1] == "dub" })
	} else {
		del(Col("id").Ge(int64(30)), func(r value.Row) bool { return r[0].(int64) >= 30 })
		c.cdcVersions = append(c.cdcVersions, tbl.Version())
	}
	// v6: an UPDATE that moves a row to another partition.
	update(Col("id").Eq(int64(20)), map[string]Value{"city": Lit("ber")},
		func(r value.Row) bool { return r[0].(int64) == 20 },
		func(r value.Row) value.Row { r[1] = "ber"; return r })
	c.cdcVersions = append(c.cdcVersions, tbl.Version())
	// v7: overwrite: deletes from the removes (of files with deletion
	// vectors too), inserts from the adds.
	for _, r := range sortedLive(func(value.Row) bool { return true }) {
		delete(live, r[0].(int64))
		record(tbl.Version()+1, ChangeDelete, r)
	}
	over := maintRowsFor(100, 5, "ams")
	if tbl, err = tbl.OverwriteRows(ctx, over); err != nil {
		t.Fatal(err)
	}
	for _, r := range over {
		live[r[0].(int64)] = r
		record(tbl.Version(), ChangeInsert, r)
	}
	appendRows(maintRowsFor(105, 2, "ber")) // v8

	// v9: a MERGE with every clause kind: matched delete and update (one
	// moving a row to another partition), an insert, and NOT MATCHED BY
	// SOURCE delete and update. Its change rows: the deletes, pre- and
	// postimages, and the inserts too (in the cdc files, as Spark writes
	// them: the version has cdc files).
	mergeSrc := []value.Row{
		{int64(100), "ams", -1.0}, // matched, v < 0: deleted
		{int64(101), "ams", 7.5},  // matched: updated
		{int64(102), "ber", 8.5},  // matched: updated, to partition ber
		{int64(200), "cph", 9.0},  // not matched: inserted
		{int64(201), "ams", 9.5},  // not matched: inserted
		{int64(300), "ams", -2.0}, // not matched, v < 0: not inserted
	}
	merged := func(m *MergeBuilder) {
		t.Helper()
		nt, res, err := tbl.Merge(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Committed {
			t.Fatal("MERGE committed nothing")
		}
		tbl = nt
	}
	bySrc := map[int64]value.Row{}
	for _, r := range mergeSrc {
		bySrc[r[0].(int64)] = r
	}
	v9 := tbl.Version() + 1
	for _, r := range sortedLive(func(value.Row) bool { return true }) {
		id := r[0].(int64)
		s, matched := bySrc[id]
		switch {
		case matched && s[2].(float64) < 0:
			delete(live, id)
			record(v9, ChangeDelete, r)
		case matched:
			live[id] = slices.Clone(s)
			record(v9, ChangeUpdatePreimage, r)
			record(v9, ChangeUpdatePostimage, s)
		case id >= 106:
			delete(live, id)
			record(v9, ChangeDelete, r)
		case r[1] == "ams":
			nr := value.Row{id, r[1], r[2].(float64) + 1000}
			live[id] = nr
			record(v9, ChangeUpdatePreimage, r)
			record(v9, ChangeUpdatePostimage, nr)
		}
		delete(bySrc, id)
	}
	for _, s := range mergeSrc {
		if _, unmatched := bySrc[s[0].(int64)]; unmatched && s[2].(float64) >= 0 {
			live[s[0].(int64)] = s
			record(v9, ChangeInsert, s)
		}
	}
	merged(NewMerge(MergeRows(maintSchema(), mergeSrc), MergeOn("id")).
		WhenMatched().If(Source("v").Lt(0.0)).Delete().
		WhenMatched().UpdateAll().
		WhenNotMatched().If(Source("v").Ge(0.0)).InsertAll().
		WhenNotMatchedBySource().If(Target("id").Ge(int64(106))).Delete().
		WhenNotMatchedBySource().If(Target("city").Eq("ams")).Update(map[string]Value{"v": Plus(Target("v"), Lit(1000.0))}))
	c.cdcVersions = append(c.cdcVersions, tbl.Version())
	// v10: a MERGE that only inserts (its one matched key has no WHEN
	// MATCHED clause): no cdc files, inserts from its adds.
	ins := []value.Row{{int64(101), "ams", 0.0}, {int64(400), "dub", 4.0}}
	merged(NewMerge(MergeRows(maintSchema(), ins), MergeOn("id")).WhenNotMatched().InsertAll())
	live[400] = ins[1]
	record(tbl.Version(), ChangeInsert, ins[1])
	c.tbl = tbl
	return c
}

// feedKeys reads the feed and returns its rows as canonical JSON without
// _commit_timestamp (interopRow), sorted; when times is set, each
// _commit_timestamp must be that version's history timestamp.
func feedKeys(t *testing.T, feed *ChangeFeed, times map[int64]time.Time) []string {
	t.Helper()
	sch := feed.Schema()
	n := len(sch.Fields)
	keySch := &schema.StructType{Fields: sch.Fields[:n-1]}
	var out []string
	for row, err := range feed.Rows(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if len(row) != n {
			t.Fatalf("row %v: want %d columns", row, n)
		}
		v := row[n-2].(int64)
		if ts := row[n-1].(time.Time); times != nil && !ts.Equal(times[v]) {
			t.Errorf("version %d: _commit_timestamp %v, history says %v", v, ts, times[v])
		}
		out = append(out, interopRow(t, keySch, row[:n-1]))
	}
	slices.Sort(out)
	return out
}

func historyTimes(t *testing.T, tbl *Table) map[int64]time.Time {
	t.Helper()
	h, err := tbl.History(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]time.Time{}
	for _, e := range h {
		out[e.Version] = e.Timestamp
	}
	return out
}

func TestChangesAfterDML(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		partitioned, dv bool
	}{
		{"flat copy-on-write", false, false},
		{"flat DVs", false, true},
		{"partitioned copy-on-write", true, false},
		{"partitioned DVs", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := buildCDFTable(t, objectstore.NewMem("cdf"), tc.name, tc.partitioned, tc.dv)
			times := historyTimes(t, c.tbl)
			feed, err := c.tbl.Changes(ctx, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			if feed.From != 0 || feed.To != c.tbl.Version() {
				t.Errorf("range %d..%d, want 0..%d", feed.From, feed.To, c.tbl.Version())
			}
			want := slices.Sorted(slices.Values(c.want))
			if got := feedKeys(t, feed, times); !slices.Equal(got, want) {
				t.Errorf("changes:\n%s", diffRows(got, want))
			}
			// A sub-range: versions 3 to 4 only.
			feed, err = c.tbl.Changes(ctx, 3, 4)
			if err != nil {
				t.Fatal(err)
			}
			want = slices.Sorted(slices.Values(slices.Concat(c.byVersion[3], c.byVersion[4])))
			if got := feedKeys(t, feed, times); !slices.Equal(got, want) {
				t.Errorf("changes 3..4:\n%s", diffRows(got, want))
			}
			// cdc actions exactly where rows changed inside files, each with
			// dataChange false and a _change_data/ path; the partition column
			// is not in the change data files.
			for v := int64(1); v <= c.tbl.Version(); v++ {
				actions, err := txlog.ReadCommit(ctx, c.tbl.Store(), v)
				if err != nil {
					t.Fatal(err)
				}
				var cdcs []*txlog.AddCDCFile
				for _, a := range actions {
					if a.CDC != nil {
						cdcs = append(cdcs, a.CDC)
					}
				}
				if want := slices.Contains(c.cdcVersions, v); (len(cdcs) > 0) != want {
					t.Errorf("version %d: %d cdc actions, want cdc files %v", v, len(cdcs), want)
				}
				for _, cd := range cdcs {
					if cd.DataChange || !strings.HasPrefix(cd.Path, "_change_data/") || cd.Size <= 0 {
						t.Errorf("version %d: cdc %+v", v, cd)
					}
					if _, ok := cd.PartitionValues["city"]; ok != tc.partitioned {
						t.Errorf("version %d: cdc partitionValues %v", v, cd.PartitionValues)
					}
					// The partition column reads as null from the file (it is
					// not in it); every row has its change type.
					readSch := changeDataPlan(&scan.Plan{Read: maintSchema(), Width: 3, IsPart: make([]bool, 3), PartSlot: []int{-1, -1, -1}}).Read
					n := 0
					for row, err := range parquetio.ReadFile(ctx, c.tbl.Store(), txlog.DecodePath(cd.Path), readSch) {
						if err != nil {
							t.Fatal(err)
						}
						n++
						if (row[1] == nil) != tc.partitioned || row[0] == nil || row[3] == nil {
							t.Errorf("version %d: cdc file %s row %v", v, cd.Path, row)
						}
					}
					if n == 0 {
						t.Errorf("version %d: cdc file %s is empty", v, cd.Path)
					}
				}
			}
		})
	}
}

// A change data feed table with column mapping: the change data files are
// written with the physical names (and partitionValues keyed by them), and
// Changes reads them back under the logical names.
func TestChangesColumnMapping(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"name", "id"} {
		for _, partitioned := range []bool{false, true} {
			name := mode + map[bool]string{false: " flat", true: " partitioned"}[partitioned]
			t.Run(name, func(t *testing.T) {
				c := buildCDFTable(t, objectstore.NewMem("cdf"), name, partitioned, true, mode)
				feed, err := c.tbl.Changes(ctx, 0, -1)
				if err != nil {
					t.Fatal(err)
				}
				want := slices.Sorted(slices.Values(c.want))
				if got := feedKeys(t, feed, historyTimes(t, c.tbl)); !slices.Equal(got, want) {
					t.Errorf("changes:\n%s", diffRows(got, want))
				}
				for v := int64(1); v <= c.tbl.Version(); v++ {
					actions, err := txlog.ReadCommit(ctx, c.tbl.Store(), v)
					if err != nil {
						t.Fatal(err)
					}
					for _, a := range actions {
						if a.CDC == nil {
							continue
						}
						if _, ok := a.CDC.PartitionValues["city"]; ok {
							t.Errorf("version %d: cdc partitionValues keyed by the logical name: %v", v, a.CDC.PartitionValues)
						}
						if partitioned && len(a.CDC.PartitionValues) != 1 {
							t.Errorf("version %d: cdc partitionValues %v", v, a.CDC.PartitionValues)
						}
					}
				}
			})
		}
	}
}

// Changes' options: a filter on the table's columns, a projection and a
// limit.
func TestChangesOptions(t *testing.T) {
	ctx := context.Background()
	c := buildCDFTable(t, objectstore.NewMem("cdf"), "opts", true, true)
	feed, err := c.tbl.Changes(ctx, 1, -1, WithFilter(Col("city").Eq("ber")), WithColumns("id"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range feed.Schema().Fields {
		names = append(names, f.Name)
	}
	if want := []string{"id", "_change_type", "_commit_version", "_commit_timestamp"}; !slices.Equal(names, want) {
		t.Fatalf("schema %v, want %v", names, want)
	}
	got := feedKeys(t, feed, nil)
	var want []string
	for _, k := range c.want {
		var m map[string]any
		if err := json.Unmarshal([]byte(k), &m); err != nil {
			t.Fatal(err)
		}
		if m["city"] == "ber" {
			delete(m, "city")
			delete(m, "v")
			b, _ := json.Marshal(m)
			want = append(want, string(b))
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("filtered changes:\n%s", diffRows(got, want))
	}
	feed, err = c.tbl.Changes(ctx, 1, -1, WithLimit(3))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range feed.Rows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Errorf("WithLimit(3): %d rows", n)
	}
}

// Bad ranges and tables without a change data feed are refused before any
// file is read, with errors that match.
func TestChangesErrors(t *testing.T) {
	ctx := context.Background()
	c := buildCDFTable(t, objectstore.NewMem("cdf"), "errs", false, false)
	var vnf *txlog.VersionNotFoundError
	if _, err := c.tbl.Changes(ctx, c.tbl.Version()+1, -1); !errors.As(err, &vnf) {
		t.Errorf("start after the latest version: %v", err)
	}
	if _, err := c.tbl.Changes(ctx, 3, 2); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("end before start: %v", err)
	}
	if _, err := c.tbl.Changes(ctx, -1, 2); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("negative start: %v", err)
	}
	// A later end reads to the latest version, as Spark does.
	if feed, err := c.tbl.Changes(ctx, 8, 100); err != nil || feed.To != c.tbl.Version() {
		t.Errorf("end past the latest: %v", err)
	}

	// A table without the feed, then with it turned on at version 2, then
	// off again at version 4.
	plain, _ := maintTable(t, false, nil)
	plain, err := plain.AppendRows(ctx, maintRowsFor(0, 3, "ams"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Changes(ctx, 0, -1); !errors.Is(err, ErrNoChangeData) {
		t.Fatalf("table without cdf: %v", err)
	}
	setCDF := func(on string) {
		t.Helper()
		m := plain.Snapshot().Metadata().Clone()
		m.Configuration[txlog.PropEnableChangeDataFeed] = on
		tx := plain.NewTransaction("SET TBLPROPERTIES")
		tx.UpdateMetadata(m)
		tx.UpdateProtocol(txlog.ProtocolFor(plain.Snapshot().Protocol(), plain.Schema(), m.Configuration))
		if plain, _, err = plain.Commit(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	setCDF("true") // v2
	if plain, _, err = plain.Delete(ctx, Col("id").Eq(int64(1))); err != nil {
		t.Fatal(err) // v3
	}
	if feed, err := plain.Changes(ctx, 2, -1); err != nil {
		t.Fatal(err)
	} else if got := feedKeys(t, feed, nil); !slices.Equal(got, []string{cdfRowKey(1, "ams", 0.25, ChangeDelete, 3)}) {
		t.Errorf("changes after enabling: %v", got)
	}
	if _, err := plain.Changes(ctx, 1, -1); !errors.Is(err, ErrNoChangeData) {
		t.Errorf("range starting before the feed was on: %v", err)
	}
	setCDF("false") // v4
	if _, err := plain.Changes(ctx, 2, -1); !errors.Is(err, ErrNoChangeData) || !strings.Contains(err.Error(), "version 4") {
		t.Errorf("range over the version that turned it off: %v", err)
	}
	if _, err := plain.Changes(ctx, 2, 3); err != nil {
		t.Errorf("range before it was turned off: %v", err)
	}
}

// A DELETE by partition values alone of files that have deletion vectors
// writes change data files (the rows the vectors keep), so that readers
// need not apply the removes' vectors; without vectors it writes none. An
// OPTIMIZE (dataChange false) adds nothing to the feed.
func TestChangesPartitionDeleteWithDV(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, true, map[string]string{txlog.PropEnableChangeDataFeed: "true", txlog.PropEnableDeletionVectors: "true"})
	tbl, err := tbl.AppendRows(ctx, maintRowsFor(0, 12, "ams", "ber")) // v1
	if err != nil {
		t.Fatal(err)
	}
	if tbl, _, err = tbl.Delete(ctx, Col("id").Lt(int64(4))); err != nil { // v2: DVs on both files
		t.Fatal(err)
	}
	if tbl, _, err = tbl.Delete(ctx, Col("city").Eq("ams")); err != nil { // v3
		t.Fatal(err)
	}
	if tbl, _, err = tbl.Optimize(ctx); err != nil { // v4
		t.Fatal(err)
	}
	if tbl.Version() != 4 {
		t.Fatalf("version %d", tbl.Version())
	}
	actions, err := txlog.ReadCommit(ctx, tbl.Store(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(actions, func(a txlog.Action) bool { return a.CDC != nil }) {
		t.Error("partition DELETE of a file with a deletion vector wrote no cdc file")
	}
	feed, err := tbl.Changes(ctx, 3, -1)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range maintRowsFor(0, 12, "ams", "ber") {
		if id := r[0].(int64); id >= 4 && r[1] == "ams" {
			want = append(want, cdfRowKey(id, "ams", r[2].(float64), ChangeDelete, 3))
		}
	}
	slices.Sort(want)
	if got := feedKeys(t, feed, nil); !slices.Equal(got, want) {
		t.Errorf("changes 3..4:\n%s", diffRows(got, want))
	}
	if vs := feed.Versions(); !slices.Equal(vs, []int64{3}) {
		t.Errorf("versions with changes %v, want [3] (OPTIMIZE changes no data)", vs)
	}
}

// After VACUUM removed the files of old versions, reading their changes
// fails with ErrNotExist naming the version and the file, and saying why;
// the versions whose files remain still read.
func TestChangesAfterVacuum(t *testing.T) {
	ctx := context.Background()
	c := buildCDFTable(t, objectstore.NewMem("cdf"), "vacuumed", false, false)
	later := time.Now().Add(30 * 24 * time.Hour)
	res, err := reopenAt(t, c.tbl, func() time.Time { return later }).Vacuum(ctx, WithVacuumRetention(0), WithVacuumForce(true))
	if err != nil || len(res.Files) == 0 {
		t.Fatalf("vacuum: %d files, %v; want some deleted", len(res.Files), err)
	}
	feed, err := c.tbl.Changes(ctx, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	var rerr error
	for _, err := range feed.Rows(ctx) {
		if err != nil {
			rerr = err
			break
		}
	}
	if !errors.Is(rerr, objectstore.ErrNotExist) {
		t.Fatalf("rows after VACUUM: %v, want ErrNotExist", rerr)
	}
	for _, want := range []string{"version 1: a file", "VACUUM", "data file part-"} {
		if !strings.Contains(rerr.Error(), want) {
			t.Errorf("error %q does not say %q", rerr, want)
		}
	}
	if v := c.tbl.Version(); strings.Contains(rerr.Error(), fmt.Sprintf("version %d", v)) {
		t.Errorf("error %q names the latest version %d, not the version of the file", rerr, v)
	}
	// The last version's own files are live, not vacuumed.
	last := c.tbl.Version()
	feed, err = c.tbl.Changes(ctx, last, last)
	if err != nil {
		t.Fatal(err)
	}
	got := feedKeys(t, feed, historyTimes(t, c.tbl))
	want := slices.Sorted(slices.Values(c.byVersion[last]))
	if len(want) == 0 {
		t.Fatalf("version %d recorded no changes", last)
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes of version %d after VACUUM:\n%s", last, diffRows(got, want))
	}
}
