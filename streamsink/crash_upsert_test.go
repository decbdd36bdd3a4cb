package streamsink

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// The crash matrix's upsert paths: the sink in upsert mode (WithMergeKeys),
// each epoch a MERGE by id, copy-on-write and with deletion vectors. Epoch
// e upserts ids overlapping the previous epochs' (so that a lost epoch
// leaves old values and an epoch applied again after a later one brings
// old values back) and repeats some ids within the epoch (the latest wins).
// The table must hold the latest row per id over the committed epochs,
// computed from the inputs alone (upsertRef).

var (
	upsertPath   = crashPath{name: "upsert", open: openUpsertWriter, upsert: true, byKind: true}
	upsertDVPath = crashPath{name: "upsert-dv", open: openUpsertWriter, upsert: true, byKind: true,
		props: map[string]string{txlog.PropEnableDeletionVectors: "true"}}
)

// upsertRows are epoch e's rows: ids (5e + i) mod 40 for i < 16, then ids
// of four of them again with new payloads.
func upsertRows(e int64) []value.Row {
	var rows []value.Row
	for i := range int64(16) {
		rows = append(rows, ev((5*e+i)%40, e, fmt.Sprintf("e%d-%d", e, i)))
	}
	for _, i := range []int64{0, 3, 7, 11} {
		rows = append(rows, ev((5*e+i)%40, e, fmt.Sprintf("e%d-dup%d", e, i)))
	}
	return rows
}

// upsertRefUpTo is the table after upsert epochs 0..last.
func upsertRefUpTo(last int64) map[int64]string {
	var epochs [][]value.Row
	for e := int64(0); e <= last; e++ {
		epochs = append(epochs, upsertRows(e))
	}
	return upsertRef(epochs...)
}

func openUpsertWriter(ctx context.Context, store objectstore.Store) (epochWriter, error) {
	tbl, err := table.Open(ctx, "", tableOpts(store)...)
	if err != nil {
		return nil, err
	}
	s, err := New(tbl, crashQuery, WithLogger(quiet), WithMergeKeys("id"), WithWriteOptions(table.WithWriteConcurrency(1)))
	if err != nil {
		return nil, err
	}
	return &sinkWriter{s: s}, nil
}

// checkUpsertRows checks that tbl holds exactly the latest row per id of
// upsert epochs 0..last: each id once, with the value of its latest write.
func checkUpsertRows(ctx context.Context, c *tableCheck, tbl *table.Table, last int64) {
	want := upsertRefUpTo(last)
	got := map[int64]string{}
	for row, err := range tbl.Scan(ctx) {
		if err != nil {
			c.addf("scan: %v", err)
			return
		}
		id, ok := row[0].(int64)
		if !ok {
			c.addf("scan: row %v has no int64 id", row)
			return
		}
		val := fmt.Sprintf("%d/%v", row[1], row[2])
		if prev, ok := got[id]; ok {
			c.duplicated++
			c.addf("id %d present twice (%s and %s)", id, prev, val)
			continue
		}
		got[id] = val
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		switch g, ok := got[id]; {
		case !ok:
			c.lost++
			c.addf("id %d missing (want %s)", id, want[id])
		case g != want[id]:
			c.addf("id %d holds %s, want %s (latest per id of epochs 0..%d)", id, g, want[id], last)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[id]; !ok {
			c.addf("id %d (%s) in the table, want none", id, got[id])
		}
	}
}

// checkUpsertTable checks the table in store after an upsert stream of
// epochs 0..epochs-1 of query finished:
//
//   - the table opens at version wantVersion (one commit per epoch);
//   - it holds the latest row per id of all epochs (checkUpsertRows), and
//     its live files' numRecords minus deletion vectors count as many;
//   - the log's versions are contiguous; each epoch's txn is in exactly one
//     commit (a missing one is a lost epoch, a second one a doubled epoch),
//     and that commit is a MERGE;
//   - every file the log references exists at its size; a data file the
//     latest snapshot does not reference was removed by a commit or never
//     referenced (an orphan of a crashed attempt);
//   - table.Verify and table.VerifyExactlyOnce find nothing wrong.
func checkUpsertTable(ctx context.Context, store objectstore.Store, query string, epochs int, wantVersion int64) *tableCheck {
	c := &tableCheck{}
	tbl, err := table.Open(ctx, "", table.WithStore(store))
	if err != nil {
		c.addf("table does not open: %v", err)
		return c
	}
	snap := tbl.Snapshot()
	if snap.Version() != wantVersion {
		c.addf("table at version %d, want %d", snap.Version(), wantVersion)
	}
	checkUpsertRows(ctx, c, tbl, int64(epochs-1))
	var records int64
	for _, f := range snap.Files() {
		n, ok := f.NumRecords()
		if !ok {
			c.addf("%s: no numRecords in its stats", f.Path)
		}
		records += n
		if dv := f.DeletionVector; dv != nil {
			records -= dv.Cardinality
		}
	}
	if want := int64(len(upsertRefUpTo(int64(epochs - 1)))); records != want {
		c.addf("live files hold %d records (numRecords minus deletion vectors), want %d", records, want)
	}

	var commitVersions []int64
	data := map[string]int64{}
	for info, err := range store.List(ctx, "", "") {
		if err != nil {
			c.addf("listing the store: %v", err)
			return c
		}
		if rest, ok := strings.CutPrefix(info.Key, txlog.LogPrefix); ok {
			if len(rest) == 25 && strings.HasSuffix(rest, ".json") {
				var v int64
				if _, err := fmt.Sscanf(rest[:20], "%d", &v); err == nil {
					commitVersions = append(commitVersions, v)
				}
			}
			continue
		}
		data[info.Key] = info.Size
	}
	slices.Sort(commitVersions)
	for i, v := range commitVersions {
		if v != int64(i) {
			c.addf("log is not contiguous: commit files %v", commitVersions)
			break
		}
	}
	everAdded, removed := map[string]bool{}, map[string]bool{}
	everDV := map[string]bool{}
	epochCommits := map[int64][]int64{}
	for cm, err := range txlog.Commits(ctx, store, 0, -1) {
		if err != nil {
			c.addf("reading the log: %v", err)
			break
		}
		op := ""
		var epochsHere []int64
		for _, a := range cm.Actions {
			switch {
			case a.Add != nil:
				everAdded[txlog.DecodePath(a.Add.Path)] = true
				if key := dvKey(c, a.Add); key != "" {
					everDV[key] = true
				}
			case a.Remove != nil:
				removed[txlog.DecodePath(a.Remove.Path)] = true
			case a.Txn != nil && a.Txn.AppID == query:
				epochCommits[a.Txn.Version] = append(epochCommits[a.Txn.Version], cm.Version)
				epochsHere = append(epochsHere, a.Txn.Version)
			case a.CommitInfo != nil:
				op = a.CommitInfo.Operation
			}
		}
		if len(epochsHere) > 0 && op != MergeOperation {
			c.addf("version %d commits epochs %v as operation %q, want %s", cm.Version, epochsHere, op, MergeOperation)
		}
	}
	for e := range int64(epochs) {
		switch vs := epochCommits[e]; {
		case len(vs) == 0:
			c.lost++
			c.addf("epoch %d committed by no version, want exactly one", e)
		case len(vs) > 1:
			c.duplicated += len(vs) - 1
			c.addf("epoch %d committed by versions %v, want exactly one", e, vs)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(epochCommits)) {
		if e < 0 || e >= int64(epochs) {
			c.addf("txn of unknown epoch %d in versions %v", e, epochCommits[e])
		}
	}
	live := map[string]bool{}
	for _, f := range snap.Files() {
		key := txlog.DecodePath(f.Path)
		live[key] = true
		size, ok := data[key]
		switch {
		case !ok:
			c.addf("referenced file %s does not exist", key)
		case size != f.Size:
			c.addf("referenced file %s has %d bytes, the log says %d", key, size, f.Size)
		}
		if key := dvKey(c, f); key != "" {
			live[key] = true
			if _, ok := data[key]; !ok {
				c.addf("referenced deletion vector file %s (of %s) does not exist", key, f.Path)
			}
		}
	}
	for key := range data {
		switch {
		case live[key] || everDV[key]:
		case everAdded[key]:
			if !removed[key] {
				c.addf("file %s was added, never removed, and is not live", key)
			}
		default:
			c.orphans++
		}
	}

	rep, err := table.Verify(ctx, store)
	switch {
	case err != nil:
		c.addf("verify: %v", err)
	case !rep.OK():
		for _, p := range rep.Problems {
			c.addf("verify: %s", p)
		}
	}
	eo, err := table.VerifyExactlyOnce(ctx, store)
	if err != nil {
		c.addf("verify exactly once: %v", err)
		return c
	}
	found := false
	for _, q := range eo.Queries {
		if q.AppID != query {
			continue
		}
		found = true
		if !q.OK() || q.First != 0 || q.Last != int64(epochs-1) {
			c.addf("verify exactly once: %+v", *q)
		}
	}
	if !found {
		c.addf("verify exactly once: query %s not in the log", query)
	}
	return c
}

// The upsert checker must catch what a broken upsert writer leaves.
func TestUpsertCrashCheckerFindsViolations(t *testing.T) {
	ctx := context.Background()
	// build upserts the epochs in the given order through the sink; an
	// epoch in noTxn is MERGEd again without its txn (a writer that does
	// not record progress).
	build := func(t *testing.T, epochs []int64, noTxn ...int64) *objectstore.Mem {
		mem := objectstore.NewMem(t.Name())
		if _, err := table.Create(ctx, "", eventSchema, tableOpts(mem)...); err != nil {
			t.Fatal(err)
		}
		w, err := openUpsertWriter(ctx, mem)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range epochs {
			if _, err := w.write(ctx, e, upsertRows(e)); err != nil {
				t.Fatal(err)
			}
		}
		tbl := w.table()
		for _, e := range noTxn {
			src, _, err := table.MergeRows(eventSchema, upsertRows(e)).LatestPerKey("id")
			if err != nil {
				t.Fatal(err)
			}
			m := table.NewMerge(src, table.MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll()
			if tbl, _, err = tbl.Merge(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		return mem
	}
	all := []int64{0, 1, 2, 3, 4, 5}
	tests := []struct {
		name        string
		store       func(t *testing.T) objectstore.Store
		wantVersion int64
		wantLost    int
		wantDup     int
		wantProblem string
	}{
		{name: "correct table", store: func(t *testing.T) objectstore.Store { return build(t, all) }, wantVersion: 6},
		{name: "epoch 4 applied again after 5 (no txn)", wantVersion: 7, wantProblem: "id 25 holds 4/e4-5, want 5/e5-dup0",
			store: func(t *testing.T) objectstore.Store { return build(t, all, 4) }},
		{name: "epoch 3 lost", wantVersion: 6, wantLost: 1, wantProblem: "epoch 3 committed by no version",
			store: func(t *testing.T) objectstore.Store { return build(t, []int64{0, 1, 2, 4, 5}) }},
		{name: "epoch 2 committed twice", wantVersion: 7, wantDup: 1, wantProblem: "epoch 2 committed by versions [3 7]",
			store: func(t *testing.T) objectstore.Store {
				mem := build(t, all)
				tbl, err := table.Open(ctx, "", table.WithStore(mem))
				if err != nil {
					t.Fatal(err)
				}
				tx := tbl.NewTransaction("MERGE")
				tx.Add(txlog.Action{Txn: &txlog.Txn{AppID: crashQuery, Version: 2}})
				if _, _, err := tbl.Commit(ctx, tx); err != nil {
					t.Fatal(err)
				}
				return mem
			}},
		{name: "epoch committed as an append", wantVersion: 6, wantProblem: `as operation "STREAMING UPDATE"`,
			store: func(t *testing.T) objectstore.Store {
				mem := objectstore.NewMem(t.Name())
				tbl, err := table.Create(ctx, "", eventSchema, tableOpts(mem)...)
				if err != nil {
					t.Fatal(err)
				}
				up, err := New(tbl, crashQuery, WithMergeKeys("id"))
				if err != nil {
					t.Fatal(err)
				}
				for e := range int64(5) {
					if _, err := up.WriteEpoch(ctx, e, upsertRows(e)); err != nil {
						t.Fatal(err)
					}
				}
				// Epoch 5's rows are all new ids or updates; appended, the
				// updated ids appear twice.
				app, err := New(up.Table(), crashQuery)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := app.WriteEpoch(ctx, 5, upsertRows(5)); err != nil {
					t.Fatal(err)
				}
				return mem
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := checkUpsertTable(ctx, tc.store(t), crashQuery, crashEpochs, tc.wantVersion)
			got := strings.Join(c.problems, "\n")
			if tc.wantProblem == "" {
				if got != "" {
					t.Fatalf("problems in a correct table:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, tc.wantProblem) {
				t.Fatalf("problems do not mention %q:\n%s", tc.wantProblem, got)
			}
			if c.lost != tc.wantLost {
				t.Errorf("lost %d, want %d", c.lost, tc.wantLost)
			}
			if tc.wantDup > 0 && c.duplicated < tc.wantDup {
				t.Errorf("duplicated %d, want at least %d", c.duplicated, tc.wantDup)
			}
		})
	}
}
