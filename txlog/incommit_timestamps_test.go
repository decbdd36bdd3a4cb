package txlog

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

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
