package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// ContentionJob is what one P4 writer process does: commits one-file
// blind appends to the table under Prefix on the MinIO server, starting
// when it reads a line on stdin.
type ContentionJob struct {
	Endpoint, AccessKey, SecretKey, Bucket, Region, Prefix string
	Writer, Commits                                        int
}

// contentionReport is a writer process's result line.
type contentionReport struct {
	TxnIDs    []string `json:"txn_ids"`
	Latencies []int64  `json:"latencies_ns"`
	Attempts  int      `json:"attempts"`
	// LostRaces counts versions found taken (each winner read once);
	// Backoffs and BackoffNs the waits before retries.
	LostRaces int    `json:"lost_races"`
	Backoffs  int    `json:"backoffs"`
	BackoffNs int64  `json:"backoff_ns"`
	Error     string `json:"error,omitempty"`
	// Slowest is the slowest commit: its latency, attempts, lost races
	// and backoff.
	Slowest struct {
		Ns, BackoffNs       int64
		Attempts, LostRaces int
	} `json:"slowest"`
}

const contentionLinePrefix = "deltabench-p4: "

// raceCounter is a slog handler counting txlog's Info records of lost
// races and backoff waits.
type raceCounter struct {
	lost, backoffs, backoffNs *atomic.Int64
}

func (h raceCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h raceCounter) Handle(_ context.Context, r slog.Record) error {
	switch {
	case strings.HasPrefix(r.Message, "txlog: version taken"):
		h.lost.Add(1)
	case strings.HasPrefix(r.Message, "txlog: commit backing off"):
		h.backoffs.Add(1)
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "wait" {
				h.backoffNs.Add(int64(a.Value.Duration()))
			}
			return true
		})
	}
	return nil
}
func (h raceCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h raceCounter) WithGroup(string) slog.Handler      { return h }

// ContentionChild is the body of a P4 writer process: it runs job (a
// ContentionJob as JSON), writing "deltabench-p4: ready" to w once its
// snapshot is loaded, then waiting for a line on in before committing, and
// at the end one "deltabench-p4: {json}" line with its report.
func ContentionChild(ctx context.Context, job string, in io.Reader, w io.Writer) error {
	var j ContentionJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		return fmt.Errorf("bench: contention child job %q: %w", job, err)
	}
	store, err := objectstore.NewS3(ctx, j.Bucket, j.Prefix, objectstore.WithEndpoint(j.Endpoint), objectstore.WithPathStyle(true),
		objectstore.WithRegion(j.Region), objectstore.WithCredentials(j.AccessKey, j.SecretKey))
	if err != nil {
		return err
	}
	snap, err := txlog.Load(ctx, store)
	if err != nil {
		return err
	}
	var lost, backoffs, backoffNs atomic.Int64
	logger := slog.New(raceCounter{&lost, &backoffs, &backoffNs})
	fmt.Fprintln(w, contentionLinePrefix+"ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return fmt.Errorf("bench: contention child: waiting for the start: %w", err)
	}
	var rep contentionReport
	for i := range j.Commits {
		tx := txlog.NewTransaction(snap, "WRITE", txlog.WithLogger(logger))
		tx.Add(txlog.Action{Add: genAdd(int64(j.Writer*1_000_000+i+1), j.Writer, time.Now().UnixMilli())})
		t0 := time.Now()
		lost0, back0 := lost.Load(), backoffNs.Load()
		res, err := tx.Commit(ctx)
		if err != nil {
			rep.Error = fmt.Sprintf("writer %d commit %d: %v", j.Writer, i, err)
			break
		}
		d := int64(time.Since(t0))
		rep.Latencies = append(rep.Latencies, d)
		if d > rep.Slowest.Ns {
			rep.Slowest.Ns, rep.Slowest.Attempts = d, res.Attempts
			rep.Slowest.LostRaces, rep.Slowest.BackoffNs = int(lost.Load()-lost0), backoffNs.Load()-back0
		}
		rep.Attempts += res.Attempts
		rep.TxnIDs = append(rep.TxnIDs, res.TxnID)
		if res.Snapshot != nil {
			snap = res.Snapshot
		} else if snap, err = txlog.Load(ctx, store); err != nil {
			rep.Error = err.Error()
			break
		}
	}
	rep.LostRaces, rep.Backoffs, rep.BackoffNs = int(lost.Load()), int(backoffs.Load()), backoffNs.Load()
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, contentionLinePrefix+string(b))
	return nil
}

// contendProcs is contend with one process per writer (env.ContentionChild).
func contendProcs(ctx context.Context, env *Env, writers, commits int) (*contentionResult, *contentionReport, error) {
	s3 := env.S3
	prefix := uniquePrefix(fmt.Sprintf("p4p-%dw", writers))
	admin, err := s3.StoreAt(ctx, prefix)
	if err != nil {
		return nil, nil, err
	}
	if _, err := createTable(ctx, admin); err != nil {
		return nil, nil, err
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		lines chan string
		done  chan error
	}
	procs := make([]*proc, writers)
	defer func() {
		for _, p := range procs {
			if p != nil && p.cmd.Process != nil {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}()
	for i := range procs {
		job, _ := json.Marshal(ContentionJob{Endpoint: s3.Endpoint, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
			Bucket: s3.Bucket, Region: s3.Region, Prefix: prefix, Writer: i, Commits: commits})
		cmd := env.ContentionChild(ctx, string(job))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, err
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		p := &proc{cmd: cmd, stdin: stdin, lines: make(chan string, 4), done: make(chan error, 1)}
		procs[i] = p
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				if l, ok := strings.CutPrefix(sc.Text(), contentionLinePrefix); ok {
					p.lines <- l
				}
			}
			close(p.lines)
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, stderr.String())
			}
			p.done <- err
		}()
	}
	for i, p := range procs {
		if l, ok := <-p.lines; !ok || l != "ready" {
			return nil, nil, fmt.Errorf("bench: P4 writer process %d did not start: %v", i, <-p.done)
		}
	}
	t0 := time.Now()
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return nil, nil, err
		}
	}
	reps := make([]contentionReport, writers)
	var wg sync.WaitGroup
	errs := make([]error, writers)
	ends := make([]time.Time, writers)
	for i, p := range procs {
		wg.Go(func() {
			l, ok := <-p.lines
			ends[i] = time.Now()
			if !ok {
				errs[i] = fmt.Errorf("bench: P4 writer process %d: no report: %v", i, <-p.done)
				return
			}
			if err := json.Unmarshal([]byte(l), &reps[i]); err != nil {
				errs[i] = err
			} else if reps[i].Error != "" {
				errs[i] = errors.New(reps[i].Error)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	var last time.Time
	for _, e := range ends {
		if e.After(last) {
			last = e
		}
	}
	r := &contentionResult{writers: writers, commits: commits, wall: last.Sub(t0)}
	var sum contentionReport
	want := map[string]int{}
	for _, rp := range reps {
		for _, d := range rp.Latencies {
			r.latencies = append(r.latencies, time.Duration(d))
		}
		r.attempts += rp.Attempts
		sum.LostRaces += rp.LostRaces
		sum.Backoffs += rp.Backoffs
		sum.BackoffNs += rp.BackoffNs
		if rp.Slowest.Ns > sum.Slowest.Ns {
			sum.Slowest = rp.Slowest
		}
		for _, id := range rp.TxnIDs {
			want[id]++
		}
	}
	lost, err := checkLog(ctx, admin, int64(writers*commits), want)
	if err != nil {
		return nil, nil, err
	}
	r.lost = lost
	return r, &sum, nil
}
