package table

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestDMLDeletionVectorMetrics: the deletion vector and file metrics of
// DELETE and UPDATE have Spark's meanings, as Spark 4.2 / Delta 4.4 wrote
// them for the same operations on the same tables (TestSparkCorpusDVDML
// compares them with Spark's): a grown vector is added, updated and
// removed (the old one); an UPDATE's numRemovedFiles counts files that got
// a vector, a DELETE's does not.
func TestDMLDeletionVectorMetrics(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, dvProps)
	tbl = maintAppend(t, tbl, maintRowsFor(0, 50, "ams"))
	tbl = maintAppend(t, tbl, maintRowsFor(50, 50, "ams"))
	want := func(step string, res *DMLResult, m map[string]string) {
		t.Helper()
		for k, v := range m {
			if res.Metrics[k] != v {
				t.Errorf("%s: operationMetrics[%s] = %q, want %q (all: %v)", step, k, res.Metrics[k], v, res.Metrics)
			}
		}
	}
	// First vectors on both files.
	tbl, res, err := tbl.Delete(ctx, Or(Col("id").Lt(3), Col("id").Ge(97)))
	if err != nil {
		t.Fatal(err)
	}
	want("first delete", res, map[string]string{"numDeletedRows": "6", "numRemovedFiles": "0", "numAddedFiles": "0",
		"numDeletionVectorsAdded": "2", "numDeletionVectorsUpdated": "0", "numDeletionVectorsRemoved": "0"})
	// One file's vector grows, the other's is untouched.
	tbl, res, err = tbl.Delete(ctx, Col("id").Between(10, 11))
	if err != nil {
		t.Fatal(err)
	}
	want("second delete", res, map[string]string{"numDeletedRows": "2", "numRemovedFiles": "0",
		"numDeletionVectorsAdded": "1", "numDeletionVectorsUpdated": "1", "numDeletionVectorsRemoved": "1"})
	if res.DeletionVectorsAdded != 1 || res.DeletionVectorsUpdated != 1 || res.DeletionVectorsRemoved != 1 || res.RemovedFiles != 0 {
		t.Errorf("second delete: %+v", res)
	}
	// An UPDATE of rows in both files: both vectors grow, both files count
	// as removed in the metric (not in RemovedFiles), one new file.
	_, res, err = tbl.Update(ctx, Or(Col("id").Eq(20), Col("id").Eq(70)), map[string]Value{"v": Lit(-1.0)})
	if err != nil {
		t.Fatal(err)
	}
	want("update", res, map[string]string{"numUpdatedRows": "2", "numRemovedFiles": "2", "numAddedFiles": "1", "numCopiedRows": "0",
		"numDeletionVectorsAdded": "2", "numDeletionVectorsUpdated": "2", "numDeletionVectorsRemoved": "2"})
	if res.RemovedFiles != 0 || res.AddedFiles != 1 {
		t.Errorf("update: RemovedFiles %d, AddedFiles %d; want 0 and 1", res.RemovedFiles, res.AddedFiles)
	}
}

// TestExecutionTimeWithPinnedClock: executionTimeMs and scanTimeMs are
// measured by the process's clock, not the table's WithClock: a clock
// pinned in the past (as the CLI's tests pin it) used to give about 8e10 ms.
func TestExecutionTimeWithPinnedClock(t *testing.T) {
	ctx := context.Background()
	pinned := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	tbl, err := Create(ctx, t.TempDir(), maintSchema(), WithClock(func() time.Time { return pinned }))
	if err != nil {
		t.Fatal(err)
	}
	tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
	tbl, dres, err := tbl.Delete(ctx, Col("id").Lt(3))
	if err != nil {
		t.Fatal(err)
	}
	tbl, ures, err := tbl.Update(ctx, Col("id").Eq(5), map[string]Value{"v": Lit(1.5)})
	if err != nil {
		t.Fatal(err)
	}
	src := MergeRows(maintSchema(), maintRowsFor(8, 4, "ams"))
	_, mres, err := tbl.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		op      string
		metrics map[string]string
	}{{"DELETE", dres.Metrics}, {"UPDATE", ures.Metrics}, {"MERGE", mres.Metrics}} {
		for _, k := range []string{"executionTimeMs", "scanTimeMs"} {
			v, ok := m.metrics[k]
			if !ok {
				continue
			}
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 || ms > 60_000 {
				t.Errorf("%s %s = %q, want a few milliseconds", m.op, k, v)
			}
		}
	}
}
