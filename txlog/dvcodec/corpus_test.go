package dvcodec

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// TestCorpusDeletionVectors loads every deletion vector of the corpus
// tables that deltakit reads (txlog's TestCorpus checks the rest of each
// table): each bitmap must hold the descriptor's cardinality and delete
// only rows of its file (index below the file's numRecords).
func TestCorpusDeletionVectors(t *testing.T) {
	dir := testsupport.CorpusDir(t)
	checked := 0
	for _, exp := range testsupport.CorpusTables(t, dir) {
		if exp.Expect == "error" || exp.Expect == "refuse" {
			continue
		}
		t.Run(exp.Table, func(t *testing.T) {
			store, err := objectstore.NewLocal(filepath.Join(dir, exp.Table, exp.Root))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			snap, err := txlog.Load(ctx, store)
			if err != nil {
				t.Skipf("Load: %v (txlog's TestCorpus judges it)", err)
			}
			for _, a := range snap.Files() {
				dv := a.DeletionVector
				if dv == nil {
					continue
				}
				bm, err := load(ctx, snap.Store(), dv)
				if errors.Is(err, objectstore.ErrNotExist) {
					t.Logf("DV file of %s is absent from this copy of the table: bitmap not checked", a.Path)
					continue
				}
				if err != nil {
					t.Errorf("load(%s): %v", a.Path, err)
					continue
				}
				checked++
				if got := int64(bm.GetCardinality()); got != dv.Cardinality {
					t.Errorf("DV of %s: bitmap cardinality %d, descriptor %d", a.Path, got, dv.Cardinality)
				}
				if n, ok := a.NumRecords(); ok && bm.GetCardinality() > 0 && int64(bm.Maximum()) >= n {
					t.Errorf("DV of %s deletes row %d of a %d-row file", a.Path, bm.Maximum(), n)
				}
			}
		})
	}
	t.Logf("%d deletion vectors checked", checked)
}
