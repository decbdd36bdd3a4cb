package streamsink

import (
	"context"
	"errors"
	"testing"

	"github.com/deltakit/deltakit/table"
)

// TestNewNilTable: New of a nil table (what a failed table.Open returns
// with its error) is an error, not a sink that panics on its first epoch,
// and Close of the nil sink New returns with it does nothing, so a Close
// deferred before the error check is safe (issue 31 item 3).
func TestNewNilTable(t *testing.T) {
	var tbl *table.Table
	s, err := New(tbl, "q")
	if !errors.Is(err, table.ErrNilTable) || !errors.Is(err, table.ErrInvalidArgument) || s != nil {
		t.Fatalf("New(nil table): %v, %v; want nil and an error wrapping table.ErrNilTable", s, err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Errorf("Close of a nil sink: %v", err)
	}
}
