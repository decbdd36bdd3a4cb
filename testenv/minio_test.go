package testenv_test

import (
	"errors"
	"os"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
)

func TestStartMinIO(t *testing.T) {
	m := testenv.StartMinIO(t)
	a, b := m.NewStore(t), m.NewStore(t)
	if a.URI() == b.URI() {
		t.Fatalf("two NewStore calls share %s", a.URI())
	}
	ctx := t.Context()
	if err := a.PutIfAbsent(ctx, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "k", objectstore.FullObject); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("store b sees store a's key: %v", err)
	}
	if got := m.URI("t1"); got != "s3://"+m.Bucket+"/t1" {
		t.Errorf("URI(t1) = %q", got)
	}

	// A second server runs beside the first, on its own port.
	m2 := testenv.StartMinIO(t)
	if m2.Endpoint == m.Endpoint {
		t.Errorf("two servers on %s", m.Endpoint)
	}
}

func TestStartServer(t *testing.T) {
	testenv.StartMinIO(t) // skips, or fails with CI=true, when no server can run
	dir := t.TempDir()
	ctx := t.Context()
	m, err := testenv.StartServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := m.StoreAt(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.PutIfAbsent(ctx, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	b, err := m.StoreAt(ctx, "p") // a second client of the same objects
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "k", objectstore.FullObject); err != nil || string(got) != "a" {
		t.Errorf("second client reads %q, %v", got, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("after Close, %s holds %d entries (%v)", dir, len(entries), err)
	}
}
