package objectstore_test

import (
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/storetest"
)

func TestLocalConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		s, err := objectstore.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
