package streamsink

import (
	"errors"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// WriteEpochChecked commits only when its check accepts the snapshot the
// commit starts from: a refusal commits nothing and is returned wrapped;
// the check sees a commit that landed after the sink's last look.
func TestWriteEpochChecked(t *testing.T) {
	ctx := t.Context()
	mem := objectstore.NewMem(t.Name())
	tbl := newTable(t, mem)
	a, err := New(tbl, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(tbl, "b")
	if err != nil {
		t.Fatal(err)
	}
	const app = "a-offsets"
	if _, err := a.WriteEpochWith(ctx, 0, epochRows(0, 2), txlog.Txn{AppID: app, Version: 5}); err != nil {
		t.Fatal(err)
	}
	// b has not looked at the table since a's commit: its check must see it.
	errMoved := errors.New("moved")
	expect := func(want int64) func(*table.Table) error {
		return func(tbl *table.Table) error {
			if tbl.Snapshot().TxnVersion(app) != want {
				return errMoved
			}
			return nil
		}
	}
	version := a.Table().Version()
	if res, err := b.WriteEpochChecked(ctx, 0, epochRows(1, 2), expect(-1), txlog.Txn{AppID: app, Version: 7}); !errors.Is(err, errMoved) {
		t.Fatalf("stale precondition: %+v, %v; want the check's error", res, err)
	}
	if v := b.Table().Version(); v != version || liveRows(t, mem) != 2 {
		t.Fatalf("a refused epoch changed the table: version %d, %d rows", v, liveRows(t, mem))
	}
	res, err := b.WriteEpochChecked(ctx, 0, epochRows(1, 3), expect(5), txlog.Txn{AppID: app, Version: 7})
	if err != nil || res.Skipped || res.Rows != 3 || res.Version != version+1 {
		t.Fatalf("WriteEpochChecked = %+v, %v; want 3 rows at version %d", res, err, version+1)
	}
	if v := b.Table().Snapshot().TxnVersion(app); v != 7 || liveRows(t, mem) != 5 {
		t.Fatalf("after the commit: %s at %d, %d rows; want 7, 5", app, v, liveRows(t, mem))
	}
	if _, err := b.WriteEpochChecked(ctx, 1, nil, nil); err == nil {
		t.Fatal("nil check accepted")
	}
}
