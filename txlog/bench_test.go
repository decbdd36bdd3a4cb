package txlog

import (
	"context"
	"fmt"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

const benchSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"day","type":"string","nullable":true,"metadata":{}}]}`

// benchCommit returns the actions of data commit v: 10 adds and a txn.
func benchCommit(v int64, filesPerCommit int) []Action {
	ts := int64(1_700_000_000_000) + v*1000
	actions := []Action{{CommitInfo: &CommitInfo{Timestamp: ts, Operation: "STREAMING UPDATE",
		OperationParameters: map[string]any{"outputMode": "Append", "queryId": "q1", "epochId": fmt.Sprint(v)}}}}
	for i := range filesPerCommit {
		stats := fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"a%05d"},"maxValues":{"id":%d,"name":"z%05d"},"nullCount":{"id":0,"name":0}}`,
			100+i, v*1000, i, v*1000+99, i)
		actions = append(actions, Action{Add: &Add{
			Path:             fmt.Sprintf("day=2024-01-%02d/part-%05d-%08d-0000-0000-0000-000000000000.c000.snappy.parquet", 1+v%28, i, v),
			PartitionValues:  map[string]string{"day": fmt.Sprintf("2024-01-%02d", 1+v%28)},
			Size:             100_000 + int64(i),
			ModificationTime: ts,
			DataChange:       true,
			Stats:            stats,
		}})
	}
	last := ts
	actions = append(actions, Action{Txn: &Txn{AppID: "q1", Version: v, LastUpdated: &last}})
	return actions
}

// buildBenchTable writes version 0 (protocol, metadata) and data commits
// 1..commits into a fresh in-memory store, with a classic checkpoint at
// checkpointAt.
func buildBenchTable(tb testing.TB, commits, checkpointAt int64, filesPerCommit int) *objectstore.Mem {
	tb.Helper()
	ctx := context.Background()
	store := objectstore.NewMem("bench")
	v0 := []Action{
		{CommitInfo: &CommitInfo{Timestamp: 1_700_000_000_000, Operation: "CREATE TABLE"}},
		{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{Metadata: &Metadata{ID: "bench-table", Format: Format{Provider: "parquet"}, SchemaString: benchSchema,
			PartitionColumns: []string{"day"}}},
	}
	put := func(v int64, actions []Action) {
		data, err := EncodeCommit(actions)
		if err != nil {
			tb.Fatal(err)
		}
		if err := store.PutIfAbsent(ctx, CommitKey(v), data); err != nil {
			tb.Fatal(err)
		}
	}
	put(0, v0)
	for v := int64(1); v <= commits; v++ {
		put(v, benchCommit(v, filesPerCommit))
		if v == checkpointAt {
			snap, err := Load(ctx, store, AtVersion(v))
			if err != nil {
				tb.Fatal(err)
			}
			if err := WriteCheckpoint(ctx, snap); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return store
}

// BenchmarkLoadLarge loads a table of 10,000 data commits (plus the create
// commit, so latest version 10,000), a classic checkpoint at 9,990 and
// 100,000 live files; and updates a snapshot of version 9,990 by the 10
// commits after it.
func BenchmarkLoadLarge(b *testing.B) {
	ctx := context.Background()
	store := buildBenchTable(b, 10_000, 9_990, 10)
	b.Run("Load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := Load(ctx, store)
			if err != nil {
				b.Fatal(err)
			}
			if s.NumFiles() != 100_000 || s.Version() != 10_000 || s.CheckpointVersion() != 9_990 {
				b.Fatalf("loaded version %d with %d files from checkpoint %d", s.Version(), s.NumFiles(), s.CheckpointVersion())
			}
		}
	})
	b.Run("LoadAndFiles", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s, err := Load(ctx, store)
			if err != nil {
				b.Fatal(err)
			}
			if len(s.Files()) != 100_000 {
				b.Fatal("wrong file count")
			}
		}
	})
	b.Run("Update10", func(b *testing.B) {
		base, err := Load(ctx, store, AtVersion(9_990))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			s, err := base.Update(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if s.Version() != 10_000 || s.NumFiles() != 100_000 {
				b.Fatalf("updated to version %d with %d files", s.Version(), s.NumFiles())
			}
		}
	})
}

// BenchmarkCommitLarge commits one add (blind append, no checkpoint) to an
// in-memory table of 100,000 live files: the per-commit cost of deriving
// the post-commit snapshot from the read snapshot.
func BenchmarkCommitLarge(b *testing.B) {
	ctx := context.Background()
	store := buildBenchTable(b, 10_000, 9_990, 10)
	snap, err := Load(ctx, store)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		tx := NewTransaction(snap, "WRITE", WithoutAutoCheckpoint())
		tx.Add(Action{Add: &Add{Path: fmt.Sprintf("extra/part-%08d.parquet", i), PartitionValues: map[string]string{"day": "2024-02-01"},
			Size: 1, ModificationTime: 1, DataChange: true}})
		res, err := tx.Commit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		snap = res.Snapshot
	}
	if snap.NumFiles() != 100_000+i {
		b.Fatalf("%d files after %d commits", snap.NumFiles(), i)
	}
}

// BenchmarkWriteCheckpoint encodes a classic checkpoint of a table of
// 100,000 live files (EncodeCheckpoint, in memory).
func BenchmarkWriteCheckpoint(b *testing.B) {
	store := buildBenchTable(b, 1000, 0, 100)
	snap, err := Load(context.Background(), store)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		data, lc, err := EncodeCheckpoint(snap)
		if err != nil {
			b.Fatal(err)
		}
		if *lc.NumOfAddFiles != 100_000 || len(data) == 0 {
			b.Fatalf("%d adds", *lc.NumOfAddFiles)
		}
	}
}
