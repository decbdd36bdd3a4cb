package table

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

func TestCreateProtocolFromProperties(t *testing.T) {
	flat := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	ntz := schema.NewStruct(schema.NewField("ts", schema.Primitive(schema.TimestampNTZ), true))
	notNull := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), false))
	notNullNTZ := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("ts", schema.Primitive(schema.TimestampNTZ), true))
	tests := []struct {
		name    string
		sch     *schema.StructType
		props   map[string]string
		reader  int32
		writer  int32
		rFeat   []string
		wFeat   []string
		refused []string
	}{
		{"plain", flat, nil, 1, 2, nil, nil, nil},
		{"appendOnly stays legacy", flat, map[string]string{"delta.appendOnly": "true"}, 1, 2, nil, nil, nil},
		// At writer version 7 Spark lists the features implied by (1,2),
		// appendOnly and invariants, too (TestSparkReadsDeltakitTables).
		{"timestamp_ntz", ntz, nil, 3, 7, []string{"timestampNtz"}, []string{"appendOnly", "invariants", "timestampNtz"}, nil},
		{"deletion vectors", flat, map[string]string{"delta.enableDeletionVectors": "true"}, 3, 7, []string{"deletionVectors"},
			[]string{"appendOnly", "deletionVectors", "invariants"}, nil},
		{"ntz and DVs", ntz, map[string]string{"delta.enableDeletionVectors": "true"}, 3, 7,
			[]string{"deletionVectors", "timestampNtz"}, []string{"appendOnly", "deletionVectors", "invariants", "timestampNtz"}, nil},
		{"NOT NULL stays legacy", notNull, nil, 1, 2, nil, nil, nil},
		{"NOT NULL with timestamp_ntz", notNullNTZ, nil, 3, 7, []string{"timestampNtz"}, []string{"appendOnly", "invariants", "timestampNtz"}, nil},
		{"CHECK constraint is writer 3", flat, map[string]string{"delta.constraints.idpos": "id > 0"}, 1, 3, nil, nil, nil},
		{"CHECK constraint with DVs", flat, map[string]string{"delta.constraints.idpos": "id > 0", "delta.enableDeletionVectors": "true"}, 3, 7,
			[]string{"deletionVectors"}, []string{"appendOnly", "checkConstraints", "deletionVectors", "invariants"}, nil},
		{"delta.feature.domainMetadata is writer-only", flat, map[string]string{"delta.feature.domainMetadata": "supported"}, 1, 7,
			nil, []string{"appendOnly", "domainMetadata", "invariants"}, nil},
		// Change data feed with (1,2)'s appendOnly and invariants: no legacy
		// pair implies exactly these ((1,4) adds checkConstraints and
		// generatedColumns), so writer 7 lists them, as Spark 4.4 does.
		{"change data feed lists its features", flat, map[string]string{"delta.enableChangeDataFeed": "true"}, 1, 7, nil,
			[]string{"appendOnly", "changeDataFeed", "invariants"}, nil},
		{"change data feed with DVs", flat, map[string]string{"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"}, 3, 7,
			[]string{"deletionVectors"}, []string{"appendOnly", "changeDataFeed", "deletionVectors", "invariants"}, nil},
		// Column mapping: reader 2 covers it without reader features (spec
		// "Column Mapping"); (2,5) would imply more than appendOnly,
		// invariants and columnMapping, so writer 7 lists those three (Spark
		// 4.4's CREATE TABLE writes the same).
		{"column mapping", flat, map[string]string{"delta.columnMapping.mode": "name"}, 2, 7, nil,
			[]string{"appendOnly", "columnMapping", "invariants"}, nil},
		{"column mapping id", flat, map[string]string{"delta.columnMapping.mode": "id"}, 2, 7, nil,
			[]string{"appendOnly", "columnMapping", "invariants"}, nil},
		{"column mapping with DVs", flat, map[string]string{"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"}, 3, 7,
			[]string{"columnMapping", "deletionVectors"}, []string{"appendOnly", "columnMapping", "deletionVectors", "invariants"}, nil},
		{"column mapping none", flat, map[string]string{"delta.columnMapping.mode": "none"}, 1, 2, nil, nil, nil},
		{"in-commit timestamps and row tracking", flat, map[string]string{"delta.enableInCommitTimestamps": "true", "delta.enableRowTracking": "true"},
			1, 7, nil, []string{"appendOnly", "domainMetadata", "inCommitTimestamp", "invariants", "rowTracking"}, nil},
		{"unknown delta.feature", flat, map[string]string{"delta.feature.fancy": "supported"}, 0, 0, nil, nil, []string{"fancy"}},
		{"valid values", flat, map[string]string{"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 2 days", "delta.appendOnly": "false"}, 1, 2, nil, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			tbl, err := Create(context.Background(), "", tc.sch, WithStore(mem), WithProperties(tc.props))
			if tc.refused != nil {
				var ufe *txlog.UnsupportedFeatureError
				if !errors.As(err, &ufe) || !slices.Equal(ufe.Features, tc.refused) {
					t.Fatalf("create: %v, want features %v refused", err, tc.refused)
				}
				if exists, _ := hasLog(context.Background(), mem); exists {
					t.Fatal("a refused create wrote to the log")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := tbl.Snapshot().Protocol()
			if p.MinReaderVersion != tc.reader || p.MinWriterVersion != tc.writer ||
				!slices.Equal(p.ReaderFeatures, tc.rFeat) || !slices.Equal(p.WriterFeatures, tc.wFeat) {
				t.Fatalf("protocol %+v, want (%d,%d) %v %v", p, tc.reader, tc.writer, tc.rFeat, tc.wFeat)
			}
		})
	}
}

func TestCreateRefusesBadPropertyValues(t *testing.T) {
	flat := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	for _, props := range []map[string]string{
		{"delta.checkpointInterval": "abc"},
		{"delta.checkpointInterval": "0"},
		{"delta.appendOnly": "yes please"},
		{"delta.logRetentionDuration": "thirty days"},
		{"delta.deletedFileRetentionDuration": "interval 1 month"},
		{"delta.dataSkippingNumIndexedCols": "-2"},
	} {
		_, err := Create(context.Background(), "", flat, WithStore(objectstore.NewMem("t")), WithProperties(props))
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("properties %v: %v, want ErrInvalidArgument", props, err)
		}
	}
}

// Create refuses a location that holds a table, also once log cleanup has
// removed its first commits (writing version 0 again would lose data).
func TestCreateOverCleanedTable(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	tbl, err := Create(ctx, "", sch, WithStore(mem), WithProperties(map[string]string{"delta.checkpointInterval": "5"}))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// The checkpoint at version 10 is written in the background: wait for it.
	if err := tbl.Close(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := txlog.CleanupLog(ctx, tbl.Snapshot(), time.Now().Add(60*24*time.Hour), false)
	if err != nil || res.KeepFrom != 10 {
		t.Fatalf("cleanup: %+v %v", res, err)
	}
	if _, err := mem.Stat(ctx, txlog.CommitKey(0)); !errors.Is(err, objectstore.ErrNotExist) {
		t.Fatalf("commit 0 still there: %v", err)
	}
	if _, err := Create(ctx, "", sch, WithStore(mem)); !errors.Is(err, ErrTableExists) {
		t.Fatalf("create over a cleaned table: %v, want ErrTableExists", err)
	}
	again, err := Open(ctx, "", WithStore(mem))
	if err != nil || again.Version() != 12 {
		t.Fatalf("reopen: %v", err)
	}
}

// TestCreateFeatureProperties: every property with which Spark turns a
// writer feature on (txlog.WriterFeatures' Property column, where it is a
// property=value) either creates a table whose protocol has the feature, and
// that deltakit then appends to, or is refused by name with nothing
// written, as the feature table says.
func TestCreateFeatureProperties(t *testing.T) {
	ctx := context.Background()
	flat := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	n := 0
	for _, f := range txlog.WriterFeatures() {
		key, values, ok := f.PropertyTrigger()
		if !ok {
			continue
		}
		for _, v := range values {
			n++
			t.Run(key+"="+v, func(t *testing.T) {
				mem := objectstore.NewMem("t")
				tbl, err := Create(ctx, "", flat, WithStore(mem), WithProperties(map[string]string{key: v}))
				if f.Support == txlog.WriterRefused {
					var ufe *txlog.UnsupportedFeatureError
					if !errors.As(err, &ufe) || !slices.Equal(ufe.Features, []string{f.Name}) ||
						!errors.Is(err, txlog.ErrUnsupportedFeature) {
						t.Fatalf("create: %v, want %s refused by name", err, f.Name)
					}
					for info, err := range mem.List(ctx, "", "") {
						t.Errorf("a refused create wrote %v (%v)", info.Key, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				p := tbl.Snapshot().Protocol()
				if !slices.Contains(p.EffectiveWriterFeatures(), f.Name) {
					t.Fatalf("protocol %+v lacks %s", p, f.Name)
				}
				if _, err := tbl.AppendRows(ctx, []value.Row{{int64(1)}}); err != nil {
					t.Fatalf("append to the new table: %v", err)
				}
			})
		}
	}
	if n < 10 {
		t.Errorf("only %d property settings in txlog.WriterFeatures", n)
	}
}
