package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
)

// prefixSeq makes the store prefixes of one process unique.
var prefixSeq atomic.Int64

// uniquePrefix returns a prefix no other call of this process returns.
func uniquePrefix(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), prefixSeq.Add(1))
}

// commitBench is the state of P1: a table on S3 that grows by one one-file
// blind append per commit step, and a second prefix where a bare
// PutIfAbsent writes the bytes of deltakit's latest commit to fresh keys.
type commitBench struct {
	rec   *recordingStore
	bare  objectstore.Store
	snap  *txlog.Snapshot
	opts  []txlog.TxnOption
	files int64 // files committed so far
	puts  int64 // bare PUTs so far
}

// newCommitBench creates the table: empty when files is 0, else generated
// with that many live files (10,000 per commit) and a checkpoint of its
// latest version, as a table that has been written for a while.
func newCommitBench(ctx context.Context, s3 *testenv.MinIO, files int, opts ...txlog.TxnOption) (*commitBench, error) {
	prefix := uniquePrefix("p1")
	store, err := s3.StoreAt(ctx, prefix+"/table")
	if err != nil {
		return nil, err
	}
	bare, err := s3.StoreAt(ctx, prefix+"/bare")
	if err != nil {
		return nil, err
	}
	// Committed files are numbered from 10,000,000: no path of a generated
	// table (commit version, file index) is ever reused.
	c := &commitBench{rec: &recordingStore{Store: store}, bare: bare, opts: opts, files: 10_000_000}
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

// commit commits one blind append of one file and reports whether the
// commit also wrote a checkpoint.
func (c *commitBench) commit(ctx context.Context) (checkpointed bool, err error) {
	tx := txlog.NewTransaction(c.snap, "WRITE", c.opts...)
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
	return res.Checkpointed, nil
}

// put writes the bytes of the latest deltakit commit to a fresh key with a
// bare PutIfAbsent.
func (c *commitBench) put(ctx context.Context) error {
	data := c.rec.lastPutIfAbsent()
	c.puts++
	return c.bare.PutIfAbsent(ctx, txlog.CommitKey(c.puts), data)
}

// CommitFigure measures P1: the latency of one-file blind append commits
// (txlog transaction with one add; the default checkpoint interval of 10
// applies) and of bare PutIfAbsent calls of the same bytes to fresh keys on
// the same MinIO server, interleaved one to one.
func CommitFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P1", Title: "commit latency vs bare conditional PUT",
		Setup: fmt.Sprintf("MinIO on localhost; %d interleaved pairs (after %d warm-up pairs) of a one-file blind append "+
			"(txlog.NewTransaction + Commit, default checkpoint interval 10) and a bare PutIfAbsent of the same commit bytes to a fresh key",
			cfg.CommitPairs, cfg.CommitWarmup)}
	if env.S3 == nil {
		fig.Skipped = "no MinIO server"
		return fig, nil
	}
	c, err := newCommitBench(ctx, env.S3, 0)
	if err != nil {
		return fig, err
	}
	dk, dkPlain, put, checkpoints, err := c.pairs(ctx, cfg.CommitWarmup, cfg.CommitPairs)
	if err != nil {
		return fig, err
	}
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}} {
		fig.add("deltakit_commit_"+q.name, ms(quantile(dk, q.q)), "ms")
		fig.add("bare_put_"+q.name, ms(quantile(put, q.q)), "ms")
	}
	fig.add("deltakit_commit_p99_no_checkpoint", ms(quantile(dkPlain, 0.99)), "ms")
	fig.add("ratio_p50", ratio(quantile(dk, 0.5), quantile(put, 0.5)), "x").goal("<=", 1.15)
	fig.add("ratio_p99", ratio(quantile(dk, 0.99), quantile(put, 0.99)), "x").goal("<=", 1.15)
	fig.add("ratio_p99_no_checkpoint", ratio(quantile(dkPlain, 0.99), quantile(put, 0.99)), "x")
	fig.add("checkpoint_commits", float64(checkpoints), "count")
	fig.add("commit_bytes", float64(len(c.rec.lastPutIfAbsent())), "B")
	fig.note("every 10th commit also writes a checkpoint (delta.checkpointInterval default) inside Commit; "+
		"%d of %d measured commits did, which is what p99 shows; ratio_p99_no_checkpoint leaves them out", checkpoints, len(dk))

	if cfg.CommitLargeFiles <= 0 {
		return fig, nil
	}
	t0 := time.Now()
	c, err = newCommitBench(ctx, env.S3, cfg.CommitLargeFiles)
	if err != nil {
		return fig, err
	}
	env.logf("P1: table of %d files generated in %v", cfg.CommitLargeFiles, time.Since(t0).Round(time.Millisecond))
	dk, dkPlain, put, checkpoints, err = c.pairs(ctx, 2, cfg.CommitLargePairs)
	if err != nil {
		return fig, err
	}
	fig.add("large_deltakit_commit_p50", ms(quantile(dk, 0.5)), "ms")
	fig.add("large_bare_put_p50", ms(quantile(put, 0.5)), "ms")
	fig.add("large_deltakit_commit_p99", ms(quantile(dk, 0.99)), "ms")
	fig.add("large_deltakit_commit_p99_no_checkpoint", ms(quantile(dkPlain, 0.99)), "ms")
	fig.add("large_ratio_p50", ratio(quantile(dk, 0.5), quantile(put, 0.5)), "x")
	fig.add("large_ratio_p99_no_checkpoint", ratio(quantile(dkPlain, 0.99), quantile(put, 0.99)), "x")
	fig.note("large_*: the same %d pairs on a table that already holds %d live files (generated, with a checkpoint); %d commits wrote a checkpoint of all its files",
		len(dk), cfg.CommitLargeFiles, checkpoints)
	return fig, nil
}

// pairs runs warmup+n interleaved commit/PUT pairs and returns the measured
// latencies: every commit, the commits that wrote no checkpoint, the PUTs,
// and how many commits wrote a checkpoint.
func (c *commitBench) pairs(ctx context.Context, warmup, n int) (dk, dkPlain, put []time.Duration, checkpoints int, err error) {
	for i := range warmup + n {
		t0 := time.Now()
		cp, err := c.commit(ctx)
		d := time.Since(t0)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		t0 = time.Now()
		if err := c.put(ctx); err != nil {
			return nil, nil, nil, 0, err
		}
		p := time.Since(t0)
		if i < warmup {
			continue
		}
		dk, put = append(dk, d), append(put, p)
		if cp {
			checkpoints++
		} else {
			dkPlain = append(dkPlain, d)
		}
	}
	return dk, dkPlain, put, checkpoints, nil
}

// isCommitKey reports whether key is a commit file of the log.
func isCommitKey(key string) bool {
	return strings.HasPrefix(key, txlog.LogPrefix) && strings.HasSuffix(key, ".json")
}
