package streamsink

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// The exactly-once checker of the crash matrix. It looks at a table only
// through the store, the log and a scan, never through the writer that
// wrote it, and reports every violation it finds as a sentence, so that
// TestCrashCheckerFindsViolations can prove it catches broken tables.

// tableCheck is what one check of a finished stream found.
type tableCheck struct {
	problems []string
	// lost counts rows missing from the table; duplicated counts extra
	// copies of rows present more than once.
	lost, duplicated int
	// orphans counts data files in the store that the log never references.
	orphans int
}

func (c *tableCheck) addf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

// epochCounts scans tbl and returns, per epoch, how often each row id of
// that epoch was read.
func epochCounts(ctx context.Context, tbl *table.Table) (map[int64]map[int64]int, error) {
	out := map[int64]map[int64]int{}
	for row, err := range tbl.Scan(ctx) {
		if err != nil {
			return nil, fmt.Errorf("scan: %w", err)
		}
		id, ok1 := row[0].(int64)
		epoch, ok2 := row[1].(int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("scan: row %v has no int64 id and epoch", row)
		}
		if out[epoch] == nil {
			out[epoch] = map[int64]int{}
		}
		out[epoch][id]++
	}
	return out, nil
}

// checkEpochRows compares scanned rows with the rows every epoch in epochs
// wrote (epochRows(e, rowsPerEpoch)) plus extra[e] (nil: none): each exactly
// once, nothing else.
func checkEpochRows(c *tableCheck, counts map[int64]map[int64]int, epochs []int64, rowsPerEpoch int, extra map[int64][]value.Row) {
	want := map[int64]bool{}
	for _, e := range epochs {
		want[e] = true
		ids := counts[e]
		if len(ids) == 0 {
			c.lost += rowsPerEpoch + len(extra[e])
			c.addf("epoch %d: no rows in the table", e)
			continue
		}
		for _, r := range slices.Concat(epochRows(e, rowsPerEpoch), extra[e]) {
			switch n := ids[r[0].(int64)]; {
			case n == 0:
				c.lost++
				c.addf("epoch %d: row %d missing", e, r[0])
			case n > 1:
				c.duplicated += n - 1
				c.addf("epoch %d: row %d present %d times", e, r[0], n)
			}
		}
		if n := rowsPerEpoch + len(extra[e]); len(ids) != n {
			c.addf("epoch %d: %d distinct row ids, want %d", e, len(ids), n)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(counts)) {
		if !want[e] {
			c.addf("epoch %d: %d row ids in the table, want none", e, len(counts[e]))
		}
	}
}

// dvKey returns the store key of a's deletion vector file, "" when a has
// none or an inline one.
func dvKey(c *tableCheck, a *txlog.Add) string {
	dv := a.DeletionVector
	if dv == nil || dv.StorageType == "i" {
		return ""
	}
	p, err := dv.AbsolutePath()
	if err != nil {
		c.addf("%s: deletion vector: %v", a.Path, err)
		return ""
	}
	return p
}

// checkDeletionVectors checks that the live files of the table in store
// carry deletion vectors deleting want rows in all: the delete path's rows
// went by deletion vectors, not by rewriting files.
func checkDeletionVectors(ctx context.Context, store objectstore.Store, c *tableCheck, want int64) {
	tbl, err := table.Open(ctx, "", table.WithStore(store))
	if err != nil {
		c.addf("table does not open: %v", err)
		return
	}
	var got int64
	for _, f := range tbl.Snapshot().Files() {
		if dv := f.DeletionVector; dv != nil {
			got += dv.Cardinality
		}
	}
	if got != want {
		c.addf("live deletion vectors delete %d rows, want %d", got, want)
	}
}

// checkTable checks the table in store after a stream of epochs 0..epochs-1
// of query (rowsPerEpoch rows each, written with epochRows) finished:
//
//   - the table opens, at version wantVersion (version 0 created it, then
//     one commit per epoch, after a pre-fill commit if any: nothing
//     committed twice, nothing empty);
//   - every epoch's rows are in the table exactly once, and nothing else,
//     per a scan and per the sum of numRecords minus deletion-vector
//     cardinalities of the live files;
//   - the log's commit versions are 0..latest without a gap;
//   - every commit carries txn{query, epoch} for one epoch, and each epoch
//     appears in exactly one commit;
//   - every file the log references exists (with its recorded size); data
//     files in the store that the latest snapshot does not reference
//     (orphans of a crashed attempt) were never referenced by any commit;
//     deletion vector files that a commit referenced but a later merged
//     one replaced are neither orphans nor problems;
//   - table.Verify (checkpoints against commits, among others) and
//     table.VerifyExactlyOnce find nothing wrong.
func checkTable(ctx context.Context, store objectstore.Store, query string, epochs, rowsPerEpoch int, wantVersion int64) *tableCheck {
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

	all := make([]int64, epochs)
	for i := range all {
		all[i] = int64(i)
	}
	counts, err := epochCounts(ctx, tbl)
	if err != nil {
		c.addf("%v", err)
	} else {
		checkEpochRows(c, counts, all, rowsPerEpoch, nil)
	}
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
	if want := int64(epochs * rowsPerEpoch); records != want {
		c.addf("live files hold %d records (numRecords minus deletion vectors), want %d", records, want)
	}

	// The log: contiguous versions, one commit per epoch, every add ever.
	var commitVersions []int64
	data := map[string]int64{} // data file key -> size
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
	everAdded := map[string]bool{}
	everDV := map[string]bool{} // deletion-vector files any add referenced
	epochCommits := map[int64][]int64{}
	for cm, err := range txlog.Commits(ctx, store, 0, -1) {
		if err != nil {
			c.addf("reading the log: %v", err)
			break
		}
		for _, a := range cm.Actions {
			switch {
			case a.Add != nil:
				everAdded[txlog.DecodePath(a.Add.Path)] = true
				if key := dvKey(c, a.Add); key != "" {
					everDV[key] = true
				}
			case a.Txn != nil && a.Txn.AppID == query:
				epochCommits[a.Txn.Version] = append(epochCommits[a.Txn.Version], cm.Version)
			}
		}
	}
	for e := range int64(epochs) {
		if vs := epochCommits[e]; len(vs) != 1 {
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
		if live[key] || everDV[key] {
			// Live, or a deletion vector file that a later commit's merged
			// deletion vector replaced (kept until vacuum).
			continue
		}
		c.orphans++
		if everAdded[key] {
			c.addf("orphan %s was referenced by a commit", key)
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
