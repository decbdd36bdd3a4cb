package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Concurrent DELETE, UPDATE and MERGE on the same file: without
// WithConflictRetries all but the first lose with a conflict; with it all
// commit and the table holds what applying them one after another gives.
func TestConflictRetries(t *testing.T) {
	ctx := context.Background()
	input := maintRowsFor(0, 20, "ams", "ber")
	// op g acts on id g only (or inserts id 1000+g): the serial result is
	// the same in any commit order.
	const n = 6
	run := func(tbl *Table, g int, opts ...WriteOption) error {
		var err error
		switch g % 3 {
		case 0:
			_, _, err = tbl.Delete(ctx, Col("id").Eq(int64(g)), opts...)
		case 1:
			_, _, err = tbl.Update(ctx, Col("id").Eq(int64(g)), map[string]Value{"v": Lit(-1.0)}, opts...)
		case 2:
			src := MergeRows(maintSchema(), []Row{{int64(1000 + g), "cph", 7.0}, {int64(g), "cph", 8.0}})
			_, _, err = tbl.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll(), opts...)
		}
		return err
	}
	var want []value.Row
	for _, r := range input {
		g := int(r[0].(int64))
		switch {
		case g < n && g%3 == 0:
			continue
		case g < n && g%3 == 1:
			r = value.Row{r[0], r[1], -1.0}
		case g < n && g%3 == 2:
			r = value.Row{r[0], "cph", 8.0}
		}
		want = append(want, r)
	}
	for g := 2; g < n; g += 3 {
		want = append(want, value.Row{int64(1000 + g), "cph", 7.0})
	}
	wantRows := refFilter(want, func(value.Row) bool { return false })
	for _, dv := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", dv), func(t *testing.T) {
			var props map[string]string
			if dv {
				props = dvProps
			}
			tbl, _ := maintTable(t, false, props)
			tbl = maintAppend(t, tbl, input)
			// Without retries: every op on the same stale version; the
			// first wins, the others conflict.
			var conflicts int
			for g := range n {
				if err := run(tbl, g); err != nil {
					if !errors.Is(err, txlog.ErrConcurrentModification) || errors.Is(err, ErrConflictRetriesExhausted) {
						t.Fatalf("op %d: %v", g, err)
					}
					conflicts++
				}
			}
			if conflicts != n-1 {
				t.Fatalf("%d conflicts without retries, want %d", conflicts, n-1)
			}
			// With retries, concurrently on a fresh table.
			tbl, _ = maintTable(t, false, props)
			tbl = maintAppend(t, tbl, input)
			var wg sync.WaitGroup
			errs := make([]error, n)
			for g := range n {
				wg.Go(func() { errs[g] = run(tbl, g, WithConflictRetries(2*n)) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			latest, err := tbl.Refresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := maintScan(t, latest); !slices.Equal(got, wantRows) {
				t.Fatalf("rows\n got %v\nwant %v", got, wantRows)
			}
			if latest.Version() != tbl.Version()+n {
				t.Fatalf("version %d, want %d", latest.Version(), tbl.Version()+n)
			}
			// A stale table conflicts once; one retry on the latest commits.
			nt, res, err := tbl.Delete(ctx, Col("id").Eq(int64(19)), WithConflictRetries(1))
			if err != nil || res.DeletedRows != 1 || nt.Version() != latest.Version()+1 {
				t.Fatalf("delete on stale table with a retry: %v %+v", err, res)
			}
		})
	}
}
