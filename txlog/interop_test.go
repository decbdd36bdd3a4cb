package txlog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
)

// TestCheckpointReadByDeltaRS writes a classic checkpoint with WriteCheckpoint,
// deletes the commits before it, and has delta-rs (and pyarrow) read the table
// from the checkpoint: same version, files, partition values, stats, txns and
// protocol features.
func TestCheckpointReadByDeltaRS(t *testing.T) {
	py := testsupport.Python(t)
	ctx := context.Background()
	dir := t.TempDir()
	store, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(v int64, actions ...Action) {
		data, err := EncodeCommit(actions)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(ctx, CommitKey(v), data); err != nil {
			t.Fatal(err)
		}
	}
	schemaString := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`
	commit(0, Action{CommitInfo: &CommitInfo{Timestamp: 1, Operation: "CREATE TABLE"}},
		Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{FeatureTimestampNTZ}, WriterFeatures: []string{FeatureTimestampNTZ, FeatureAppendOnly}}},
		Action{Metadata: &Metadata{ID: "5fba94ed-9794-4965-ba6e-6ee3c0d22af9", Format: Format{Provider: "parquet"},
			SchemaString: schemaString, PartitionColumns: []string{"p"}, Configuration: map[string]string{"delta.checkpointInterval": "3"}}})
	now := int64(1_700_000_000_000)
	for v := int64(1); v <= 3; v++ {
		var actions []Action
		for i := range 5 {
			pv := fmt.Sprintf("v%d", i%2)
			if i == 4 {
				pv = "" // null partition
			}
			actions = append(actions, Action{Add: &Add{Path: fmt.Sprintf("p=%s/part-%d-%d.parquet", pv, v, i),
				PartitionValues: map[string]string{"p": pv}, Size: 1000 * int64(i), ModificationTime: now, DataChange: i != 3,
				Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":1},"maxValues":{"id":9},"nullCount":{"id":0}}`, 10*v+int64(i))}})
		}
		if v == 3 {
			actions = append(actions, Action{Remove: &Remove{Path: "p=v0/part-1-0.parquet", DeletionTimestamp: &now, DataChange: true}})
		}
		actions = append(actions, Action{Txn: &Txn{AppID: "stream-1", Version: v, LastUpdated: &now}})
		if v == 1 {
			actions = append(actions, Action{Txn: &Txn{AppID: "stream-0", Version: 0, LastUpdated: &now}})
		}
		commit(v, actions...)
	}
	snap, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	for v := range int64(3) {
		if err := store.Delete(ctx, CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	script := `
import json, sys
import deltalake, pyarrow.parquet as pq
dt = deltalake.DeltaTable(sys.argv[1])
import pyarrow as pa
adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
p = dt.protocol()
sch = pq.read_schema(sys.argv[1] + "/_delta_log/00000000000000000003.checkpoint.parquet")
def nulls_in_required():
    tbl = pq.read_table(sys.argv[1] + "/_delta_log/00000000000000000003.checkpoint.parquet")
    n = 0
    for c, f in [("add", "size"), ("add", "dataChange"), ("add", "modificationTime"), ("add", "partitionValues"),
                 ("txn", "version"), ("metaData", "configuration"), ("metaData", "partitionColumns")]:
        col = tbl.column(c).combine_chunks()
        child = col.field(f)
        n += sum(1 for i in range(len(col)) if col[i].is_valid and not child[i].is_valid)
    return n
print(json.dumps({
  "version": dt.version(),
  "files": sorted(a["path"] for a in adds),
  "records": sum(a["num_records"] for a in adds),
  "nulls": sum(1 for a in adds if a["partition.p"] is None),
  "txn": dt.transaction_version("stream-1"),
  "txn0": dt.transaction_version("stream-0"),
  "reader": p.min_reader_version, "writer": p.min_writer_version,
  "readerFeatures": p.reader_features, "writerFeatures": p.writer_features,
  "columns": sch.names, "schema": str(sch),
  "nulls_in_required": nulls_in_required(),
}))
`
	out := testsupport.RunPython(t, py, script, dir)
	var got struct {
		Version        int64    `json:"version"`
		Files          []string `json:"files"`
		Records        int64    `json:"records"`
		Nulls          int      `json:"nulls"`
		Txn            int64    `json:"txn"`
		Txn0           *int64   `json:"txn0"`
		Reader, Writer int32
		ReaderFeatures []string `json:"readerFeatures"`
		WriterFeatures []string `json:"writerFeatures"`
		Columns        []string `json:"columns"`
		Schema         string   `json:"schema"`
		NullsRequired  int      `json:"nulls_in_required"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var wantFiles []string
	var wantRecords int64
	for _, a := range snap.Files() {
		wantFiles = append(wantFiles, DecodePath(a.Path))
		n, _ := a.NumRecords()
		wantRecords += n
	}
	slices.Sort(wantFiles)
	if got.Version != 3 || !slices.Equal(got.Files, wantFiles) || got.Records != wantRecords || got.Nulls != 3 || got.Txn != 3 {
		t.Errorf("delta-rs read version %d, files %v (want %v), records %d (want %d), null partitions %d, txn %d",
			got.Version, got.Files, wantFiles, got.Records, wantRecords, got.Nulls, got.Txn)
	}
	if got.Reader != 3 || got.Writer != 7 || !slices.Equal(sortedCopy(got.ReaderFeatures), []string{"timestampNtz"}) ||
		!slices.Equal(sortedCopy(got.WriterFeatures), []string{"appendOnly", "timestampNtz"}) {
		t.Errorf("delta-rs protocol %+v", got)
	}
	if want := []string{"txn", "add", "remove", "metaData", "protocol", "domainMetadata"}; !slices.Equal(got.Columns, want) {
		t.Errorf("checkpoint columns %v, want %v", got.Columns, want)
	}
	if got.Txn0 == nil || *got.Txn0 != 0 {
		t.Errorf("delta-rs txn version of stream-0 = %v, want 0", got.Txn0)
	}
	if got.NullsRequired != 0 {
		t.Errorf("%d nulls in fields that must have a value (size, dataChange, txn version, ...)", got.NullsRequired)
	}
	t.Logf("checkpoint schema (pyarrow): %s", got.Schema)
}
