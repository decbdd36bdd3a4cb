package txlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
)

func writeParquet[T any](t *testing.T, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(t *testing.T, data []byte, topLevel bool) ([]Action, error) {
	t.Helper()
	var out []Action
	err := readCheckpointParquet("cp", 7, data, topLevel, func(a *Action) { out = append(out, *a) }, nil)
	return out, err
}

// A checkpoint as another writer may lay it out: 64-bit integers where the
// spec has 32-bit ones, extra columns (stats_parsed, partitionValues_parsed,
// maxRowIndex), missing optional columns (tags, deletionVector, txn).
type foreignRow struct {
	Add      *foreignAdd      `parquet:"add,optional"`
	Remove   *foreignRemove   `parquet:"remove,optional"`
	MetaData *foreignMeta     `parquet:"metaData,optional"`
	Protocol *foreignProtocol `parquet:"protocol,optional"`
	Extra    *string          `parquet:"someFutureAction,optional"`
}

type foreignAdd struct {
	Path            string            `parquet:"path,optional"`
	PartitionValues map[string]string `parquet:"partitionValues,optional"`
	Size            int64             `parquet:"size,optional"`
	DataChange      bool              `parquet:"dataChange,optional"`
	Stats           *string           `parquet:"stats,optional"`
	StatsParsed     *struct {
		NumRecords int64 `parquet:"numRecords,optional"`
	} `parquet:"stats_parsed,optional"`
	PartitionValuesParsed *struct {
		P *int32 `parquet:"p,optional"`
	} `parquet:"partitionValues_parsed,optional"`
	DeletionVector *struct {
		StorageType    string `parquet:"storageType,optional"`
		PathOrInlineDv string `parquet:"pathOrInlineDv,optional"`
		Offset         *int64 `parquet:"offset,optional"`
		SizeInBytes    int64  `parquet:"sizeInBytes,optional"`
		Cardinality    int64  `parquet:"cardinality,optional"`
		MaxRowIndex    *int64 `parquet:"maxRowIndex,optional"`
	} `parquet:"deletionVector,optional"`
}

type foreignRemove struct {
	Path              string `parquet:"path,optional"`
	DeletionTimestamp *int64 `parquet:"deletionTimestamp,optional"`
	DataChange        bool   `parquet:"dataChange,optional"`
}

type foreignMeta struct {
	ID               string            `parquet:"id,optional"`
	SchemaString     string            `parquet:"schemaString,optional"`
	PartitionColumns []string          `parquet:"partitionColumns,optional,list"`
	Configuration    map[string]string `parquet:"configuration,optional"`
	Format           *struct {
		Provider string `parquet:"provider,optional"`
	} `parquet:"format,optional"`
}

type foreignProtocol struct {
	MinReaderVersion int64    `parquet:"minReaderVersion,optional"`
	MinWriterVersion int64    `parquet:"minWriterVersion,optional"`
	ReaderFeatures   []string `parquet:"readerFeatures,optional,list"`
	WriterFeatures   []string `parquet:"writerFeatures,optional,list"`
}

func TestReadForeignCheckpointLayout(t *testing.T) {
	stats := `{"numRecords":5}`
	one := int32(1)
	off := int64(9)
	ts := int64(77)
	add := &foreignAdd{Path: "p=1/a.parquet", PartitionValues: map[string]string{"p": "1"}, Size: 10, DataChange: true, Stats: &stats}
	add.StatsParsed = &struct {
		NumRecords int64 `parquet:"numRecords,optional"`
	}{5}
	add.PartitionValuesParsed = &struct {
		P *int32 `parquet:"p,optional"`
	}{&one}
	addDV := &foreignAdd{Path: "p=1/b.parquet", PartitionValues: map[string]string{"p": ""}, Size: 11}
	addDV.DeletionVector = &struct {
		StorageType    string `parquet:"storageType,optional"`
		PathOrInlineDv string `parquet:"pathOrInlineDv,optional"`
		Offset         *int64 `parquet:"offset,optional"`
		SizeInBytes    int64  `parquet:"sizeInBytes,optional"`
		Cardinality    int64  `parquet:"cardinality,optional"`
		MaxRowIndex    *int64 `parquet:"maxRowIndex,optional"`
	}{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &off, SizeInBytes: 40, Cardinality: 2}
	future := "x"
	rows := []foreignRow{
		{Protocol: &foreignProtocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "appendOnly"}}},
		{MetaData: &foreignMeta{ID: "id", SchemaString: replayTestSchema, PartitionColumns: []string{"p"}, Configuration: map[string]string{"a": "b"},
			Format: &struct {
				Provider string `parquet:"provider,optional"`
			}{"parquet"}}},
		{Add: add},
		{Add: addDV},
		{Remove: &foreignRemove{Path: "gone.parquet", DeletionTimestamp: &ts}},
		{Extra: &future},
	}
	actions, err := readAll(t, writeParquet(t, rows), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 5 {
		t.Fatalf("%d actions, want 5 (the unknown column yields none)", len(actions))
	}
	p := actions[0].Protocol
	if p == nil || p.MinReaderVersion != 3 || !slices.Equal(p.WriterFeatures, []string{"deletionVectors", "appendOnly"}) {
		t.Errorf("protocol %+v", p)
	}
	m := actions[1].Metadata
	if m == nil || m.ID != "id" || m.Format.Provider != "parquet" || !slices.Equal(m.PartitionColumns, []string{"p"}) || m.Configuration["a"] != "b" {
		t.Errorf("metadata %+v", m)
	}
	a := actions[2].Add
	if a == nil || a.Path != "p=1/a.parquet" || a.PartitionValues["p"] != "1" || a.Size != 10 || !a.DataChange || a.Stats != stats || a.DeletionVector != nil || a.Tags != nil {
		t.Errorf("add %+v", a)
	}
	b := actions[3].Add
	want := &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: i32(9), SizeInBytes: 40, Cardinality: 2}
	if b == nil || !reflect.DeepEqual(b.DeletionVector, want) || b.PartitionValues["p"] != "" || b.Stats != "" {
		t.Errorf("add with DV %+v, dv %+v", b, b.DeletionVector)
	}
	r := actions[4].Remove
	if r == nil || r.Path != "gone.parquet" || *r.DeletionTimestamp != 77 {
		t.Errorf("remove %+v", r)
	}
}

func TestReadCheckpointWrongSchema(t *testing.T) {
	type badAdd struct {
		Path string `parquet:"path,optional"`
		Size string `parquet:"size,optional"`
	}
	type badRow struct {
		Add      *badAdd          `parquet:"add,optional"`
		MetaData *foreignMeta     `parquet:"metaData,optional"`
		Protocol *foreignProtocol `parquet:"protocol,optional"`
	}
	_, err := readAll(t, writeParquet(t, []badRow{{Add: &badAdd{Path: "a", Size: "big"}}}), true)
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "wrong type") {
		t.Errorf("string size: %v", err)
	}
	type noProtocol struct {
		Add *badAdd `parquet:"add,optional"`
	}
	_, err = readAll(t, writeParquet(t, []noProtocol{{Add: &badAdd{Path: "a"}}}), true)
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "lacks the protocol") {
		t.Errorf("no protocol column: %v", err)
	}
	if _, err := readAll(t, writeParquet(t, []noProtocol{{Add: &badAdd{Path: "a", Size: "big"}}}), false); err == nil || !strings.Contains(err.Error(), "wrong type") {
		t.Errorf("sidecar with a string size: %v", err)
	}
	type pathless struct {
		Add *struct {
			Size int64 `parquet:"size,optional"`
		} `parquet:"add,optional"`
	}
	_, err = readAll(t, writeParquet(t, []pathless{{Add: &struct {
		Size int64 `parquet:"size,optional"`
	}{1}}}), false)
	if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "without path") {
		t.Errorf("add without path: %v", err)
	}
	for _, bad := range [][]byte{nil, []byte("PAR1"), []byte("not parquet at all")} {
		if _, err := readAll(t, bad, true); !errors.Is(err, ErrCorruptLog) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestV2ParquetCheckpointWithSidecars: a UUID-named Parquet v2 checkpoint
// whose file actions live in sidecars.
func TestV2ParquetCheckpointWithSidecars(t *testing.T) {
	ctx := context.Background()
	m := newMemTable(t)
	m.commit(0, protocolAction(3, 7, FeatureV2Checkpoint), metadataAction(nil))
	for v := int64(1); v <= 3; v++ {
		m.commit(v, addAction(fmt.Sprintf("f%d", v), nil))
	}
	// sidecars hold the adds of version 2's state; the top-level file the rest
	sidecar := func(paths ...string) []byte {
		var rows []checkpointRow
		for _, p := range paths {
			a := addAction(p, nil)
			row, _ := checkpointRowOf(&a)
			rows = append(rows, row)
		}
		return writeParquet(t, rows)
	}
	m.put("_delta_log/_sidecars/s1.parquet", sidecar("f1"))
	m.put("_delta_log/_sidecars/s2.parquet", sidecar("f2"))
	var top []checkpointRow
	for _, a := range []Action{
		{CheckpointMetadata: &CheckpointMetadata{Version: 2}},
		protocolAction(3, 7, FeatureV2Checkpoint), metadataAction(nil),
		{Txn: &Txn{AppID: "q", Version: 4}},
		{Sidecar: &Sidecar{Path: "s1.parquet", SizeInBytes: 1, ModificationTime: 1}},
		{Sidecar: &Sidecar{Path: "s2.parquet", SizeInBytes: 1, ModificationTime: 1}},
	} {
		row, ok := checkpointRowOf(&a)
		if !ok {
			t.Fatal("no row")
		}
		top = append(top, row)
	}
	v2key := "_delta_log/00000000000000000002.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet"
	m.put(v2key, writeParquet(t, top))
	// Damaged while the commits exist: replay goes around it.
	for _, d := range []struct {
		name, key string
		data      []byte // nil: deleted
	}{
		{"sidecar missing", "_delta_log/_sidecars/s2.parquet", nil},
		{"sidecar garbage", "_delta_log/_sidecars/s2.parquet", []byte("garbage")},
		{"sidecar truncated", "_delta_log/_sidecars/s2.parquet", sidecar("f2")[:40]},
		{"top-level file garbage", v2key, []byte("PAR1 garbage PAR1")},
		{"top-level file empty", v2key, []byte{}},
	} {
		orig, err := m.mem.Get(ctx, d.key, objectstore.FullObject)
		if err != nil {
			t.Fatal(err)
		}
		if d.data == nil {
			err = m.mem.Delete(ctx, d.key)
		} else {
			err = m.mem.Put(ctx, d.key, d.data)
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.load(WithLoadLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		sk := s.SkippedCheckpoints()
		if s.CheckpointVersion() != -1 || !slices.Equal(filePaths(s), []string{"f1#", "f2#", "f3#"}) ||
			len(sk) != 1 || sk[0].Version != 2 || sk[0].File() != d.key || sk[0].Files[0] != v2key {
			t.Errorf("%s: checkpoint %d, files %v, skipped %+v", d.name, s.CheckpointVersion(), filePaths(s), sk)
		}
		m.put(d.key, orig)
	}
	for v := range int64(2) {
		if err := m.mem.Delete(ctx, CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	s := m.mustLoad()
	if s.CheckpointVersion() != 2 || !slices.Equal(filePaths(s), []string{"f1#", "f2#", "f3#"}) || s.TxnVersion("q") != 4 {
		t.Errorf("checkpoint %d files %v txn %d", s.CheckpointVersion(), filePaths(s), s.TxnVersion("q"))
	}
	if err := m.mem.Delete(ctx, "_delta_log/_sidecars/s2.parquet"); err != nil {
		t.Fatal(err)
	}
	_, err := m.load()
	var ce *CorruptLogError
	if !errors.As(err, &ce) || ce.File != "_delta_log/_sidecars/s2.parquet" {
		t.Errorf("missing sidecar: %v", err)
	}
}

func TestCheckpointRowConversion(t *testing.T) {
	for _, a := range []Action{
		addAction("x", dvAt(3)),
		removeAction("y", dvAt(4), 9),
		metadataAction(map[string]string{"k": "v"}),
		protocolAction(3, 7, FeatureDeletionVectors),
		{Txn: &Txn{AppID: "a", Version: 1, LastUpdated: i64(2)}},
		{DomainMetadata: &DomainMetadata{Domain: "d", Configuration: "c"}},
		{CheckpointMetadata: &CheckpointMetadata{Version: 3, Tags: map[string]string{"t": "1"}}},
		{Sidecar: &Sidecar{Path: "s", SizeInBytes: 1, ModificationTime: 2}},
	} {
		row, ok := checkpointRowOf(&a)
		if !ok {
			t.Fatalf("%s: no row", a.kind())
		}
		back, ok := row.action()
		if !ok {
			t.Fatalf("%s: no action", a.kind())
		}
		want, _ := EncodeCommit([]Action{a})
		got, _ := EncodeCommit([]Action{back})
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", a.kind(), got, want)
		}
	}
	if _, ok := checkpointRowOf(&Action{CommitInfo: &CommitInfo{}}); ok {
		t.Error("commitInfo has a checkpoint row")
	}
}

// The helpers of checkpointRow.action (checkpoint_rows_back_test.go).

// dvFromRow converts a checkpoint DV struct.
func dvFromRow(d *rowDV) *DeletionVectorDescriptor {
	if d == nil || d.StorageType == "" {
		return nil
	}
	return &DeletionVectorDescriptor{StorageType: d.StorageType, PathOrInlineDv: d.PathOrInlineDv,
		Offset: d.Offset, SizeInBytes: d.SizeInBytes, Cardinality: d.Cardinality}
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// nonNilMap returns m, or an empty map for nil.
func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
