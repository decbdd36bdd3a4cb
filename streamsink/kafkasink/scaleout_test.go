package kafkasink

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/deltakit/deltakit/objectstore"
)

// ingestProc is an ingest process (this test binary, see ingestHelper)
// running in the background.
type ingestProc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	stderr  strings.Builder
	mu      sync.Mutex
	lines   []string
	stopped chan struct{} // closed when the process announces its stop
	exited  chan error
}

func startIngestProcess(t *testing.T, name string, job helperJob) *ingestProc {
	t.Helper()
	spec, _ := json.Marshal(job)
	p := &ingestProc{t: t, name: name, stopped: make(chan struct{}), exited: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), helperEnv+"="+string(spec))
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			if sc.Text() == "stopped" {
				close(p.stopped)
			}
		}
		p.exited <- p.cmd.Wait()
	}()
	return p
}

// output returns the lines the process wrote so far.
func (p *ingestProc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// partitions returns the partitions the process committed batches of.
func (p *ingestProc) partitions() map[string]bool {
	out := map[string]bool{}
	for _, l := range p.output() {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "batch" {
			for _, part := range strings.Split(f[3], ",") {
				out[part] = true
			}
		}
	}
	return out
}

// wait waits for the process to exit after sig and checks how it ended.
func (p *ingestProc) wait(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	select {
	case err := <-p.exited:
		if sig == syscall.SIGINT && err != nil {
			p.t.Fatalf("%s: %v after SIGINT, output %q, stderr:\n%s", p.name, err, p.output(), p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		p.t.Fatalf("%s did not exit after %v; output %q", p.name, sig, p.output())
	}
}

const (
	scaleParts   = 6
	scaleMembers = 3
)

// TestIngestScaleOut: three ingest processes in one consumer group share a
// table and a topic of six partitions while a producer keeps producing
// (committed and aborted transactions). One of them is killed with
// SIGKILL inside a commit, a fourth one joins; the group rebalances, and
// at the end the table holds every committed record exactly once, every
// partition's offset after its last committed record, and
// VerifyExactlyOnce is clean.
func TestIngestScaleOut(t *testing.T) {
	for _, k := range []struct {
		name  string
		start func(t *testing.T) cluster
	}{
		{"kfake", func(t *testing.T) cluster {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(scaleParts, topic))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			return cluster{brokers: c.ListenAddrs(), topic: topic}
		}},
		{"kafka", func(t *testing.T) cluster {
			c := startReal(t) // a topic of `partitions` partitions, unused
			name := c.topic + "-scale"
			if err := broker.k.CreateTopic(t.Context(), name, scaleParts); err != nil {
				t.Fatal(err)
			}
			return cluster{brokers: c.brokers, topic: name}
		}},
	} {
		t.Run(k.name, func(t *testing.T) { testScaleOut(t, k.start(t)) })
	}
}

func testScaleOut(t *testing.T, c cluster) {
	ctx := t.Context()
	start := time.Now()
	p := newProducer(t, c)
	p.parts = scaleParts
	p.produceRounds(ctx, 6) // 36 records, 24 committed
	dir := t.TempDir()
	local, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	createTable(t, local)
	job := func(member string, stopAt int) helperJob {
		return helperJob{Brokers: c.brokers, Topic: c.topic, Table: dir, Group: "ingest-" + c.topic, Member: member, StopAt: stopAt}
	}
	// m1 stops inside its 4th commit (before the log entry is written)
	// and is killed there.
	procs := map[string]*ingestProc{"m1": startIngestProcess(t, "m1", job("m1", 4))}
	for i := 2; i <= scaleMembers; i++ {
		name := fmt.Sprintf("m%d", i)
		procs[name] = startIngestProcess(t, name, job(name, 0))
	}
	deadline := time.After(60 * time.Second)
	for stopped := false; !stopped; {
		select {
		case <-procs["m1"].stopped:
			stopped = true
		case err := <-procs["m1"].exited:
			t.Fatalf("m1 exited (%v) before its stop; output %q, stderr:\n%s", err, procs["m1"].output(), procs["m1"].stderr.String())
		case <-deadline:
			t.Fatalf("m1 did not reach its 4th commit; output %q, stderr:\n%s", procs["m1"].output(), procs["m1"].stderr.String())
		case <-time.After(100 * time.Millisecond):
			p.produceRounds(ctx, 1)
		}
	}
	if len(procs["m1"].partitions()) == 0 {
		t.Fatalf("m1 stopped before committing a batch: %q", procs["m1"].output())
	}
	m1parts := procs["m1"].partitions()
	procs["m1"].wait(syscall.SIGKILL)
	t.Logf("m1 killed after %v, having committed partitions %v", time.Since(start).Round(time.Millisecond), m1parts)
	procs["m4"] = startIngestProcess(t, "m4", job("m4", 0))
	// Keep producing until m4 got partitions in the rebalance and
	// committed a batch, and another member committed one of m1's
	// partitions: a broker under load may take seconds to rebalance, and
	// records produced before that are all taken by m2 and m3.
	moved := func() bool {
		for part := range m1parts {
			if procs["m2"].partitions()[part] || procs["m3"].partitions()[part] || procs["m4"].partitions()[part] {
				return true
			}
		}
		return false
	}
	deadline = time.After(60 * time.Second)
	for rounds := 0; rounds < 10 || len(procs["m4"].partitions()) == 0 || !moved(); rounds++ {
		select {
		case <-deadline:
			t.Fatalf("60 s after m4 joined: m4 committed partitions %v, m1's partitions %v moved: %v; outputs: m2 %q, m3 %q, m4 %q, m4 stderr:\n%s",
				procs["m4"].partitions(), m1parts, moved(), procs["m2"].output(), procs["m3"].output(), procs["m4"].output(), procs["m4"].stderr.String())
		case <-time.After(100 * time.Millisecond):
			p.produceRounds(ctx, 1)
		}
	}
	// Wait until the table holds every committed record.
	for {
		got := tableRows(t, local)
		if len(got) >= len(p.committed) {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("after 60 s the table holds %d of %d committed records; outputs: m2 %q, m3 %q, m4 %q", len(got), len(p.committed),
				procs["m2"].output(), procs["m3"].output(), procs["m4"].output())
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, name := range []string{"m2", "m3", "m4"} {
		procs[name].wait(syscall.SIGINT)
	}
	t.Logf("all committed records in the table after %v", time.Since(start).Round(time.Millisecond))
	checkIngestedLedger(t, local, c.topic, p.ledger)
	if len(m1parts) == 0 {
		t.Errorf("m1 committed no batch before its kill: %q", procs["m1"].output())
	}
	if len(procs["m4"].partitions()) == 0 {
		t.Errorf("m4 committed no batch: it got no partition in the rebalance; output %q", procs["m4"].output())
	}
	if !moved() {
		t.Errorf("no partition of m1 (%v) was committed by another member after its kill", m1parts)
	}
}
