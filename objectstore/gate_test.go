package objectstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/storetest"
)

// TestGateUploadsConformance: a store whose uploads wait for an open gate
// is still a conforming store (uploads larger and smaller than the hold).
func TestGateUploadsConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		return objectstore.GateUploads(objectstore.NewMem(t.Name()), func(context.Context) error { return nil }, 16)
	})
}

// TestGateUploadsClosed: a gate that refuses stores nothing, for uploads
// within the hold and past it, and the error names the key and wraps the
// gate's error.
func TestGateUploadsClosed(t *testing.T) {
	ctx := context.Background()
	refused := errors.New("epoch already committed")
	for _, n := range []int{0, 10, 100} {
		mem := objectstore.NewMem(t.Name())
		calls := 0
		s := objectstore.GateUploads(mem, func(context.Context) error { calls++; return refused }, 16)
		up, err := objectstore.StartUpload(ctx, s, "part-0.parquet")
		if err != nil {
			t.Fatal(err)
		}
		_, werr := up.Write(make([]byte, n))
		cerr := up.Commit(ctx)
		err = errors.Join(werr, cerr)
		var ke *objectstore.KeyError
		if !errors.Is(err, refused) || !errors.As(err, &ke) || ke.Key != "part-0.parquet" {
			t.Errorf("%d bytes: err = %v, want a KeyError for part-0.parquet wrapping the gate's error", n, err)
		}
		if calls == 0 {
			t.Errorf("%d bytes: the gate was not asked", n)
		}
		for info, err := range mem.List(ctx, "", "") {
			t.Errorf("%d bytes: stored %v %v", n, info.Key, err)
		}
	}
	if _, err := objectstore.StartUpload(ctx, objectstore.GateUploads(objectstore.NewMem("x"), nil, 16), "../x"); err == nil || !strings.Contains(err.Error(), "../x") {
		t.Errorf("invalid key: err = %v", err)
	}
}
