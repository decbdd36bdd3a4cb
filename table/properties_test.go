package table

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/deltakit/deltakit/txlog"
)

// SET TBLPROPERTIES delta.enableChangeDataFeed on an existing table: the
// commit is metadata-only with Spark's operation and parameters, the
// protocol goes to writer 7 with changeDataFeed listed, and a DELETE then
// writes change data.
func TestSetPropertiesChangeDataFeed(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, nil)
	tbl, err := tbl.AppendRows(ctx, maintRowsFor(0, 10, "ams", "ber")) // v1
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.SetProperties(ctx, map[string]string{txlog.PropEnableChangeDataFeed: "true"}); err != nil { // v2
		t.Fatal(err)
	}
	var ci *txlog.CommitInfo
	for _, a := range commitActions(t, tbl.Store(), 2) {
		if a.Add != nil || a.Remove != nil {
			t.Errorf("SET TBLPROPERTIES commit has a file action %+v", a)
		}
		if a.CommitInfo != nil {
			ci = a.CommitInfo
		}
	}
	if ci == nil || ci.Operation != "SET TBLPROPERTIES" || ci.OperationParameters["properties"] != `{"delta.enableChangeDataFeed":"true"}` {
		t.Errorf("commitInfo %+v", ci)
	}
	// (1,2) plus changeDataFeed: writer 7 listing the three features ((1,4)
	// would imply checkConstraints and generatedColumns too).
	if p := tbl.Snapshot().Protocol(); p.MinReaderVersion != 1 || p.MinWriterVersion != 7 ||
		!slices.Equal(p.WriterFeatures, []string{"appendOnly", "changeDataFeed", "invariants"}) {
		t.Errorf("protocol %+v, want (1,7) appendOnly, changeDataFeed, invariants", p)
	}
	if tbl, _, err = tbl.Delete(ctx, Col("id").Lt(int64(3))); err != nil { // v3
		t.Fatal(err)
	}
	if !slices.ContainsFunc(commitActions(t, tbl.Store(), 3), func(a txlog.Action) bool { return a.CDC != nil }) {
		t.Error("DELETE after enabling the change data feed wrote no cdc file")
	}
	feed, err := tbl.Changes(ctx, 3, -1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range feed.Rows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 3 {
		t.Errorf("change feed of the DELETE has %d rows, want 3", n)
	}
}

// Turning in-commit timestamps on later records the enablement version and
// timestamp: the commit's version and its commitInfo.inCommitTimestamp.
func TestSetPropertiesInCommitTimestamps(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, nil)
	tbl, err := tbl.AppendRows(ctx, maintRowsFor(0, 4, "ams")) // v1
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.SetProperties(ctx, map[string]string{txlog.PropEnableInCommitTimestamps: "true"}); err != nil { // v2
		t.Fatal(err)
	}
	var ict *int64
	for _, a := range commitActions(t, tbl.Store(), 2) {
		if a.CommitInfo != nil {
			ict = a.CommitInfo.InCommitTimestamp
		}
	}
	if ict == nil {
		t.Fatal("commit enabling in-commit timestamps has no inCommitTimestamp")
	}
	conf := tbl.Snapshot().Metadata().Configuration
	if conf[txlog.PropInCommitTimestampEnablementVersion] != "2" ||
		conf[txlog.PropInCommitTimestampEnablementTimestamp] != strconv.FormatInt(*ict, 10) {
		t.Errorf("enablement %q/%q, want 2/%d", conf[txlog.PropInCommitTimestampEnablementVersion],
			conf[txlog.PropInCommitTimestampEnablementTimestamp], *ict)
	}
	if !tbl.Snapshot().Protocol().HasWriterFeature(txlog.FeatureInCommitTimestamp) {
		t.Errorf("protocol %+v lacks inCommitTimestamp", tbl.Snapshot().Protocol())
	}
	if tbl, err = tbl.AppendRows(ctx, maintRowsFor(4, 2, "ams")); err != nil { // v3: still stamped
		t.Fatal(err)
	}
	for _, a := range commitActions(t, tbl.Store(), 3) {
		if a.CommitInfo != nil && (a.CommitInfo.InCommitTimestamp == nil || *a.CommitInfo.InCommitTimestamp <= *ict) {
			t.Errorf("append after enablement: inCommitTimestamp %v, want > %d", a.CommitInfo.InCommitTimestamp, *ict)
		}
	}
}

// Enabling deletion vectors upgrades a (1,2) table to (3,7) with
// deletionVectors, and DELETE then writes deletion vectors; unsetting the
// property keeps the feature in the protocol.
func TestSetPropertiesDeletionVectors(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, nil)
	tbl, err := tbl.AppendRows(ctx, maintRowsFor(0, 10, "ams"))
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.SetProperties(ctx, map[string]string{txlog.PropEnableDeletionVectors: "true"}); err != nil {
		t.Fatal(err)
	}
	p := tbl.Snapshot().Protocol()
	if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !slices.Equal(p.ReaderFeatures, []string{"deletionVectors"}) ||
		!slices.Equal(p.WriterFeatures, []string{"appendOnly", "deletionVectors", "invariants"}) {
		t.Fatalf("protocol %+v, want (3,7) with deletionVectors", p)
	}
	if tbl, _, err = tbl.Delete(ctx, Col("id").Eq(int64(3))); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(commitActions(t, tbl.Store(), tbl.Version()), func(a txlog.Action) bool {
		return a.Add != nil && a.Add.DeletionVector != nil
	}) {
		t.Error("DELETE after enabling deletion vectors wrote no deletion vector")
	}
	if tbl, err = tbl.UnsetProperties(ctx, false, txlog.PropEnableDeletionVectors); err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Snapshot().Metadata().Configuration[txlog.PropEnableDeletionVectors]; ok {
		t.Error("property still set after UNSET")
	}
	if !tbl.Snapshot().Protocol().HasWriterFeature(txlog.FeatureDeletionVectors) {
		t.Error("UNSET TBLPROPERTIES downgraded the protocol")
	}
	var ci *txlog.CommitInfo
	for _, a := range commitActions(t, tbl.Store(), tbl.Version()) {
		if a.CommitInfo != nil {
			ci = a.CommitInfo
		}
	}
	if ci == nil || ci.Operation != "UNSET TBLPROPERTIES" || ci.OperationParameters["properties"] != `["delta.enableDeletionVectors"]` ||
		ci.OperationParameters["ifExists"] != "false" {
		t.Errorf("commitInfo %+v", ci)
	}
}

// Refused property changes name the reason and commit nothing.
func TestSetPropertiesRefused(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		set      map[string]string
		unset    []string
		err      error
		features []string
	}{
		{"iceberg compat v2", map[string]string{"delta.enableIcebergCompatV2": "true"}, nil, txlog.ErrUnsupportedFeature, []string{"icebergCompatV2"}},
		{"iceberg compat v1", map[string]string{"delta.enableIcebergCompatV1": "true"}, nil, txlog.ErrUnsupportedFeature, []string{"icebergCompatV1"}},
		{"unknown feature", map[string]string{"delta.feature.fancy": "supported"}, nil, txlog.ErrUnsupportedFeature, []string{"fancy"}},
		{"row tracking on files without ids", map[string]string{"delta.enableRowTracking": "true"}, nil, txlog.ErrUnsupportedFeature, []string{"rowTracking"}},
		{"bad interval", map[string]string{"delta.checkpointInterval": "0"}, nil, ErrInvalidArgument, nil},
		{"bad boolean", map[string]string{"delta.enableChangeDataFeed": "yes"}, nil, ErrInvalidArgument, nil},
		{"bad checkpoint policy", map[string]string{"delta.checkpointPolicy": "v3"}, nil, ErrInvalidArgument, nil},
		{"column mapping mode change to id", map[string]string{"delta.columnMapping.mode": "id"}, nil, ErrColumnMappingModeChange, nil},
		{"maintained property", map[string]string{txlog.PropInCommitTimestampEnablementVersion: "1"}, nil, ErrInvalidArgument, nil},
		{"constraint on a missing column", map[string]string{"delta.constraints.c": "nosuch > 0"}, nil, ErrUnsupportedConstraint, nil},
		{"no properties", map[string]string{}, nil, ErrInvalidArgument, nil},
		{"unset a missing key", nil, []string{"delta.nosuch"}, ErrInvalidArgument, nil},
		{"unset nothing", nil, []string{}, ErrInvalidArgument, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tbl, mem := maintTable(t, false, map[string]string{"delta.checkpointInterval": "7"})
			tbl, err := tbl.AppendRows(ctx, maintRowsFor(0, 4, "ams"))
			if err != nil {
				t.Fatal(err)
			}
			before := listKeys(t, mem, txlog.LogPrefix)
			conf := maps.Clone(tbl.Snapshot().Metadata().Configuration)
			if tc.unset != nil {
				_, err = tbl.UnsetProperties(ctx, false, tc.unset...)
			} else {
				_, err = tbl.SetProperties(ctx, tc.set)
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			var ufe *txlog.UnsupportedFeatureError
			if tc.features != nil && (!errors.As(err, &ufe) || !slices.Equal(ufe.Features, tc.features)) {
				t.Fatalf("error %v, want features %v named", err, tc.features)
			}
			if after := listKeys(t, mem, txlog.LogPrefix); !slices.Equal(after, before) {
				t.Errorf("log changed: %v -> %v", before, after)
			}
			again, err := Open(ctx, "", WithStore(mem))
			if err != nil {
				t.Fatal(err)
			}
			if again.Version() != 1 || !maps.Equal(again.Snapshot().Metadata().Configuration, conf) {
				t.Errorf("table changed: version %d, configuration %v", again.Version(), again.Snapshot().Metadata().Configuration)
			}
		})
	}
	// IF EXISTS: a missing key is no error.
	tbl, _ := maintTable(t, false, nil)
	if _, err := tbl.UnsetProperties(ctx, true, "delta.nosuch"); err != nil {
		t.Errorf("UNSET IF EXISTS of a missing key: %v", err)
	}
}
