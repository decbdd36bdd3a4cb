package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"

	"github.com/deltakit/deltakit/txlog"
)

func TestHistory(t *testing.T) {
	ctx := context.Background()
	clock := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tbl, mem := maintTable(t, false, nil)
	for i := range 4 {
		tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, "ams"))
	}
	tx := tbl.NewTransaction("STREAMING UPDATE", txlog.WithTxnClock(func() time.Time { return clock }))
	tx.SetOperationParameters(map[string]string{"epochId": "0"})
	tx.SetOperationMetrics(map[string]string{"numAddedFiles": "0"})
	tbl, _, err := tbl.Commit(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit    int
		versions []int64
	}{{0, []int64{5, 4, 3, 2, 1, 0}}, {2, []int64{5, 4}}, {10, []int64{5, 4, 3, 2, 1, 0}}} {
		h, err := tbl.History(ctx, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, e := range h {
			got = append(got, e.Version)
		}
		if len(got) != len(tc.versions) {
			t.Fatalf("limit %d: versions %v, want %v", tc.limit, got, tc.versions)
		}
		for i := range got {
			if got[i] != tc.versions[i] {
				t.Fatalf("limit %d: versions %v, want %v", tc.limit, got, tc.versions)
			}
		}
	}
	h, err := tbl.History(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := h[0]
	if e.Operation != "STREAMING UPDATE" || !e.CommitInfoTimestamp.Equal(clock) || e.Timestamp.Equal(clock) || e.ReadVersion != 4 ||
		e.Parameters["epochId"] != "0" || e.Metrics["numAddedFiles"] != "0" || e.EngineInfo != txlog.EngineInfo {
		t.Errorf("entry %+v", e)
	}
	if h, _ := tbl.History(ctx, 0); h[5].Operation != "CREATE TABLE" {
		t.Errorf("version 0 operation %q", h[5].Operation)
	}
	// After log cleanup the history starts at the oldest commit left.
	if err := txlog.WriteCheckpoint(ctx, tbl.Snapshot()); err != nil {
		t.Fatal(err)
	}
	for v := range int64(3) {
		if err := mem.Delete(ctx, txlog.CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	h, err = tbl.History(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[2].Version != 3 {
		t.Errorf("history after cleanup: %d entries, oldest %d", len(h), h[len(h)-1].Version)
	}
	// A limit reaching past the oldest commit left starts there too.
	if h, err = tbl.History(ctx, 4); err != nil || len(h) != 3 || h[0].Version != 5 || h[2].Version != 3 {
		t.Errorf("history(4) after cleanup: %+v, %v", h, err)
	}
	if h, err = tbl.History(ctx, 2); err != nil || len(h) != 2 || h[0].Version != 5 || h[1].Version != 4 {
		t.Errorf("history(2) after cleanup: %+v, %v", h, err)
	}
}

// TestHistoryTimesAreTimeTravelTimes: History shows the timestamps that
// AtTimestamp uses (file modification times made monotonic), so that time
// travel to a printed timestamp loads that version, also for a copied table
// whose files have new modification times and after log cleanup.
func TestHistoryTimesAreTimeTravelTimes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	writer := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) // the writer's clock: commitInfo.timestamp
	sch := schema.NewStruct(field("id", prim(schema.Long), true))
	tbl, err := Create(ctx, "", sch, WithStore(store), WithClock(func() time.Time { return writer }),
		WithTxnOptions(txlog.WithTxnClock(func() time.Time { return writer })))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 11 {
		if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	// File times out of order, as clock skew between writers or a copy
	// makes them: v3 and v4 older than v2, v7 equal to v6.
	base := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	mtimes := map[int64]time.Time{}
	for v := int64(0); v <= 11; v++ {
		m := base.Add(time.Duration(v) * time.Second)
		switch v {
		case 3, 4:
			m = base.Add(time.Second) // older than v2
		case 7:
			m = mtimes[6]
		}
		mtimes[v] = m
		if err := os.Chtimes(filepath.Join(dir, txlog.CommitKey(v)), m, m); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]time.Time{
		2: base.Add(2 * time.Second), 3: base.Add(2*time.Second + time.Millisecond), 4: base.Add(2*time.Second + 2*time.Millisecond),
		6: base.Add(6 * time.Second), 7: base.Add(6*time.Second + time.Millisecond), 11: base.Add(11 * time.Second),
	}
	check := func(name string, oldest int64) {
		t.Helper()
		h, err := tbl.History(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != int(12-oldest) {
			t.Fatalf("%s: %d entries, want %d", name, len(h), 12-oldest)
		}
		for _, e := range h {
			if w, ok := want[e.Version]; ok && !e.Timestamp.Equal(w) {
				t.Errorf("%s: v%d timestamp %s, want %s", name, e.Version, e.Timestamp, w)
			}
			if !e.CommitInfoTimestamp.Equal(writer) {
				t.Errorf("%s: v%d commitInfo timestamp %s, want %s", name, e.Version, e.CommitInfoTimestamp, writer)
			}
			if e.Version < 10 && oldest > 0 {
				continue // before the checkpoint: not reconstructable
			}
			at, err := Open(ctx, "", WithStore(store), AtTimestamp(e.Timestamp))
			if err != nil || at.Version() != e.Version {
				t.Errorf("%s: AtTimestamp(%s) of v%d: %v, %v", name, e.Timestamp, e.Version, at, err)
			}
		}
	}
	check("skewed", 0)
	// A copy: every file gets the copy's time; history follows.
	copied := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v := int64(0); v <= 11; v++ {
		if err := os.Chtimes(filepath.Join(dir, txlog.CommitKey(v)), copied, copied); err != nil {
			t.Fatal(err)
		}
	}
	want = map[int64]time.Time{0: copied, 5: copied.Add(5 * time.Millisecond), 11: copied.Add(11 * time.Millisecond)}
	check("copied", 0)
	// After log cleanup (checkpoint at 10, commits 0-4 removed) the times
	// are made monotonic from the checkpoint on, as time travel does.
	if tbl, err = Open(ctx, "", WithStore(store), AtVersion(10)); err != nil {
		t.Fatal(err)
	}
	if err := txlog.WriteCheckpoint(ctx, tbl.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if tbl, err = Open(ctx, "", WithStore(store)); err != nil {
		t.Fatal(err)
	}
	for v := range int64(5) {
		if err := store.Delete(ctx, txlog.CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	want = map[int64]time.Time{5: copied, 9: copied.Add(4 * time.Millisecond), 10: copied, 11: copied.Add(time.Millisecond)}
	check("cleaned", 5)
	if v, err := tbl.OldestCommit(ctx); err != nil || v != 5 {
		t.Errorf("OldestCommit %d, %v, want 5", v, err)
	}
}

// TestLogHistoryCorruptCommit: LogHistory lists a damaged commit file in
// place (Err a *CorruptLogError naming the file; Version and Timestamp set)
// between the readable commits, with limit counting it; History stops at
// it with the same error.
func TestLogHistoryCorruptCommit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, data string
		limit      int
		want       []string // version:operation, "!" for the damaged one
	}{
		{"garbage", "garbage", 0, []string{"4:WRITE", "3:WRITE", "2:!", "1:WRITE", "0:CREATE TABLE"}},
		{"truncated", `{"add":{"path":"a",`, 0, []string{"4:WRITE", "3:WRITE", "2:!", "1:WRITE", "0:CREATE TABLE"}},
		{"empty", "", 3, []string{"4:WRITE", "3:WRITE", "2:!"}},
		{"limit above it", "x", 2, []string{"4:WRITE", "3:WRITE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, mem := maintTable(t, false, nil)
			for i := range 4 {
				tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, "ams"))
			}
			key := CommitKey(2)
			if key != "_delta_log/00000000000000000002.json" {
				t.Fatalf("CommitKey(2) = %q", key)
			}
			if err := mem.Put(ctx, key, []byte(tc.data)); err != nil {
				t.Fatal(err)
			}
			h, err := LogHistory(ctx, mem, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range h {
				op := e.Operation
				if e.Err != nil {
					op = "!"
					var ce *CorruptLogError
					if !errors.As(e.Err, &ce) || ce.File != key || ce.Version != 2 || e.Timestamp.IsZero() || e.Operation != "" {
						t.Errorf("v2 entry %+v, want a *CorruptLogError for %s with a timestamp", e, key)
					}
				}
				got = append(got, fmt.Sprintf("%d:%s", e.Version, op))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("LogHistory = %v, want %v", got, tc.want)
			}
			_, err = tbl.History(ctx, tc.limit)
			if wantErr := slices.Contains(tc.want, "2:!"); wantErr != errors.Is(err, ErrCorruptLog) {
				t.Errorf("History(%d) err = %v, want a corrupt log error: %t", tc.limit, err, wantErr)
			}
			if oldest, err := OldestCommitOf(ctx, mem); err != nil || oldest != 0 {
				t.Errorf("OldestCommitOf = %d, %v", oldest, err)
			}
		})
	}
	if _, err := LogHistory(ctx, objectstore.NewMem(t.Name()+"-none"), 0); !errors.Is(err, ErrTableNotFound) {
		t.Errorf("LogHistory of an empty store: %v, want ErrTableNotFound", err)
	}
}
