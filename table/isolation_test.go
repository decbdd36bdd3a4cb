package table

import (
	"context"
	"errors"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// delta.isolationLevel=Serializable: a DELETE or UPDATE whose read a
// concurrent blind append falls into conflicts (Spark's
// ConcurrentAppendException); under the default WriteSerializable the
// append is ordered after it and both commit. OPTIMIZE changes no data and
// never conflicts with a blind append.
func TestIsolationLevel(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		level    string
		op       func(*Table) error
		conflict bool
	}{
		{"Serializable", func(s *Table) error { _, _, err := s.Delete(ctx, Col("id").Lt(3)); return err }, true},
		{"Serializable", func(s *Table) error {
			_, _, err := s.Update(ctx, Col("id").Lt(3), map[string]Value{"v": Lit(1.0)})
			return err
		}, true},
		{"WriteSerializable", func(s *Table) error { _, _, err := s.Delete(ctx, Col("id").Lt(3)); return err }, false},
		{"", func(s *Table) error { _, _, err := s.Delete(ctx, Col("id").Lt(3)); return err }, false},
		{"Serializable", func(s *Table) error { _, _, err := s.Optimize(ctx); return err }, false},
	}
	for i, c := range cases {
		t.Run(c.level, func(t *testing.T) {
			var props map[string]string
			if c.level != "" {
				props = map[string]string{txlog.PropIsolationLevel: c.level}
			}
			tbl, _ := maintTable(t, false, props)
			tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
			tbl = maintAppend(t, tbl, maintRowsFor(10, 10, "ams"))
			stale := tbl
			maintAppend(t, tbl, maintRowsFor(1000, 2, "ams")) // a blind append lands first
			err := c.op(stale)
			if got := errors.Is(err, txlog.ErrConcurrentAppend); got != c.conflict {
				t.Fatalf("case %d: err = %v, want conflict %v", i, err, c.conflict)
			}
			if !c.conflict && err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
		})
	}
	if _, err := Create(ctx, "", maintSchema(), WithStore(objectstore.NewMem(t.Name())),
		WithProperties(map[string]string{txlog.PropIsolationLevel: "Snapshot"})); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("isolation level Snapshot: %v, want ErrInvalidArgument", err)
	}
}
