package table

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/deltakit/deltakit/txlog"
)

// TestStoreLevelAPI: OpenStore, LoadSnapshot, ReadCommit, Checkpoint and
// CleanupLog do on a table's store what deltactl's log, checkpoint and
// cleanup commands need, with the errors callers match through table.
func TestStoreLevelAPI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	empty, err := OpenStore(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSnapshot(ctx, empty, -1); !errors.Is(err, ErrTableNotFound) {
		t.Fatalf("LoadSnapshot of an empty store: %v, want ErrTableNotFound", err)
	}

	tbl, err := Create(ctx, dir, maintSchema(), WithTxnOptions(txlog.WithoutAutoCheckpoint()))
	if err != nil {
		t.Fatal(err)
	}
	tbl = maintAppend(t, tbl, maintRowsFor(0, 3, "a"))
	tbl = maintAppend(t, tbl, maintRowsFor(3, 3, "b"))

	store, err := OpenStore(ctx, dir, WithS3Region("eu-west-1"), WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	if store.URI() != tbl.URI() {
		t.Errorf("OpenStore URI %q, table URI %q", store.URI(), tbl.URI())
	}
	snap, err := LoadSnapshot(ctx, store, -1)
	if err != nil || snap.Version() != 2 {
		t.Fatalf("LoadSnapshot latest: version %v, %v; want 2", snap, err)
	}
	if snap, err := LoadSnapshot(ctx, store, 1); err != nil || snap.Version() != 1 || len(snap.Files()) != 1 {
		t.Fatalf("LoadSnapshot(1): %v, %v; want version 1 with 1 file", snap, err)
	}
	_, err = LoadSnapshot(ctx, store, 7)
	var vnf *VersionNotFoundError
	if !errors.As(err, &vnf) || !errors.Is(err, ErrVersionNotFound) || vnf.Version != 7 || vnf.Latest != 2 {
		t.Fatalf("LoadSnapshot(7): %v, want a *VersionNotFoundError for 7 (latest 2)", err)
	}

	actions, err := ReadCommit(ctx, store, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(actions, func(a Action) bool { return a.Protocol != nil }) {
		t.Errorf("commit 0 has no protocol action: %+v", actions)
	}
	adds := 0
	for _, a := range logapiMust(ReadCommit(ctx, store, 2)) {
		if a.Add != nil {
			adds++
		}
	}
	if adds != 1 {
		t.Errorf("commit 2 has %d adds, want 1", adds)
	}
	if _, err := ReadCommit(ctx, store, 3); !errors.Is(err, ErrNotExist) {
		t.Errorf("ReadCommit(3): %v, want ErrNotExist", err)
	}

	if got, want := CheckpointKey(2), "_delta_log/00000000000000000002.checkpoint.parquet"; got != want {
		t.Errorf("CheckpointKey(2) = %q, want %q", got, want)
	}
	if err := tbl.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(ctx, CheckpointKey(2)); err != nil {
		t.Fatalf("checkpoint not written: %v", err)
	}

	// Within the retention nothing expires; 31 days on, commits 0 and 1 do
	// (the checkpoint of 2 keeps every later version reconstructable).
	res, err := tbl.CleanupLog(ctx)
	if err != nil || len(res.Deleted) != 0 {
		t.Fatalf("CleanupLog now: %+v, %v; want nothing deleted", res, err)
	}
	later := func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }
	res, err = reopenAt(t, tbl, later).CleanupLog(ctx, WithCleanupDryRun(true))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{txlog.CommitKey(0), txlog.CommitKey(1)}
	if res.KeepFrom != 2 || !slices.Equal(res.Deleted, want) {
		t.Fatalf("dry run: KeepFrom %d, Deleted %v; want 2, %v", res.KeepFrom, res.Deleted, want)
	}
	if _, err := ReadCommit(ctx, store, 0); err != nil {
		t.Fatalf("dry run deleted commit 0: %v", err)
	}
	res, err = reopenAt(t, tbl, later).CleanupLog(ctx)
	if err != nil || !slices.Equal(res.Deleted, want) {
		t.Fatalf("CleanupLog: %+v, %v; want %v deleted", res, err, want)
	}
	if _, err := ReadCommit(ctx, store, 0); !errors.Is(err, ErrNotExist) {
		t.Errorf("after cleanup ReadCommit(0): %v, want ErrNotExist", err)
	}
	if snap, err := LoadSnapshot(ctx, store, -1); err != nil || snap.Version() != 2 {
		t.Errorf("after cleanup: %v, %v; want version 2", snap, err)
	}
}

func logapiMust[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
