package objectstore_test

import (
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/storetest"
	"github.com/deltakit/deltakit/testenv"
)

func TestMemConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		return objectstore.NewMem(t.Name())
	})
}

// TestS3Conformance runs the suite on a real MinIO server; every subtest gets
// its own prefix in one bucket.
func TestS3Conformance(t *testing.T) {
	m := testenv.StartMinIO(t)
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		return m.NewStore(t)
	})
}
