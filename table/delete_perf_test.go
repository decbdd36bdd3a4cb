package table

import (
	"context"
	"fmt"
	"path"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
)

// TestDeleteLoadsEachDeletionVectorOnce: a DELETE of files that already
// carry a deletion vector reads each of those vectors once (it used to read
// it in planning and again when reading the file: two GETs per touched file,
// BENCHMARKS.md P7), and still keeps the rows the old vector deleted out.
func TestDeleteLoadsEachDeletionVectorOnce(t *testing.T) {
	ctx := context.Background()
	faulty := faultstore.New(objectstore.NewMem(t.Name()))
	tbl, err := Create(ctx, "", maintSchema(), WithStore(faulty), WithProperties(dvProps),
		WithTxnOptions(txlog.WithoutAutoCheckpoint()))
	if err != nil {
		t.Fatal(err)
	}
	// Three files of 40 rows each (ids 0-39, 40-79, 80-119).
	for i := range 3 {
		tbl = maintAppend(t, tbl, maintRowsFor(i*40, 40, "ams", "ber"))
	}
	// Every file gets a deletion vector: ids ending in 0.
	tbl, res, err := tbl.Delete(ctx, Or(Col("id").In(int64(0), int64(10), int64(20), int64(30)),
		Col("id").In(int64(40), int64(50), int64(60), int64(70)), Col("id").In(int64(80), int64(90), int64(100), int64(110))))
	if err != nil {
		t.Fatal(err)
	}
	if res.DeletionVectorsAdded != 3 || res.DeletedRows != 12 {
		t.Fatalf("first delete: %+v", res)
	}
	before := len(faulty.Calls())
	// The second delete touches every file again (ids ending in 5), and
	// merges the old vectors.
	tbl, res, err = tbl.Delete(ctx, Col("id").In(int64(5), int64(15), int64(25), int64(35),
		int64(45), int64(55), int64(65), int64(75), int64(85), int64(95), int64(105), int64(115)))
	if err != nil {
		t.Fatal(err)
	}
	if res.DeletionVectorsUpdated != 3 || res.DeletedRows != 12 {
		t.Fatalf("second delete: %+v", res)
	}
	dvGets := 0
	for _, c := range faulty.Calls()[before:] {
		if c.Op == faultstore.OpGet && strings.HasPrefix(path.Base(c.Key), "deletion_vector_") {
			dvGets++
		}
	}
	if dvGets != 3 {
		t.Errorf("the second delete read deletion vectors %d times, want 3 (one per touched file)", dvGets)
	}
	// The rows of both deletes are gone, the others stay.
	n := 0
	for r, err := range tbl.Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if id := r[0].(int64); id%5 == 0 {
			t.Errorf("deleted row %v still read", r)
		}
	}
	if n != 96 {
		t.Errorf("%d rows left, want 96", n)
	}
}

// TestRemoverReserveKeepsRowsInPlace: the copy-on-write rewrite collects the
// kept rows of every touched file into one buffer sized once by reserve, so
// remove never copies it again (it used to grow it file by file: ~10% of the
// CPU of a DELETE from 1,000,000 rows, BENCHMARKS.md P7). Files removed
// whole and deletion-vector removers reserve nothing.
func TestRemoverReserveKeepsRowsInPlace(t *testing.T) {
	tbl, _ := maintTable(t, false, nil)
	rows := maintRowsFor(0, 300, "ams")
	var targets []*dmlTarget
	for i := range 3 {
		targets = append(targets, &dmlTarget{f: &scan.File{Add: &txlog.Add{Path: fmt.Sprintf("f%d", i), Size: 10}},
			matched: []int64{0}, keptRows: rows[i*100+1 : (i+1)*100]})
	}
	targets = append(targets, &dmlTarget{f: &scan.File{Add: &txlog.Add{Path: "whole", Size: 10}}, whole: true, live: 7})
	for _, useDV := range []bool{false, true} {
		rw := newRemover(tbl, &operation{}, useDV)
		rw.reserve(targets)
		if useDV {
			if cap(rw.rows) != 0 {
				t.Errorf("deletion vectors: reserved %d rows, want 0", cap(rw.rows))
			}
			continue
		}
		if cap(rw.rows) < 297 {
			t.Fatalf("copy-on-write: reserved %d rows, want at least 297", cap(rw.rows))
		}
		start := unsafe.SliceData(rw.rows[:1])
		var deleted int64
		for _, tg := range targets {
			deleted += rw.remove(tg)
		}
		if len(rw.rows) != 297 || unsafe.SliceData(rw.rows) != start || deleted != 3+7 {
			t.Errorf("copy-on-write: %d rows kept (moved %v), %d deleted; want 297 in place, 10", len(rw.rows), unsafe.SliceData(rw.rows) != start, deleted)
		}
	}
}

// TestDeleteWithDeletionVectorsReadsOnlyPredicateColumns: a DELETE that
// writes deletion vectors keeps no rows, so it decodes only the columns
// its predicate needs. It used to box every column of every row (a
// 1,000,000-row, 5-column DELETE allocated 3.4 million times; BENCHMARKS.md
// P7): here a predicate on the string column city (values interned) must
// not allocate per row for id and v, nor a row of every column.
func TestDeleteWithDeletionVectorsReadsOnlyPredicateColumns(t *testing.T) {
	ctx := context.Background()
	const n = 20_000
	for _, dv := range []bool{true, false} {
		var props map[string]string
		if dv {
			props = dvProps
		}
		tbl, _ := maintTable(t, false, props)
		tbl = maintAppend(t, tbl, maintRowsFor(1000, n, "ams", "ber", "cph", "dus"))
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		nt, res, err := tbl.Delete(ctx, Col("city").Eq("cph"))
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		if res.DeletedRows != n/4 {
			t.Fatalf("dv=%v: deleted %d rows, want %d", dv, res.DeletedRows, n/4)
		}
		perRow := float64(m1.Mallocs-m0.Mallocs) / n
		t.Logf("dv=%v: %.2f allocations per row", dv, perRow)
		if dv && perRow > 1 {
			t.Errorf("deletion vectors: %.2f allocations per row read, want at most 1 (only city decoded)", perRow)
		}
		left := 0
		for r, err := range nt.Scan(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if r[1] == "cph" {
				t.Fatalf("dv=%v: deleted row %v still read", dv, r)
			}
			left++
		}
		if left != n-n/4 {
			t.Errorf("dv=%v: %d rows left, want %d", dv, left, n-n/4)
		}
	}
}
