package table

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// firstListingHides hides key from its first listing of the log, as a
// local directory read does for a file created while the read runs (see
// txlog's listLog).
type firstListingHides struct {
	objectstore.Store
	key   string
	mu    sync.Mutex
	lists int
}

func (s *firstListingHides) List(ctx context.Context, prefix, startAfter string) iter.Seq2[objectstore.ObjectInfo, error] {
	s.mu.Lock()
	hide := s.lists == 0 && prefix == txlog.LogPrefix
	if hide {
		s.lists++
	}
	s.mu.Unlock()
	return func(yield func(objectstore.ObjectInfo, error) bool) {
		for info, err := range s.Store.List(ctx, prefix, startAfter) {
			if hide && err == nil && info.Key == s.key {
				continue
			}
			if !yield(info, err) {
				return
			}
		}
	}
}

// TestVerifyAndHistoryListAgainOnAGap: Verify and History (one listing of
// the log, maint.ListLog) list again when a listing misses commit v while
// it lists v+1, instead of reporting a log gap (Verify) or dropping the
// commits before the gap (History).
func TestVerifyAndHistoryListAgainOnAGap(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	tbl, err := Create(ctx, "", sch, WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, store objectstore.Store)
	}{
		{"verify", func(t *testing.T, store objectstore.Store) {
			rep, err := Verify(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.FirstCommit != 0 || rep.LastCommit != 3 {
				t.Fatalf("verify: commits %d-%d, problems %+v; want 0-3 and none", rep.FirstCommit, rep.LastCommit, rep.Problems)
			}
		}},
		{"history", func(t *testing.T, store objectstore.Store) {
			h, err := history(ctx, store, -1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != 4 || h[0].Version != 3 || h[3].Version != 0 {
				t.Fatalf("history: %d entries, want versions 3 to 0", len(h))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, &firstListingHides{Store: mem, key: txlog.CommitKey(2)})
		})
	}
}
