package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/deltakit/deltakit/txlog"
)

// Group commit: concurrent blind appends of one process to one table share
// a version.
//
// A table opened WithGroupCommit (and every table derived from it) queues
// its blind appends — AppendRows, Append, AppendFiles, CommitFiles and
// streaming epochs in Append mode, each with or without WithTxn — on one
// committer instead of committing each itself. The committer commits one
// batch at a time: the appends queued while the previous batch was being
// committed that started from the same table version become one operation
// (their adds and txn actions, their numeric metrics summed, the parameters
// they agree on), committed through commitOperation's one path. Each caller
// gets back the version that holds its rows and its txn. What cannot share
// a version commits alone, in the order it was queued: an operation that
// is not a blind append (overwrite, replaceWhere, a schema change, DELETE,
// ...; these do not go through the committer at all), an append that
// started from another version than the batch, and a second append with
// the txn appId of one already in the batch.
//
// Errors: when the batch conflicts with a concurrent commit
// (*txlog.ConflictError), each of its appends is committed again alone, so
// that only an append whose own reads conflict (another writer committed
// its appId) fails with the conflict. Any other definite failure (a
// refusal, objectstore.ErrNotStored) is returned to every caller of the
// batch, whose data files are deleted; an unknown outcome
// (txlog.ErrCommitOutcomeUnknown) is returned to every caller with its
// files kept, as for a write committed alone: a retry WithTxn of such a
// write is skipped if the batch landed, so exactly-once holds.
//
// Cancellation: a caller whose context ends while its append waits in the
// queue is taken out of it (its files are deleted) and gets the context's
// error; once its append is in a batch being committed, the caller waits
// for the batch's outcome, which its context does not cancel (the commit
// is bounded by the transaction options: attempts, WithMaxRetryTime). The
// batch commits with the table's transaction options (WithTxnOptions),
// not with a write's WithCommitOptions.

// maxGroup bounds the appends committed as one version.
const maxGroup = 256

// WithGroupCommit makes concurrent blind appends of this process to the
// table (from the tables derived from this Open or Create: share one
// *Table between the goroutines, or tables derived from it) commit
// together as one version when they started from the same version (see
// the group commit comment in groupcommit.go): fewer versions, fewer
// conditional PUTs and fewer lost races under load. Off by default: with
// it, one append's commit may wait for the commit of the batch before it.
func WithGroupCommit() Option {
	return func(c *config) { c.group = &groupCommitter{} }
}

// groupCommitter queues the blind appends of one table lineage and commits
// them in batches, one batch at a time, on a goroutine that runs only
// while the queue is not empty.
type groupCommitter struct {
	mu      sync.Mutex
	queue   []*groupWaiter
	running bool
	stats   GroupCommitStats
}

// GroupCommitStats counts what a table's group committer did
// (WithGroupCommit).
type GroupCommitStats struct {
	// Appends counts the appends queued; Versions the versions they
	// created (a batch's shared version counts once).
	Appends, Versions int64
	// Batches counts commits of two or more appends as one version;
	// Alone the appends committed alone (a batch of one, or split off).
	Batches, Alone int64
	// Retried counts appends committed alone again after their batch
	// conflicted.
	Retried int64
}

// GroupCommitStats returns what the table's group committer did, shared
// by the tables derived from the same Open or Create; ok is false without
// WithGroupCommit.
func (t *Table) GroupCommitStats() (stats GroupCommitStats, ok bool) {
	if t == nil {
		return GroupCommitStats{}, false
	}
	g := t.cfg.group
	if g == nil {
		return GroupCommitStats{}, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats, true
}

// groupWaiter is one queued append and, once done is closed, its outcome.
type groupWaiter struct {
	ctx context.Context
	t   *Table
	op  *operation

	done chan struct{}
	nt   *Table
	res  *txlog.CommitResult
	err  error
}

// groupable reports whether op may share a version with other appends: a
// blind append (or Append-mode streaming epoch) that changes no metadata,
// removes nothing and is not skipped.
func (op *operation) groupable() bool {
	if op.skip || op.metadata != nil || op.protocol != nil || len(op.removes) > 0 || op.tx == nil || op.tx.ReadVersion() < 0 {
		return false
	}
	switch op.name {
	case "WRITE":
		return op.params["mode"] == modeAppend.String()
	case StreamingUpdateOperation:
		return op.params["outputMode"] == "Append"
	}
	return false
}

// commit queues op (of table t) and waits for the commit of the batch
// that holds it.
func (g *groupCommitter) commit(ctx context.Context, t *Table, op *operation) (*Table, *txlog.CommitResult, error) {
	w := &groupWaiter{ctx: ctx, t: t, op: op, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	g.stats.Appends++
	if !g.running {
		g.running = true
		go g.run()
	}
	g.mu.Unlock()
	select {
	case <-w.done:
		return w.nt, w.res, w.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	for i, q := range g.queue {
		if q == w {
			g.queue = append(g.queue[:i:i], g.queue[i+1:]...)
			g.stats.Appends--
			g.mu.Unlock()
			deleteFiles(t.store, op.written, t.cfg.logger)
			return nil, nil, fmt.Errorf("table: %s %s: waiting for the group commit: %w", op.verb, t.URI(), ctx.Err())
		}
	}
	g.mu.Unlock()
	// Already in a batch being committed: its outcome is this append's.
	<-w.done
	return w.nt, w.res, w.err
}

// run commits batches until the queue is empty.
func (g *groupCommitter) run() {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		batch, alone := g.take()
		g.mu.Unlock()
		if len(batch) > 0 {
			g.commitBatch(batch)
		}
		for _, w := range alone {
			g.commitAlone(w, false)
		}
	}
}

// take removes from the queue the batch to commit next — the appends
// that started from the version of the oldest queued one, with distinct
// txn appIds and the same operation — and the appends of that version
// that must commit alone (a repeated appId). Appends of other versions
// stay queued for the next round. Called with g.mu held.
func (g *groupCommitter) take() (batch, alone []*groupWaiter) {
	first := g.queue[0]
	version, name := first.t.Version(), first.op.name
	apps := map[string]bool{}
	rest := g.queue[:0:0]
	for _, w := range g.queue {
		if w.t.Version() != version || len(batch) >= maxGroup {
			rest = append(rest, w)
			continue
		}
		dup := w.op.name != name
		for _, x := range w.op.txns {
			dup = dup || apps[x.AppID]
		}
		if dup {
			alone = append(alone, w)
			continue
		}
		for _, x := range w.op.txns {
			apps[x.AppID] = true
		}
		batch = append(batch, w)
	}
	g.queue = rest
	return batch, alone
}

// commitAlone commits w's operation as a version of its own.
func (g *groupCommitter) commitAlone(w *groupWaiter, retried bool) {
	w.nt, w.res, w.err = w.t.commitAlone(context.WithoutCancel(w.ctx), w.op)
	g.mu.Lock()
	g.stats.Alone++
	if retried {
		g.stats.Retried++
	}
	if w.err == nil {
		g.stats.Versions++
	}
	g.mu.Unlock()
	close(w.done)
}

// commitBatch commits the appends of batch as one version, or w alone for
// a batch of one.
func (g *groupCommitter) commitBatch(batch []*groupWaiter) {
	if len(batch) == 1 {
		g.commitAlone(batch[0], false)
		return
	}
	merged := mergeAppends(batch)
	lead := batch[0]
	nt, res, err := lead.t.commitAlone(context.WithoutCancel(lead.ctx), merged)
	var ce *txlog.ConflictError
	if err != nil && errors.As(err, &ce) {
		// One append's reads may conflict (its appId was committed
		// concurrently): commit each alone, so that only that one fails.
		for _, w := range batch {
			g.commitAlone(w, true)
		}
		return
	}
	if err != nil && definitelyNotCommitted(err) {
		for _, w := range batch {
			deleteFiles(w.t.store, w.op.written, w.t.cfg.logger)
		}
	}
	g.mu.Lock()
	g.stats.Batches++
	if err == nil {
		g.stats.Versions++
	}
	g.mu.Unlock()
	for _, w := range batch {
		w.nt, w.err = nt, err
		if res != nil {
			r := *res
			w.res = &r
		}
		close(w.done)
	}
}

// mergeAppends returns the one operation that commits every append of
// batch (two or more, from the same version): their adds and txn actions,
// each appId recorded as read by the new transaction (so that a concurrent
// commit of any of them conflicts), the numeric metrics summed and the
// parameters they all agree on. Its written files are left empty: the
// group committer cleans up per append.
func mergeAppends(batch []*groupWaiter) *operation {
	lead := batch[0]
	op := &operation{name: lead.op.name, verb: lead.op.verb, tx: lead.t.newTransaction(lead.op.name), start: lead.op.start,
		params: maps.Clone(lead.op.params), metrics: map[string]string{}}
	sums := map[string]int64{}
	for i, w := range batch {
		if w.op.start.Before(op.start) {
			op.start = w.op.start
		}
		op.adds = append(op.adds, w.op.adds...)
		for _, x := range w.op.txns {
			op.tx.TxnVersion(x.AppID)
			op.txns = append(op.txns, x)
		}
		for k, v := range op.params {
			if i > 0 && w.op.params[k] != v {
				delete(op.params, k)
			}
		}
		for k, v := range w.op.metrics {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				sums[k] += n
			} else if _, ok := op.metrics[k]; !ok {
				op.metrics[k] = v
			}
		}
	}
	for k, n := range sums {
		op.metrics[k] = strconv.FormatInt(n, 10)
	}
	if _, ok := op.metrics["executionTimeMs"]; ok {
		op.metrics["executionTimeMs"] = strconv.FormatInt(time.Since(op.start).Milliseconds(), 10)
	}
	op.params["groupedAppends"] = strconv.Itoa(len(batch))
	return op
}
