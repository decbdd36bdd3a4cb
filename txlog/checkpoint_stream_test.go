package txlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
)

// WriteCheckpoint streams the checkpoint through an upload: the stored
// bytes are EncodeCheckpoint's, and a failure midway stores no checkpoint
// and leaves _last_checkpoint as it was.
func TestWriteCheckpointStreams(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	createTestTable(t, mem, nil)
	snap, err := Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		tx := NewTransaction(snap, "WRITE")
		for j := range 200 {
			tx.Add(addFile(fmt.Sprintf("f%d-%d.parquet", i, j), "a"))
		}
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}

	// A write of the upload fails: nothing is stored.
	store := faultstore.New(mem)
	s2, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	store.Inject(faultstore.Fault{Op: faultstore.OpUploadWrite, KeyPrefix: CheckpointKey(3), Nth: 1, Kind: faultstore.Fail})
	if err := WriteCheckpoint(ctx, s2); !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("WriteCheckpoint with a failing write = %v, want ErrInjected", err)
	}
	if _, err := mem.Stat(ctx, CheckpointKey(3)); !errors.Is(err, objectstore.ErrNotExist) {
		t.Fatalf("checkpoint after a failed write: %v, want ErrNotExist", err)
	}
	if hint, err := readLastCheckpoint(ctx, mem); err != nil || hint != nil {
		t.Fatalf("_last_checkpoint after a failed write: %+v, %v; want none", hint, err)
	}

	if err := WriteCheckpoint(ctx, s2); err != nil {
		t.Fatal(err)
	}
	var uploads int
	for _, c := range store.Calls() {
		if c.Op == faultstore.OpUpload && c.Key == CheckpointKey(3) {
			uploads++
		}
	}
	if uploads != 2 {
		t.Errorf("%d uploads of the checkpoint recorded, want 2", uploads)
	}
	want, lc, err := EncodeCheckpoint(snap)
	if err != nil {
		t.Fatal(err)
	}
	got, err := mem.Get(ctx, CheckpointKey(3), objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("stored checkpoint (%d bytes) differs from EncodeCheckpoint's (%d bytes)", len(got), len(want))
	}
	hint, err := readLastCheckpoint(ctx, mem)
	if err != nil || hint == nil || hint.Version != 3 || *hint.SizeInBytes != int64(len(want)) || *hint.NumOfAddFiles != 600 ||
		*lc.SizeInBytes != int64(len(want)) {
		t.Fatalf("_last_checkpoint = %+v, %v; want version 3, %d bytes, 600 adds", hint, err, len(want))
	}
	loaded, err := Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(loaded.Files()); n != 600 {
		t.Errorf("table loaded from the checkpoint has %d files, want 600", n)
	}
}

// A checkpoint of one snapshot is the same bytes every time, with several
// txns (Go maps iterate in random order; the checkpoint writes txns by
// appId).
func TestEncodeCheckpointDeterministic(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	createTestTable(t, mem, nil)
	snap, err := Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		tx := NewTransaction(snap, "STREAMING UPDATE")
		tx.Add(Action{Txn: &Txn{AppID: fmt.Sprintf("query-%d", 7-i), Version: int64(i)}})
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", i), "a"))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	if n := len(snap.Txns()); n != 8 {
		t.Fatalf("snapshot has %d txns, want 8", n)
	}
	first, _, err := EncodeCheckpoint(snap)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		again, _, err := EncodeCheckpoint(snap)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, first) {
			t.Fatalf("encoding %d of the same snapshot differs from the first (%d vs %d bytes)", i+2, len(again), len(first))
		}
	}
}
