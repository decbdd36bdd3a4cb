package txlog

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// Counts in log file names and in _last_checkpoint are untrusted: anyone
// who can write "_delta_log/" can claim a multi-part checkpoint of
// 2,147,483,647 parts or a hint of 2^63-1 actions. These fuzz targets
// check that what Load allocates is bounded by the objects there are, not
// by such counts (issue 31 item 1).

// countsFixture holds the objects of a small valid table: commits 0 to 2,
// a classic checkpoint at 1 and its _last_checkpoint.
type countsFixture struct {
	keys    []string
	objects map[string][]byte
}

func newCountsFixture(tb testing.TB) *countsFixture {
	tb.Helper()
	ctx := context.Background()
	store := objectstore.NewMem("fixture")
	commits := [][]Action{
		{protocolAction(1, 2), metadataAction(nil), addAction("a", nil)},
		{addAction("b", nil)},
		{addAction("c", nil)},
	}
	for v, actions := range commits {
		data, err := EncodeCommit(actions)
		if err != nil {
			tb.Fatal(err)
		}
		if err := store.Put(ctx, CommitKey(int64(v)), data); err != nil {
			tb.Fatal(err)
		}
		if v == 1 {
			snap, err := Load(ctx, store)
			if err != nil {
				tb.Fatal(err)
			}
			if err := WriteCheckpoint(ctx, snap); err != nil {
				tb.Fatal(err)
			}
		}
	}
	fx := &countsFixture{objects: map[string][]byte{}}
	for info, err := range store.List(ctx, "", "") {
		if err != nil {
			tb.Fatal(err)
		}
		data, err := store.Get(ctx, info.Key, objectstore.FullObject)
		if err != nil {
			tb.Fatal(err)
		}
		fx.keys = append(fx.keys, info.Key)
		fx.objects[info.Key] = data
	}
	return fx
}

// store returns a fresh in-memory copy of the fixture table.
func (fx *countsFixture) store(tb testing.TB) *objectstore.Mem {
	tb.Helper()
	m := objectstore.NewMem("fuzz")
	for _, k := range fx.keys {
		if err := m.Put(context.Background(), k, fx.objects[k]); err != nil {
			tb.Fatal(err)
		}
	}
	return m
}

// allocated runs fn and returns the bytes it allocated (the fuzz worker
// runs one input at a time, so the process-wide count is fn's).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// loadBound is what loading the fixture table may allocate, whatever one
// extra name or hint claims: far below what any count in them could ask
// for, far above what the table needs (about 100 KiB).
const loadBound = 32 << 20

// FuzzParseLogKey: ParseLogKey accepts exactly the canonical names of the
// spec (so its fields describe the key, within their ranges), and a log
// that also holds the name, as a copy of a real checkpoint, loads with
// allocations bounded by what is listed.
func FuzzParseLogKey(f *testing.F) {
	for _, s := range []string{
		"00000000000000000011.checkpoint.0000000001.2147483647.parquet",
		"00000000000000000001.checkpoint.0000000001.2147483647.parquet",
		"00000000000000000001.checkpoint.2147483647.2147483647.parquet",
		"00000000000000000001.checkpoint.0000000002.0000000002.parquet",
		"00000000000000000001.checkpoint.0000000000.0000000000.parquet",
		"00000000000000000001.checkpoint.9999999999.9999999999.parquet",
		"00000000000000000001.checkpoint.parquet",
		"00000000000000000001.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.parquet",
		"09223372036854775807.json",
		"99999999999999999999.json",
		"00000000000000000003.json",
		"_last_checkpoint",
	} {
		f.Add(s)
	}
	fx := newCountsFixture(f)
	cp := fx.objects[CheckpointKey(1)]
	f.Fuzz(func(t *testing.T, name string) {
		key := LogPrefix + name
		lf, ok := ParseLogKey(key)
		if !ok {
			return
		}
		if lf.Key != key || lf.Version < 0 {
			t.Fatalf("ParseLogKey(%q) = %+v", key, lf)
		}
		var canonical string
		switch {
		case lf.Commit:
			canonical = CommitKey(lf.Version)
		case lf.Parts > 0:
			if lf.Part < 1 || lf.Part > lf.Parts || lf.Parts >= 1<<31 {
				t.Fatalf("ParseLogKey(%q): part %d of %d", key, lf.Part, lf.Parts)
			}
			canonical = fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", LogPrefix, lf.Version, lf.Part, lf.Parts)
		case strings.HasSuffix(key, ".checkpoint.parquet"):
			canonical = CheckpointKey(lf.Version)
		default: // UUID-named v2
			canonical = key
			if lf.Part != 0 || lf.Parts != 0 {
				t.Fatalf("ParseLogKey(%q): part %d of %d for a v2 checkpoint", key, lf.Part, lf.Parts)
			}
		}
		if key != canonical {
			t.Fatalf("ParseLogKey accepted %q, which is not the canonical %q", key, canonical)
		}
		store := fx.store(t)
		if err := store.Put(context.Background(), key, cp); err != nil {
			return // not a key the store takes
		}
		var err error
		if n := allocated(func() { _, err = Load(context.Background(), store) }); n > loadBound {
			t.Fatalf("Load with %q in the log allocated %d bytes", key, n)
		}
		if err != nil && !isTypedLogError(err) {
			t.Fatalf("Load with %q in the log: untyped error %v", key, err)
		}
		var l *listing
		if n := allocated(func() {
			if l, err = listLog(context.Background(), store, "", -1); err == nil {
				_ = l.incompleteCheckpoints(l.latest())
				_ = l.earliest()
			}
		}); n > loadBound {
			t.Fatalf("listing with %q in the log allocated %d bytes", key, n)
		}
	})
}

// FuzzLastCheckpoint: decodeLastCheckpoint never panics and returns only
// hints whose counts are in range, and whatever _last_checkpoint holds,
// the table loads to the same version and files (the hint is only a hint,
// spec "Last Checkpoint File") with allocations bounded by the objects
// there are, not by the hint's counts.
func FuzzLastCheckpoint(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"size":4}`,
		`{"version":1,"size":9223372036854775807,"parts":2147483647,"sizeInBytes":9223372036854775807,"numOfAddFiles":9223372036854775807}`,
		`{"version":1,"size":4,"parts":2147483648}`,
		`{"version":9223372036854775807,"size":1}`,
		`{"version":2,"size":1}`,
		`{"version":0,"size":1,"parts":3}`,
		`{"version":-1,"size":1}`,
		`{"version":1,"size":-5}`,
		`{"version":1,"size":4,"checkpointSchema":{"type":"struct","fields":[]},"tags":{"a":"b"}}`,
		`null`,
		``,
		`{"version":1e400}`,
	} {
		f.Add([]byte(s))
	}
	fx := newCountsFixture(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		lc := decodeLastCheckpoint(data)
		if lc == nil {
			return // ignored: Load lists as without a hint
		}
		if lc.Version < 0 || lc.Size < 0 || (lc.Parts != nil && (*lc.Parts < 1 || *lc.Parts >= 1<<31)) ||
			(lc.SizeInBytes != nil && *lc.SizeInBytes < 0) || (lc.NumOfAddFiles != nil && *lc.NumOfAddFiles < 0) {
			t.Fatalf("decodeLastCheckpoint(%q) = %+v: a count out of range", data, lc)
		}
		store := fx.store(t)
		if err := store.Put(context.Background(), LastCheckpointKey, data); err != nil {
			t.Fatal(err)
		}
		for _, at := range []int64{-1, 0, 1} {
			opts := []LoadOption{}
			want := int64(2)
			if at >= 0 {
				opts, want = append(opts, AtVersion(at)), at
			}
			var s *Snapshot
			var err error
			if n := allocated(func() { s, err = Load(context.Background(), store, opts...) }); n > loadBound {
				t.Fatalf("Load (version %d) with _last_checkpoint %q allocated %d bytes", at, data, n)
			}
			if err != nil {
				t.Fatalf("Load (version %d) with _last_checkpoint %q: %v", at, data, err)
			}
			if s.Version() != want || len(s.Files()) != int(want)+1 {
				t.Fatalf("Load (version %d) with _last_checkpoint %q: version %d, %d files; want %d, %d",
					at, data, s.Version(), len(s.Files()), want, want+1)
			}
		}
	})
}
