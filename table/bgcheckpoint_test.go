package table

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// gatedStore holds every Put of _last_checkpoint until release is closed,
// or fails it with fail when set.
type gatedStore struct {
	objectstore.Store
	release chan struct{}
	fail    error
}

func (g *gatedStore) Put(ctx context.Context, key string, data []byte) error {
	if key == txlog.LastCheckpointKey {
		if g.fail != nil {
			return g.fail
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Store.Put(ctx, key, data)
}

// TestBackgroundCheckpointOffTheCommit: by default the commit that makes a
// checkpoint due returns while the checkpoint is still being written (here:
// held by the store); Close waits for it; WithSyncCheckpoints keeps it
// inside the commit. A failed background checkpoint is reported by Close
// once and leaves the table valid.
func TestBackgroundCheckpointOffTheCommit(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("v", prim(schema.Long), true))
	props := WithProperties(map[string]string{txlog.PropCheckpointInterval: "2"})
	appendN := func(t *testing.T, tbl *Table, n int) (*Table, error) {
		var err error
		for i := range n {
			if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(i)}}); err != nil {
				return nil, err
			}
		}
		return tbl, nil
	}

	t.Run("default: commit returns, Close waits", func(t *testing.T) {
		g := &gatedStore{Store: objectstore.NewMem(t.Name()), release: make(chan struct{})}
		tbl, err := Create(ctx, "", sch, WithStore(g), props)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		var cur *Table
		go func() { c, err := appendN(t, tbl, 2); cur = c; done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			close(g.release)
			t.Fatal("the commit of version 2 waited for its checkpoint")
		}
		if cur.Version() != 2 {
			t.Fatalf("version %d", cur.Version())
		}
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if err := cur.Close(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close while the checkpoint is held = %v, want DeadlineExceeded", err)
		}
		close(g.release)
		if err := tbl.Close(ctx); err != nil { // the lineage shares the checkpointer
			t.Fatal(err)
		}
		if st, ok := cur.CheckpointStats(); !ok || st.Written != 1 || st.LastVersion != 2 || st.LastErr != nil {
			t.Fatalf("stats %+v ok %v", st, ok)
		}
		re, err := Open(ctx, "", WithStore(g))
		if err != nil {
			t.Fatal(err)
		}
		if v := re.Snapshot().CheckpointVersion(); v != 2 {
			t.Fatalf("reopened from checkpoint %d, want 2", v)
		}
	})

	t.Run("WithSyncCheckpoints: the commit waits", func(t *testing.T) {
		g := &gatedStore{Store: objectstore.NewMem(t.Name()), release: make(chan struct{})}
		tbl, err := Create(ctx, "", sch, WithStore(g), props, WithSyncCheckpoints())
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := appendN(t, tbl, 2); done <- err }()
		select {
		case err := <-done:
			t.Fatalf("the commit returned (%v) while its checkpoint was held", err)
		case <-time.After(100 * time.Millisecond):
		}
		close(g.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, ok := tbl.CheckpointStats(); ok {
			t.Fatal("a sync table reports a background checkpointer")
		}
		if _, err := g.Stat(ctx, txlog.CheckpointKey(2)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a failure is reported by Close once", func(t *testing.T) {
		injected := fmt.Errorf("injected: %w", objectstore.ErrNotStored)
		g := &gatedStore{Store: objectstore.NewMem(t.Name()), fail: injected}
		tbl, err := Create(ctx, "", sch, WithStore(g), props)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := appendN(t, tbl, 3)
		if err != nil {
			t.Fatalf("a failing checkpoint failed the write: %v", err)
		}
		if err := cur.Close(ctx); !errors.Is(err, objectstore.ErrNotStored) {
			t.Fatalf("Close = %v, want the checkpoint failure", err)
		}
		if err := cur.Close(ctx); err != nil {
			t.Fatalf("second Close = %v, want nil (already reported)", err)
		}
		if st, _ := cur.CheckpointStats(); st.Failed != 1 || !errors.Is(st.LastErr, objectstore.ErrNotStored) {
			t.Fatalf("stats %+v", st)
		}
		re, err := Open(ctx, "", WithStore(g))
		if err != nil {
			t.Fatal(err)
		}
		if re.Version() != 3 || len(readAllRows(t, re)) != 3 {
			t.Fatalf("reopened at %d", re.Version())
		}
	})
}
