package testenv_test

import (
	"errors"
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
