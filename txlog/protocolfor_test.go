package txlog

import (
	"slices"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
)

func TestProtocolFor(t *testing.T) {
	long := schema.Primitive(schema.Long)
	flat := schema.NewStruct(schema.NewField("id", long, true))
	notNull := schema.NewStruct(schema.NewField("id", long, false))
	nestedNotNull := schema.NewStruct(schema.NewField("s", schema.NewStruct(schema.NewField("x", long, false)), true))
	ntzNotNull := schema.NewStruct(schema.NewField("id", long, false), schema.NewField("t", schema.Primitive(schema.TimestampNTZ), true))
	dv := map[string]string{PropEnableDeletionVectors: "true"}
	check := map[string]string{"delta.constraints.idpos": "id > 0"}
	legacy := func(r, w int32) *Protocol { return &Protocol{MinReaderVersion: r, MinWriterVersion: w} }
	tests := []struct {
		name   string
		cur    *Protocol
		sch    *schema.StructType
		conf   map[string]string
		want   *Protocol
		keepsP bool // the result is cur itself
	}{
		// New tables: the expected protocols are what Spark 4.2 / delta-spark
		// 4.4 CREATE TABLE wrote for the same schema and properties.
		{"plain", nil, flat, nil, legacy(1, 2), false},
		{"NOT NULL", nil, notNull, nil, legacy(1, 2), false},
		{"appendOnly", nil, flat, map[string]string{PropAppendOnly: "true"}, legacy(1, 2), false},
		{"CHECK", nil, flat, check, legacy(1, 3), false},
		{"NOT NULL + timestamp_ntz", nil, ntzNotNull, nil, &Protocol{3, 7, []string{"timestampNtz"}, []string{"appendOnly", "invariants", "timestampNtz"}}, false},
		{"NOT NULL + DVs", nil, notNull, dv, &Protocol{3, 7, []string{"deletionVectors"}, []string{"appendOnly", "deletionVectors", "invariants"}}, false},
		{"domainMetadata is writer-only", nil, notNull, map[string]string{"delta.feature.domainMetadata": "supported"},
			&Protocol{1, 7, nil, []string{"appendOnly", "domainMetadata", "invariants"}}, false},
		// Existing tables.
		{"legacy covers NOT NULL", legacy(1, 2), nestedNotNull, nil, nil, true},
		{"legacy upgraded for CHECK", legacy(1, 2), flat, check, legacy(1, 3), false},
		{"legacy (1,4) covers CHECK", legacy(1, 4), flat, check, nil, true},
		{"legacy (1,2) to DVs lists implied features", legacy(1, 2), flat, dv,
			&Protocol{3, 7, []string{"deletionVectors"}, []string{"appendOnly", "deletionVectors", "invariants"}}, false},
		{"writer 7 gains invariants for a new NOT NULL column", &Protocol{3, 7, []string{"timestampNtz"}, []string{"timestampNtz"}}, ntzNotNull, nil,
			&Protocol{3, 7, []string{"timestampNtz"}, []string{"invariants", "timestampNtz"}}, false},
		{"writer 7 gains checkConstraints", &Protocol{3, 7, []string{"deletionVectors"}, []string{"appendOnly", "deletionVectors", "invariants"}}, flat,
			map[string]string{PropEnableDeletionVectors: "true", "delta.constraints.idpos": "id > 0"},
			&Protocol{3, 7, []string{"deletionVectors"}, []string{"appendOnly", "checkConstraints", "deletionVectors", "invariants"}}, false},
		{"writer 7 already complete", &Protocol{3, 7, []string{"deletionVectors"}, []string{"deletionVectors", "invariants", "appendOnly"}}, notNull, dv, nil, true},
		{"(1,7) gains a reader feature", &Protocol{1, 7, nil, []string{"domainMetadata"}}, ntzNotNull, nil,
			&Protocol{3, 7, []string{"timestampNtz"}, []string{"domainMetadata", "invariants", "timestampNtz"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ProtocolFor(tc.cur, tc.sch, tc.conf)
			if tc.keepsP {
				if got != tc.cur {
					t.Fatalf("ProtocolFor = %+v, want cur %+v itself", got, tc.cur)
				}
				return
			}
			if got == tc.cur {
				t.Fatalf("ProtocolFor returned cur %+v unchanged, want %+v", got, tc.want)
			}
			if got.MinReaderVersion != tc.want.MinReaderVersion || got.MinWriterVersion != tc.want.MinWriterVersion ||
				!slices.Equal(got.ReaderFeatures, tc.want.ReaderFeatures) && len(got.ReaderFeatures)+len(tc.want.ReaderFeatures) > 0 ||
				!slices.Equal(got.WriterFeatures, tc.want.WriterFeatures) {
				t.Fatalf("ProtocolFor = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCommitUpgradesProtocolForMetadata: a metadata change whose features
// the protocol lacks (here a NOT NULL column on a writer-7 table without
// invariants, which Spark refuses to read) upgrades the protocol in the
// same commit.
func TestCommitUpgradesProtocolForMetadata(t *testing.T) {
	ctx := t.Context()
	store := objectstore.NewMem("upgrade")
	p := &Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz"}}
	m := &Metadata{ID: "x", Format: Format{Provider: "parquet"}, Configuration: map[string]string{},
		SchemaString: `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"t","type":"timestamp_ntz","nullable":true,"metadata":{}}]}`}
	res, err := CreateTransaction(store, p, m).Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Snapshot.Protocol().WriterFeatures; !slices.Equal(got, []string{"invariants", "timestampNtz"}) {
		t.Fatalf("writer features %v, want [invariants timestampNtz]", got)
	}
	// A property change that turns on appendOnly adds the feature.
	m2 := res.Snapshot.Metadata().Clone()
	m2.Configuration[PropAppendOnly] = "true"
	tx := NewTransaction(res.Snapshot, "SET TBLPROPERTIES")
	tx.UpdateMetadata(m2)
	res2, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := res2.Snapshot.Protocol().WriterFeatures; !slices.Equal(got, []string{"appendOnly", "invariants", "timestampNtz"}) {
		t.Fatalf("after delta.appendOnly=true: writer features %v", got)
	}
}
