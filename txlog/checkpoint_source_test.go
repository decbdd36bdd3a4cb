package txlog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// rangeCountingStore records the length of every Get and fails the Gets
// after the first failAfter (0: none).
type rangeCountingStore struct {
	objectstore.Store
	mu        sync.Mutex
	gets      []int64
	failAfter int
}

var errRangedInjected = errors.New("injected store failure")

func (s *rangeCountingStore) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	s.mu.Lock()
	s.gets = append(s.gets, r.Length)
	fail := s.failAfter > 0 && len(s.gets) > s.failAfter
	s.mu.Unlock()
	if fail {
		return nil, errRangedInjected
	}
	return s.Store.Get(ctx, key, r)
}

// readAtCountingStore is a rangeCountingStore that is also an
// objectstore.RangeReader: it records the length and the buffer (its first
// byte's address) of every ReadAt, and fails like the Gets.
type readAtCountingStore struct {
	*rangeCountingStore
	reads   []int64
	buffers map[*byte]bool
}

func (s *readAtCountingStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	s.mu.Lock()
	s.reads = append(s.reads, int64(len(p)))
	if len(p) > 0 {
		s.buffers[&p[0]] = true
	}
	fail := s.failAfter > 0 && len(s.gets)+len(s.reads) > s.failAfter
	s.mu.Unlock()
	if fail {
		return 0, errRangedInjected
	}
	return objectstore.ReadAt(ctx, s.Store, key, p, off)
}

// TestRangedCheckpointRead: a checkpoint read through rangedSource packs
// the same files as one read whole, fetching one row group at a time (no
// Get of more than a row group or the tail, the file's bytes about once),
// and a store failure midway is reported as the store's error, not as a
// damaged checkpoint.
func TestRangedCheckpointRead(t *testing.T) {
	const n = 200_000 // seven row groups of at most 32,768 rows: more than rangedCachedGroups
	actions := []Action{{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		{Metadata: &Metadata{ID: "t", Format: Format{Provider: "parquet"}, SchemaString: `{"type":"struct","fields":[]}`}}}
	for i := range n {
		actions = append(actions, Action{Add: &Add{Path: fmt.Sprintf("part-%05d-1a2b3c4d-0000-0000-0000-000000000000.c000.snappy.parquet", i),
			PartitionValues: map[string]string{}, Size: int64(i), ModificationTime: 1_700_000_000_000, DataChange: true,
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
	ctx := t.Context()
	mem := objectstore.NewMem("m")
	const key = "_delta_log/00000000000000000000.checkpoint.parquet"
	if err := mem.Put(ctx, key, data); err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	read := func(store objectstore.Store) ([]*Add, int, error) {
		src, err := newRangedSource(ctx, store, key, size)
		if err != nil {
			return nil, 0, err
		}
		pb := newPackBuilder()
		others := 0
		err = readCheckpointParquetAt(key, 0, src, size, src, true, func(*Action) { others++ }, pb)
		if err != nil {
			if serr := src.failure(); serr != nil {
				return nil, 0, serr
			}
			return nil, 0, err
		}
		set := addSetOf(pb)
		return set.sortedValues(), others, nil
	}

	pbWhole := newPackBuilder()
	if err := readCheckpointParquet(key, 0, data, true, func(*Action) {}, pbWhole); err != nil {
		t.Fatal(err)
	}
	wholeSet := addSetOf(pbWhole)
	want := wholeSet.sortedValues()

	cs := &rangeCountingStore{Store: mem}
	got, others, err := read(cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || !reflect.DeepEqual(got, want) || others != 2 {
		t.Fatalf("ranged read: %d files (equal to the whole read: %v), %d other actions; want %d files, 2 others",
			len(got), reflect.DeepEqual(got, want), others, n)
	}
	var total, largest int64
	for _, l := range cs.gets {
		total += l
		largest = max(largest, l)
	}
	if len(cs.gets) < 4 || largest > max(size/2, rangedTailBytes) || total > size+rangedTailBytes {
		t.Errorf("%d Gets, largest %d bytes, %d in all, of a %d-byte file: want one per row group, each well under the file",
			len(cs.gets), largest, total, size)
	}

	// The tail and the first row group come, then the store fails.
	_, _, err = read(&rangeCountingStore{Store: mem, failAfter: 2})
	var ce *CorruptLogError
	if !errors.Is(err, errRangedInjected) || errors.As(err, &ce) {
		t.Errorf("store failure midway: got %v; want the store's error, not a *CorruptLogError", err)
	}

	// A store that reads into the caller's buffer: the row groups are read
	// with ReadAt into at most rangedCachedGroups buffers, reused once the
	// cache is full, with the same files as the whole read.
	rs := &readAtCountingStore{rangeCountingStore: &rangeCountingStore{Store: mem}, buffers: map[*byte]bool{}}
	got, others, err = read(rs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n || !reflect.DeepEqual(got, want) || others != 2 {
		t.Fatalf("ranged read into reused buffers: %d files (equal to the whole read: %v), %d other actions; want %d files, 2 others",
			len(got), reflect.DeepEqual(got, want), others, n)
	}
	groups := (n + 2 + 32_767) / 32_768
	// The last row group may lie inside the tail, which is fetched first.
	if len(rs.reads) < groups-1 || len(rs.reads) > groups || len(rs.buffers) != rangedCachedGroups {
		t.Errorf("%d ReadAt calls into %d buffers; want one per row group (%d, or one less) into %d buffers", len(rs.reads), len(rs.buffers), groups, rangedCachedGroups)
	}
	_, _, err = read(&readAtCountingStore{rangeCountingStore: &rangeCountingStore{Store: mem, failAfter: 3}, buffers: map[*byte]bool{}})
	if !errors.Is(err, errRangedInjected) || errors.As(err, &ce) {
		t.Errorf("store failure midway through ReadAt: got %v; want the store's error, not a *CorruptLogError", err)
	}
}
