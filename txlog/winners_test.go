package txlog

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// TestReadWinners: the winners of a lost race are read in version order,
// contiguous from the taken version, up to the first free one, across
// windows; a free version is ErrNotExist.
func TestReadWinners(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem(t.Name())
	createTestTable(t, mem, nil)
	snap, err := Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 9 { // versions 1..9
		tx := NewTransaction(snap, "WRITE")
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", i), "a"))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	for _, tc := range []struct{ from, want int64 }{{9, 1}, {6, 4}, {5, 5}, {2, 8}, {1, 9}} {
		got, err := readWinners(ctx, mem, tc.from)
		if err != nil || int64(len(got)) != tc.want {
			t.Fatalf("from %d: %d winners, %v; want %d", tc.from, len(got), err, tc.want)
		}
		for i, acts := range got {
			ci := firstCommitInfo(acts)
			var add string
			for _, a := range acts {
				if a.Add != nil {
					add = a.Add.Path
				}
			}
			if want := fmt.Sprintf("f%d.parquet", tc.from+int64(i)-1); ci == nil || add != want {
				t.Fatalf("from %d: winner %d adds %q, want %q", tc.from, i, add, want)
			}
		}
	}
	if _, err := readWinners(ctx, mem, 10); !errors.Is(err, objectstore.ErrNotExist) {
		t.Fatalf("free version: %v, want ErrNotExist", err)
	}
}
