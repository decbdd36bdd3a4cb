package fileset

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// testAdds returns adds with the shapes a packed level must keep: stats of
// all kinds, DVs (one path with two DVs), escaped paths, rare fields,
// partition values (nil, empty, shared).
func testAdds() []*file {
	one, two := int64(1), int64(2)
	off := int32(7)
	pv := map[string]string{"day": "2024-01-01"}
	return []*file{
		{Path: "b.parquet", PartitionValues: pv, Size: 10, ModificationTime: 100, DataChange: true,
			Stats: `{"numRecords":5,"minValues":{"day":"2024-01-01","s":"é\"x"},"maxValues":{"t":"2024-01-01T10:00:00.000Z"}}`},
		{Path: "a.parquet", PartitionValues: pv, Size: 11, Stats: `{"numRecords":6,"minValues":{"day":"2024-01-01","s":"y"},"maxValues":{"t":"2024-01-01T11:00:00.000Z"}}`},
		{Path: "c%20d.parquet", PartitionValues: map[string]string{}, Size: 12, Stats: `not json "`},
		{Path: "dv.parquet", Size: 13, DeletionVector: &dvDesc{StorageType: "u", PathOrInlineDv: "ab", SizeInBytes: 3, Cardinality: 1}},
		{Path: "dv.parquet", Size: 14, DeletionVector: &dvDesc{StorageType: "u", PathOrInlineDv: "ab", Offset: &off, SizeInBytes: 3, Cardinality: 2}},
		{Path: "e.parquet", Size: 15, Tags: map[string]string{"k": "v"}, BaseRowID: &one, DefaultRowCommitVersion: &two,
			ClusteringProvider: "liquid", Stats: "{\"a\":1}\n"},
		{Path: "f.parquet", PartitionValues: map[string]string{}, Size: 16, Stats: ""},
		{Path: "part-00001-5a2f9c1e-c000.snappy.parquet", PartitionValues: pv, Size: 17, Stats: `{"numRecords":1}`},
		{Path: "part-00002-5a2f9c1e-c000.snappy.parquet", PartitionValues: pv, Size: 18},
		{Path: "day=2024-01-01/part-0003-beef%3D1.parquet", Size: 19,
			DeletionVector: &dvDesc{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@fX", SizeInBytes: 40, Cardinality: 6}},
		{Path: "day=2024-01-01/part-0003-beef%3D1.parquet", Size: 20},
	}
}

func sortedByKey(adds []*file) []*file {
	out := slices.Clone(adds)
	slices.SortFunc(out, func(a, b *file) int { return Compare(a.Key(), b.Key()) })
	return out
}

func checkPacked(t *testing.T, p *Packed[file, fileRare], want []*file) {
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
	if _, ok := p.get(Key{Path: "nope"}); ok {
		t.Fatal("get of an absent key succeeded")
	}
	if _, ok := p.get(Key{Path: "dv.parquet"}); ok {
		t.Fatal("get of dv.parquet without its DV succeeded")
	}
	got := p.sortedValues((*file).Key)
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
		var es []entry[file]
		for _, a := range sortedByKey(adds) {
			es = append(es, entry[file]{a.Key(), a})
		}
		checkPacked(t, packEntries(&testCodec, es), adds)
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
				in = append([]*file{&old}, adds...)
			}
			pb := NewBuilder(&testCodec)
			// two segments and single adds, as a multi-part checkpoint gives
			s1 := NewSeg(&testCodec, 2)
			for _, a := range in[:3] {
				s1.Add(a)
			}
			pb.AppendSeg(s1)
			pb.Add(in[3])
			s2 := NewSeg(&testCodec, 2)
			for _, a := range in[4:] {
				s2.Add(a)
			}
			pb.AppendSeg(s2)
			p := pb.Finish()
			if (p.order == nil) != (order == "sorted") {
				t.Errorf("order set = %v for %s input", p.order != nil, order)
			}
			checkPacked(t, p, adds)
		})
	}
}

func TestPackedScratchStringsAreCopied(t *testing.T) {
	buf := []byte("x.parquet{\"a\":1}")
	a := &file{Path: unsafe.String(&buf[0], 9), Stats: unsafe.String(&buf[9], 7)}
	s := NewSeg(&testCodec, 1)
	s.Add(a)
	for i := range buf {
		buf[i] = 'z'
	}
	p := s.finish()
	got, ok := p.get(Key{Path: "x.parquet"})
	if !ok || got.Stats != `{"a":1}` {
		t.Fatalf("get = %+v, %v", got, ok)
	}
}

func TestPackedMerge(t *testing.T) {
	adds := testAdds()
	var es []entry[file]
	for _, a := range sortedByKey(adds) {
		es = append(es, entry[file]{a.Key(), a})
	}
	base := packEntries(&testCodec, es)
	newer := &file{Path: "a.parquet", Size: 99, Stats: `{"numRecords":7}`}
	added := &file{Path: "aa.parquet", PartitionValues: map[string]string{"day": "x"}, Size: 1}
	delta := []entry[file]{
		{newer.Key(), newer},
		{added.Key(), added},
		{adds[3].Key(), nil}, // remove one DV of dv.parquet
		{Key{Path: "zz"}, nil},
	}
	slices.SortFunc(delta, func(a, b entry[file]) int { return Compare(a.k, b.k) })
	want := append([]*file{newer, added, adds[0], adds[2], adds[4], adds[5]}, adds[6:]...)
	for _, ready := range []bool{false, true} {
		t.Run(fmt.Sprintf("base sorted values ready %v", ready), func(t *testing.T) {
			b := packEntries(&testCodec, es)
			if ready {
				b.sortedValues((*file).Key)
			}
			m := b.merge(delta).(*Packed[file, fileRare])
			checkPacked(t, m, want)
			// the base level is unchanged
			checkPacked(t, b, adds)
		})
	}
	// a level whose chunks are mostly dead is copied, not shared
	p := base
	for i := range 40 {
		big := &file{Path: "a.parquet", Stats: fmt.Sprintf(`{"s":"%0100000d"}`, i)}
		p = p.merge([]entry[file]{{big.Key(), big}}).(*Packed[file, fileRare])
	}
	if p.total > 2*p.live+shareSlack {
		t.Errorf("after 40 replacing merges the chunks hold %d bytes for %d live", p.total, p.live)
	}
}

// TestFileSetPacks checks that a set of adds packs its bottom level and
// stays equal to a plain map through derived sets.
func TestFileSetPacks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	want := map[Key]*file{}
	set := NewPacking(&testCodec)
	for i := range 3000 {
		a := &file{Path: fmt.Sprintf("p%05d.parquet", i), Stats: fmt.Sprintf(`{"numRecords":%d}`, i), PartitionValues: map[string]string{}}
		set.Put(a.Key(), a)
		want[a.Key()] = a
	}
	set.Seal()
	if len(set.levels) != 1 || set.levels[0].packed == nil {
		t.Fatalf("a sealed set of 3000 adds is not one packed level")
	}
	for step := range 60 {
		next := set.Derive()
		for range 1 + r.IntN(300) {
			k := Key{Path: fmt.Sprintf("p%05d.parquet", r.IntN(4000))}
			if r.IntN(2) == 0 {
				next.Del(k)
				delete(want, k)
			} else {
				a := &file{Path: k.Path, Size: int64(step), PartitionValues: map[string]string{}}
				next.Put(k, a)
				want[k] = a
			}
		}
		next.Seal()
		set = next
		if set.Len() != len(want) {
			t.Fatalf("step %d: len %d, want %d", step, set.Len(), len(want))
		}
		keys := slices.SortedFunc(maps.Keys(want), Compare)
		// allSorted streams the same values without caching them
		bottom := set.levels[len(set.levels)-1].packed.(*Packed[file, fileRare])
		wasReady := bottom.isReady()
		var streamed []*file
		set.AllSorted(func(a *file) bool { streamed = append(streamed, a); return true })
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
		set.AllSorted(func(*file) bool { n++; return n < 5 })
		if n != min(5, len(keys)) {
			t.Fatalf("step %d: allSorted went on after yield returned false (%d calls)", step, n)
		}
		sorted := set.SortedValues()
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
	rs := New((*tombstone).Key)
	for i := range 2000 {
		x := &tombstone{Path: fmt.Sprint(i)}
		rs.Put(x.Key(), x)
	}
	rs.Seal()
	if rs.pack != nil || rs.levels[0].packed != nil {
		t.Fatal("a set of removes packed")
	}
}

// TestPackedFind looks up every key of a level larger than a few sparse
// steps, and keys between and around them.
func TestPackedFind(t *testing.T) {
	var es []entry[file]
	for i := range 1000 {
		a := &file{Path: fmt.Sprintf("part-%05d-c000.snappy.parquet", 2*i+1), Size: int64(i)}
		es = append(es, entry[file]{a.Key(), a})
	}
	p := packEntries(&testCodec, es)
	for i := range 2002 {
		k := Key{Path: fmt.Sprintf("part-%05d-c000.snappy.parquet", i)}
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
		if _, ok := p.find(Key{Path: k}); ok {
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
	pb := NewBuilder(&testCodec)
	const perSeg = 40_000
	var adds []*file
	for s := range 2 {
		seg := NewSeg(&testCodec, perSeg)
		for i := range perSeg {
			a := &file{Path: fmt.Sprintf("p=%s/00ab.parquet", name(s*perSeg+i)), Size: int64(i), PartitionValues: EmptyPartitionValues}
			seg.Add(a)
			adds = append(adds, a)
		}
		pb.AppendSeg(seg)
	}
	base := pb.Finish()
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
	newA := &file{Path: "zzz-new-a.parquet", Size: 1, PartitionValues: EmptyPartitionValues}
	newB := &file{Path: "zzz-new-b.parquet", Size: 2, PartitionValues: EmptyPartitionValues}
	la := base.merge([]entry[file]{{newA.Key(), newA}})
	lb := base.merge([]entry[file]{{newB.Key(), newB}})
	for _, tc := range []struct {
		name      string
		l         level[file]
		has, hasn *file
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
		for _, l := range []level[file]{base, la, lb} {
			if got, ok := l.get(adds[i].Key()); !ok || got.Path != adds[i].Path || got.Size != adds[i].Size {
				t.Errorf("file %d: got %+v, %v; want %s", i, got, ok, adds[i].Path)
			}
		}
	}
}

// TestBuilderInPlace: the row-group segments of a reserved file write
// their records into the builder's array, filled concurrently and appended
// in order, and the level holds every add once; a segment with more adds
// than rows (a damaged file), or a file whose row counts do not fit the
// limit, still gives every add without touching the others' windows.
func TestBuilderInPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rows    []int64 // rows of each row group
		adds    []int   // adds packed into each group's segment
		limit   int64
		inPlace bool // the level's records are the reserved array
	}{
		{"windows with gaps", []int64{10, 7, 12, 5}, []int{6, 0, 12, 3}, 100, true},
		{"windows exactly full", []int64{4, 4}, []int{4, 4}, 8, true},
		{"segment outgrows its window", []int64{3, 6, 6}, []int{5, 6, 2}, 100, false},
		{"rows over the limit", []int64{10, 10}, []int{10, 10}, 15, false},
		{"negative rows", []int64{4, -1, 4}, []int{4, 0, 4}, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := NewBuilder(&testCodec)
			pre := &file{Path: "0000-pre.parquet", Size: 1, PartitionValues: EmptyPartitionValues}
			pb.Add(pre) // a single add before the file: it comes first
			pb.Reserve(tc.rows, tc.limit)
			segs := make([]*Seg[file, fileRare], len(tc.rows))
			all := []*file{pre}
			var wg sync.WaitGroup
			for g := range tc.rows {
				var in []*file
				for i := range tc.adds[g] {
					in = append(in, &file{Path: fmt.Sprintf("g%d/%04x.parquet", g, i), Size: int64(100*g + i),
						Stats: fmt.Sprintf(`{"numRecords":%d}`, i), PartitionValues: EmptyPartitionValues})
				}
				all = append(all, in...)
				wg.Go(func() {
					segs[g] = pb.SegAt(g)
					for _, a := range in {
						segs[g].Add(a)
					}
				})
			}
			wg.Wait() // every window is filled before any is appended
			var first *fileRec
			for _, s := range segs {
				if first == nil && len(s.recs) > 0 {
					first = unsafe.SliceData(s.recs)
				}
				pb.AppendSeg(s)
			}
			p := pb.Finish()
			checkPacked(t, p, all)
			if p.order != nil {
				t.Errorf("records not in file order")
			}
			// the first group's records are in place right after the
			// single add: the level's array is the reserved one
			if got := first == &p.recs[1]; got != tc.inPlace {
				t.Errorf("records written in place = %v, want %v", got, tc.inPlace)
			}
		})
	}
}

// TestBuilderChunkSlack: the chunks of a level built from row-group
// segments hold little unused room. A segment's chunks grow to maxChunk,
// and its last one is mostly empty on average: with a maxChunk large next
// to a segment's items (1 MiB against a P5 row group's ~2 MB) that room
// was ~15 MB of a 1,000,000-file snapshot. Segments of ~1.1 MB of items
// here, the live heap the level adds is compared with its items.
func TestBuilderChunkSlack(t *testing.T) {
	const groups, perGroup = 4, 17_500
	build := func() *Packed[file, fileRare] {
		pb := NewBuilder(&testCodec)
		rows := make([]int64, groups)
		for g := range rows {
			rows[g] = perGroup
		}
		pb.Reserve(rows, groups*perGroup)
		for g := range groups {
			s := pb.SegAt(g)
			for i := range perGroup {
				s.Add(&file{Path: fmt.Sprintf("day=2024-01-%02d/part-%05d-%08x-0000-0000-0000-000000000000.c000.snappy.parquet", 1+g, i, g*perGroup+i),
					Size: int64(i), PartitionValues: EmptyPartitionValues,
					Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"a%05d"},"maxValues":{"id":%d,"name":"z%05d"},"nullCount":{"id":0,"name":0}}`,
						100+i, g*1000, i, g*1000+99, i)})
			}
			pb.AppendSeg(s)
		}
		return pb.Finish()
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	p := build()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	held := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	items := int64(p.total)
	recs := int64(cap(p.recs)) * int64(unsafe.Sizeof(fileRec{}))
	t.Logf("level holds %d bytes: %d of items, %d of records", held, items, recs)
	if limit := recs + items + items/4 + 64<<10; held > limit {
		t.Errorf("level holds %d bytes for %d bytes of items and %d of records (%.2fx the items), want at most %d",
			held, items, recs, float64(held-recs)/float64(items), limit)
	}
	runtime.KeepAlive(p)
}

// TestBuilderOrder: Finish keeps the records in file order only when the
// keys the segments noted while packing were in strict order, within each
// segment and across the segments' boundaries; otherwise it orders them
// by key and keeps the last record of a key.
func TestBuilderOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		segs     [][]string // paths packed into each segment
		reorders bool       // the level has an order
		want     []string   // paths in key order
	}{
		{"in order", [][]string{{"a", "b"}, {}, {"c", "d"}}, false, []string{"a", "b", "c", "d"}},
		{"first segment out of order", [][]string{{"b", "a"}, {"c"}}, true, []string{"a", "b", "c"}},
		{"later segment out of order", [][]string{{"a"}, {"c", "b"}}, true, []string{"a", "b", "c"}},
		{"boundary out of order", [][]string{{"a", "c"}, {"b", "d"}}, true, []string{"a", "b", "c", "d"}},
		{"boundary after an empty segment", [][]string{{"c"}, {}, {"b"}}, true, []string{"b", "c"}},
		{"key repeated across a boundary", [][]string{{"a", "b"}, {"b", "c"}}, true, []string{"a", "b", "c"}},
		{"key repeated in a segment", [][]string{{"a", "a"}}, true, []string{"a"}},
		{"escaped path keys in order", [][]string{{"a%20b", "a%21"}}, false, []string{"a%20b", "a%21"}}, // keys "a b" < "a!"
		{"escaped path keys out of order", [][]string{{"a%21", "a%20b"}}, true, []string{"a%20b", "a%21"}},
		{"only empty segments", [][]string{{}, {}}, false, nil},
		{"one-element segments in order", [][]string{{"a"}, {"b"}, {"c"}}, false, []string{"a", "b", "c"}},
		{"one-element segments out of order", [][]string{{"b"}, {"a"}, {"c"}}, true, []string{"a", "b", "c"}},
		{"one key repeated in one-element segments", [][]string{{"a"}, {"a"}}, true, []string{"a"}},
		// "p#x": path p with DV x; keys of one path order by DV.
		{"DVs of one path in order across a boundary", [][]string{{"a", "p#u1"}, {"p#u2", "q"}}, false, []string{"a", "p#u1", "p#u2", "q"}},
		{"DVs of one path out of order across a boundary", [][]string{{"p#u2"}, {"p#u1"}}, true, []string{"p#u1", "p#u2"}},
		{"path without DV before its DV", [][]string{{"p"}, {"p#u1"}}, false, []string{"p", "p#u1"}},
		{"same path and DV across a boundary", [][]string{{"p#u1"}, {"p#u1"}}, true, []string{"p#u1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := NewBuilder(&testCodec)
			rows := make([]int64, len(tc.segs))
			for g, ps := range tc.segs {
				rows[g] = int64(len(ps))
			}
			pb.Reserve(rows, 1000)
			for g, ps := range tc.segs {
				s := pb.SegAt(g)
				addNamed(s, g, ps)
				pb.AppendSeg(s)
			}
			checkOrder(t, pb.Finish(), tc.reorders, tc.want)
		})
	}
}

// orderFile is the file of TestBuilderOrder's name "path" or "path#dv".
func orderFile(name string, size int64) *file {
	f := &file{Path: name, Size: size, PartitionValues: EmptyPartitionValues}
	if p, dv, ok := strings.Cut(name, "#"); ok {
		f.Path = p
		f.DeletionVector = &dvDesc{StorageType: dv[:1], PathOrInlineDv: dv[1:], SizeInBytes: 1, Cardinality: 1}
	}
	return f
}

// addNamed packs the files named ps into s, segment g's.
func addNamed(s *Seg[file, fileRare], g int, ps []string) {
	for i, p := range ps {
		s.Add(orderFile(p, int64(100*g+i)))
	}
}

// checkOrder checks that p has an order when reorders says so and holds
// the files named want, in key order.
func checkOrder(t *testing.T, p *Packed[file, fileRare], reorders bool, want []string) {
	t.Helper()
	if got := p.order != nil; got != reorders {
		t.Errorf("level has an order = %v, want %v", got, reorders)
	}
	var got []string
	for v := range p.all {
		got = append(got, orderName(v))
	}
	if !slices.Equal(got, want) {
		t.Errorf("files in key order = %q, want %q", got, want)
	}
}

// orderName is the name of orderFile's f.
func orderName(f *file) string {
	if d := f.DeletionVector; d != nil {
		return f.Path + "#" + d.StorageType + d.PathOrInlineDv
	}
	return f.Path
}

// TestBuilderOrderMixed: the order noted while packing is the order of
// every record appended, also for segments with arrays of their own (a
// Reserve whose rows exceed its limit), a segment that outgrew its window,
// and single adds (Builder.Add) after the segments.
func TestBuilderOrderMixed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rows     []int64 // Reserve's rows per segment
		limit    int64
		segs     [][]string
		adds     []string // Builder.Add after the segments
		reorders bool
		want     []string
	}{
		{"own arrays in order", []int64{2, 2}, 1, [][]string{{"a", "b"}, {"c", "d"}}, nil, false, []string{"a", "b", "c", "d"}},
		{"own arrays out of order", []int64{2, 2}, 1, [][]string{{"a", "c"}, {"b", "d"}}, nil, true, []string{"a", "b", "c", "d"}},
		{"outgrown window in order", []int64{1, 1}, 100, [][]string{{"a", "b", "c"}, {"d"}}, nil, false, []string{"a", "b", "c", "d"}},
		{"adds after segments in order", []int64{2}, 100, [][]string{{"a", "b"}}, []string{"c", "d"}, false, []string{"a", "b", "c", "d"}},
		{"add before the segments' last key", []int64{2}, 100, [][]string{{"a", "c"}}, []string{"b"}, true, []string{"a", "b", "c"}},
		{"adds only, out of order", nil, 100, nil, []string{"b", "a"}, true, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pb := NewBuilder(&testCodec)
			if tc.rows != nil {
				pb.Reserve(tc.rows, tc.limit)
			}
			for g, ps := range tc.segs {
				s := pb.SegAt(g)
				addNamed(s, g, ps)
				pb.AppendSeg(s)
			}
			for i, p := range tc.adds {
				pb.Add(orderFile(p, int64(1000+i)))
			}
			checkOrder(t, pb.Finish(), tc.reorders, tc.want)
		})
	}
}
