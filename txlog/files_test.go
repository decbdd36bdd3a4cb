package txlog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// testAdds returns adds with the shapes a packed level must keep: stats of
// all kinds, DVs (one path with two DVs), escaped paths, rare fields,
// partition values (nil, empty, shared).
func testAdds() []*Add {
	one, two := int64(1), int64(2)
	off := int32(7)
	pv := map[string]string{"day": "2024-01-01"}
	return []*Add{
		{Path: "b.parquet", PartitionValues: pv, Size: 10, ModificationTime: 100, DataChange: true,
			Stats: `{"numRecords":5,"minValues":{"day":"2024-01-01","s":"é\"x"},"maxValues":{"t":"2024-01-01T10:00:00.000Z"}}`},
		{Path: "a.parquet", PartitionValues: pv, Size: 11, Stats: `{"numRecords":6,"minValues":{"day":"2024-01-01","s":"y"},"maxValues":{"t":"2024-01-01T11:00:00.000Z"}}`},
		{Path: "c%20d.parquet", PartitionValues: map[string]string{}, Size: 12, Stats: `not json "`},
		{Path: "dv.parquet", Size: 13, DeletionVector: &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab", SizeInBytes: 3, Cardinality: 1}},
		{Path: "dv.parquet", Size: 14, DeletionVector: &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab", Offset: &off, SizeInBytes: 3, Cardinality: 2}},
		{Path: "e.parquet", Size: 15, Tags: map[string]string{"k": "v"}, BaseRowID: &one, DefaultRowCommitVersion: &two,
			ClusteringProvider: "liquid", Stats: "{\"a\":1}\n"},
		{Path: "f.parquet", PartitionValues: map[string]string{}, Size: 16, Stats: ""},
		{Path: "part-00001-5a2f9c1e-c000.snappy.parquet", PartitionValues: pv, Size: 17, Stats: `{"numRecords":1}`},
		{Path: "part-00002-5a2f9c1e-c000.snappy.parquet", PartitionValues: pv, Size: 18},
		{Path: "day=2024-01-01/part-0003-beef%3D1.parquet", Size: 19,
			DeletionVector: &DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@fX", SizeInBytes: 40, Cardinality: 6}},
		{Path: "day=2024-01-01/part-0003-beef%3D1.parquet", Size: 20},
	}
}

func sortedByKey(adds []*Add) []*Add {
	out := slices.Clone(adds)
	slices.SortFunc(out, func(a, b *Add) int { return compareFileKeys(a.Key(), b.Key()) })
	return out
}

// checkPacked checks the set of live files packed by pb against want.
func checkPacked(t *testing.T, p *fileSet[Add], want []*Add) {
	t.Helper()
	want = sortedByKey(want)
	if p.len() != len(want) {
		t.Fatalf("len %d, want %d", p.len(), len(want))
	}
	for _, w := range want {
		got, ok := p.get(w.Key())
		if !ok || !reflect.DeepEqual(got, w) {
			t.Fatalf("get(%v) = %+v, %v; want %+v", w.Key(), got, ok, w)
		}
	}
	if _, ok := p.get(FileKey{Path: "nope"}); ok {
		t.Fatal("get of an absent key succeeded")
	}
	if _, ok := p.get(FileKey{Path: "dv.parquet"}); ok {
		t.Fatal("get of dv.parquet without its DV succeeded")
	}
	got := p.sortedValues()
	if len(got) != len(want) {
		t.Fatalf("sortedValues: %d, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("sortedValues[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	// after sortedValues, get returns the same pointers
	for i, w := range want {
		if g, _ := p.get(w.Key()); g != got[i] {
			t.Fatalf("get(%v) after sortedValues is not sortedValues[%d]", w.Key(), i)
		}
	}
}

// TestCheckpointPacked reads checkpoints through the packing path (adds
// packed in the decoding goroutines) and compares the files with the
// action path, for one row group and for many decoded in parallel.
func TestCheckpointPacked(t *testing.T) {
	for _, n := range []int{0, 7, 40_000} {
		t.Run(fmt.Sprint(n, " files"), func(t *testing.T) {
			actions := []Action{
				{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors"}}},
				{Metadata: &Metadata{ID: "t", SchemaString: `{"type":"struct","fields":[]}`, PartitionColumns: []string{}, Configuration: map[string]string{}}},
			}
			var want []*Add
			if n == 7 {
				want = testAdds()
			}
			for i := range n {
				if n == 7 {
					break
				}
				want = append(want, &Add{Path: fmt.Sprintf("part-%05d.parquet", n-i), PartitionValues: map[string]string{"d": fmt.Sprint(i % 3)},
					Size: int64(i), DataChange: true, Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"t":"2024-01-01T00:00:%02d.000Z"}}`, i, i%60)})
			}
			for _, a := range want {
				actions = append(actions, Action{Add: a})
			}
			snap, err := advance(nil, nil, []versionedActions{{version: 0, actions: actions}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			data, _, err := EncodeCheckpoint(snap)
			if err != nil {
				t.Fatal(err)
			}
			pb := newPackBuilder()
			var others int
			if err := readCheckpointParquet("cp", 0, data, true, func(a *Action) {
				if a.Add != nil {
					t.Fatal("an add reached the callback")
				}
				others++
			}, pb); err != nil {
				t.Fatal(err)
			}
			if others != 2 {
				t.Errorf("%d other actions, want 2", others)
			}
			for _, a := range want {
				if a.PartitionValues == nil {
					a.PartitionValues = map[string]string{} // checkpoints write {}
				}
			}
			set := addSetOf(pb)
			if set.s.Layout().Reordered {
				t.Error("a checkpoint in key order was sorted again")
			}
			checkPacked(t, &set, want)
		})
	}
}

func TestCheckpointPackedErrors(t *testing.T) {
	type dv struct {
		StorageType string `parquet:"storageType"`
	}
	type add struct {
		Path           *string `parquet:"path,optional"`
		Size           int64   `parquet:"size"`
		DeletionVector *dv     `parquet:"deletionVector,optional"`
	}
	type row struct {
		Add *add `parquet:"add,optional"`
	}
	p := "a.parquet"
	tests := []struct {
		name string
		add  add
		want string
	}{
		{"add without path", add{Size: 1}, "without path"},
		{"unknown DV storage type", add{Path: &p, DeletionVector: &dv{StorageType: "z"}}, "unknown storageType"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := writeParquet(t, []row{{Add: &add{Path: &p}}, {Add: &tc.add}})
			err := readCheckpointParquet("cp", 7, data, false, func(*Action) {}, newPackBuilder())
			var ce *CorruptLogError
			if !errors.As(err, &ce) || ce.File != "cp" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a *CorruptLogError of cp saying %q", err, tc.want)
			}
		})
	}
}

// TestAllFiles checks Snapshot.AllFiles against Files on a snapshot loaded
// from a checkpoint plus later commits, and that writing a checkpoint does
// not materialise (and keep) the packed files.
func TestAllFiles(t *testing.T) {
	ctx := context.Background()
	store := buildBenchTable(t, 30, 25, 40) // checkpoint at 25, five commits after it
	snap, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.files.s.Layout().Packed {
		t.Fatal("the snapshot's bottom level is not packed")
	}
	if err := WriteCheckpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if snap.files.s.Layout().Materialised {
		t.Error("WriteCheckpoint materialised and kept the packed files")
	}
	var streamed []*Add
	for a := range snap.AllFiles() {
		streamed = append(streamed, a)
	}
	files := snap.Files()
	if len(streamed) != len(files) || len(files) != 30*40 {
		t.Fatalf("AllFiles yielded %d files, Files %d, want %d", len(streamed), len(files), 30*40)
	}
	for i := range files {
		if !reflect.DeepEqual(streamed[i], files[i]) {
			t.Fatalf("file %d: AllFiles %+v, Files %+v", i, streamed[i], files[i])
		}
	}
	// the checkpoint written from the stream loads the same files
	again, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if again.CheckpointVersion() != 30 || !reflect.DeepEqual(again.Files(), files) {
		t.Errorf("reloaded from the checkpoint at %d: files differ", again.CheckpointVersion())
	}
}

// TestCheckpointPackedAllocs checks that packing a checkpoint's adds does
// not allocate each add: the reader's scratch add must stay on its stack
// (through fileset.Codec's function values it moved to the heap, about 100
// bytes of garbage per file and +60 MiB of peak RSS for P5's 1,000,000
// files).
func TestCheckpointPackedAllocs(t *testing.T) {
	const n = 20_000
	actions := []Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{Metadata: &Metadata{ID: "t", Format: Format{Provider: "parquet"}, SchemaString: `{"type":"struct","fields":[]}`, PartitionColumns: []string{"d"}}}}
	for i := range n {
		actions = append(actions, Action{Add: &Add{Path: fmt.Sprintf("d=%d/part-%05d-1a2b3c4d-0000-0000-0000-000000000000.c000.snappy.parquet", i%3, i),
			PartitionValues: map[string]string{"d": fmt.Sprint(i % 3)}, Size: int64(i), ModificationTime: 1_700_000_000_000, DataChange: true,
			Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i, i, i+9)}})
	}
	snap, err := advance(nil, nil, []versionedActions{{version: 0, actions: actions}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	data, _, err := EncodeCheckpoint(snap)
	if err != nil {
		t.Fatal(err)
	}
	var files int
	allocs := testing.AllocsPerRun(3, func() {
		pb := newPackBuilder()
		if err := readCheckpointParquet("cp", 0, data, true, func(*Action) {}, pb); err != nil {
			t.Fatal(err)
		}
		set := addSetOf(pb)
		files = set.len()
	})
	if files != n {
		t.Fatalf("packed %d files, want %d", files, n)
	}
	// What is left is per page and per row group (Parquet decoding,
	// packed chunks), 0.14 per file here; one more per file
	// when the scratch add escapes.
	if perFile := allocs / n; perFile > 0.5 {
		t.Errorf("%.0f allocations for %d files (%.2f per file), want at most 0.5 per file", allocs, n, perFile)
	}
}
