package txlog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
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
