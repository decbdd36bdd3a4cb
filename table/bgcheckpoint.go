package table

import (
	"context"
	"fmt"
	"sync"

	"github.com/deltakit/deltakit/txlog"
)

// A table's due checkpoints (every delta.checkpointInterval versions) are
// written in the background by default, after the commit that made them
// due has returned: Open, Create, CreateOrOpen and NewDraft give the table
// a txlog.Checkpointer of its own, shared by every table derived from it
// (writes, Refresh). It runs one goroutine at most, only while a checkpoint
// is queued, and coalesces checkpoints that become due while one is being
// written (only the newest is written next). Checkpoints are optional in
// Delta: one that fails, or that is never written because the process
// exits first, leaves a valid table whose readers replay the log from the
// previous checkpoint.
//
// A process that exits right after its writes (a CLI, a batch job) calls
// Close to wait for the queued checkpoints, or opens the table
// WithSyncCheckpoints to write them inside the commit (Spark's behaviour;
// deltactl does so). WithCheckpointer hands the checkpoints to a
// Checkpointer the caller owns instead.

// bgCheckpoints is the checkpointer of a table lineage (the tables derived
// from one Open or Create) and what Close has already reported of it.
type bgCheckpoints struct {
	cp    *txlog.Checkpointer
	owned bool // the table's default, not the caller's WithCheckpointer

	mu       sync.Mutex
	reported int64 // failures already returned by Close
}

// WithSyncCheckpoints writes each due checkpoint inside the commit that
// made it due, before the commit returns (Spark's behaviour, and the
// default before background checkpoints), instead of in the background:
// for short-lived processes that cannot call Close, and for tests that
// look for the checkpoint right after a commit. CommitResult.Checkpointed
// then reports it.
func WithSyncCheckpoints() Option {
	return func(c *config) {
		c.syncCheckpoints = true
		c.checkpoints = nil
	}
}

// setupCheckpoints gives c its background checkpointer: the
// WithCheckpointer one, or a new one owned by the table unless
// WithSyncCheckpoints. Its transaction option goes first, so that
// WithTxnOptions (txlog.WithCheckpointer, txlog.WithoutAutoCheckpoint)
// still override it.
func (c *config) setupCheckpoints() {
	if c.syncCheckpoints {
		return
	}
	if c.checkpoints == nil {
		c.checkpoints = &bgCheckpoints{cp: txlog.NewCheckpointer(txlog.WithCheckpointLogger(c.logger)), owned: true}
	}
	c.txnOpts = append([]txlog.TxnOption{txlog.WithCheckpointer(c.checkpoints.cp)}, c.txnOpts...)
}

// Close waits until the checkpoints this table and the tables derived from
// it (by writes and Refresh) queued in the background are written, and
// returns the failures since the previous Close (nil when none; a failed
// checkpoint leaves a valid table). When ctx ends first, Close returns
// ctx's error and the checkpoints go on being written.
//
// Close releases nothing that needs releasing (the background writer runs
// only while a checkpoint is queued): a table may be written again after
// Close, and its due checkpoints are queued again. It returns nil at once
// for a table opened WithSyncCheckpoints. With WithCheckpointer, Close
// waits on the caller's Checkpointer without closing it.
func (t *Table) Close(ctx context.Context) error {
	if t == nil {
		return nil
	}
	bg := t.cfg.checkpoints
	if bg == nil {
		return nil
	}
	if err := bg.cp.Flush(ctx); err != nil {
		return fmt.Errorf("table: close %s: waiting for background checkpoints: %w", t.URI(), err)
	}
	st := bg.cp.Stats()
	bg.mu.Lock()
	defer bg.mu.Unlock()
	if st.Failed > bg.reported {
		n := st.Failed - bg.reported
		bg.reported = st.Failed
		return fmt.Errorf("table: close %s: %d background checkpoint(s) failed, the last: %w", t.URI(), n, st.LastErr)
	}
	return nil
}

// CheckpointStats returns what the table's background checkpointer did
// (queued, written, coalesced and failed checkpoints, the last version
// written and the last error), shared by the tables derived from the same
// Open or Create; ok is false when the table writes its checkpoints inside
// the commit (WithSyncCheckpoints).
func (t *Table) CheckpointStats() (stats CheckpointerStats, ok bool) {
	if t == nil {
		return txlog.CheckpointerStats{LastVersion: -1}, false
	}
	if t.cfg.checkpoints == nil {
		return txlog.CheckpointerStats{LastVersion: -1}, false
	}
	return t.cfg.checkpoints.cp.Stats(), true
}
