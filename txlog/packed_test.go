package txlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
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

func checkPacked(t *testing.T, p *packedFiles, want []*Add) {
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
	got := p.sortedValues((*Add).Key)
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

func TestPackedLevel(t *testing.T) {
	adds := testAdds()
	t.Run("entries", func(t *testing.T) {
		var es []fileEntry[Add]
		for _, a := range sortedByKey(adds) {
			es = append(es, fileEntry[Add]{a.Key(), a})
		}
		checkPacked(t, packEntries(es), adds)
	})
	for _, order := range []string{"sorted", "unsorted", "duplicates"} {
		t.Run("builder "+order, func(t *testing.T) {
			in := adds
			switch order {
			case "sorted":
				in = sortedByKey(adds)
			case "duplicates":
				// an earlier row with the same key is replaced by the later
				old := *adds[1]
				old.Size = 999
				in = append([]*Add{&old}, adds...)
			}
			pb := newPackBuilder()
			// two segments and single adds, as a multi-part checkpoint gives
			s1 := newPackSeg(2)
			for _, a := range in[:3] {
				s1.add(a)
			}
			pb.appendSeg(s1)
			pb.addAction(in[3])
			s2 := newPackSeg(2)
			for _, a := range in[4:] {
				s2.add(a)
			}
			pb.appendSeg(s2)
			p := pb.finish()
			if (p.order == nil) != (order == "sorted") {
				t.Errorf("order set = %v for %s input", p.order != nil, order)
			}
			checkPacked(t, p, adds)
		})
	}
}

func TestPackedScratchStringsAreCopied(t *testing.T) {
	buf := []byte("x.parquet{\"a\":1}")
	a := &Add{Path: unsafe.String(&buf[0], 9), Stats: unsafe.String(&buf[9], 7)}
	s := newPackSeg(1)
	s.add(a)
	for i := range buf {
		buf[i] = 'z'
	}
	p := s.finish()
	got, ok := p.get(FileKey{Path: "x.parquet"})
	if !ok || got.Stats != `{"a":1}` {
		t.Fatalf("get = %+v, %v", got, ok)
	}
}

func TestPackedMerge(t *testing.T) {
	adds := testAdds()
	var es []fileEntry[Add]
	for _, a := range sortedByKey(adds) {
		es = append(es, fileEntry[Add]{a.Key(), a})
	}
	base := packEntries(es)
	newer := &Add{Path: "a.parquet", Size: 99, Stats: `{"numRecords":7}`}
	added := &Add{Path: "aa.parquet", PartitionValues: map[string]string{"day": "x"}, Size: 1}
	delta := []fileEntry[Add]{
		{newer.Key(), newer},
		{added.Key(), added},
		{adds[3].Key(), nil}, // remove one DV of dv.parquet
		{FileKey{Path: "zz"}, nil},
	}
	slices.SortFunc(delta, func(a, b fileEntry[Add]) int { return compareFileKeys(a.k, b.k) })
	want := append([]*Add{newer, added, adds[0], adds[2], adds[4], adds[5]}, adds[6:]...)
	for _, ready := range []bool{false, true} {
		t.Run(fmt.Sprintf("base sorted values ready %v", ready), func(t *testing.T) {
			b := packEntries(es)
			if ready {
				b.sortedValues((*Add).Key)
			}
			m := b.merge(delta).(*packedFiles)
			checkPacked(t, m, want)
			// the base level is unchanged
			checkPacked(t, b, adds)
		})
	}
	// a level whose chunks are mostly dead is copied, not shared
	p := base
	for i := range 40 {
		big := &Add{Path: "a.parquet", Stats: fmt.Sprintf(`{"s":"%0100000d"}`, i)}
		p = p.merge([]fileEntry[Add]{{big.Key(), big}}).(*packedFiles)
	}
	if p.total > 2*p.live+maxChunk {
		t.Errorf("after 40 replacing merges the chunks hold %d bytes for %d live", p.total, p.live)
	}
}

// TestFileSetPacks checks that a set of adds packs its bottom level and
// stays equal to a plain map through derived sets.
func TestFileSetPacks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	want := map[FileKey]*Add{}
	set := newFileSet((*Add).Key)
	for i := range 3000 {
		a := &Add{Path: fmt.Sprintf("p%05d.parquet", i), Stats: fmt.Sprintf(`{"numRecords":%d}`, i), PartitionValues: map[string]string{}}
		set.put(a.Key(), a)
		want[a.Key()] = a
	}
	set.seal()
	if len(set.levels) != 1 || set.levels[0].packed == nil {
		t.Fatalf("a sealed set of 3000 adds is not one packed level")
	}
	for step := range 60 {
		next := set.derive()
		for range 1 + r.IntN(300) {
			k := FileKey{Path: fmt.Sprintf("p%05d.parquet", r.IntN(4000))}
			if r.IntN(2) == 0 {
				next.del(k)
				delete(want, k)
			} else {
				a := &Add{Path: k.Path, Size: int64(step), PartitionValues: map[string]string{}}
				next.put(k, a)
				want[k] = a
			}
		}
		next.seal()
		set = next
		if set.len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, set.len(), len(want))
		}
		keys := slices.SortedFunc(maps.Keys(want), compareFileKeys)
		// allSorted streams the same values without caching them
		bottom := set.levels[len(set.levels)-1].packed.(*packedFiles)
		wasReady := bottom.isReady()
		var streamed []*Add
		set.allSorted(func(a *Add) bool { streamed = append(streamed, a); return true })
		if len(streamed) != len(keys) {
			t.Fatalf("step %d: allSorted yielded %d files, want %d", step, len(streamed), len(keys))
		}
		for i, k := range keys {
			if !reflect.DeepEqual(streamed[i], want[k]) {
				t.Fatalf("step %d: allSorted[%d] = %+v, want %+v", step, i, streamed[i], want[k])
			}
		}
		if bottom.isReady() != wasReady {
			t.Fatalf("step %d: allSorted cached the packed level's values", step)
		}
		n := 0
		set.allSorted(func(*Add) bool { n++; return n < 5 })
		if n != min(5, len(keys)) {
			t.Fatalf("step %d: allSorted went on after yield returned false (%d calls)", step, n)
		}
		sorted := set.sortedValues()
		for i, k := range keys {
			if !reflect.DeepEqual(sorted[i], want[k]) {
				t.Fatalf("step %d: sortedValues[%d] = %+v, want %+v", step, i, sorted[i], want[k])
			}
		}
		if b := set.levels[len(set.levels)-1]; b.packed == nil {
			t.Fatalf("step %d: the bottom level is not packed", step)
		}
	}
	// a set of removes never packs
	rs := newFileSet((*Remove).Key)
	for i := range 2000 {
		x := &Remove{Path: fmt.Sprint(i)}
		rs.put(x.Key(), x)
	}
	rs.seal()
	if rs.pack != nil || rs.levels[0].packed != nil {
		t.Fatal("a set of removes packed")
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
			p := pb.finish()
			if p.order != nil {
				t.Error("a checkpoint in key order was sorted again")
			}
			for _, a := range want {
				if a.PartitionValues == nil {
					a.PartitionValues = map[string]string{} // checkpoints write {}
				}
			}
			checkPacked(t, p, want)
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

// TestPackedFind looks up every key of a level larger than a few sparse
// steps, and keys between and around them.
func TestPackedFind(t *testing.T) {
	var es []fileEntry[Add]
	for i := range 1000 {
		a := &Add{Path: fmt.Sprintf("part-%05d-c000.snappy.parquet", 2*i+1), Size: int64(i)}
		es = append(es, fileEntry[Add]{a.Key(), a})
	}
	p := packEntries(es)
	for i := range 2002 {
		k := FileKey{Path: fmt.Sprintf("part-%05d-c000.snappy.parquet", i)}
		pos, ok := p.find(k)
		if want := i%2 == 1 && i < 2000; ok != want || pos != i/2 {
			t.Fatalf("find(%s) = %d, %v; want %d, %v", k.Path, pos, ok, i/2, want)
		}
		if ok {
			if a, _ := p.get(k); a.Size != int64(i/2) || a.Path != k.Path {
				t.Fatalf("get(%s) = %+v", k.Path, a)
			}
		}
	}
	for _, k := range []string{"", "a", "part-", "zzz"} {
		if _, ok := p.find(FileKey{Path: k}); ok {
			t.Errorf("find(%q) succeeded", k)
		}
	}
}

// TestPackedRawOverflowMerge builds a checkpoint level with more distinct
// path skeletons than a level holds (the rest are stored raw), then merges
// two different changes into it, as two transactions from one snapshot do:
// neither merge may write into chunks the other (or the base) uses, and the
// raw items must not take a chunk each.
func TestPackedRawOverflowMerge(t *testing.T) {
	name := func(i int) string { // distinct non-hex letters: each path its own skeleton
		var b []byte
		for ; i > 0 || len(b) == 0; i /= 20 {
			b = append(b, byte('g'+i%20))
		}
		return string(b)
	}
	pb := newPackBuilder()
	const perSeg = 40_000
	var adds []*Add
	for s := range 2 {
		seg := newPackSeg(perSeg)
		for i := range perSeg {
			a := &Add{Path: fmt.Sprintf("p=%s/00ab.parquet", name(s*perSeg+i)), Size: int64(i), PartitionValues: emptyPartitionValues}
			seg.add(a)
			adds = append(adds, a)
		}
		pb.appendSeg(seg)
	}
	base := pb.finish()
	if base.len() != len(adds) {
		t.Fatalf("level of %d files, want %d", base.len(), len(adds))
	}
	capacity := 0
	for _, c := range base.chunks {
		capacity += cap(c)
	}
	if capacity > 2*base.total+2*rawChunkSize {
		t.Errorf("chunks reserve %d bytes for %d bytes of items", capacity, base.total)
	}
	newA := &Add{Path: "zzz-new-a.parquet", Size: 1, PartitionValues: emptyPartitionValues}
	newB := &Add{Path: "zzz-new-b.parquet", Size: 2, PartitionValues: emptyPartitionValues}
	la := base.merge([]fileEntry[Add]{{newA.Key(), newA}})
	lb := base.merge([]fileEntry[Add]{{newB.Key(), newB}})
	for _, tc := range []struct {
		name      string
		l         packedLevel[Add]
		has, hasn *Add
	}{{"merge a", la, newA, newB}, {"merge b", lb, newB, newA}} {
		if got, ok := tc.l.get(tc.has.Key()); !ok || got.Path != tc.has.Path || got.Size != tc.has.Size {
			t.Errorf("%s: %s = %+v, %v", tc.name, tc.has.Path, got, ok)
		}
		if tc.l.has(tc.hasn.Key()) {
			t.Errorf("%s: holds %s", tc.name, tc.hasn.Path)
		}
		if tc.l.len() != len(adds)+1 {
			t.Errorf("%s: %d files, want %d", tc.name, tc.l.len(), len(adds)+1)
		}
	}
	for _, i := range []int{0, 1, perSeg - 1, perSeg, 2*perSeg - 1} {
		for _, l := range []packedLevel[Add]{base, la, lb} {
			if got, ok := l.get(adds[i].Key()); !ok || got.Path != adds[i].Path || got.Size != adds[i].Size {
				t.Errorf("file %d: got %+v, %v; want %s", i, got, ok, adds[i].Path)
			}
		}
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
	bottom, ok := snap.files.levels[len(snap.files.levels)-1].packed.(*packedFiles)
	if !ok {
		t.Fatal("the snapshot's bottom level is not packed")
	}
	if err := WriteCheckpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if bottom.isReady() {
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
