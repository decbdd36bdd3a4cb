package streamsink

import (
	"context"
	"errors"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// TestSinkWithCheckpointer writes epochs through a sink whose checkpoints
// are written in the background, lets the background checkpoint of version
// 10 succeed or die at each step, and restarts the query: the restarted
// sink resumes after the last epoch, skips replays, and every row is in the
// table once.
func TestSinkWithCheckpointer(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		fault   *faultstore.Fault
		wantErr error
		wantCP  int64 // checkpoint the restarted sink's table starts from
	}{
		{name: "checkpoint written", wantCP: 10},
		{name: "crash before the checkpoint file", wantErr: faultstore.ErrCrashed, wantCP: 5,
			fault: &faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: txlog.CheckpointKey(10), Nth: 1, Kind: faultstore.Crash}},
		{name: "crash before _last_checkpoint", wantErr: faultstore.ErrCrashed, wantCP: 10,
			fault: &faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: txlog.LastCheckpointKey, Nth: 2, Kind: faultstore.Crash}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem(t.Name())
			if _, err := table.Create(ctx, "", eventSchema, table.WithStore(mem),
				table.WithProperties(map[string]string{txlog.PropCheckpointInterval: "5"})); err != nil {
				t.Fatal(err)
			}
			store := faultstore.New(mem)
			if tc.fault != nil {
				store.Inject(*tc.fault)
			}
			cp := txlog.NewCheckpointer()
			sink, err := Open(ctx, "", "q", []Option{WithCheckpointer(cp)}, table.WithStore(store))
			if err != nil {
				t.Fatal(err)
			}
			for epoch := range int64(10) { // versions 1..10
				res, err := sink.WriteEpoch(ctx, epoch, epochRows(epoch, 3))
				if err != nil || res.Version != epoch+1 {
					t.Fatalf("epoch %d: %+v, %v", epoch, res, err)
				}
				if res.Version == 5 {
					// Checkpoint 5 is written before 10 is due.
					if err := cp.Flush(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := cp.Close(ctx); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("Close = %v, want %v", err, tc.wantErr)
			}
			if st := cp.Stats(); st.Queued != 2 {
				t.Fatalf("stats %+v, want 2 checkpoints queued", st)
			}

			// The restarted query, on the table as the dead writer left it.
			restarted, err := Open(ctx, "", "q", nil, table.WithStore(mem))
			if err != nil {
				t.Fatal(err)
			}
			if cpv := restarted.Table().Snapshot().CheckpointVersion(); cpv != tc.wantCP {
				t.Fatalf("restarted from checkpoint %d, want %d", cpv, tc.wantCP)
			}
			last, err := restarted.LastCommittedEpoch(ctx)
			if err != nil || last != 9 {
				t.Fatalf("LastCommittedEpoch = %d, %v; want 9", last, err)
			}
			for _, epoch := range []int64{9, 10, 11} {
				res, err := restarted.WriteEpoch(ctx, epoch, epochRows(epoch, 3))
				if err != nil || res.Skipped != (epoch == 9) {
					t.Fatalf("epoch %d: %+v, %v", epoch, res, err)
				}
			}
			if n := liveRows(t, mem); n != 12*3 {
				t.Fatalf("%d live rows, want %d", n, 12*3)
			}
		})
	}
}

// TestSinkDefaultBackgroundCheckpoints: without WithCheckpointer, a sink's
// epochs queue their due checkpoints on the table's own background
// checkpointer (none is written inside an epoch's commit), and Close waits
// for them: the reopened table starts from the last one.
func TestSinkDefaultBackgroundCheckpoints(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem(t.Name())
	if _, err := table.Create(ctx, "", eventSchema, table.WithStore(mem),
		table.WithProperties(map[string]string{txlog.PropCheckpointInterval: "5"})); err != nil {
		t.Fatal(err)
	}
	sink, err := Open(ctx, "", "q", nil, table.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	for epoch := range int64(10) {
		if _, err := sink.WriteEpoch(ctx, epoch, epochRows(epoch, 3)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, ok := sink.Table().CheckpointStats()
	if !ok || st.Queued != 2 || st.LastVersion != 10 || st.Failed != 0 {
		t.Fatalf("checkpoint stats %+v (background %v), want 2 queued, the last at 10", st, ok)
	}
	re, err := table.Open(ctx, "", table.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	if v := re.Snapshot().CheckpointVersion(); v != 10 {
		t.Fatalf("reopened from checkpoint %d, want 10", v)
	}
}
