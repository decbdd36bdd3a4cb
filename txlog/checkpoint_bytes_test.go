package txlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// richCheckpointTable returns a table whose checkpoint has every column
// the writer knows set in some row: protocol features, metadata name,
// description, format options, configuration and created time, a txn and
// a domain (one each: their order is not fixed), adds with
// tags, deletion vectors, row tracking fields and clustering provider, and
// removes with every optional field.
func richCheckpointTable(t *testing.T) *memTable {
	m := newMemTable(t)
	created := int64(1_700_000_000_000)
	m.commit(0,
		Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{FeatureDeletionVectors},
			WriterFeatures: []string{FeatureDeletionVectors, "domainMetadata"}}},
		Action{Metadata: &Metadata{ID: "rich", Name: "rich table", Description: "every column",
			Format: Format{Provider: "parquet", Options: map[string]string{"o": "1"}}, SchemaString: replayTestSchema,
			PartitionColumns: []string{"p"}, Configuration: map[string]string{"delta.enableDeletionVectors": "true"},
			CreatedTime: &created}})
	var acts []Action
	for i := range 5 {
		a := &Add{Path: fmt.Sprintf("p=%d/f%d.parquet", i%2, i), PartitionValues: map[string]string{"p": fmt.Sprint(i % 2)},
			Size: int64(100 + i), ModificationTime: created + int64(i), DataChange: i%2 == 0,
			Stats: fmt.Sprintf(`{"numRecords":%d}`, i)}
		if i == 1 {
			a.Tags = map[string]string{"t": "v"}
			a.DeletionVector = dvAt(int32(i))
			a.BaseRowID, a.DefaultRowCommitVersion = i64(10), i64(1)
			a.ClusteringProvider = "liquid"
		}
		if i == 2 {
			a.Stats = ""
			a.PartitionValues = map[string]string{"p": ""}
		}
		acts = append(acts, Action{Add: a})
	}
	acts = append(acts,
		Action{Txn: &Txn{AppID: "app-a", Version: 3, LastUpdated: i64(created)}},
		Action{DomainMetadata: &DomainMetadata{Domain: "d1", Configuration: `{"x":1}`}})
	m.commit(1, acts...)
	ext := true
	const farFuture = 4_000_000_000_000 // tombstones that do not expire
	m.commit(2,
		Action{Remove: &Remove{Path: "p=0/f0.parquet", DeletionTimestamp: i64(farFuture), DataChange: true,
			ExtendedFileMetadata: &ext, PartitionValues: map[string]string{"p": "0"}, Size: i64(100)}},
		Action{Remove: &Remove{Path: "p=1/f1.parquet", DeletionTimestamp: i64(farFuture + 1), DeletionVector: dvAt(1),
			BaseRowID: i64(10), DefaultRowCommitVersion: i64(1)}},
		Action{Txn: &Txn{AppID: "app-a", Version: 4}})
	return m
}

// TestCheckpointBytesStable pins the bytes of a checkpoint that sets every
// column the writer knows: a change to how checkpoints are encoded must be
// deliberate (Spark and delta-rs read these files).
func TestCheckpointBytesStable(t *testing.T) {
	snap := richCheckpointTable(t).mustLoad()
	data, lc, err := EncodeCheckpoint(snap)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	const want = "0e0bda54797a0dbf66268ce222bab6850a44f470cbeef3e72da30360b4c57d19"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Errorf("checkpoint of %d bytes has sha256 %s, want %s", len(data), got, want)
	}
	if lc.Size != 9 || *lc.NumOfAddFiles != 3 || *lc.SizeInBytes != int64(len(data)) {
		t.Errorf("last checkpoint %+v", lc)
	}
	got, err := readAll(t, data, true)
	if err != nil || int64(len(got)) != lc.Size {
		t.Fatalf("read back %d actions (%v), want %d", len(got), err, lc.Size)
	}
}

// TestCheckpointOfV2CheckpointTable: a table supporting v2Checkpoint gets a
// classic-named V2-spec checkpoint, with one checkpointMetadata action of
// the checkpoint's version (spec "V2 Checkpoint"); a table without the
// feature a V1-spec one, without the column. Both load back to the same
// state.
func TestCheckpointOfV2CheckpointTable(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		t.Run(fmt.Sprint("v2=", v2), func(t *testing.T) {
			m := newMemTable(t)
			p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
			if v2 {
				p = &Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
					ReaderFeatures: []string{FeatureV2Checkpoint}, WriterFeatures: []string{FeatureV2Checkpoint}}
			}
			m.commit(0, Action{Protocol: p}, Action{Metadata: &Metadata{ID: "v2", Format: Format{Provider: "parquet"},
				SchemaString: replayTestSchema, PartitionColumns: []string{"p"}, Configuration: map[string]string{}}})
			m.commit(1, Action{Add: &Add{Path: "p=0/a.parquet", PartitionValues: map[string]string{"p": "0"},
				Size: 10, DataChange: true, Stats: `{"numRecords":1}`}})
			snap := m.mustLoad()
			data, lc, err := EncodeCheckpoint(snap)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			_, hasCol := f.Schema().Lookup("checkpointMetadata", "version")
			if hasCol != v2 {
				t.Errorf("checkpointMetadata column present %v, want %v", hasCol, v2)
			}
			got, err := readAll(t, data, true)
			if err != nil {
				t.Fatal(err)
			}
			var cms []*CheckpointMetadata
			for _, a := range got {
				if a.CheckpointMetadata != nil {
					cms = append(cms, a.CheckpointMetadata)
				}
			}
			if want := map[bool]int{false: 0, true: 1}[v2]; len(cms) != want || (v2 && cms[0].Version != 1) {
				t.Errorf("checkpointMetadata actions %+v, want %d of version 1", cms, want)
			}
			if want := int64(len(got)); lc.Size != want {
				t.Errorf("last checkpoint size %d, want %d", lc.Size, want)
			}
			if err := WriteCheckpoint(context.Background(), snap); err != nil {
				t.Fatal(err)
			}
			back := m.mustLoad()
			if back.NumFiles() != 1 || !back.Protocol().HasWriterFeature(FeatureV2Checkpoint) == v2 {
				t.Errorf("reloaded from checkpoint: %d files, protocol %+v", back.NumFiles(), back.Protocol())
			}
		})
	}
}
