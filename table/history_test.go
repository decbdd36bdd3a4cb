package table

import (
	"context"
	"testing"
	"time"

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
	if e.Operation != "STREAMING UPDATE" || !e.Timestamp.Equal(clock) || e.ReadVersion != 4 ||
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
