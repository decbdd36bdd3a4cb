package txlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// encodeCommitReflect is EncodeCommit as it was before it copied the
// MarshalJSON output of the hot action types itself: json.Encoder over each
// Action, commitInfo first.
func encodeCommitReflect(actions []Action) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	for pass := range 2 {
		for i := range actions {
			if (actions[i].CommitInfo != nil) != (pass == 0) {
				continue
			}
			if err := e.Encode(&actions[i]); err != nil {
				return nil, err
			}
		}
	}
	return b.Bytes(), nil
}

// commitInfoJSONBefore is CommitInfo.MarshalJSON as it was before it wrote
// the fields with one encoder (one encoder per field, json.Marshal for keys).
func commitInfoJSONBefore(c CommitInfo) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	field := func(k string, v any) error {
		raw, err := marshalNoEscape(v)
		if err != nil {
			return fmt.Errorf("commitInfo.%s: %w", k, err)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		kq, _ := json.Marshal(k)
		b.Write(kq)
		b.WriteByte(':')
		b.Write(raw)
		return nil
	}
	var err error
	written := map[string]bool{}
	add := func(k string, v any, present bool) {
		if present && err == nil {
			err = field(k, v)
			written[k] = true
		}
	}
	add("timestamp", c.Timestamp, c.Timestamp != 0)
	add("inCommitTimestamp", c.InCommitTimestamp, c.InCommitTimestamp != nil)
	add("operation", c.Operation, c.Operation != "")
	add("operationParameters", c.OperationParameters, c.OperationParameters != nil)
	add("operationMetrics", c.OperationMetrics, c.OperationMetrics != nil)
	add("isBlindAppend", c.IsBlindAppend, c.IsBlindAppend != nil)
	add("txnId", c.TxnID, c.TxnID != "")
	add("engineInfo", c.EngineInfo, c.EngineInfo != "")
	for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
		if written[k] {
			continue
		}
		add(k, c.Extra[k], true)
	}
	if err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func encodeTestCommitInfos() []CommitInfo {
	yes, no := true, false
	ict := int64(-42)
	return []CommitInfo{
		{},
		{Timestamp: 1700000000000, Operation: "WRITE", OperationParameters: map[string]any{"mode": "Append", "partitionBy": "[]"},
			IsBlindAppend: &yes, TxnID: "0b9c1c3e-6d5f-4a84-9c3c-6c1d1a3f2e10", EngineInfo: EngineInfo,
			Extra: map[string]json.RawMessage{"readVersion": json.RawMessage("41")}},
		{Timestamp: -1, InCommitTimestamp: &ict, Operation: `a "quoted" <op> & \ back`, IsBlindAppend: &no,
			OperationMetrics:    map[string]any{"numFiles": "3", "n": json.Number("12.5"), "nested": map[string]any{"<k>": []any{1, "\u2028", nil}}},
			OperationParameters: map[string]any{}, TxnID: "t\x01\u2029", EngineInfo: "bad utf8 \xff\xfe end"},
		{Operation: "MERGE", Extra: map[string]json.RawMessage{
			"timestamp":   json.RawMessage("5"),                   // typed field absent: Extra written
			"operation":   json.RawMessage(`"shadowed"`),          // typed field set: skipped
			"isolation":   json.RawMessage(` { "a" : [1, 2 ] } `), // compacted
			"<html&key>":  json.RawMessage(`"v"`),
			"with space":  json.RawMessage(`null`),
			"clusterBy_1": json.RawMessage(`["a","b"]`),
			"é":           json.RawMessage(`"\u00e9"`),
		}},
	}
}

// TestCommitInfoMarshalUnchanged: CommitInfo.MarshalJSON writes the bytes
// the previous implementation wrote.
func TestCommitInfoMarshalUnchanged(t *testing.T) {
	for i, ci := range encodeTestCommitInfos() {
		want, werr := commitInfoJSONBefore(ci)
		got, err := ci.MarshalJSON()
		if (err != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Errorf("commitInfo %d:\n got %s (%v)\nwant %s (%v)", i, got, err, want, werr)
		}
	}
	bad := CommitInfo{Extra: map[string]json.RawMessage{"x": json.RawMessage(`{not json`)}}
	if _, err := bad.MarshalJSON(); err == nil {
		t.Error("invalid Extra JSON accepted")
	}
}

// TestEncodeCommitMatchesEncodingJSON: EncodeCommit writes every action
// type byte for byte as json.Encoder (HTML escaping off) does.
func TestEncodeCommitMatchesEncodingJSON(t *testing.T) {
	off, ts, size := int32(1), int64(1700000000000), int64(10)
	ext := true
	var actions []Action
	for _, ci := range encodeTestCommitInfos() {
		actions = append(actions, Action{CommitInfo: &ci})
	}
	actions = append(actions,
		Action{Protocol: &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}},
		Action{Protocol: &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, WriterFeatures: []string{"deletionVectors"}}},
		Action{Metadata: &Metadata{ID: "id", SchemaString: testSchema, Configuration: map[string]string{"a<b": "c&d"}}},
		Action{Metadata: &Metadata{ID: "id", Name: "n", Description: "d\n", Format: Format{Provider: "parquet", Options: map[string]string{"k": "v"}},
			SchemaString: testSchema, PartitionColumns: []string{"part"}, CreatedTime: &ts}},
		Action{Add: &Add{Path: "part=%3Cx%3E/f.parquet", PartitionValues: map[string]string{"part": "<x>", "nullcol": ""}, Size: 1,
			ModificationTime: ts, DataChange: true, Stats: `{"numRecords":1,"minValues":{"s":"<&>\u2028"}}`, Tags: map[string]string{"t": "&"},
			DeletionVector: &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: &off, SizeInBytes: 36, Cardinality: 2},
			BaseRowID:      &ts, DefaultRowCommitVersion: &ts, ClusteringProvider: "liquid"}},
		Action{Add: &Add{Path: "f2.parquet"}},
		Action{Remove: &Remove{Path: "f.parquet", DeletionTimestamp: &ts, DataChange: true, ExtendedFileMetadata: &ext,
			PartitionValues: map[string]string{"part": ""}, Size: &size, Stats: "{}"}},
		Action{Remove: &Remove{Path: "g.parquet"}},
		Action{Txn: &Txn{AppID: "<app>&", Version: 3, LastUpdated: &ts}},
		Action{CDC: &AddCDCFile{Path: "_change_data/c.parquet", PartitionValues: map[string]string{}, Size: 1}},
		Action{DomainMetadata: &DomainMetadata{Domain: "delta.x", Configuration: `{"a":"<b>"}`}},
	)
	want, err := encodeCommitReflect(actions)
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeCommit(actions)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := range min(len(gl), len(wl)) {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Errorf("line %d:\n got %s\nwant %s", i, gl[i], wl[i])
			}
		}
		t.Fatalf("EncodeCommit differs from encoding/json (%d vs %d lines)", len(gl), len(wl))
	}
	if back, err := decodeCommit(1, got, true); err != nil || len(back) != len(actions) {
		t.Fatalf("decode: %d actions, %v", len(back), err)
	}
}
