package txlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// ErrCheckpointerClosed is returned by Checkpointer.enqueue after Close, and
// set as CommitResult.CheckpointErr when a commit hands its due checkpoint
// to a closed Checkpointer (the commit itself succeeded).
var ErrCheckpointerClosed = errors.New("checkpointer closed")

// CheckpointerOption configures NewCheckpointer.
type CheckpointerOption func(*Checkpointer)

// WithCheckpointLogger logs failed background checkpoints (Warn) and
// written ones (Debug). Default: slog.Default().
func WithCheckpointLogger(l *slog.Logger) CheckpointerOption {
	return func(c *Checkpointer) { c.logger = l }
}

// Checkpointer writes checkpoints in the background, off the commit latency
// path, for long-running writers (a service, a streaming sink). A
// Transaction given WithCheckpointer hands it the post-commit snapshot when a
// checkpoint is due instead of writing the checkpoint inside Commit.
//
// Snapshots are written one at a time by a single goroutine, which exists
// only while there is work and is owned by the Checkpointer: Close waits for
// it. Work coalesces per table (keyed by the store's URI and the table id of
// metaData, so a table created again at a URI starts afresh; snapshots of a
// store whose URI is "" never coalesce): when several checkpoints of one
// table become due while another is being written, only the newest is
// written next. Checkpoints are optional in Delta, so a
// checkpoint that fails, or is never written because the process stops,
// leaves a valid table: WriteCheckpoint writes the checkpoint file before
// "_last_checkpoint", and readers ignore a checkpoint the hint does not name
// or fall back to the log.
//
// A Checkpointer may serve many tables and is safe for concurrent use; it
// remembers the newest version written per table. The caller owns it and
// must call Close.
type Checkpointer struct {
	logger *slog.Logger
	write  func(context.Context, *Snapshot) error // WriteCheckpoint; tests replace it

	ctx    context.Context // of the background writes; cancel aborts them
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []string             // tables with a pending snapshot, oldest first
	pending map[string]*Snapshot // the newest due snapshot of each queued table
	written map[string]int64     // the newest version written or being written, per table
	done    chan struct{}        // closed when the running worker exits; nil when none runs
	closed  bool
	anon    int64 // snapshots queued from stores without a URI
	stats   CheckpointerStats
}

// CheckpointerStats counts what a Checkpointer did.
type CheckpointerStats struct {
	// Queued counts snapshots accepted by enqueue.
	Queued int64
	// Written counts checkpoints written successfully.
	Written int64
	// Coalesced counts accepted snapshots that were not written because a
	// newer snapshot of the same table was queued or written first.
	Coalesced int64
	// Failed counts checkpoints whose writing failed or was cancelled.
	Failed int64
	// Dropped counts queued snapshots discarded by a Close whose context
	// ended first.
	Dropped int64
	// LastVersion is the table version of the checkpoint written last (of
	// any table), -1 when none was written.
	LastVersion int64
	// LastErr is the last failure, nil when none.
	LastErr error
}

// NewCheckpointer returns an idle Checkpointer. It starts no goroutine until
// work is queued.
func NewCheckpointer(opts ...CheckpointerOption) *Checkpointer {
	c := &Checkpointer{write: WriteCheckpoint, pending: map[string]*Snapshot{}, written: map[string]int64{}}
	c.stats.LastVersion = -1
	for _, o := range opts {
		o(c)
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

// enqueue queues a checkpoint of snap and returns at once. A snapshot not
// newer than one already queued, being written or written for the same
// table is counted as coalesced and dropped; an older queued snapshot of the
// table is replaced by snap. It returns ErrCheckpointerClosed after Close,
// and an error for a nil snapshot.
func (c *Checkpointer) enqueue(snap *Snapshot) error {
	if snap == nil || snap.store == nil {
		return errors.New("txlog: checkpointer: nil snapshot")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := snap.store.URI()
	if key == "" {
		// No identity to coalesce by: a key of its own.
		c.anon++
		key = fmt.Sprintf("\x00store without URI #%d", c.anon)
	} else if snap.metadata != nil {
		// A table deleted and created again at the URI is another table:
		// its versions start again.
		key += "\x00" + snap.metadata.ID
	}
	if c.closed {
		return fmt.Errorf("txlog: checkpoint of version %d: %w", snap.version, ErrCheckpointerClosed)
	}
	c.stats.Queued++
	if w, ok := c.written[key]; ok && w >= snap.version {
		c.stats.Coalesced++
		return nil
	}
	if old, ok := c.pending[key]; ok {
		c.stats.Coalesced++
		if old.version >= snap.version {
			return nil
		}
	} else {
		c.queue = append(c.queue, key)
	}
	c.pending[key] = snap
	if c.done == nil {
		c.done = make(chan struct{})
		go c.run(c.done)
	}
	return nil
}

// run writes queued snapshots until the queue is empty, then exits and
// closes done.
func (c *Checkpointer) run(done chan struct{}) {
	defer close(done)
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.done = nil
			c.mu.Unlock()
			return
		}
		key := c.queue[0]
		c.queue = c.queue[1:]
		snap := c.pending[key]
		delete(c.pending, key)
		prev, hadPrev := c.written[key]
		c.written[key] = snap.version
		c.mu.Unlock()

		err := c.safeWrite(snap)

		c.mu.Lock()
		if err != nil {
			err = fmt.Errorf("txlog: background checkpoint of %s version %d: %w", snap.store.URI(), snap.version, err)
			c.stats.Failed++
			c.stats.LastErr = err
			// A later snapshot may retry this table.
			if hadPrev {
				c.written[key] = prev
			} else {
				delete(c.written, key)
			}
		} else {
			c.stats.Written++
			c.stats.LastVersion = snap.version
		}
		if strings.HasPrefix(key, "\x00") {
			delete(c.written, key) // never queued again
		}
		c.mu.Unlock()
		if err != nil {
			c.logger.Warn("txlog: background checkpoint failed", "table", snap.store.URI(), "version", snap.version, "err", err)
		} else {
			c.logger.Debug("txlog: background checkpoint written", "table", snap.store.URI(), "version", snap.version)
		}
	}
}

// Flush waits until the queue is empty and no checkpoint is being written
// (written or failed: Stats tells which). It returns ctx's error when ctx
// ends first; the work goes on.
func (c *Checkpointer) Flush(ctx context.Context) error {
	for {
		c.mu.Lock()
		done := c.done
		c.mu.Unlock()
		if done == nil {
			return nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops accepting work (enqueue then returns ErrCheckpointerClosed),
// waits until the queued checkpoints are written and returns the last
// failure of the Checkpointer's lifetime, nil when none. When ctx ends
// first, the queued checkpoints are dropped (the table stays valid: readers
// replay the log instead), the one being written is cancelled and Close
// returns once its write has returned (its store calls stop at the
// cancellation; encoding a large checkpoint does not), with an error that
// also wraps ctx.Err(). Close may be called more than once.
func (c *Checkpointer) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	var cerr error
	if err := c.Flush(ctx); err != nil {
		c.mu.Lock()
		n := len(c.queue)
		c.stats.Dropped += int64(n)
		c.queue = nil
		clear(c.pending)
		done := c.done
		c.mu.Unlock()
		c.cancel()
		if done != nil {
			<-done
		}
		cerr = fmt.Errorf("txlog: closing checkpointer: %w (%d queued checkpoints dropped)", err, n)
	}
	c.cancel()
	c.mu.Lock()
	last := c.stats.LastErr
	c.mu.Unlock()
	return errors.Join(cerr, last)
}

// Stats returns what the Checkpointer did so far.
func (c *Checkpointer) Stats() CheckpointerStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// safeWrite writes snap's checkpoint, turning a panic into an error: a
// background goroutine must not take the process down where a synchronous
// checkpoint would have failed one commit's checkpoint.
func (c *Checkpointer) safeWrite(snap *Snapshot) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("txlog: checkpoint writer panicked: %v", r)
		}
	}()
	return c.write(c.ctx, snap)
}
