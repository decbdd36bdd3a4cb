package objectstore_test

import (
	"context"
	"errors"
	"io"
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

// plainStore is a Store with none of the optional capabilities.
type plainStore struct{ objectstore.Store }

// TestGateUploadsCapabilities: the gated store offers each capability the
// store it wraps offers (ReadAt reads the wrapped store's bytes), is always
// an Uploader, and is no RangeReader over a store that is not.
func TestGateUploadsCapabilities(t *testing.T) {
	ctx := context.Background()
	open := func(context.Context) error { return nil }
	for _, tc := range []struct {
		name  string
		inner func(t *testing.T) objectstore.Store
	}{
		{"mem", func(t *testing.T) objectstore.Store { return objectstore.NewMem(t.Name()) }},
		{"local", func(t *testing.T) objectstore.Store {
			l, err := objectstore.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"plain", func(t *testing.T) objectstore.Store { return plainStore{objectstore.NewMem(t.Name())} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := tc.inner(t)
			if err := inner.Put(ctx, "k", []byte("0123456789")); err != nil {
				t.Fatal(err)
			}
			g := objectstore.GateUploads(inner, open, 16)
			if _, ok := g.(objectstore.Uploader); !ok {
				t.Error("gated store is not an Uploader")
			}
			_, innerRR := inner.(objectstore.RangeReader)
			rr, ok := g.(objectstore.RangeReader)
			if ok != innerRR {
				t.Fatalf("gated store is a RangeReader: %v; the inner store: %v", ok, innerRR)
			}
			if !ok {
				return
			}
			p := make([]byte, 4)
			if n, err := rr.ReadAt(ctx, "k", p, 3); n != 4 || err != nil || string(p) != "3456" {
				t.Errorf("ReadAt(k, 4 bytes at 3) = %d %q %v, want 4 \"3456\" <nil>", n, p[:n], err)
			}
			if n, err := rr.ReadAt(ctx, "k", p, 8); n != 2 || err != io.EOF || string(p[:n]) != "89" {
				t.Errorf("ReadAt(k, 4 bytes at 8) = %d %q %v, want 2 \"89\" EOF", n, p[:n], err)
			}
			if _, err := rr.ReadAt(ctx, "absent", p, 0); !errors.Is(err, objectstore.ErrNotExist) {
				t.Errorf("ReadAt(absent) err = %v, want ErrNotExist", err)
			}
		})
	}
}
