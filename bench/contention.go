package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
)

// contentionResult is one run of P4.
type contentionResult struct {
	writers, commits int
	wall             time.Duration
	latencies        []time.Duration // per successful commit, retries included
	attempts         int             // version files tried, over all commits
	lost             int             // commits reported but not in the log exactly once
}

// contend runs writers concurrent writers, each with its own S3 client and
// snapshot, committing commits one-file blind appends each to one new table,
// then checks the log: versions 1..writers*commits contiguous and every
// reported commit's txnId there exactly once. opts configure every
// transaction.
func contend(ctx context.Context, s3 *testenv.MinIO, writers, commits int, opts ...txlog.TxnOption) (*contentionResult, error) {
	prefix := uniquePrefix(fmt.Sprintf("p4-%dw", writers))
	admin, err := s3.StoreAt(ctx, prefix)
	if err != nil {
		return nil, err
	}
	if _, err := createTable(ctx, admin); err != nil {
		return nil, err
	}
	type writer struct {
		snap      *txlog.Snapshot
		txnIDs    []string
		latencies []time.Duration
		attempts  int
		err       error
	}
	ws := make([]*writer, writers)
	for i := range ws {
		store, err := s3.StoreAt(ctx, prefix) // its own client
		if err != nil {
			return nil, err
		}
		snap, err := txlog.Load(ctx, store)
		if err != nil {
			return nil, err
		}
		ws[i] = &writer{snap: snap}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for wi, w := range ws {
		wg.Go(func() {
			<-start
			for i := range commits {
				tx := txlog.NewTransaction(w.snap, "WRITE", opts...)
				tx.Add(txlog.Action{Add: genAdd(int64(wi*1_000_000+i+1), wi, time.Now().UnixMilli())})
				t0 := time.Now()
				res, err := tx.Commit(ctx)
				if err != nil {
					w.err = fmt.Errorf("writer %d commit %d: %w", wi, i, err)
					return
				}
				w.latencies = append(w.latencies, time.Since(t0))
				w.attempts += res.Attempts
				w.txnIDs = append(w.txnIDs, res.TxnID)
				if res.Snapshot != nil {
					w.snap = res.Snapshot
				} else if w.snap, err = txlog.Load(ctx, w.snap.Store()); err != nil {
					w.err = err
					return
				}
			}
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	r := &contentionResult{writers: writers, commits: commits, wall: time.Since(t0)}
	want := map[string]int{}
	for _, w := range ws {
		if w.err != nil {
			return nil, w.err
		}
		r.latencies = append(r.latencies, w.latencies...)
		r.attempts += w.attempts
		for _, id := range w.txnIDs {
			want[id]++
		}
	}
	lost, err := checkLog(ctx, admin, int64(writers*commits), want)
	if err != nil {
		return nil, err
	}
	r.lost = lost
	return r, nil
}

// checkLog reads commits 1..last of the table in store and returns how many
// of the txnIds in want are not in the log exactly once. A gap, a missing
// version or a commit after last is an error.
func checkLog(ctx context.Context, store objectstore.Store, last int64, want map[string]int) (int, error) {
	seen := map[string]int{}
	next := int64(1)
	for c, err := range txlog.Commits(ctx, store, 1, -1) {
		if err != nil {
			return 0, fmt.Errorf("bench: reading the log: %w", err)
		}
		if c.Version != next {
			return 0, fmt.Errorf("bench: log has version %d after %d", c.Version, next-1)
		}
		next++
		if ci := c.CommitInfo(); ci != nil {
			seen[ci.TxnID]++
		}
	}
	if next-1 != last {
		return 0, fmt.Errorf("bench: log ends at version %d, want %d", next-1, last)
	}
	lost := 0
	for id, n := range want {
		if n != 1 || seen[id] != 1 {
			lost++
		}
	}
	return lost, nil
}

// ContentionFigure measures P4: the aggregate commit rate of 1, 4 and 8
// writers (Config.ContentionWriters), each a process of its own (with
// env.ContentionChild; else goroutines of this process) with its own
// client, blind appending one file per commit to one table on MinIO, with
// txlog's retries. After each run the log is checked: contiguous, every
// commit once. Where a lost race goes is counted from txlog's Info log
// records: versions found taken (each winner read once) and backoff waits.
func ContentionFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	kind := "each writer a process of its own (deltabench __p4-child)"
	if env.ContentionChild == nil {
		kind = "each writer a goroutine of this process"
	}
	fig := &Figure{ID: "P4", Title: "contention: concurrent blind appends",
		Setup: fmt.Sprintf("MinIO on localhost; writers %v, %d one-file blind appends each, %s with its own S3 client and snapshot, "+
			"txlog commit loop with default retries (lost races retried at once, a writer that won 4 in a row under contention yields 2-3 PUT round trips, "+
			"unknown outcomes back off 5 ms..2 s with full jitter); log checked: contiguous, each txnId once",
			cfg.ContentionWriters, cfg.ContentionCommits, kind)}
	if env.skipWithoutS3(fig) {
		return fig, nil
	}
	clients := max(slices.Max(cfg.ContentionWriters), 1)
	putRate, getRate, err := serverCeiling(ctx, env, clients, cfg.contentionCeilingTime())
	if err != nil {
		return fig, err
	}
	fig.add("server_ceiling_put_s", putRate, "requests/s")
	fig.add("server_ceiling_get_s", getRate, "requests/s")
	kindOf := "goroutines"
	if env.ContentionChild != nil {
		kindOf = "processes"
	}
	fig.note("server request ceiling: %d %s, each with its own S3 client, conditional PUTs of fresh commit-sized keys for %v, then GETs of them "+
		"for as long, back to back: %.0f PUTs/s, %.0f GETs/s; ceiling_commits_per_s_* is the commit rate these allow at the requests per commit measured",
		clients, kindOf, cfg.contentionCeilingTime()/2, putRate, getRate)
	var single float64
	for _, n := range cfg.ContentionWriters {
		var (
			r   *contentionResult
			sum *contentionReport
			err error
		)
		if env.ContentionChild != nil {
			r, sum, err = contendProcs(ctx, env, n, cfg.ContentionCommits)
		} else {
			r, err = contend(ctx, env.S3, n, cfg.ContentionCommits)
		}
		if err != nil {
			return fig, err
		}
		total := float64(n * cfg.ContentionCommits)
		rate := total / r.wall.Seconds()
		if n == 1 {
			single = rate
		}
		fig.add(fmt.Sprintf("commits_per_s_%dw", n), rate, "commits/s")
		fig.add(fmt.Sprintf("attempts_per_commit_%dw", n), float64(r.attempts)/total, "x")
		fig.add(fmt.Sprintf("commit_p50_%dw", n), ms(quantile(r.latencies, 0.5)), "ms")
		fig.add(fmt.Sprintf("commit_p99_%dw", n), ms(quantile(r.latencies, 0.99)), "ms")
		fig.add(fmt.Sprintf("lost_commits_%dw", n), float64(r.lost), "count").goal("<=", 0)
		if sum != nil {
			addRaceMetrics(fig, n, total, rate, commitCeiling(&sum.Requests, putRate, getRate), sum)
		}
		if single > 0 && n != 1 {
			m := fig.add(fmt.Sprintf("speedup_%dw", n), rate/single, "x")
			if n == 8 && env.ContentionChild != nil {
				fig.goalFull(cfg, m, ">=", 0.70)
			}
		}
		env.logf("P4: %d writers: %.1f commits/s", n, rate)
	}
	return fig, nil
}

// contentionCeilingTime is how long P4 measures the server's request
// ceiling.
func (c Config) contentionCeilingTime() time.Duration {
	if c.ContentionCommits < 50 {
		return time.Second
	}
	return 3 * time.Second
}

// addRaceMetrics adds where n writers' commits went, from the writer
// processes' reports: lost races and backoff (txlog's Info records), the
// HTTP requests per commit by kind, the writers' CPU per commit, and
// ceiling: the commit rate the server's request ceiling allows at these
// requests per commit (commitCeiling).
func addRaceMetrics(fig *Figure, n int, total, rate, ceiling float64, sum *contentionReport) {
	rq := &sum.Requests
	perCommit := float64(rq.total()) / total
	fig.add(fmt.Sprintf("winners_read_per_commit_%dw", n), float64(sum.LostRaces)/total, "x")
	fig.add(fmt.Sprintf("backoffs_per_commit_%dw", n), float64(sum.Backoffs)/total, "x")
	fig.add(fmt.Sprintf("backoff_ms_per_commit_%dw", n), float64(sum.BackoffNs)/1e6/total, "ms")
	fig.add(fmt.Sprintf("requests_per_commit_%dw", n), perCommit, "x")
	fig.add(fmt.Sprintf("writer_cpu_ms_per_commit_%dw", n), float64(rq.CPUNs)/1e6/total, "ms")
	if ceiling > 0 {
		fig.add(fmt.Sprintf("ceiling_commits_per_s_%dw", n), ceiling, "commits/s")
		fig.add(fmt.Sprintf("server_use_%dw", n), rate/ceiling, "x")
	}
	fig.note("%d writers: requests per commit %.2f = PUT 200 %.2f + PUT 412 %.2f + PUT 409 %.2f + GET %.2f + GET 404 %.2f + LIST %.2f + other %.2f (%d transport errors)",
		n, perCommit, float64(rq.Puts)/total, float64(rq.Put412)/total, float64(rq.Put409)/total, float64(rq.Gets)/total,
		float64(rq.Get404)/total, float64(rq.Lists)/total, float64(rq.Other)/total, rq.Errors)
	fig.note("%d writers: the slowest commit took %.0f ms: %d attempts, %d lost races, %.0f ms of backoff", n,
		float64(sum.Slowest.Ns)/1e6, sum.Slowest.Attempts, sum.Slowest.LostRaces, float64(sum.Slowest.BackoffNs)/1e6)
}
