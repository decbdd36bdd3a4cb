package txlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// addRecords is addFile with numRecords n.
func addRecords(path string, n int) Action {
	a := addFile(path, "a")
	a.Add.Stats = fmt.Sprintf(`{"numRecords":%d}`, n)
	return a
}

func readCommitInfo(t *testing.T, store objectstore.Store, v int64) ([]Action, *CommitInfo) {
	t.Helper()
	actions, err := ReadCommit(context.Background(), store, v)
	if err != nil {
		t.Fatalf("read commit %d: %v", v, err)
	}
	if len(actions) == 0 || actions[0].CommitInfo == nil {
		t.Fatalf("commit %d: commitInfo is not the first action: %+v", v, actions)
	}
	return actions, actions[0].CommitInfo
}

// TestInCommitTimestampRace: two writers start from the same snapshot with
// clocks behind the table's last ICT; the loser re-computes its ICT from the
// winner's at its retry, so ICTs stay strictly increasing and the
// snapshot's commit time is the ICT.
func TestInCommitTimestampRace(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	snap := createTestTable(t, store, map[string]string{PropEnableInCommitTimestamps: "true"})
	_, ci0 := readCommitInfo(t, store, 0)
	if ci0.InCommitTimestamp == nil {
		t.Fatal("version 0 has no inCommitTimestamp")
	}
	// Clocks far behind version 0's ICT: ICT must be prev + 1.
	past := func() time.Time { return time.UnixMilli(*ci0.InCommitTimestamp - 60_000) }
	a := NewTransaction(snap, "WRITE", WithTxnClock(past))
	a.Add(addFile("a.parquet", "a"))
	b := NewTransaction(snap, "WRITE", WithTxnClock(past))
	b.Add(addFile("b.parquet", "a"))
	if _, err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := b.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 2 || res.Attempts != 2 {
		t.Fatalf("loser committed version %d in %d attempts, want 2 in 2", res.Version, res.Attempts)
	}
	want := *ci0.InCommitTimestamp
	for v := int64(1); v <= 2; v++ {
		_, ci := readCommitInfo(t, store, v)
		want++
		if ci.InCommitTimestamp == nil || *ci.InCommitTimestamp != want {
			t.Errorf("version %d inCommitTimestamp %v, want %d", v, ci.InCommitTimestamp, want)
		}
	}
	if got := res.Snapshot.CommitTimestamp().UnixMilli(); got != want {
		t.Errorf("post-commit snapshot commit time %d, want ICT %d", got, want)
	}
	loaded, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.CommitTimestamp().UnixMilli(); got != want {
		t.Errorf("loaded snapshot commit time %d, want ICT %d", got, want)
	}
	// A clock ahead wins over prev + 1.
	ahead := time.UnixMilli(want + 5000)
	tx := NewTransaction(res.Snapshot, "WRITE", WithTxnClock(func() time.Time { return ahead }))
	tx.Add(addFile("c.parquet", "a"))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ci := readCommitInfo(t, store, 3); ci.InCommitTimestamp == nil || *ci.InCommitTimestamp != ahead.UnixMilli() {
		t.Errorf("version 3 inCommitTimestamp %v, want %d", ci.InCommitTimestamp, ahead.UnixMilli())
	}
}

// TestInCommitTimestampEnablement: turning ICT on in a later commit records
// the enablement version and timestamp, equal to that commit's ICT.
func TestInCommitTimestampEnablement(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	snap := createTestTable(t, store, nil)
	if _, ci := readCommitInfo(t, store, 0); ci.InCommitTimestamp != nil {
		t.Fatalf("ICT written on a table without it: %d", *ci.InCommitTimestamp)
	}
	tx := NewTransaction(snap, "WRITE")
	tx.Add(addFile("x.parquet", "a"))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	snap, _ = Load(ctx, store)
	m := snap.Metadata().Clone()
	m.Configuration = map[string]string{PropEnableInCommitTimestamps: "true"}
	// A concurrent commit lands first: the enablement version is the one
	// the commit finally gets.
	tx = NewTransaction(snap, "SET TBLPROPERTIES")
	tx.UpdateMetadata(m)
	other := NewTransaction(snap, "WRITE")
	other.Add(addFile("y.parquet", "a"))
	if _, err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 3 {
		t.Fatalf("enablement at version %d, want 3", res.Version)
	}
	actions, ci := readCommitInfo(t, store, 3)
	var md *Metadata
	for _, a := range actions {
		if a.Metadata != nil {
			md = a.Metadata
		}
	}
	if ci.InCommitTimestamp == nil || md == nil {
		t.Fatalf("enablement commit: ICT %v metadata %v", ci.InCommitTimestamp, md)
	}
	if got := md.Configuration[PropInCommitTimestampEnablementVersion]; got != "3" {
		t.Errorf("enablement version %q, want 3", got)
	}
	if got := md.Configuration[PropInCommitTimestampEnablementTimestamp]; got != strconv.FormatInt(*ci.InCommitTimestamp, 10) {
		t.Errorf("enablement timestamp %q, want the commit's ICT %d", got, *ci.InCommitTimestamp)
	}
	if !slices.Contains(res.Snapshot.Protocol().WriterFeatures, FeatureInCommitTimestamp) {
		t.Errorf("protocol %+v lacks inCommitTimestamp", res.Snapshot.Protocol())
	}
	// Time travel to the enablement timestamp finds version 3.
	at, err := Load(ctx, store, AtTimestamp(time.UnixMilli(*ci.InCommitTimestamp)))
	if err != nil || at.Version() != 3 {
		t.Fatalf("AtTimestamp(enablement) = %v, %v; want version 3", at, err)
	}
}

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
		if d := a.DomainMetadata; d != nil && d.Domain == DomainRowTracking {
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
	if d, ok := res.Snapshot.DomainMetadata(DomainRowTracking); !ok || d.Configuration != `{"rowIdHighWaterMark":8,"domainName":"delta.rowTracking"}` {
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

// TestWriterFeatureTable: every feature of the table appears once, the
// supported list is derived from it, and a refused feature is named by
// CheckWritableTable.
func TestWriterFeatureTable(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range WriterFeatures() {
		if seen[f.Name] || f.Name == "" || f.Property == "" {
			t.Errorf("feature row %+v duplicated or incomplete", f)
		}
		seen[f.Name] = true
		if f.Support == WriterRefused && f.Note == "" {
			t.Errorf("refused feature %s has no reason", f.Name)
		}
		p := &Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{f.Name}}
		err := checkWritable(p)
		if featureRequirements[f.Name].readerWriter {
			p.MinReaderVersion, p.ReaderFeatures = 3, []string{f.Name}
			err = checkWritable(p)
			if !readerFeatureSupported(f.Name) {
				continue // unreadable: refused for reading already
			}
		}
		if (err == nil) != (f.Support != WriterRefused) {
			t.Errorf("%s (%v): checkWritable = %v", f.Name, f.Support, err)
		}
		if got := slices.Contains(supportedWriterFeatures(), f.Name); got != (f.Support != WriterRefused) {
			t.Errorf("%s in supportedWriterFeatures = %v", f.Name, got)
		}
	}
	for _, f := range []string{FeatureInCommitTimestamp, FeatureRowTracking, FeatureClustering} {
		if writerFeatureSupport(f) != WriterSupported {
			t.Errorf("%s is %v", f, writerFeatureSupport(f))
		}
	}
}
