package txlog

import (
	"context"
	"maps"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// Partition values maps are shared between files only when they are equal:
// {"part": "b\x00c\x00d"} and {"part": "b", "c": "d"} must not collapse into one map,
// neither in JSON replay nor when reading a checkpoint.
func TestPartitionValuesSharingKeepsDistinctMaps(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	snap := createTestTable(t, mem, nil)
	tx := NewTransaction(snap, "WRITE")
	odd := addFile("odd.parquet", "b\x00c\x00d")
	plain := addFile("plain.parquet", "b")
	plain.Add.PartitionValues["c"] = "d"
	tx.Add(odd, plain)
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, res.Snapshot); err != nil {
		t.Fatal(err)
	}
	for _, viaCheckpoint := range []bool{true, false} {
		if !viaCheckpoint {
			if err := mem.Delete(ctx, LastCheckpointKey); err != nil {
				t.Fatal(err)
			}
			if err := mem.Delete(ctx, CheckpointKey(1)); err != nil {
				t.Fatal(err)
			}
		}
		loaded, err := Load(ctx, mem)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range loaded.Files() {
			want := odd.Add.PartitionValues
			if f.Path == "plain.parquet" {
				want = plain.Add.PartitionValues
			}
			if !maps.Equal(f.PartitionValues, want) {
				t.Errorf("checkpoint %v: %s has partitionValues %q, want %q", viaCheckpoint, f.Path, f.PartitionValues, want)
			}
		}
		if viaCheckpoint != (loaded.CheckpointVersion() == 1) {
			t.Fatalf("checkpoint used: %d", loaded.CheckpointVersion())
		}
	}
}
