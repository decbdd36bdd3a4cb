package txlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

func baseRowIDs(t *testing.T, actions []Action) (map[string][2]int64, int64) {
	t.Helper()
	ids := map[string][2]int64{}
	hwm := int64(-100)
	for _, a := range actions {
		if a.Add != nil {
			if a.Add.BaseRowID == nil || a.Add.DefaultRowCommitVersion == nil {
				t.Fatalf("add %s without baseRowId/defaultRowCommitVersion", a.Add.Path)
			}
			ids[a.Add.Path] = [2]int64{*a.Add.BaseRowID, *a.Add.DefaultRowCommitVersion}
		}
		if d := a.DomainMetadata; d != nil && d.Domain == domainRowTracking {
			v, ok := rowIDHighWaterMark(d.Configuration)
			if !ok {
				t.Fatalf("bad row tracking domain %q", d.Configuration)
			}
			hwm = v
		}
	}
	return ids, hwm
}

// TestRowIDsAcrossLostRace: both writers start at high-water mark -1; the
// loser re-assigns its ids above the winner's high-water mark, its
// defaultRowCommitVersion is the version it got, and the ids of every file
// are disjoint. An add recommitted with ids keeps them.
func TestRowIDsAcrossLostRace(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	snap := createTestTable(t, store, map[string]string{PropEnableRowTracking: "true"})
	if !snap.Protocol().HasWriterFeature(FeatureRowTracking) || !snap.Protocol().HasWriterFeature(FeatureDomainMetadata) {
		t.Fatalf("protocol %+v", snap.Protocol())
	}
	conf := snap.Metadata().Configuration
	if conf[PropMaterializedRowIDColumn] == "" || conf[PropMaterializedRowCommitVersionColumn] == "" ||
		conf[PropMaterializedRowIDColumn] == conf[PropMaterializedRowCommitVersionColumn] {
		t.Fatalf("materialized column names not assigned: %v", conf)
	}
	a := NewTransaction(snap, "WRITE")
	a.Add(addRecords("a1.parquet", 3), addRecords("a2.parquet", 2))
	b := NewTransaction(snap, "WRITE")
	b.Add(addRecords("b1.parquet", 4))
	if _, err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := b.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 2 || res.Attempts != 2 {
		t.Fatalf("loser at version %d after %d attempts", res.Version, res.Attempts)
	}
	w1, _ := readCommitInfo(t, store, 1)
	ids1, hwm1 := baseRowIDs(t, w1)
	if want := map[string][2]int64{"a1.parquet": {0, 1}, "a2.parquet": {3, 1}}; fmt.Sprint(ids1) != fmt.Sprint(want) || hwm1 != 4 {
		t.Errorf("version 1 ids %v hwm %d, want %v hwm 4", ids1, hwm1, want)
	}
	w2, _ := readCommitInfo(t, store, 2)
	ids2, hwm2 := baseRowIDs(t, w2)
	if want := map[string][2]int64{"b1.parquet": {5, 2}}; fmt.Sprint(ids2) != fmt.Sprint(want) || hwm2 != 8 {
		t.Errorf("version 2 ids %v hwm %d, want %v hwm 8", ids2, hwm2, want)
	}
	if d, ok := res.Snapshot.DomainMetadata(domainRowTracking); !ok || d.Configuration != `{"rowIdHighWaterMark":8,"domainName":"delta.rowTracking"}` {
		t.Errorf("post-commit domain %+v", d)
	}
	// A recommitted add (new DV) keeps its ids and moves no high-water mark.
	var a1 *Add
	for _, f := range res.Snapshot.Files() {
		if f.Path == "a1.parquet" {
			a1 = f
		}
	}
	if a1 == nil || a1.BaseRowID == nil || *a1.BaseRowID != 0 {
		t.Fatalf("a1 in snapshot: %+v", a1)
	}
	re := *a1
	re.DeletionVector = &DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", Cardinality: 1}
	tx := NewTransaction(res.Snapshot, "DELETE")
	tx.Add(Action{Add: &re})
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w3, _ := readCommitInfo(t, store, 3)
	ids3, hwm3 := baseRowIDs(t, w3)
	if fmt.Sprint(ids3) != fmt.Sprint(map[string][2]int64{"a1.parquet": {0, 1}}) || hwm3 != -100 {
		t.Errorf("recommitted add: ids %v, domain hwm %d (want none)", ids3, hwm3)
	}
}

// TestRowTrackingNeedsNumRecordsAndBackfill: an add without numRecords is
// refused, and so is enabling row tracking on a table whose files have no
// ids; nothing is committed.
func TestRowTrackingNeedsNumRecordsAndBackfill(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	snap := createTestTable(t, store, map[string]string{PropEnableRowTracking: "true"})
	tx := NewTransaction(snap, "WRITE")
	f := addFile("nostats.parquet", "a")
	f.Add.Stats = ""
	tx.Add(f)
	if _, err := tx.Commit(ctx); err == nil {
		t.Fatal("add without numRecords committed on a row tracking table")
	}

	store2 := objectstore.NewMem("t2")
	plain := createTestTable(t, store2, nil)
	tx = NewTransaction(plain, "WRITE")
	tx.Add(addFile("old.parquet", "a"))
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Snapshot.Metadata().Clone()
	m.Configuration = map[string]string{PropEnableRowTracking: "true"}
	tx = NewTransaction(res.Snapshot, "SET TBLPROPERTIES")
	tx.UpdateMetadata(m)
	_, err = tx.Commit(ctx)
	var fe *UnsupportedFeatureError
	if !errors.As(err, &fe) || !slices.Equal(fe.Features, []string{FeatureRowTracking}) {
		t.Fatalf("enabling row tracking without backfill: %v", err)
	}
	if after, _ := Load(ctx, store2); after.Version() != 1 {
		t.Errorf("table moved to version %d", after.Version())
	}
}
