package txlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
)

// FuzzLoad appends fuzzed bytes as commit 1 of a valid table: Load must
// return a snapshot or a typed error, never panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"add":{"path":"b","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`))
	f.Add([]byte(`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["x"]}}`))
	f.Add([]byte(`{"metaData":{"id":"x","schemaString":"{\"type\":\"struct\",\"fields\":[]}"}}`))
	f.Add([]byte(`{"remove":{"path":"a","deletionVector":{"storageType":"u","pathOrInlineDv":"x"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		store := objectstore.NewMem("fuzz")
		v0, _ := EncodeCommit([]Action{protocolAction(1, 2), metadataAction(nil), addAction("a", nil)})
		if err := store.Put(ctx, CommitKey(0), v0); err != nil {
			t.Fatal(err)
		}
		if err := store.Put(ctx, CommitKey(1), data); err != nil {
			t.Fatal(err)
		}
		s, err := Load(ctx, store)
		if err != nil {
			if !isTypedLogError(err) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		_ = s.Files()
		_ = s.Tombstones()
		_ = s.Schema()
	})
}

// FuzzReadCheckpointParquet feeds mutated checkpoint files to the checkpoint
// reader: it must return actions or a *CorruptLogError, never panic.
func FuzzReadCheckpointParquet(f *testing.F) {
	dir, _ := testsupport.LookupCorpus() // no corpus: the other seeds remain
	for _, p := range []string{
		"deltars__simple_table_with_checkpoint/_delta_log/00000000000000000010.checkpoint.parquet",
		"golden__multi-part-checkpoint/_delta_log/00000000000000000001.checkpoint.0000000001.0000000002.parquet",
	} {
		if data, err := os.ReadFile(filepath.Join(dir, p)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := readCheckpointParquet("cp", 1, data, true, func(*Action) {}, nil)
		if err != nil && !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("untyped error: %v", err)
		}
	})
}
