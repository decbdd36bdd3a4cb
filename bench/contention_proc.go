package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
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
	// CeilingNs, when set, makes the process measure the server's
	// request ceiling for that long instead of committing.
	CeilingNs int64
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
	WallNs    int64  `json:"wall_ns"`
	// Requests counts the HTTP requests the writer sent, by kind.
	Requests requestCounts `json:"requests"`
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
	case strings.HasPrefix(r.Message, "txlog: commit backing off"), strings.HasPrefix(r.Message, "txlog: commit yielding"):
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
// at the end one "deltabench-p4: {json}" line with its report. A job with
// CeilingNs set measures the server instead: it loops over a conditional
// PUT of a fresh key and a GET of it for that long.
func ContentionChild(ctx context.Context, job string, in io.Reader, w io.Writer) error {
	var j ContentionJob
	if err := json.Unmarshal([]byte(job), &j); err != nil {
		return fmt.Errorf("bench: contention child job %q: %w", job, err)
	}
	var rep contentionReport
	store, err := objectstore.NewS3(ctx, j.Bucket, j.Prefix, objectstore.WithEndpoint(j.Endpoint), objectstore.WithPathStyle(true),
		objectstore.WithRegion(j.Region), objectstore.WithCredentials(j.AccessKey, j.SecretKey),
		objectstore.WithHTTPClient(countingClient(&rep.Requests)))
	if err != nil {
		return err
	}
	var snap *txlog.Snapshot
	if j.CeilingNs == 0 {
		if snap, err = txlog.Load(ctx, store); err != nil {
			return err
		}
	}
	rep.Requests = requestCounts{} // count the commits' requests only, not the load
	fmt.Fprintln(w, contentionLinePrefix+"ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return fmt.Errorf("bench: contention child: waiting for the start: %w", err)
	}
	t0 := time.Now()
	if j.CeilingNs > 0 {
		d := time.Duration(j.CeilingNs)
		if _, _, err := ceilingLoop(ctx, store, fmt.Sprintf("w%02d", j.Writer), t0.Add(d/2), t0.Add(d)); err != nil {
			rep.Error = err.Error()
		}
	} else {
		childCommits(ctx, j, snap, &rep)
	}
	rep.WallNs = int64(time.Since(t0))
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, contentionLinePrefix+string(b))
	return nil
}

// childCommits makes j.Commits blind appends from snap, recording them in
// rep.
func childCommits(ctx context.Context, j ContentionJob, snap *txlog.Snapshot, rep *contentionReport) {
	var lost, backoffs, backoffNs atomic.Int64
	logger := slog.New(raceCounter{&lost, &backoffs, &backoffNs})
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
		} else if snap, err = txlog.Load(ctx, snap.Store()); err != nil {
			rep.Error = err.Error()
			break
		}
	}
	rep.LostRaces, rep.Backoffs, rep.BackoffNs = int(lost.Load()), int(backoffs.Load()), backoffNs.Load()
	rep.Requests.Commits = int64(len(rep.TxnIDs))
}

// writerProc is one P4 writer process: its stdin (the start signal), the
// "deltabench-p4: " lines of its stdout, and its exit (with its CPU time).
type writerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan struct{} // closed when the process has exited
	err   error         // its exit error, set before done is closed
	cpu   time.Duration // user+system, set before done is closed
}

// wait waits for the process to exit and returns its exit error.
func (p *writerProc) wait() error {
	<-p.done
	return p.err
}

// startWriter starts the writer process of job and a goroutine that reads
// its lines and waits for its exit.
func startWriter(ctx context.Context, env *Env, job ContentionJob) (*writerProc, error) {
	b, _ := json.Marshal(job)
	cmd := env.ContentionChild(ctx, string(b))
	// The writer talks plain http to the local MinIO through a counting
	// client (countingClient); with AWS_CA_BUNDLE set the SDK refuses any
	// client it cannot add the bundle to.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AWS_CA_BUNDLE=") })
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &writerProc{cmd: cmd, stdin: stdin, lines: make(chan string, 4), done: make(chan struct{})}
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
		if ps := cmd.ProcessState; ps != nil {
			p.cpu = ps.UserTime() + ps.SystemTime()
		}
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// contendProcs is contend with one process per writer (env.ContentionChild).
// The second result sums the writers' reports (Slowest: the slowest commit
// of all, Requests: every writer's requests and CPU).
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
	jobs := make([]ContentionJob, writers)
	for i := range jobs {
		jobs[i] = ContentionJob{Endpoint: s3.Endpoint, AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
			Bucket: s3.Bucket, Region: s3.Region, Prefix: prefix, Writer: i, Commits: commits}
	}
	reps, wall, err := runWriters(ctx, env, jobs)
	if err != nil {
		return nil, nil, err
	}
	r, sum := sumReports(reps, writers, commits, wall)
	want := map[string]int{}
	for _, rp := range reps {
		for _, id := range rp.TxnIDs {
			want[id]++
		}
	}
	if r.lost, err = checkLog(ctx, admin, int64(writers*commits), want); err != nil {
		return nil, nil, err
	}
	return r, sum, nil
}

// runWriters starts one writer process per job, starts them together once
// all are ready, and returns their reports and the time from the start to
// the last report. Processes still running when it returns are killed.
func runWriters(ctx context.Context, env *Env, jobs []ContentionJob) ([]contentionReport, time.Duration, error) {
	procs := make([]*writerProc, len(jobs))
	defer func() {
		for _, p := range procs {
			if p != nil && p.cmd.Process != nil {
				_ = p.cmd.Process.Kill()
				_ = p.wait()
			}
		}
	}()
	for i, job := range jobs {
		var err error
		if procs[i], err = startWriter(ctx, env, job); err != nil {
			return nil, 0, err
		}
	}
	for i, p := range procs {
		if l, ok := <-p.lines; !ok || l != "ready" {
			return nil, 0, fmt.Errorf("bench: P4 writer process %d did not start: %v", i, p.wait())
		}
	}
	t0 := time.Now()
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return nil, 0, err
		}
	}
	reps, last, err := collectReports(procs)
	return reps, last.Sub(t0), err
}

// collectReports reads each writer's report line and waits for its exit
// (for its CPU time); it returns the reports and when the last one came.
func collectReports(procs []*writerProc) ([]contentionReport, time.Time, error) {
	reps := make([]contentionReport, len(procs))
	errs := make([]error, len(procs))
	ends := make([]time.Time, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() {
			l, ok := <-p.lines
			ends[i] = time.Now()
			if !ok {
				errs[i] = fmt.Errorf("bench: P4 writer process %d: no report: %v", i, p.wait())
				return
			}
			if err := json.Unmarshal([]byte(l), &reps[i]); err != nil {
				errs[i] = err
			} else if reps[i].Error != "" {
				errs[i] = errors.New(reps[i].Error)
			}
			if err := p.wait(); err != nil && errs[i] == nil {
				errs[i] = fmt.Errorf("bench: P4 writer process %d: %w", i, err)
			}
			reps[i].Requests.CPUNs = int64(p.cpu)
		})
	}
	wg.Wait()
	var last time.Time
	for _, e := range ends {
		if e.After(last) {
			last = e
		}
	}
	return reps, last, errors.Join(errs...)
}

// sumReports adds up the writers' reports.
func sumReports(reps []contentionReport, writers, commits int, wall time.Duration) (*contentionResult, *contentionReport) {
	r := &contentionResult{writers: writers, commits: commits, wall: wall}
	var sum contentionReport
	for _, rp := range reps {
		for _, d := range rp.Latencies {
			r.latencies = append(r.latencies, time.Duration(d))
		}
		r.attempts += rp.Attempts
		sum.LostRaces += rp.LostRaces
		sum.Backoffs += rp.Backoffs
		sum.BackoffNs += rp.BackoffNs
		rp.Requests.addTo(&sum.Requests)
		if rp.Slowest.Ns > sum.Slowest.Ns {
			sum.Slowest = rp.Slowest
		}
	}
	return r, &sum
}
