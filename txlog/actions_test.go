package txlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func i64(v int64) *int64 { return &v }
func i32(v int32) *int32 { return &v }
func bl(v bool) *bool    { return &v }

// TestActionJSON checks the exact JSON of every action kind: required fields
// always present (also false / 0 / empty), optional ones only when set, and
// that decoding gives the action back.
func TestActionJSON(t *testing.T) {
	tests := []struct {
		name   string
		action Action
		want   string
	}{
		{"protocol legacy", Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
			`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`},
		{"protocol features empty lists", Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7}},
			`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":[]}}`},
		{"protocol writer features only", Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly"}}},
			`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly"]}}`},
		{"metadata minimal", Action{Metadata: &Metadata{ID: "id1", Format: Format{Provider: "parquet"}, SchemaString: `{"type":"struct","fields":[]}`}},
			`{"metaData":{"id":"id1","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{}}}`},
		{"metadata full", Action{Metadata: &Metadata{ID: "id1", Name: "n", Description: "d", Format: Format{Provider: "parquet", Options: map[string]string{"k": "v"}},
			SchemaString: "{}", PartitionColumns: []string{"p"}, Configuration: map[string]string{"delta.appendOnly": "true"}, CreatedTime: i64(0)}},
			`{"metaData":{"id":"id1","name":"n","description":"d","format":{"provider":"parquet","options":{"k":"v"}},"schemaString":"{}","partitionColumns":["p"],"configuration":{"delta.appendOnly":"true"},"createdTime":0}}`},
		{"add dataChange false", Action{Add: &Add{Path: "a.parquet", PartitionValues: map[string]string{}, Size: 0, ModificationTime: 0, DataChange: false}},
			`{"add":{"path":"a.parquet","partitionValues":{},"size":0,"modificationTime":0,"dataChange":false}}`},
		{"add null partition value and DV", Action{Add: &Add{Path: "p=x/a.parquet", PartitionValues: map[string]string{"p": "x", "q": ""}, Size: 10,
			ModificationTime: 5, DataChange: true, Stats: `{"numRecords":3}`, Tags: map[string]string{"t": "1"},
			DeletionVector: &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: i32(4), SizeInBytes: 40, Cardinality: 6},
			BaseRowID:      i64(0), DefaultRowCommitVersion: i64(0)}},
			`{"add":{"path":"p=x/a.parquet","partitionValues":{"p":"x","q":null},"size":10,"modificationTime":5,"dataChange":true,"stats":"{\"numRecords\":3}","tags":{"t":"1"},"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,"cardinality":6},"baseRowId":0,"defaultRowCommitVersion":0}}`},
		{"remove minimal", Action{Remove: &Remove{Path: "a.parquet", DataChange: false}},
			`{"remove":{"path":"a.parquet","dataChange":false}}`},
		{"remove extended", Action{Remove: &Remove{Path: "a.parquet", DeletionTimestamp: i64(0), DataChange: true, ExtendedFileMetadata: bl(true),
			PartitionValues: map[string]string{}, Size: i64(0)}},
			`{"remove":{"path":"a.parquet","deletionTimestamp":0,"dataChange":true,"extendedFileMetadata":true,"partitionValues":{},"size":0}}`},
		{"txn version 0", Action{Txn: &Txn{AppID: "app", Version: 0, LastUpdated: i64(7)}},
			`{"txn":{"appId":"app","version":0,"lastUpdated":7}}`},
		{"txn without lastUpdated", Action{Txn: &Txn{AppID: "app", Version: 3}}, `{"txn":{"appId":"app","version":3}}`},
		{"domainMetadata removed false", Action{DomainMetadata: &DomainMetadata{Domain: "d", Configuration: "{}"}},
			`{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}`},
		{"cdc", Action{CDC: &AddCDCFile{Path: "_change_data/c.parquet", PartitionValues: map[string]string{}, Size: 1}},
			`{"cdc":{"path":"_change_data/c.parquet","partitionValues":{},"size":1,"dataChange":false}}`},
		{"checkpointMetadata", Action{CheckpointMetadata: &CheckpointMetadata{Version: 0}}, `{"checkpointMetadata":{"version":0}}`},
		{"sidecar", Action{Sidecar: &Sidecar{Path: "s.parquet", SizeInBytes: 1, ModificationTime: 2}},
			`{"sidecar":{"path":"s.parquet","sizeInBytes":1,"modificationTime":2}}`},
		{"commitInfo", Action{CommitInfo: &CommitInfo{Timestamp: 1, Operation: "WRITE", OperationParameters: map[string]any{"mode": "Append"},
			IsBlindAppend: bl(false), TxnID: "t", EngineInfo: "deltakit", InCommitTimestamp: i64(2)}},
			`{"commitInfo":{"timestamp":1,"inCommitTimestamp":2,"operation":"WRITE","operationParameters":{"mode":"Append"},"isBlindAppend":false,"txnId":"t","engineInfo":"deltakit"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EncodeCommit([]Action{tt.action})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want+"\n" {
				t.Errorf("EncodeCommit:\n got %s\nwant %s", got, tt.want)
			}
			back, err := decodeCommit(0, got, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(back) != 1 {
				t.Fatalf("DecodeCommit returned %d actions", len(back))
			}
			// "" partition values come back as "" (JSON null decodes to "")
			if !reflect.DeepEqual(back[0], tt.action) {
				again, _ := EncodeCommit(back)
				if !bytes.Equal(again, got) {
					t.Errorf("round trip changed the action:\n got %s\nwant %s", again, got)
				}
			}
		})
	}
}

func TestEncodeCommitPutsCommitInfoFirst(t *testing.T) {
	actions := []Action{
		{Add: &Add{Path: "a", PartitionValues: map[string]string{}}},
		{Txn: &Txn{AppID: "x", Version: 1}},
		{CommitInfo: &CommitInfo{Operation: "WRITE"}},
	}
	data, err := EncodeCommit(actions)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var kinds []string
	for _, l := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		for k := range m {
			kinds = append(kinds, k)
		}
	}
	if want := []string{"commitInfo", "add", "txn"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("line order %v, want %v", kinds, want)
	}
	if _, err := EncodeCommit([]Action{{}}); err == nil {
		t.Error("EncodeCommit accepted an empty Action")
	}
	if _, err := EncodeCommit([]Action{{Add: &Add{Path: "a"}, Txn: &Txn{AppID: "x"}}}); err == nil {
		t.Error("EncodeCommit accepted an Action with two fields set")
	}
}

// TestCommitInfoFreeForm: arbitrary commitInfo content survives a round trip,
// non-string operationParameters are tolerated, and a known field with an
// unexpected type is kept verbatim.
func TestCommitInfoFreeForm(t *testing.T) {
	in := `{"commitInfo":{"timestamp":1715000000000,"userId":"100121","operation":"OPTIMIZE",` +
		`"operationParameters":{"predicate":["a > 1"],"zOrderBy":["x","y"],"auto":false,"clusterBy":null,"n":12345678901234567},` +
		`"notebook":{"notebookId":"4443029"},"clusterId":"1027","readVersion":4,"isolationLevel":"SnapshotIsolation",` +
		`"isBlindAppend":false,"operationMetrics":{"numAddedFiles":"1","numRemovedBytes":10},"engineInfo":"Apache-Spark/3.5.3 Delta-Lake/3.4.0","txnId":"abc"}}`
	actions, err := decodeCommit(3, []byte(in), true)
	if err != nil {
		t.Fatal(err)
	}
	ci := actions[0].CommitInfo
	if ci.Timestamp != 1715000000000 || ci.Operation != "OPTIMIZE" || ci.TxnID != "abc" || ci.IsBlindAppend == nil || *ci.IsBlindAppend {
		t.Errorf("typed fields: %+v", ci)
	}
	if got := ci.OperationParameters["auto"]; got != false {
		t.Errorf("operationParameters.auto = %#v", got)
	}
	if got := ci.OperationParameters["n"]; got != json.Number("12345678901234567") {
		t.Errorf("operationParameters.n = %#v, want exact json.Number", got)
	}
	if _, ok := ci.Extra["notebook"]; !ok {
		t.Errorf("Extra lacks notebook: %v", ci.Extra)
	}
	out, err := EncodeCommit(actions)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("round trip lost content:\n in %s\nout %s", in, out)
	}

	// a known field of the wrong type is preserved, not an error
	odd := `{"commitInfo":{"timestamp":"yesterday","operation":"X"}}`
	actions, err = decodeCommit(0, []byte(odd), true)
	if err != nil {
		t.Fatal(err)
	}
	if string(actions[0].CommitInfo.Extra["timestamp"]) != `"yesterday"` {
		t.Errorf("timestamp kept as %q", actions[0].CommitInfo.Extra["timestamp"])
	}
	out, _ = EncodeCommit(actions)
	if !strings.Contains(string(out), `"timestamp":"yesterday"`) {
		t.Errorf("re-encoded %s", out)
	}
}

// TestDecodeCommitTolerates unknown actions and fields, blank lines, CRLF.
func TestDecodeCommitTolerates(t *testing.T) {
	in := "{\"commitInfo\":{}}\r\n\n{\"futureAction\":{\"x\":1}}\n" +
		`{"add":{"path":"a","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true,"futureField":[1,2]}}` + "\n" +
		`{"txn":{"appId":"q","version":9}}`
	actions, err := decodeCommit(1, []byte(in), true)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, a := range actions {
		kinds = append(kinds, a.kind())
	}
	if want := []string{"commitInfo", "add", "txn"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	if actions[1].Add.Size != 1 || !actions[1].Add.DataChange {
		t.Errorf("add = %+v", actions[1].Add)
	}
}

// TestDecodeCommitCorrupt: every kind of bad commit is a *CorruptLogError
// naming the file, the version and the reason.
func TestDecodeCommitCorrupt(t *testing.T) {
	tests := []struct {
		name, data, reason string
	}{
		{"zero bytes", "", "empty commit file"},
		{"whitespace", " \n\n", "empty commit file"},
		{"truncated", `{"commitInfo":{}}` + "\n" + `{"add":{"path":"a","size":`, "truncated"},
		{"not json", "hello world", "not a JSON object"},
		{"array", "[1,2]", "not a JSON object"},
		{"null line", "null", "not a JSON object"},
		{"wrong type", `{"add":{"path":"a","size":"big"}}`, "invalid action on line 1: field add.size is a JSON string, want an integer"},
		{"number for a path", `{"add":{"path":1}}`, "invalid action on line 1: field add.path is a JSON number, want a string"},
		{"number for an action", `{"add":5}`, "invalid action on line 1: field add is a JSON number, want an object"},
		{"array for commitInfo", `{"commitInfo":[1]}`, "invalid action on line 1: field commitInfo is a JSON array, want an object"},
		{"string for a version", `{"protocol":{"minReaderVersion":"x"}}`, "field protocol.minReaderVersion is a JSON string, want an integer"},
		{"number for a partition value", `{"add":{"path":"a","partitionValues":{"x":1}}}`, "field add.partitionValues"},
		{"add without path", `{"add":{"size":1}}`, "invalid action on line 1"},
		{"txn without appId", `{"txn":{"version":1}}`, "invalid action on line 1"},
		{"two actions on a line", `{"add":{"path":"a"},"remove":{"path":"a"}}`, "holds 2 actions"},
		{"garbage after object", `{"txn":{"appId":"a","version":1}} x`, "line 1"},
		{"bad DV storage type", `{"add":{"path":"a","deletionVector":{"storageType":"z"}}}`, "unknown storageType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCommit(7, []byte(tt.data), true)
			var ce *CorruptLogError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("err = %v, want *CorruptLogError", err)
			}
			if ce.File != "_delta_log/00000000000000000007.json" || ce.Version != 7 {
				t.Errorf("file %q version %d", ce.File, ce.Version)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not say %q", err, tt.reason)
			}
			if strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "txlog.") {
				t.Errorf("error %q names Go types", err)
			}
		})
	}
}

func TestDeletionVectorUniqueIDAndKeys(t *testing.T) {
	dv := &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: i32(4), SizeInBytes: 40, Cardinality: 6}
	if got := dv.UniqueID(); got != "uab^-aqEH.-t@S}K{vb[*k^@4" {
		t.Errorf("UniqueID = %q", got)
	}
	inline := &DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
	if got := inline.UniqueID(); got != "iwi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L" {
		t.Errorf("inline UniqueID = %q", got)
	}
	var none *DeletionVectorDescriptor
	if none.UniqueID() != "" {
		t.Error("nil DV has a unique id")
	}
	a := &Add{Path: "p=a%20b/f%2B1.parquet", DeletionVector: dv}
	r := &Remove{Path: "p=a b/f+1.parquet", DeletionVector: dv}
	if a.Key() != r.Key() {
		t.Errorf("add key %v != remove key %v for two encodings of one path", a.Key(), r.Key())
	}
	if got := (&Add{Path: "p=a%252Fb/f.parquet"}).Key().Path; got != "p=a%2Fb/f.parquet" {
		t.Errorf("path decoded to %q, want one level of decoding", got)
	}
	if got := (&Add{Path: "bad%zz.parquet"}).Key().Path; got != "bad%zz.parquet" {
		t.Errorf("invalid escape decoded to %q", got)
	}
}

func TestNumRecords(t *testing.T) {
	tests := []struct {
		stats string
		n     int64
		ok    bool
	}{
		{`{"numRecords":42,"minValues":{"a":1}}`, 42, true},
		{`{"numRecords":4.0}`, 4, true},
		{`{"minValues":{}}`, 0, false},
		{``, 0, false},
		{`{"numRecords":`, 0, false},
	}
	for _, tt := range tests {
		n, ok := (&Add{Stats: tt.stats}).NumRecords()
		if n != tt.n || ok != tt.ok {
			t.Errorf("NumRecords(%q) = %d, %v; want %d, %v", tt.stats, n, ok, tt.n, tt.ok)
		}
	}
}

// FuzzDecodeCommit: DecodeCommit never panics, and whatever it accepts
// encodes and decodes again to the same actions.
func FuzzDecodeCommit(f *testing.F) {
	seeds := []string{
		"",
		`{"commitInfo":{"timestamp":1}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}`,
		`{"add":{"path":"a","partitionValues":{"p":null},"size":1,"modificationTime":2,"dataChange":true,"stats":"{\"numRecords\":1}","deletionVector":{"storageType":"i","pathOrInlineDv":"x","sizeInBytes":1,"cardinality":1}}}`,
		`{"remove":{"path":"a","deletionTimestamp":1,"dataChange":false}}` + "\n" + `{"txn":{"appId":"a","version":1}}`,
		`{"domainMetadata":{"domain":"d","configuration":"","removed":true}}`,
		`{"add":{"path":"a"`,
		"[]\n{}",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		actions, err := decodeCommit(1, data, true)
		if err != nil {
			if !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("error is not ErrCorruptLog: %v", err)
			}
			return
		}
		if len(actions) == 0 {
			return
		}
		enc, err := EncodeCommit(actions)
		if err != nil {
			t.Fatalf("EncodeCommit of decoded actions: %v", err)
		}
		back, err := decodeCommit(1, enc, true)
		if err != nil {
			t.Fatalf("re-decoding %q: %v", enc, err)
		}
		enc2, err := EncodeCommit(back)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, enc2)
		}
	})
}
