package kafkasink

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// A producer that crashed inside a transaction leaves it open: the
// partitions' last stable offset stays at its first record, and a
// read_committed consumer sees nothing behind it, not even records another
// producer committed since. When the producer restarts with its
// transactional id, the broker aborts the open transaction and the rest
// becomes visible. Ingest runs crash (in-process, before and after a
// commit lands) on both sides of that; the table ends with exactly the
// committed records, once, and the offsets after them in its txns.
func TestIngestOpenTransaction(t *testing.T) { onClusters(t, testOpenTransaction) }

func testOpenTransaction(t *testing.T, c cluster) {
	ctx := t.Context()
	l := &ledger{committed: map[int64][2]int64{}}
	a := newProducerID(t, c, "a-"+c.topic, l)
	b := newProducerID(t, c, "b-"+c.topic, l)
	a.produceRounds(ctx, 3) // committed, aborted, committed
	visible := maps.Clone(l.committed)
	a.produceOpen(ctx, 6) // on every partition; then producer a "crashes"
	b.txn(ctx, 6, true)   // committed behind the open transaction
	b.txn(ctx, 3, false)

	mem := objectstore.NewMem(t.Name())
	createTable(t, mem)
	crashRun := func(phase faultstore.Phase) *Stats {
		t.Helper()
		wctx, kill := context.WithCancel(ctx)
		defer kill()
		f := faultstore.New(mem, faultstore.WithCrashHook(kill))
		f.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.LogPrefix, Nth: 2, Phase: phase, Kind: faultstore.Crash})
		in, _ := New(newSink(t, f), c.brokers, []string{c.topic}, WithDecoder(recordDecoder), WithMaxBatchRecords(2), WithLogger(quiet))
		st, err := in.Run(wctx)
		if err == nil || !f.Crashed() || st.Batches != 1 {
			t.Fatalf("crash run: %+v, %v; want a crash after one batch", st, err)
		}
		return st
	}
	idleRun := func() *Stats {
		t.Helper()
		in, _ := New(newSink(t, mem), c.brokers, []string{c.topic}, WithDecoder(recordDecoder), WithMaxBatchRecords(4),
			WithIdleTimeout(testIdle), WithLogger(quiet))
		st, err := in.Run(ctx)
		if err != nil || st.Stopped != StopIdle {
			t.Fatalf("idle run: %+v, %v", st, err)
		}
		return st
	}

	crashRun(faultstore.Before)
	idleRun()
	if got := tableRows(t, mem); !maps.Equal(got, visible) {
		t.Fatalf("while a transaction is open the table holds %d records %v, want the %d committed before it %v",
			len(got), got, len(visible), visible)
	}

	// Producer a restarts: its transactional id fences the open transaction.
	a = newProducerID(t, c, "a-"+c.topic, l)
	l.aborted += 6
	a.produceRounds(ctx, 3)
	crashRun(faultstore.After)
	st := idleRun()
	if st.Batches == 0 {
		t.Fatalf("last run: %+v, want the records released by the abort", st)
	}
	checkIngestedLedger(t, mem, c.topic, l)
}

// helperEnv, when set in the environment of this test binary, makes it an
// ingest process (ingestHelper) instead of running tests: the JSON of a
// helperJob.
const helperEnv = "KAFKASINK_TEST_INGEST_JOB"

// helperJob is what ingestHelper does.
type helperJob struct {
	Brokers []string
	Topic   string
	Table   string // a local directory
	// StopAt > 0 makes the process announce "stopped" on stdout at its
	// StopAt-th commit of a log entry, before the entry is written (or
	// after it is, with After), and then hang there until it is killed.
	StopAt int
	After  bool
	// Group, when set, makes the process the member Member of that
	// consumer group (WithConsumerGroup) until SIGINT, with a short
	// session timeout (Session, default 6 s).
	Group, Member string
	Session       time.Duration
}

// ingestHelper runs the ingest job of helperEnv until idle: one line
// "batch <epoch> <version>" per committed batch on stdout, then "done", or
// "stopped" where the job says to stop. It returns the exit code.
func ingestHelper() int {
	var job helperJob
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &job); err != nil {
		fmt.Fprintln(os.Stderr, "ingest helper:", err)
		return 2
	}
	ctx := context.Background()
	local, err := objectstore.NewLocal(job.Table)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest helper:", err)
		return 2
	}
	var store objectstore.Store = local
	if job.StopAt > 0 {
		hang := func() {
			fmt.Println("stopped")
			time.Sleep(10 * time.Minute) // until the test kills this process
		}
		phase := faultstore.Before
		if job.After {
			phase = faultstore.After
		}
		f := faultstore.New(local, faultstore.WithCrashHook(hang))
		f.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.LogPrefix, Nth: job.StopAt, Phase: phase, Kind: faultstore.Crash})
		store = f
	}
	tbl, err := table.Open(ctx, "", table.WithStore(store), table.WithLogger(quiet))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest helper:", err)
		return 2
	}
	sinkQuery := query
	logger := quiet
	if job.Group != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil)) // shown when the test fails
	}
	opts := []Option{WithDecoder(recordDecoder), WithMaxBatchRecords(5), WithLogger(logger),
		WithBatchHook(func(b Batch) {
			var parts []string
			for _, tp := range slices.SortedFunc(maps.Keys(b.Offsets), compareTP) {
				parts = append(parts, strconv.Itoa(int(tp.Partition)))
			}
			fmt.Printf("batch %d %d %s\n", b.Epoch, b.Version, strings.Join(parts, ","))
		})}
	if job.Group != "" {
		sinkQuery = MemberQueryID(query, job.Member)
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		opts = append(opts, WithConsumerGroup(job.Group, query), WithClientOptions(
			kgo.SessionTimeout(cmp.Or(job.Session, 6*time.Second)), kgo.HeartbeatInterval(500*time.Millisecond), kgo.RebalanceTimeout(10*time.Second)))
	} else {
		opts = append(opts, WithIdleTimeout(testIdle))
	}
	sink, err := streamsink.New(tbl, sinkQuery, streamsink.WithLogger(quiet))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest helper:", err)
		return 2
	}
	in, err := New(sink, job.Brokers, []string{job.Topic}, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingest helper:", err)
		return 2
	}
	if _, err := in.Run(ctx); err != nil && !(job.Group != "" && errors.Is(err, context.Canceled)) {
		fmt.Fprintln(os.Stderr, "ingest helper:", err)
		return 1
	}
	fmt.Println("done")
	return 0
}

// runIngestProcess runs job in a new process (this test binary) and
// returns its stdout lines. With job.StopAt it kills the process with
// SIGKILL as soon as it announces the stop: a crash at that point, with no
// deferred call, no cleanup and no retry run.
func runIngestProcess(t *testing.T, job helperJob) []string {
	t.Helper()
	spec, _ := json.Marshal(job)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(spec))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "stopped" {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	switch {
	case job.StopAt > 0 && !killed:
		t.Fatalf("ingest process %+v: %v, output %q, stderr:\n%s\nwant it killed at its stop", job, err, lines, stderr.String())
	case job.StopAt == 0 && err != nil:
		t.Fatalf("ingest process %+v: %v, output %q, stderr:\n%s", job, err, lines, stderr.String())
	}
	return lines
}

// Ingest processes are killed with SIGKILL just before and just after a
// commit lands and restarted; the table ends with exactly the committed
// records, once.
func TestIngestKill9(t *testing.T) { onClusters(t, testKill9) }

func testKill9(t *testing.T, c cluster) {
	ctx := t.Context()
	p := newProducer(t, c)
	dir := t.TempDir()
	local, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	createTable(t, local)
	job := helperJob{Brokers: c.brokers, Topic: c.topic, Table: dir}

	p.produceRounds(ctx, 5) // 30 records, 20 committed: 4 or more batches
	kill := job
	kill.StopAt = 2 // before its second commit lands
	if out := runIngestProcess(t, kill); len(out) != 2 || !strings.HasPrefix(out[0], "batch 0 ") {
		t.Fatalf("first process wrote %q, want one batch, then the stop", out)
	}
	p.produceRounds(ctx, 3)
	kill.After = true // after its second commit lands, before it learns so
	if out := runIngestProcess(t, kill); len(out) != 2 || !strings.HasPrefix(out[0], "batch 1 ") {
		t.Fatalf("second process wrote %q, want one batch (epoch 1: the first process's second commit is lost), then the stop", out)
	}
	p.produceRounds(ctx, 2)
	out := runIngestProcess(t, job)
	if len(out) < 2 || !strings.HasPrefix(out[0], "batch 3 ") || out[len(out)-1] != "done" {
		t.Fatalf("last process wrote %q, want batches from epoch 3 (the second process's second commit landed), then done", out)
	}
	checkIngested(t, local, p)
}
