package table

import (
	"context"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// TestWithCheckpointer: appends of a table opened WithCheckpointer queue
// their due checkpoints; after Close the checkpoint of the last due version
// is in the store and a reopened table reads from it the same files.
func TestWithCheckpointer(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		appends  int
		interval string
		wantCP   int64 // newest checkpoint version after Close; -1 none
	}{
		{"no checkpoint due", 2, "3", -1},
		{"one due", 4, "3", 3},
		{"several due", 8, "3", 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem(t.Name())
			cp := txlog.NewCheckpointer()
			tbl, err := Create(ctx, "", maintSchema(), WithStore(mem), WithCheckpointer(cp),
				WithProperties(map[string]string{txlog.PropCheckpointInterval: tc.interval}))
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.appends {
				tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, "rome", "oslo"))
			}
			if err := cp.Close(ctx); err != nil {
				t.Fatal(err)
			}
			st := cp.Stats()
			if st.LastVersion != tc.wantCP || st.Failed != 0 {
				t.Fatalf("stats %+v, want last checkpoint %d", st, tc.wantCP)
			}
			if want := int64(tc.appends / 3); st.Written+st.Coalesced != want {
				t.Fatalf("stats %+v, want %d due checkpoints", st, want)
			}
			for v := int64(1); v <= int64(tc.appends); v++ {
				// Earlier due checkpoints may have been coalesced into
				// the newest; no other version has one.
				_, err := mem.Stat(ctx, txlog.CheckpointKey(v))
				if exists := err == nil; v == tc.wantCP && !exists || v%3 != 0 && exists {
					t.Errorf("checkpoint %d exists %v (%v)", v, exists, err)
				}
			}
			opened, err := Open(ctx, "", WithStore(mem))
			if err != nil {
				t.Fatal(err)
			}
			snap := opened.Snapshot()
			if snap.Version() != tbl.Version() || snap.CheckpointVersion() != tc.wantCP {
				t.Fatalf("reopened version %d from checkpoint %d, want %d from %d",
					snap.Version(), snap.CheckpointVersion(), tbl.Version(), tc.wantCP)
			}
			if got, want := filePaths(snap), filePaths(tbl.Snapshot()); !slices.Equal(got, want) || len(got) < tc.appends {
				t.Fatalf("reopened files %v, want %v", got, want)
			}
			if got, want := readAllRows(t, opened), readAllRows(t, tbl); len(got) != 10*tc.appends || renderRows(got) != renderRows(want) {
				t.Fatalf("reopened rows differ: %d rows, want %d", len(got), len(want))
			}
		})
	}
}

func filePaths(s *txlog.Snapshot) []string {
	var out []string
	for _, f := range s.Files() {
		out = append(out, f.Path)
	}
	return out
}

func renderRows(rows []value.Row) string {
	var out string
	for _, r := range rows {
		out += renderRow(r) + "\n"
	}
	return out
}
