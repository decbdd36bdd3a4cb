package table

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// requestLog records the calls made through a store as "op key".
type requestLog struct {
	objectstore.Store
	mu    sync.Mutex
	calls []string
}

func (l *requestLog) log(op, key string) {
	l.mu.Lock()
	l.calls = append(l.calls, op+" "+key)
	l.mu.Unlock()
}

// take returns the calls since the previous take.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.calls
	l.calls = nil
	return c
}

func (l *requestLog) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	l.log("get", key)
	return l.Store.Get(ctx, key, r)
}

func (l *requestLog) Put(ctx context.Context, key string, data []byte) error {
	l.log("put", key)
	return l.Store.Put(ctx, key, data)
}

func (l *requestLog) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	l.log("put-if-absent", key)
	return l.Store.PutIfAbsent(ctx, key, data)
}

func (l *requestLog) List(ctx context.Context, prefix, startAfter string) iter.Seq2[objectstore.ObjectInfo, error] {
	l.log("list", prefix)
	return l.Store.List(ctx, prefix, startAfter)
}

func (l *requestLog) Stat(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	l.log("stat", key)
	return l.Store.Stat(ctx, key)
}

func (l *requestLog) Delete(ctx context.Context, key string) error {
	l.log("delete", key)
	return l.Store.Delete(ctx, key)
}

// TestCommitFilesRequests: in the default configuration a one-add
// CommitFiles makes exactly one request, the conditional PUT of its
// version (no _last_checkpoint read, listing or stat), also when a
// checkpoint is due: that one is written in the background, and Close
// waits for its three requests (checkpoint, _last_checkpoint read and
// write).
func TestCommitFilesRequests(t *testing.T) {
	ctx := context.Background()
	st := &requestLog{Store: objectstore.NewMem(t.Name())}
	tbl, err := Create(ctx, "", maintSchema(), WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	st.take()
	for v := int64(1); v <= 11; v++ {
		add := &txlog.Add{Path: fmt.Sprintf("part-%05d.parquet", v), PartitionValues: map[string]string{}, Size: 100,
			ModificationTime: 1, DataChange: true, Stats: `{"numRecords":10,"minValues":{"id":0},"maxValues":{"id":9},"nullCount":{"id":0}}`}
		nt, res, err := tbl.CommitFiles(ctx, []*txlog.Add{add})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"put-if-absent " + txlog.CommitKey(v)}
		if got := st.take(); res.Version != v || !slices.Equal(got, want) {
			t.Fatalf("commit %d: version %d, requests %q, want %q", v, res.Version, got, want)
		}
		if res.CheckpointQueued != (v == 10) || res.Checkpointed {
			t.Fatalf("commit %d: checkpoint queued %v, written %v", v, res.CheckpointQueued, res.Checkpointed)
		}
		if err := nt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		want = nil
		if v == 10 {
			want = []string{"put _delta_log/00000000000000000010.checkpoint.parquet",
				"get _delta_log/_last_checkpoint", "put _delta_log/_last_checkpoint"}
		}
		if got := st.take(); !slices.Equal(got, want) {
			t.Fatalf("after commit %d, Close: requests %q, want %q", v, got, want)
		}
		tbl = nt
	}
}
