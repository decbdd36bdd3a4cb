package txlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

const replayTestSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`

// countingStore records the List and Get calls made through it.
type countingStore struct {
	objectstore.Store
	mu    sync.Mutex
	lists []string // startAfter of each List
	gets  []string
}

func (c *countingStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[objectstore.ObjectInfo, error] {
	c.mu.Lock()
	c.lists = append(c.lists, startAfter)
	c.mu.Unlock()
	return c.Store.List(ctx, prefix, startAfter)
}

func (c *countingStore) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	c.mu.Lock()
	c.gets = append(c.gets, key)
	c.mu.Unlock()
	return c.Store.Get(ctx, key, r)
}

func (c *countingStore) reset() {
	c.mu.Lock()
	c.lists, c.gets = nil, nil
	c.mu.Unlock()
}

type memTable struct {
	t     *testing.T
	mem   *objectstore.Mem
	store *countingStore
}

func newMemTable(t *testing.T) *memTable {
	mem := objectstore.NewMem(t.Name())
	return &memTable{t: t, mem: mem, store: &countingStore{Store: mem}}
}

func (m *memTable) commit(v int64, actions ...Action) {
	m.t.Helper()
	data, err := EncodeCommit(actions)
	if err != nil {
		m.t.Fatal(err)
	}
	m.put(CommitKey(v), data)
}

func (m *memTable) put(key string, data []byte) {
	m.t.Helper()
	if err := m.mem.Put(context.Background(), key, data); err != nil {
		m.t.Fatal(err)
	}
}

func (m *memTable) load(opts ...LoadOption) (*Snapshot, error) {
	return Load(context.Background(), m.store, opts...)
}

func (m *memTable) mustLoad(opts ...LoadOption) *Snapshot {
	m.t.Helper()
	s, err := m.load(opts...)
	if err != nil {
		m.t.Fatal(err)
	}
	return s
}

func protocolAction(r, w int32, features ...string) Action {
	p := &Protocol{MinReaderVersion: r, MinWriterVersion: w}
	if r == 3 {
		p.ReaderFeatures = slices.Clone(features)
	}
	if w == 7 {
		p.WriterFeatures = slices.Clone(features)
	}
	return Action{Protocol: p}
}

func metadataAction(config map[string]string) Action {
	return Action{Metadata: &Metadata{ID: "table-1", Format: Format{Provider: "parquet"}, SchemaString: replayTestSchema,
		PartitionColumns: []string{"p"}, Configuration: config}}
}

func addAction(path string, dv *DeletionVectorDescriptor) Action {
	return Action{Add: &Add{Path: path, PartitionValues: map[string]string{"p": "x"}, Size: 100, ModificationTime: 1,
		DataChange: true, Stats: `{"numRecords":10}`, DeletionVector: dv}}
}

func removeAction(path string, dv *DeletionVectorDescriptor, deletedAt int64) Action {
	return Action{Remove: &Remove{Path: path, DeletionTimestamp: &deletedAt, DataChange: true, DeletionVector: dv}}
}

func filePaths(s *Snapshot) []string {
	var out []string
	for _, a := range s.Files() {
		out = append(out, a.Path+"#"+a.DeletionVector.UniqueID())
	}
	return out
}

func dvAt(offset int32) *DeletionVectorDescriptor {
	return &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &offset, SizeInBytes: 40, Cardinality: 1}
}

// TestReplay follows the spec's reconciliation rules across versions.
func TestReplay(t *testing.T) {
	m := newMemTable(t)
	m.commit(0, Action{CommitInfo: &CommitInfo{Operation: "CREATE"}}, protocolAction(1, 2), metadataAction(nil),
		addAction("p=x/a.parquet", nil), addAction("p=x/b.parquet", nil))
	m.commit(1, removeAction("p=x/a.parquet", nil, 1000), addAction("p=x/c%20d.parquet", nil),
		Action{Txn: &Txn{AppID: "app", Version: 1}})
	// a file re-added with a DV, and domain metadata
	m.commit(2, addAction("p=x/a.parquet", dvAt(1)), removeAction("p=x/b.parquet", nil, 2000),
		Action{DomainMetadata: &DomainMetadata{Domain: "d1", Configuration: "one"}},
		Action{DomainMetadata: &DomainMetadata{Domain: "d2", Configuration: "two"}})
	// the DV is replaced (legal: same path, different dvId), the other encoding of c d is removed,
	// schema and protocol change, a domain is removed
	newSchema := strings.Replace(replayTestSchema, `"name":"id"`, `"name":"key"`, 1)
	m.commit(3, removeAction("p=x/a.parquet", dvAt(1), 3000), addAction("p=x/a.parquet", dvAt(50)),
		removeAction("p=x/c d.parquet", nil, 3000),
		Action{Txn: &Txn{AppID: "app", Version: 2}}, Action{Txn: &Txn{AppID: "other", Version: 0}},
		Action{DomainMetadata: &DomainMetadata{Domain: "d1", Configuration: "one", Removed: true}},
		Action{Metadata: &Metadata{ID: "table-1", Format: Format{Provider: "parquet"}, SchemaString: newSchema, PartitionColumns: []string{"p"}}},
		protocolAction(3, 7, FeatureDeletionVectors))

	now := time.UnixMilli(3500)
	tests := []struct {
		version    int64
		files      []string
		tombstones []string
		txn        int64
		domains    []string
		field0     string
		reader     int32
	}{
		{0, []string{"p=x/a.parquet#", "p=x/b.parquet#"}, nil, -1, nil, "id", 1},
		{1, []string{"p=x/b.parquet#", "p=x/c%20d.parquet#"}, []string{"p=x/a.parquet"}, 1, nil, "id", 1},
		{2, []string{"p=x/a.parquet#uab^-aqEH.-t@S}K{vb[*k^@1", "p=x/c%20d.parquet#"}, []string{"p=x/a.parquet", "p=x/b.parquet"}, 1, []string{"d1", "d2"}, "id", 1},
		{3, []string{"p=x/a.parquet#uab^-aqEH.-t@S}K{vb[*k^@50"}, []string{"p=x/a.parquet", "p=x/a.parquet", "p=x/b.parquet", "p=x/c d.parquet"}, 2, []string{"d2"}, "key", 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("v", tt.version), func(t *testing.T) {
			s := m.mustLoad(AtVersion(tt.version), WithClock(func() time.Time { return now }))
			if s.Version() != tt.version {
				t.Errorf("Version() = %d", s.Version())
			}
			if got := filePaths(s); !slices.Equal(got, tt.files) {
				t.Errorf("Files() = %v, want %v", got, tt.files)
			}
			var ts []string
			for _, r := range s.Tombstones() {
				ts = append(ts, r.Path)
			}
			if !slices.Equal(ts, tt.tombstones) {
				t.Errorf("Tombstones() = %v, want %v", ts, tt.tombstones)
			}
			if got := s.TxnVersion("app"); got != tt.txn {
				t.Errorf("TxnVersion(app) = %d, want %d", got, tt.txn)
			}
			if got := slices.Sorted(mapKeys(s.Domains())); !slices.Equal(got, tt.domains) {
				t.Errorf("Domains() = %v, want %v", got, tt.domains)
			}
			if got := s.Schema().Fields[0].Name; got != tt.field0 {
				t.Errorf("Schema() field 0 = %q, want %q", got, tt.field0)
			}
			if s.Protocol().MinReaderVersion != tt.reader {
				t.Errorf("reader version %d, want %d", s.Protocol().MinReaderVersion, tt.reader)
			}
			if !slices.Equal(s.PartitionColumns(), []string{"p"}) {
				t.Errorf("PartitionColumns() = %v", s.PartitionColumns())
			}
		})
	}
	s := m.mustLoad()
	if d, ok := s.DomainMetadata("d2"); !ok || d.Configuration != "two" {
		t.Errorf("DomainMetadata(d2) = %v, %v", d, ok)
	}
	if _, ok := s.DomainMetadata("d1"); ok {
		t.Error("removed domain d1 is still there")
	}
	if s.CommitInfo() != nil {
		t.Errorf("commit 3 has no commitInfo, got %+v", s.CommitInfo())
	}
	if got := m.mustLoad(AtVersion(0)).CommitInfo(); got == nil || got.Operation != "CREATE" {
		t.Errorf("CommitInfo() at 0 = %+v", got)
	}
	if s.TxnVersion("nobody") != -1 || s.TxnVersion("other") != 0 {
		t.Errorf("TxnVersion: nobody %d other %d", s.TxnVersion("nobody"), s.TxnVersion("other"))
	}
}

func mapKeys[K comparable, V any](m map[K]V) iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestRetention: tombstones expire after delta.deletedFileRetentionDuration,
// txns after delta.setTransactionRetentionDuration (by lastUpdated).
func TestRetention(t *testing.T) {
	day := int64(24 * time.Hour / time.Millisecond)
	for _, tt := range []struct {
		name       string
		config     map[string]string
		nowDays    int64
		tombstones int
		txn        int64
	}{
		{"defaults, fresh", nil, 3, 2, 5},
		{"defaults, one tombstone expired", nil, 8, 1, 5},
		{"defaults, all expired, txns never expire", nil, 100, 0, 5},
		{"short retention", map[string]string{PropDeletedFileRetentionDuration: "interval 1 day"}, 2, 1, 5},
		{"txn retention keeps fresh", map[string]string{PropSetTransactionRetentionDuration: "interval 2 days"}, 3, 2, 5},
		{"txn retention expires", map[string]string{PropSetTransactionRetentionDuration: "interval 2 days"}, 6, 2, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newMemTable(t)
			m.commit(0, protocolAction(1, 2), metadataAction(tt.config), addAction("a", nil), addAction("b", nil))
			lu := 3 * day
			m.commit(1, removeAction("a", nil, 0), removeAction("b", nil, 2*day),
				Action{Txn: &Txn{AppID: "q", Version: 5, LastUpdated: &lu}})
			m.commit(2, Action{Remove: &Remove{Path: "never-timestamped"}})
			s := m.mustLoad(WithClock(func() time.Time { return time.UnixMilli(tt.nowDays * day) }))
			if got := len(s.Tombstones()); got != tt.tombstones {
				t.Errorf("%d tombstones, want %d", got, tt.tombstones)
			}
			if got := s.TxnVersion("q"); got != tt.txn {
				t.Errorf("TxnVersion = %d, want %d", got, tt.txn)
			}
			if got := len(s.Txns()); got != map[bool]int{true: 1, false: 0}[tt.txn >= 0] {
				t.Errorf("Txns() has %d entries", got)
			}
		})
	}
}

// TestLoadErrors covers the typed errors of Load.
func TestLoadErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("empty store", func(t *testing.T) {
		_, err := Load(ctx, objectstore.NewMem("empty"))
		if !errors.Is(err, ErrTableNotFound) {
			t.Errorf("err = %v", err)
		}
		_, err = Load(ctx, objectstore.NewMem("empty"), AtVersion(3))
		if !errors.Is(err, ErrVersionNotFound) {
			t.Errorf("AtVersion on empty store: %v", err)
		}
	})
	t.Run("gap", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, protocolAction(1, 2), metadataAction(nil))
		m.commit(1, addAction("a", nil))
		m.commit(3, addAction("b", nil))
		_, err := m.load()
		var ce *CorruptLogError
		if !errors.As(err, &ce) || ce.Version != 2 || !strings.Contains(ce.Reason, "not contiguous") ||
			!errors.Is(err, ErrLogGap) || !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("err = %v, want corrupt log naming version 2, matching ErrLogGap", err)
		}
		gaps := 0
		for _, err := range Commits(context.Background(), m.store, 0, 3) {
			switch {
			case errors.Is(err, ErrLogGap):
				gaps++
			case err != nil:
				t.Errorf("Commits: %v, want ErrLogGap", err)
			}
		}
		if gaps != 1 {
			t.Errorf("Commits over the gap yielded %d ErrLogGap errors, want 1", gaps)
		}
		if _, err := m.load(AtVersion(1)); errors.Is(err, ErrLogGap) {
			t.Errorf("load of version 1 matches ErrLogGap: %v", err)
		}
		if s, err := m.load(AtVersion(1)); err != nil || s.NumFiles() != 1 {
			t.Errorf("version 1 before the gap: %v", err)
		}
	})
	t.Run("beyond latest", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, protocolAction(1, 2), metadataAction(nil))
		_, err := m.load(AtVersion(5))
		var vnf *VersionNotFoundError
		if !errors.As(err, &vnf) || vnf.Version != 5 || vnf.Latest != 0 || vnf.Earliest != 0 {
			t.Fatalf("err = %#v", err)
		}
		if !strings.Contains(err.Error(), "version 5") || !strings.Contains(err.Error(), "earliest reconstructable version is 0") {
			t.Errorf("message %q", err)
		}
	})
	t.Run("no protocol", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, metadataAction(nil))
		if _, err := m.load(); !errors.Is(err, ErrNoProtocol) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("bad schema", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, protocolAction(1, 2), Action{Metadata: &Metadata{ID: "x", SchemaString: `{"type":"struct","fields":[{"name":"a","type":"nonsense"}]}`}})
		if _, err := m.load(); !errors.Is(err, ErrCorruptLog) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("zero-byte commit", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, protocolAction(1, 2), metadataAction(nil))
		m.put(CommitKey(1), nil)
		_, err := m.load()
		var ce *CorruptLogError
		if !errors.As(err, &ce) || ce.File != CommitKey(1) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("broken commitInfo in an earlier commit", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, protocolAction(1, 2), metadataAction(nil))
		m.put(CommitKey(1), []byte(`{"commitInfo":{"operation":"WRITE",`+"\n"+`{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`))
		m.commit(2, Action{CommitInfo: &CommitInfo{Operation: "DELETE"}}, addAction("b", nil))
		_, err := m.load()
		var ce *CorruptLogError
		if !errors.As(err, &ce) || ce.Version != 1 {
			t.Fatalf("err = %v, want corrupt commit 1", err)
		}
	})
	t.Run("unsupported reader version", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, protocolAction(4, 7), metadataAction(nil))
		var pe *UnsupportedProtocolError
		if _, err := m.load(); !errors.As(err, &pe) || !errors.Is(err, ErrUnsupportedProtocol) || pe.MinReaderVersion != 4 {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unsupported feature later", func(t *testing.T) {
		m := newMemTable(t)
		m.commit(0, protocolAction(1, 2), metadataAction(nil))
		m.commit(1, protocolAction(3, 7, "variantType", "catalogManaged", FeatureDeletionVectors))
		_, err := m.load()
		var fe *UnsupportedFeatureError
		if !errors.As(err, &fe) || !slices.Equal(fe.Features, []string{"catalogManaged", "variantType"}) || !fe.Reader {
			t.Fatalf("err = %v", err)
		}
		if _, err := m.load(AtVersion(0)); err != nil {
			t.Errorf("version 0 is readable: %v", err)
		}
	})
}

// TestLogFileNames: files that match no known pattern are ignored.
func TestLogFileNames(t *testing.T) {
	tests := []struct {
		key         string
		ok          bool
		kind        fileKind
		version     int64
		part, parts int
	}{
		{"_delta_log/00000000000000000000.json", true, kindCommit, 0, 0, 0},
		{"_delta_log/00000000000000000012.checkpoint.parquet", true, kindClassicCheckpoint, 12, 0, 0},
		{"_delta_log/00000000000000000010.checkpoint.0000000002.0000000003.parquet", true, kindMultiPartCheckpoint, 10, 2, 3},
		{"_delta_log/00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json", true, kindV2Checkpoint, 2, 0, 0},
		{"_delta_log/00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.parquet", true, kindV2Checkpoint, 2, 0, 0},
		{"_delta_log/00000000000000000010.checkpoint.0000000004.0000000003.parquet", false, 0, 0, 0, 0},
		{"_delta_log/00000000000000000002.checkpoint.not-a-uuid.json", false, 0, 0, 0, 0},
		{"_delta_log/00000000000000000000.crc", false, 0, 0, 0, 0},
		{"_delta_log/.00000000000000000000.json.crc", false, 0, 0, 0, 0},
		{"_delta_log/00000000000000000000.json.tmp", false, 0, 0, 0, 0},
		{"_delta_log/.tmp/00000000000000000005.json", false, 0, 0, 0, 0},
		{"_delta_log/_commits/00000000000000000005.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", false, 0, 0, 0, 0},
		{"_delta_log/_staged_commits/00000000000000000005.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", false, 0, 0, 0, 0},
		{"_delta_log/_sidecars/00000000000000000002.checkpoint.0000000001.0000000002.bd1885fd-6ec0-4370-b0f5-43b5162fd4de.parquet", false, 0, 0, 0, 0},
		{"_delta_log/00000000000000000004.00000000000000000006.compacted.json", false, 0, 0, 0, 0},
		{"_delta_log/_last_checkpoint", false, 0, 0, 0, 0},
		{"_delta_log/0000000000000000000a.json", false, 0, 0, 0, 0},
		{"_delta_log/99999999999999999999.json", false, 0, 0, 0, 0},
		{"part-0000.parquet", false, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		f, ok := parseLogKey(tt.key)
		if ok != tt.ok || (ok && (f.kind != tt.kind || f.version != tt.version || f.part != tt.part || f.parts != tt.parts)) {
			t.Errorf("parseLogKey(%q) = %+v, %v", tt.key, f, ok)
		}
	}
}

// TestCheckpointDiscovery: _last_checkpoint is a hint; wrong hints and
// incomplete checkpoints fall back to listing; one listing in the normal case.
func TestCheckpointDiscovery(t *testing.T) {
	ctx := context.Background()
	build := func(t *testing.T) *memTable {
		m := newMemTable(t)
		m.commit(0, protocolAction(1, 2), metadataAction(nil), addAction("f0", nil))
		for v := int64(1); v <= 6; v++ {
			m.commit(v, addAction(fmt.Sprintf("f%d", v), nil))
			if v == 2 {
				if err := WriteCheckpoint(ctx, m.mustLoad()); err != nil {
					t.Fatal(err)
				}
			}
		}
		// noise the reader must ignore
		m.put("_delta_log/.tmp/00000000000000000007.json", []byte("garbage"))
		m.put("_delta_log/00000000000000000007.json.tmp", []byte("garbage"))
		m.put("_delta_log/00000000000000000003.crc", []byte("garbage"))
		m.put("_delta_log/00000000000000000001.00000000000000000003.compacted.json", []byte("garbage"))
		m.put("_delta_log/_commits/00000000000000000007.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json", []byte("garbage"))
		return m
	}
	check := func(t *testing.T, m *memTable, wantCP int64, wantLists []string) {
		t.Helper()
		m.store.reset()
		s := m.mustLoad()
		if s.Version() != 6 || s.NumFiles() != 7 || s.CheckpointVersion() != wantCP {
			t.Errorf("version %d, %d files, checkpoint %d; want 6, 7, %d", s.Version(), s.NumFiles(), s.CheckpointVersion(), wantCP)
		}
		if !slices.Equal(m.store.lists, wantLists) {
			t.Errorf("listings started after %q, want %q", m.store.lists, wantLists)
		}
		for _, k := range m.store.gets {
			if k == CommitKey(0) || k == CommitKey(1) || k == CommitKey(2) {
				if wantCP == 2 {
					t.Errorf("read %s although replay starts at checkpoint 2", k)
				}
			}
		}
	}
	t.Run("hint", func(t *testing.T) {
		m := build(t)
		check(t, m, 2, []string{versionPrefix(2)})
	})
	t.Run("no hint", func(t *testing.T) {
		m := build(t)
		if err := m.mem.Delete(ctx, LastCheckpointKey); err != nil {
			t.Fatal(err)
		}
		check(t, m, 2, []string{""})
	})
	t.Run("garbage hint", func(t *testing.T) {
		m := build(t)
		m.put(LastCheckpointKey, []byte("{not json"))
		check(t, m, 2, []string{""})
	})
	t.Run("hint to missing checkpoint", func(t *testing.T) {
		m := build(t)
		m.put(LastCheckpointKey, []byte(`{"version":4,"size":9}`))
		check(t, m, 2, []string{versionPrefix(4), ""})
	})
	t.Run("hint to incomplete multi-part checkpoint", func(t *testing.T) {
		m := build(t)
		data, _, err := EncodeCheckpoint(m.mustLoad(AtVersion(5)))
		if err != nil {
			t.Fatal(err)
		}
		m.put("_delta_log/00000000000000000005.checkpoint.0000000001.0000000002.parquet", data)
		m.put(LastCheckpointKey, []byte(`{"version":5,"size":9,"parts":2}`))
		check(t, m, 2, []string{versionPrefix(5), ""})
	})
	t.Run("newer checkpoint than hint", func(t *testing.T) {
		m := build(t)
		s5 := m.mustLoad(AtVersion(5))
		data, _, err := EncodeCheckpoint(s5)
		if err != nil {
			t.Fatal(err)
		}
		m.put(CheckpointKey(5), data)
		check(t, m, 5, []string{versionPrefix(2)})
	})
	t.Run("time travel before the hint", func(t *testing.T) {
		m := build(t)
		m.store.reset()
		s := m.mustLoad(AtVersion(1))
		if s.NumFiles() != 2 || s.CheckpointVersion() != -1 || !slices.Equal(m.store.lists, []string{""}) {
			t.Errorf("files %d cp %d lists %q", s.NumFiles(), s.CheckpointVersion(), m.store.lists)
		}
	})
	t.Run("cleaned log", func(t *testing.T) {
		m := build(t)
		for v := range int64(2) {
			if err := m.mem.Delete(ctx, CommitKey(v)); err != nil {
				t.Fatal(err)
			}
		}
		_, err := m.load(AtVersion(1))
		var vnf *VersionNotFoundError
		if !errors.As(err, &vnf) || vnf.Earliest != 2 || vnf.Latest != 6 {
			t.Fatalf("err = %v", err)
		}
		if s := m.mustLoad(AtVersion(2)); s.NumFiles() != 3 {
			t.Errorf("version 2 from its checkpoint: %d files", s.NumFiles())
		}
	})
	t.Run("only checkpoint incomplete", func(t *testing.T) {
		m := build(t)
		data, _, err := EncodeCheckpoint(m.mustLoad(AtVersion(5)))
		if err != nil {
			t.Fatal(err)
		}
		m.put("_delta_log/00000000000000000005.checkpoint.0000000002.0000000003.parquet", data)
		for v := range int64(5) {
			if err := m.mem.Delete(ctx, CommitKey(v)); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.mem.Delete(ctx, CheckpointKey(2)); err != nil {
			t.Fatal(err)
		}
		_, err = m.load()
		var ce *CorruptLogError
		if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "5 (1 of 3 parts)") {
			t.Fatalf("err = %v, want a corrupt log naming the incomplete checkpoint", err)
		}
	})
	t.Run("checkpoint not parquet", func(t *testing.T) {
		// treated as absent: the commits are all there (more cases in
		// TestDamagedCheckpointFallsBack)
		m := build(t)
		m.put(CheckpointKey(2), []byte("PAR1 but not really"))
		check(t, m, -1, []string{versionPrefix(2), ""})
		if sk := m.mustLoad().SkippedCheckpoints(); len(sk) != 1 || sk[0].Version != 2 || sk[0].Files[0] != CheckpointKey(2) {
			t.Fatalf("skipped %+v", sk)
		}
	})
}

// TestUpdate: Update lists only after its own version, reads only the new
// commits, leaves the old snapshot untouched and returns itself when nothing
// is new.
func TestUpdate(t *testing.T) {
	m := newMemTable(t)
	m.commit(0, protocolAction(1, 2), metadataAction(nil), addAction("a", nil))
	m.commit(1, addAction("b", nil))
	s1 := m.mustLoad()
	m.store.reset()
	same, err := s1.Update(context.Background())
	if err != nil || same != s1 {
		t.Fatalf("Update with nothing new = %p, %v", same, err)
	}
	if !slices.Equal(m.store.lists, []string{CommitKey(1)}) || len(m.store.gets) != 0 {
		t.Errorf("lists %q gets %q", m.store.lists, m.store.gets)
	}
	m.commit(2, removeAction("a", nil, 5), addAction("c", nil), Action{Txn: &Txn{AppID: "q", Version: 7}})
	m.commit(3, addAction("d", nil), Action{Metadata: &Metadata{ID: "table-1", SchemaString: `{"type":"struct","fields":[{"name":"z","type":"string","nullable":true,"metadata":{}}]}`}})
	m.store.reset()
	s3, err := s1.Update(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.store.lists, []string{CommitKey(1)}) || !slices.Equal(slices.Sorted(slices.Values(m.store.gets)), []string{CommitKey(2), CommitKey(3)}) {
		t.Errorf("lists %q gets %q", m.store.lists, m.store.gets)
	}
	if s3.Version() != 3 || !slices.Equal(filePaths(s3), []string{"b#", "c#", "d#"}) || s3.TxnVersion("q") != 7 || s3.Schema().Fields[0].Name != "z" {
		t.Errorf("updated: v%d %v txn %d schema %v", s3.Version(), filePaths(s3), s3.TxnVersion("q"), s3.Schema())
	}
	if s1.Version() != 1 || !slices.Equal(filePaths(s1), []string{"a#", "b#"}) || s1.TxnVersion("q") != -1 || s1.Schema().Fields[0].Name != "id" {
		t.Errorf("old snapshot changed: v%d %v", s1.Version(), filePaths(s1))
	}
	// a gap after the snapshot is an error
	m.commit(5, addAction("e", nil))
	if _, err := s3.Update(context.Background()); !errors.Is(err, ErrCorruptLog) {
		t.Errorf("Update over a gap: %v", err)
	}
}

// TestUpdateFarBehindUsesCheckpoint: with more than maxIncrementalCommits new
// commits and a newer checkpoint, Update reads the checkpoint, not every commit.
func TestUpdateFarBehindUsesCheckpoint(t *testing.T) {
	ctx := context.Background()
	m := newMemTable(t)
	m.commit(0, protocolAction(1, 2), metadataAction(nil), addAction("f0", nil))
	old := m.mustLoad()
	n := int64(maxIncrementalCommits + 10)
	for v := int64(1); v <= n; v++ {
		m.commit(v, addAction(fmt.Sprintf("f%d", v), nil))
		if v == n-5 {
			if err := WriteCheckpoint(ctx, m.mustLoad()); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.store.reset()
	s, err := old.Update(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != n || s.NumFiles() != int(n)+1 || s.CheckpointVersion() != n-5 {
		t.Errorf("version %d, %d files, checkpoint %d", s.Version(), s.NumFiles(), s.CheckpointVersion())
	}
	if len(m.store.lists) != 1 || len(m.store.gets) != 6 {
		t.Errorf("%d listings and %d reads, want 1 and 6 (checkpoint + 5 commits)", len(m.store.lists), len(m.store.gets))
	}
}

// TestConcurrentReaders shares one snapshot between goroutines (run with -race).
func TestConcurrentReaders(t *testing.T) {
	m := newMemTable(t)
	m.commit(0, protocolAction(1, 2), metadataAction(nil), addAction("a", nil), addAction("b", nil))
	s := m.mustLoad()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if len(s.Files()) != 2 || s.NumFiles() != 2 || len(s.Tombstones()) != 0 {
				t.Error("inconsistent snapshot")
			}
			if _, err := s.Update(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// TestTimeTravelByTimestamp uses file modification times, made monotonic.
func TestTimeTravelByTimestamp(t *testing.T) {
	m := newMemTable(t)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	m.commit(0, protocolAction(1, 2), metadataAction(nil), addAction("a", nil))
	m.commit(1, addAction("b", nil))
	m.commit(2, addAction("c", nil))
	m.commit(3, addAction("d", nil))
	mtimes := []time.Time{base, base.Add(10 * time.Second), base.Add(5 * time.Second) /* clock skew */, base.Add(30 * time.Second)}
	for v, mt := range mtimes {
		if err := m.mem.SetModTime(CommitKey(int64(v)), mt); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		at      time.Time
		version int64
	}{
		{base, 0},
		{base.Add(9 * time.Second), 0},
		{base.Add(10 * time.Second), 1},
		{base.Add(10*time.Second + time.Millisecond), 2}, // commit 2 counts as 10.001 s
		{base.Add(29 * time.Second), 2},
		{base.Add(time.Hour), 3},
	}
	for _, tt := range tests {
		s, err := m.load(AtTimestamp(tt.at))
		if err != nil {
			t.Errorf("AtTimestamp(%v): %v", tt.at, err)
			continue
		}
		if s.Version() != tt.version || s.NumFiles() != int(tt.version)+1 {
			t.Errorf("AtTimestamp(%v) = version %d (%d files), want %d", tt.at, s.Version(), s.NumFiles(), tt.version)
		}
	}
	_, err := m.load(AtTimestamp(base.Add(-time.Second)))
	var vnf *VersionNotFoundError
	if !errors.As(err, &vnf) || vnf.Earliest != 0 || vnf.Latest != 3 || !strings.Contains(err.Error(), "2023-12-31T23:59:59Z") {
		t.Errorf("before the first commit: %v", err)
	}
	if got := m.mustLoad(AtVersion(1)).CommitTimestamp(); !got.Equal(mtimes[1]) {
		t.Errorf("CommitTimestamp() = %v, want %v", got, mtimes[1])
	}
}

// TestTimeTravelInCommitTimestamps: with ICT the commitInfo timestamps rule,
// and file times before the enablement version.
func TestTimeTravelInCommitTimestamps(t *testing.T) {
	m := newMemTable(t)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	ci := func(ict int64) Action {
		return Action{CommitInfo: &CommitInfo{Timestamp: 1, InCommitTimestamp: &ict}}
	}
	m.commit(0, protocolAction(1, 2), metadataAction(nil), addAction("a", nil))
	m.commit(1, addAction("b", nil))
	config := map[string]string{PropEnableInCommitTimestamps: "true", PropInCommitTimestampEnablementVersion: "2",
		PropInCommitTimestampEnablementTimestamp: fmt.Sprint(base + 20_000)}
	m.commit(2, ci(base+20_000), addAction("c", nil), metadataAction(config), protocolAction(1, 7, FeatureInCommitTimestamp))
	m.commit(3, ci(base+30_000), addAction("d", nil))
	m.commit(4, ci(base+40_000), addAction("e", nil))
	// file times disagree with the ICTs on purpose
	for v, mt := range []int64{base, base + 10_000, base + 99_000, base + 1_000, base + 2_000} {
		if err := m.mem.SetModTime(CommitKey(int64(v)), time.UnixMilli(mt)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		atMs    int64
		version int64
	}{
		{base, 0}, {base + 15_000, 1}, {base + 20_000, 2}, {base + 35_000, 3}, {base + 99_999, 4},
	} {
		s, err := m.load(AtTimestamp(time.UnixMilli(tt.atMs)))
		if err != nil {
			t.Errorf("at +%d ms: %v", tt.atMs-base, err)
			continue
		}
		if s.Version() != tt.version {
			t.Errorf("at +%d ms: version %d, want %d", tt.atMs-base, s.Version(), tt.version)
		}
	}
	if got := m.mustLoad().CommitTimestamp(); got.UnixMilli() != base+40_000 {
		t.Errorf("CommitTimestamp() = %d, want the ICT", got.UnixMilli()-base)
	}
	if got := m.mustLoad(AtVersion(1)).CommitTimestamp(); got.UnixMilli() != base+10_000 {
		t.Errorf("CommitTimestamp() before enablement = %d, want the file time", got.UnixMilli()-base)
	}
}

// TestCommits iterates a version range as the commit path does.
func TestCommits(t *testing.T) {
	m := newMemTable(t)
	m.commit(0, protocolAction(1, 2), metadataAction(nil))
	for v := int64(1); v <= 4; v++ {
		m.commit(v, addAction(fmt.Sprint(v), nil))
	}
	collect := func(start, end int64) ([]int64, error) {
		var vs []int64
		for c, err := range Commits(context.Background(), m.store, start, end) {
			if err != nil {
				return vs, err
			}
			vs = append(vs, c.Version)
		}
		return vs, nil
	}
	if vs, err := collect(2, -1); err != nil || !slices.Equal(vs, []int64{2, 3, 4}) {
		t.Errorf("Commits(2, latest) = %v, %v", vs, err)
	}
	if vs, err := collect(1, 2); err != nil || !slices.Equal(vs, []int64{1, 2}) {
		t.Errorf("Commits(1, 2) = %v, %v", vs, err)
	}
	if vs, err := collect(5, -1); err != nil || len(vs) != 0 {
		t.Errorf("Commits(5, latest) = %v, %v", vs, err)
	}
	if _, err := collect(3, 9); !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("Commits(3, 9): %v", err)
	}
	m.commit(6, addAction("6", nil))
	if vs, err := collect(3, -1); !errors.Is(err, ErrCorruptLog) || !slices.Equal(vs, []int64{3, 4}) {
		t.Errorf("Commits over a gap = %v, %v", vs, err)
	}
	actions, err := ReadCommit(context.Background(), m.store, 2)
	if err != nil || len(actions) != 1 || actions[0].Add.Path != "2" {
		t.Errorf("ReadCommit(2) = %v, %v", actions, err)
	}
	if _, err := ReadCommit(context.Background(), m.store, 5); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("ReadCommit(5): %v", err)
	}
}

// TestWriteCheckpointRoundTrip writes a classic checkpoint and reads it back
// into the same state.
func TestWriteCheckpointRoundTrip(t *testing.T) {
	ctx := context.Background()
	m := newMemTable(t)
	day := int64(24 * time.Hour / time.Millisecond)
	now := 100 * day
	clock := WithClock(func() time.Time { return time.UnixMilli(now) })
	created := int64(12345)
	meta := Metadata{ID: "t", Name: "name", Format: Format{Provider: "parquet", Options: map[string]string{"o": "1"}},
		SchemaString: replayTestSchema, PartitionColumns: []string{"p"}, Configuration: map[string]string{"k": "v"}, CreatedTime: &created}
	m.commit(0, protocolAction(3, 7, FeatureDeletionVectors, FeatureTimestampNTZ), Action{Metadata: &meta})
	var actions []Action
	for i := range 1000 {
		a := &Add{Path: fmt.Sprintf("p=%d/f%04d.parquet", i%7, i), PartitionValues: map[string]string{"p": fmt.Sprint(i % 7)},
			Size: int64(i), ModificationTime: int64(i) * 10, DataChange: i%2 == 0, Stats: fmt.Sprintf(`{"numRecords":%d}`, i)}
		switch i % 10 {
		case 1:
			a.PartitionValues["p"] = "" // null
		case 2:
			a.DeletionVector = dvAt(int32(i))
		case 3:
			a.Tags = map[string]string{"INSERTION_TIME": "1"}
			a.BaseRowID, a.DefaultRowCommitVersion = i64(int64(i)*100), i64(0)
		case 4:
			a.Stats = ""
		}
		actions = append(actions, Action{Add: a})
	}
	lu := now - day
	actions = append(actions, removeAction("old-fresh.parquet", nil, now-day), removeAction("old-expired.parquet", nil, now-30*day),
		Action{Txn: &Txn{AppID: "q1", Version: 3, LastUpdated: &lu}}, Action{Txn: &Txn{AppID: "q2", Version: 0}},
		Action{DomainMetadata: &DomainMetadata{Domain: "delta.clustering", Configuration: `{"c":[]}`}})
	m.commit(1, actions...)
	before := m.mustLoad(clock)
	if err := WriteCheckpoint(ctx, before); err != nil {
		t.Fatal(err)
	}
	after := m.mustLoad(clock)
	if after.CheckpointVersion() != 1 {
		t.Fatalf("CheckpointVersion() = %d", after.CheckpointVersion())
	}
	if !reflect.DeepEqual(after.Protocol(), before.Protocol()) {
		t.Errorf("protocol %+v, want %+v", after.Protocol(), before.Protocol())
	}
	if !reflect.DeepEqual(after.Metadata(), before.Metadata()) {
		t.Errorf("metadata %+v, want %+v", after.Metadata(), before.Metadata())
	}
	bf, af := before.Files(), after.Files()
	if len(af) != len(bf) {
		t.Fatalf("%d files, want %d", len(af), len(bf))
	}
	for i := range bf {
		want, _ := EncodeCommit([]Action{{Add: bf[i]}})
		got, _ := EncodeCommit([]Action{{Add: af[i]}})
		if string(got) != string(want) {
			t.Fatalf("file %d:\n got %s\nwant %s", i, got, want)
		}
	}
	if got := after.Tombstones(); len(got) != 1 || got[0].Path != "old-fresh.parquet" {
		t.Errorf("tombstones %v", got)
	}
	if after.TxnVersion("q1") != 3 || after.TxnVersion("q2") != 0 {
		t.Errorf("txns %v", after.Txns())
	}
	if d, ok := after.DomainMetadata("delta.clustering"); !ok || d.Configuration != `{"c":[]}` {
		t.Errorf("domain %v %v", d, ok)
	}
	lc, err := readLastCheckpoint(ctx, m.store)
	if err != nil || lc == nil || lc.Version != 1 || lc.Size != 1000+1+2+1+2 || *lc.NumOfAddFiles != 1000 {
		t.Errorf("_last_checkpoint = %+v, %v", lc, err)
	}
}
