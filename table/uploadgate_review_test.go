package table_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// TestUploadGateEdges: a file larger than the 8 MiB held waits for the gate
// and stores nothing when it refuses, the error naming the file's key; a
// gate waiting on a cancelled context stores nothing; the option used for
// two writes consults its gate for each.
func TestUploadGateEdges(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("s", schema.Primitive(schema.String), false))
	big := make([]value.Row, 0, 3000)
	for range 3000 {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte('a' + rand.IntN(26))
		}
		big = append(big, value.Row{string(b)})
	}
	newTable := func(t *testing.T) (*table.Table, objectstore.Store) {
		store := objectstore.NewMem("t")
		tbl, err := table.Create(ctx, "", sch, table.WithStore(store))
		if err != nil {
			t.Fatal(err)
		}
		return tbl, store
	}
	t.Run("large file refused", func(t *testing.T) {
		tbl, store := newTable(t)
		open, _ := newTable(t)
		adds, err := open.WriteFiles(ctx, big, table.WithUploadGate(func(context.Context) error { return nil }))
		if err != nil || len(adds) != 1 || adds[0].Size <= 8<<20 {
			t.Fatalf("open gate: %d files, %v; want one file over 8 MiB", len(adds), err)
		}
		refused := errors.New("not now")
		_, err = tbl.WriteFiles(ctx, big, table.WithUploadGate(func(context.Context) error { return refused }))
		if !errors.Is(err, refused) || !strings.Contains(err.Error(), ".parquet") {
			t.Fatalf("refused gate: %v, want its error naming the file", err)
		}
		if keys := dataKeys(t, store); len(keys) != 0 {
			t.Fatalf("refused gate left %v", keys)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		tbl, store := newTable(t)
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := tbl.WriteFiles(cctx, big, table.WithUploadGate(func(g context.Context) error {
			<-g.Done()
			return g.Err()
		}))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled write: %v", err)
		}
		if keys := dataKeys(t, store); len(keys) != 0 {
			t.Fatalf("cancelled write left %v", keys)
		}
	})
	t.Run("option reused", func(t *testing.T) {
		tbl, store := newTable(t)
		var calls atomic.Int32
		refuse := atomic.Bool{}
		opt := table.WithUploadGate(func(context.Context) error {
			calls.Add(1)
			if refuse.Load() {
				return errors.New("refused")
			}
			return nil
		})
		rows := []value.Row{{"x"}}
		if _, err := tbl.WriteFiles(ctx, rows, opt); err != nil {
			t.Fatal(err)
		}
		refuse.Store(true)
		_, err := tbl.WriteFiles(ctx, rows, opt)
		if calls.Load() != 2 || err == nil {
			t.Fatalf("second write with the option: gate called %d times in all, err %v; want 2 calls and the refusal", calls.Load(), err)
		}
		if keys := dataKeys(t, store); len(keys) != 1 {
			t.Fatalf("stored %v, want the first write's file only", keys)
		}
	})
}
