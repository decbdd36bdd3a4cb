package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
)

// prefixSeq makes the store prefixes of one process unique.
var prefixSeq atomic.Int64

// uniquePrefix returns a prefix no other call of this process returns.
func uniquePrefix(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), prefixSeq.Add(1))
}

// storesAt returns one S3 store (its own client) on s3 per sub, each at
// sub below one fresh uniquePrefix(name): "p2" and {"table", "raw"} give
// stores at p2-<unique>/table and p2-<unique>/raw.
func storesAt(ctx context.Context, s3 *testenv.MinIO, name string, subs ...string) ([]*objectstore.S3, error) {
	prefix := uniquePrefix(name)
	stores := make([]*objectstore.S3, len(subs))
	for i, sub := range subs {
		st, err := s3.StoreAt(ctx, prefix+"/"+sub)
		if err != nil {
			return nil, err
		}
		stores[i] = st
	}
	return stores, nil
}

// commitBench is the state of P1: a table on S3 that grows by one one-file
// blind append per commit step, and a second prefix where a bare
// PutIfAbsent writes the bytes of deltakit's latest commit to fresh keys.
// With a Checkpointer (background), due checkpoints are written off the
// commit path, as a long-running service would; without one, inside Commit.
type commitBench struct {
	rec  *recordingStore
	bare objectstore.Store
	snap *txlog.Snapshot
	opts []txlog.TxnOption
	cp   *txlog.Checkpointer // nil: synchronous checkpoints
	// tbl, when set, commits through the table package in its default
	// configuration (table.Open with only WithStore: due checkpoints in
	// the table's own background checkpointer) instead of txlog.
	tbl   *table.Table
	files int64 // files committed so far
	puts  int64 // bare PUTs so far

	due     int   // commits that had a checkpoint due (written or queued)
	lastDue int64 // version of the last such commit, -1 none
}

// newCommitBench creates the table: empty when files is 0, else generated
// with that many live files (10,000 per commit) and a checkpoint of its
// latest version, as a table that has been written for a while. With
// background, commits hand due checkpoints to a txlog.Checkpointer that the
// caller closes with closeCheckpointer.
func newCommitBench(ctx context.Context, s3 *testenv.MinIO, files int, background bool, opts ...txlog.TxnOption) (*commitBench, error) {
	stores, err := storesAt(ctx, s3, "p1", "table", "bare")
	if err != nil {
		return nil, err
	}
	store, bare := stores[0], stores[1]
	// Committed files are numbered from 10,000,000: no path of a generated
	// table (commit version, file index) is ever reused.
	c := &commitBench{rec: &recordingStore{Store: store}, bare: bare, opts: opts, files: 10_000_000, lastDue: -1}
	if background {
		c.useCheckpointer()
	}
	if files == 0 {
		c.snap, err = createTable(ctx, c.rec)
		return c, err
	}
	perCommit := min(files, 10_000)
	commits := int64(files / perCommit)
	if err := GenerateTable(ctx, store, TableSpec{Commits: commits, FilesPerCommit: perCommit, CheckpointAt: commits}); err != nil {
		return nil, err
	}
	c.snap, err = txlog.Load(ctx, c.rec)
	return c, err
}

// useDefaultTable makes the next commits go through a *table.Table opened
// with nothing but its store: the default configuration.
func (c *commitBench) useDefaultTable(ctx context.Context) error {
	tbl, err := table.Open(ctx, "", table.WithStore(c.rec))
	if err != nil {
		return err
	}
	c.tbl, c.cp = tbl, nil
	c.due, c.lastDue = 0, -1
	return nil
}

// flush waits for the bench's queued background checkpoint.
func (c *commitBench) flush(ctx context.Context) error {
	if c.tbl != nil {
		return c.tbl.Close(ctx)
	}
	if c.cp != nil {
		return c.cp.Flush(ctx)
	}
	return nil
}

// background reports whether due checkpoints are written off the commit.
func (c *commitBench) background() bool { return c.cp != nil || c.tbl != nil }

// useCheckpointer makes the next commits write their due checkpoints in
// the background.
func (c *commitBench) useCheckpointer() {
	c.cp = txlog.NewCheckpointer()
	c.due, c.lastDue = 0, -1
}

// createTable commits version 0 of a flights table through txlog and
// returns its snapshot.
func createTable(ctx context.Context, store objectstore.Store) (*txlog.Snapshot, error) {
	v0, err := createActions()
	if err != nil {
		return nil, err
	}
	res, err := txlog.CreateTransaction(store, v0[1].Protocol, v0[2].Metadata).Commit(ctx)
	if err != nil {
		return nil, err
	}
	if res.Snapshot == nil {
		return txlog.Load(ctx, store)
	}
	return res.Snapshot, nil
}

// commit commits one blind append of one file and reports whether a
// checkpoint was due with it (written inside Commit, or queued on the
// background Checkpointer).
func (c *commitBench) commit(ctx context.Context) (due bool, err error) {
	if c.tbl != nil {
		c.files++
		nt, res, err := c.tbl.CommitFiles(ctx, []*txlog.Add{genAdd(c.files, 0, time.Now().UnixMilli())})
		if err != nil {
			return false, err
		}
		if res.CheckpointErr != nil {
			return false, res.CheckpointErr
		}
		c.tbl, c.snap = nt, nt.Snapshot()
		if due = res.Checkpointed || res.CheckpointQueued; due {
			c.due++
			c.lastDue = res.Version
		}
		return due, nil
	}
	opts := c.opts
	if c.cp != nil {
		opts = append(opts[:len(opts):len(opts)], txlog.WithCheckpointer(c.cp))
	}
	tx := txlog.NewTransaction(c.snap, "WRITE", opts...)
	c.files++
	tx.Add(txlog.Action{Add: genAdd(c.files, 0, time.Now().UnixMilli())})
	tx.SetOperationParameters(map[string]string{"mode": "Append", "partitionBy": "[]"})
	res, err := tx.Commit(ctx)
	if err != nil {
		return false, err
	}
	if res.Snapshot == nil {
		return false, errors.New("bench: commit returned no snapshot")
	}
	if res.CheckpointErr != nil {
		return false, res.CheckpointErr
	}
	c.snap = res.Snapshot
	due = res.Checkpointed || res.CheckpointQueued
	if due {
		c.due++
		c.lastDue = res.Version
	}
	return due, nil
}

// closeCheckpointer waits for the background checkpoints and checks that
// every due one was written and that the table now loads from the last
// one. It returns how many were written; without a Checkpointer, 0.
func (c *commitBench) closeCheckpointer(ctx context.Context) (int64, error) {
	var st txlog.CheckpointerStats
	switch {
	case c.tbl != nil:
		if err := c.tbl.Close(ctx); err != nil {
			return 0, fmt.Errorf("bench: background checkpoints: %w", err)
		}
		st, _ = c.tbl.CheckpointStats()
	case c.cp != nil:
		if err := c.cp.Close(ctx); err != nil {
			return 0, fmt.Errorf("bench: background checkpoints: %w", err)
		}
		st = c.cp.Stats()
	default:
		return 0, nil
	}
	if c.due == 0 || st.Written == 0 {
		return st.Written, fmt.Errorf("bench: no background checkpoint was written (%d due, stats %+v)", c.due, st)
	}
	if st.LastVersion != c.lastDue {
		return st.Written, fmt.Errorf("bench: last background checkpoint is version %d, want %d (stats %+v)", st.LastVersion, c.lastDue, st)
	}
	snap, err := txlog.Load(ctx, c.rec.Store)
	if err != nil {
		return st.Written, err
	}
	if snap.CheckpointVersion() != c.lastDue || snap.Version() != c.snap.Version() {
		return st.Written, fmt.Errorf("bench: table loads version %d from checkpoint %d, want %d from %d",
			snap.Version(), snap.CheckpointVersion(), c.snap.Version(), c.lastDue)
	}
	return st.Written, nil
}

// put writes the bytes of the latest deltakit commit to a fresh key with a
// bare PutIfAbsent.
func (c *commitBench) put(ctx context.Context) error {
	data := c.rec.lastPutIfAbsent()
	c.puts++
	return c.bare.PutIfAbsent(ctx, txlog.CommitKey(c.puts), data)
}

// commitSeries is what pairs measured on one commitBench.
type commitSeries struct {
	commits []time.Duration // every measured commit
	plain   []time.Duration // the commits without a checkpoint due
	puts    []time.Duration // the bare PUTs interleaved with them
	cpWait  []time.Duration // background: the wait for a queued checkpoint
	due     int             // measured commits with a checkpoint due
}

// addSeries adds to f one metric of s per name, named prefix+name, in
// order, and returns them. A name is "<stem>_p<NN>" (quantile NN/100) with
// stem commit or deltakit_commit (the commits, ms), bare_put (the PUTs,
// ms), background_checkpoint (the checkpoint waits, ms) or ratio (commit
// over PUT at that quantile, x); "ratio_p<NN>_no_checkpoint" leaves out
// the commits with a checkpoint due.
func (f *Figure) addSeries(prefix string, s commitSeries, names ...string) ([]*Metric, error) {
	out := make([]*Metric, 0, len(names))
	for _, name := range names {
		base, noCheckpoint := strings.CutSuffix(name, "_no_checkpoint")
		i := strings.LastIndex(base, "_p")
		if i < 0 {
			return nil, fmt.Errorf("bench: metric %q: want <stem>_p<NN>", name)
		}
		stem := base[:i]
		pct, err := strconv.Atoi(base[i+2:])
		if err != nil || pct <= 0 || pct >= 100 || (noCheckpoint && stem != "ratio") {
			return nil, fmt.Errorf("bench: metric %q: want <stem>_p<NN> (1 <= NN <= 99, _no_checkpoint after ratio only)", name)
		}
		commits := s.commits
		if noCheckpoint {
			commits = s.plain
		}
		qq := float64(pct) / 100
		var m *Metric
		switch stem {
		case "commit", "deltakit_commit":
			m = f.add(prefix+name, ms(quantile(commits, qq)), "ms")
		case "bare_put":
			m = f.add(prefix+name, ms(quantile(s.puts, qq)), "ms")
		case "background_checkpoint":
			m = f.add(prefix+name, ms(quantile(s.cpWait, qq)), "ms")
		case "ratio":
			m = f.add(prefix+name, ratio(quantile(commits, qq), quantile(s.puts, qq)), "x")
		default:
			return nil, fmt.Errorf("bench: metric %q: unknown series %q", name, stem)
		}
		out = append(out, m)
	}
	return out, nil
}

// pairs runs warmup+n rounds; in each, every bench commits (timed), waits
// for its background checkpoint when one was queued and paced is set
// (untimed: the bare PUT that follows is a floor with no checkpoint running
// beside it, and the next commit starts with none running either), and does
// its bare PUT (timed). Unpaced, the background checkpoint runs beside the
// next PUTs and commits. Several benches interleave their pairs round by
// round, in an order that rotates from round to round (round i starts with
// bench i mod len(benches)), so that no bench always comes first or right
// after another's pairs.
func pairs(ctx context.Context, benches []*commitBench, warmup, n int, paced bool) ([]commitSeries, error) {
	out := make([]commitSeries, len(benches))
	for i := range warmup + n {
		for k := range benches {
			b := (i + k) % len(benches)
			c := benches[b]
			t0 := time.Now()
			due, err := c.commit(ctx)
			d := time.Since(t0)
			if err != nil {
				return nil, err
			}
			var wait time.Duration
			if due && c.background() && paced {
				t0 = time.Now()
				if err := c.flush(ctx); err != nil {
					return nil, err
				}
				wait = time.Since(t0)
			}
			t0 = time.Now()
			if err := c.put(ctx); err != nil {
				return nil, err
			}
			p := time.Since(t0)
			if i < warmup {
				continue
			}
			s := &out[b]
			s.commits, s.puts = append(s.commits, d), append(s.puts, p)
			if due {
				s.due++
				if c.background() {
					s.cpWait = append(s.cpWait, wait)
				}
			} else {
				s.plain = append(s.plain, d)
			}
		}
	}
	return out, nil
}

// CommitFigure measures P1: the latency of one-file blind append commits
// (txlog transaction with one add; the default checkpoint interval of 10
// applies) and of bare PutIfAbsent calls of the same bytes to fresh keys on
// the same MinIO server, interleaved one to one. The measured commits write
// their due checkpoints in the background (txlog.Checkpointer), as a
// long-running writer would; a second table whose commits checkpoint
// synchronously (txlog Commit's default, table.WithSyncCheckpoints) is
// measured in the same rounds and reported as sync_*, and a third written
// through the table package in its default configuration (background
// checkpoints with nothing configured) as default_*.
func CommitFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P1", Title: "commit latency vs bare conditional PUT",
		Setup: fmt.Sprintf("MinIO on localhost; %d interleaved pairs (after %d warm-up pairs) of a one-file blind append "+
			"(txlog.NewTransaction + Commit, default checkpoint interval 10, checkpoints written in the background by a txlog.Checkpointer) "+
			"and a bare PutIfAbsent of the same commit bytes to a fresh key; in the same rounds, the same pairs on a second table "+
			"whose commits write their checkpoints synchronously (sync_*) and on a third written through table.CommitFiles "+
			"in the table package's default configuration (default_*)",
			cfg.CommitPairs, cfg.CommitWarmup)}
	if env.skipWithoutS3(fig) {
		return fig, nil
	}
	bg, err := newCommitBench(ctx, env.S3, 0, true)
	if err != nil {
		return fig, err
	}
	syncB, err := newCommitBench(ctx, env.S3, 0, false)
	if err != nil {
		return fig, err
	}
	def, err := newCommitBench(ctx, env.S3, 0, false)
	if err != nil {
		return fig, err
	}
	if err := def.useDefaultTable(ctx); err != nil {
		return fig, err
	}
	res, err := pairs(ctx, []*commitBench{bg, syncB, def}, cfg.CommitWarmup, cfg.CommitPairs, true)
	if err != nil {
		return fig, err
	}
	defWritten, err := def.closeCheckpointer(ctx)
	if err != nil {
		return fig, fmt.Errorf("bench: default table: %w", err)
	}
	// Then back to back on the same table: the background checkpoint runs
	// beside the following PUTs and commits, as at a commit rate it cannot
	// keep up with.
	unpaced, err := pairs(ctx, []*commitBench{bg}, 0, max(cfg.CommitPairs/2, 10), false)
	if err != nil {
		return fig, err
	}
	written, err := bg.closeCheckpointer(ctx)
	if err != nil {
		return fig, err
	}
	b, s, u, d := res[0], res[1], unpaced[0], res[2]
	m, err := fig.addSeries("default_", d, "commit_p50", "bare_put_p50", "commit_p99", "bare_put_p99", "ratio_p50", "ratio_p99")
	if err != nil {
		return fig, err
	}
	fig.goalFull(cfg, m[4], "<=", 1.05)
	fig.goalFull(cfg, m[5], "<=", 1.15)
	fig.add("default_checkpoints_written", float64(defWritten), "count")
	fig.note("default_*: a third table in the same rounds, written through the table package in its default configuration "+
		"(table.Open with only WithStore, then Table.CommitFiles of one add: the due checkpoints go to the table's own background "+
		"checkpointer, %d written, the last at version %d; Table.Close waits for them); the bare PUT after a checkpoint commit "+
		"waits for it untimed, as for the txlog.Checkpointer table", defWritten, def.lastDue)
	if m, err = fig.addSeries("", b, "deltakit_commit_p50", "bare_put_p50", "deltakit_commit_p90", "bare_put_p90",
		"deltakit_commit_p99", "bare_put_p99", "ratio_p50", "ratio_p99"); err != nil {
		return fig, err
	}
	fig.goalFull(cfg, m[6], "<=", 1.15)
	fig.goalFull(cfg, m[7], "<=", 1.15)
	fig.add("checkpoint_commits", float64(b.due), "count")
	fig.add("background_checkpoints_written", float64(written), "count")
	if _, err := fig.addSeries("", b, "background_checkpoint_p50"); err != nil {
		return fig, err
	}
	fig.add("last_checkpoint_version", float64(bg.lastDue), "version")
	if _, err := fig.addSeries("unpaced_", u, "commit_p50", "bare_put_p50", "commit_p99", "bare_put_p99", "ratio_p50", "ratio_p99"); err != nil {
		return fig, err
	}
	if _, err := fig.addSeries("sync_", s, "commit_p50", "commit_p99", "bare_put_p99", "ratio_p50", "ratio_p99", "ratio_p99_no_checkpoint"); err != nil {
		return fig, err
	}
	fig.add("commit_bytes", float64(len(bg.rec.lastPutIfAbsent())), "B")
	fig.note("every 10th commit has a checkpoint due (delta.checkpointInterval default): %d of %d measured commits; "+
		"the measured commits queue it on a txlog.Checkpointer, which wrote %d checkpoints in the background "+
		"(the last at version %d, which the table then loads from); the next bare PUT waits, untimed, until it is written, "+
		"so neither side overlaps a checkpoint",
		b.due, len(b.commits), written, bg.lastDue)
	fig.note("unpaced_*: then %d more pairs on that table without waiting: the background checkpoint shares the CPUs and MinIO with the "+
		"PUTs and commits that follow it (compare with deltakit_commit_* and bare_put_*)", len(u.commits))
	fig.note("sync_*: a second table in the same rounds whose commits write the checkpoint inside Commit (txlog's default and table.WithSyncCheckpoints, as Spark's writer does); "+
		"%d of its commits did, which is what sync_commit_p99 shows; sync_ratio_p99_no_checkpoint leaves them out", s.due)

	if cfg.CommitLargeFiles <= 0 {
		return fig, nil
	}
	return fig, commitLargeTable(ctx, env, cfg, fig)
}

// isCommitKey reports whether key is a commit file of the log.
func isCommitKey(key string) bool {
	return strings.HasPrefix(key, txlog.LogPrefix) && strings.HasSuffix(key, ".json")
}

// commitLargeTable adds P1's large_* figures: the same pairs on a table
// of cfg.CommitLargeFiles live files, with background and then synchronous
// checkpoints.
func commitLargeTable(ctx context.Context, env *Env, cfg Config, fig *Figure) error {
	t0 := time.Now()
	large, err := newCommitBench(ctx, env.S3, cfg.CommitLargeFiles, true)
	if err != nil {
		return err
	}
	env.logf("P1: table of %d files generated in %v", cfg.CommitLargeFiles, time.Since(t0).Round(time.Millisecond))
	res, err := pairs(ctx, []*commitBench{large}, 2, cfg.CommitLargePairs, true)
	if err != nil {
		return err
	}
	written, err := large.closeCheckpointer(ctx)
	if err != nil {
		return err
	}
	b := res[0]
	// Then the same number of pairs on the same table with synchronous
	// checkpoints (not interleaved with the pairs above: a second table of
	// this size would double the generation time).
	large.cp = nil
	res, err = pairs(ctx, []*commitBench{large}, 0, cfg.CommitLargePairs, true)
	if err != nil {
		return err
	}
	s := res[0]
	if _, err := fig.addSeries("large_", b, "deltakit_commit_p50", "bare_put_p50", "deltakit_commit_p99",
		"ratio_p50", "ratio_p99", "background_checkpoint_p50"); err != nil {
		return err
	}
	if _, err := fig.addSeries("large_sync_", s, "commit_p99", "ratio_p99_no_checkpoint"); err != nil {
		return err
	}
	fig.note("large_*: the same pairs (%d) on a table that already holds %d live files (generated, with a checkpoint); "+
		"%d checkpoints of all its files were written in the background; then %d pairs on the same table with synchronous checkpoints "+
		"(large_sync_*, %d of them checkpoint commits)",
		len(b.commits), cfg.CommitLargeFiles, written, len(s.commits), s.due)
	return nil
}
