package table

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// TestDeleteLoadsEachDeletionVectorOnce: a DELETE of files that already
// carry a deletion vector reads each of those vectors once (it used to read
// it in planning and again when reading the file: two GETs per touched file,
// BENCHMARKS.md P7), and still keeps the rows the old vector deleted out.
func TestDeleteLoadsEachDeletionVectorOnce(t *testing.T) {
	ctx := context.Background()
	faulty := objectstore.NewFaulty(objectstore.NewMem(t.Name()))
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
	tbl, res, err := Delete(ctx, tbl, Or(Col("id").In(int64(0), int64(10), int64(20), int64(30)),
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
	tbl, res, err = Delete(ctx, tbl, Col("id").In(int64(5), int64(15), int64(25), int64(35),
		int64(45), int64(55), int64(65), int64(75), int64(85), int64(95), int64(105), int64(115)))
	if err != nil {
		t.Fatal(err)
	}
	if res.DeletionVectorsUpdated != 3 || res.DeletedRows != 12 {
		t.Fatalf("second delete: %+v", res)
	}
	dvGets := 0
	for _, c := range faulty.Calls()[before:] {
		if c.Op == objectstore.OpGet && strings.HasPrefix(path.Base(c.Key), "deletion_vector_") {
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
