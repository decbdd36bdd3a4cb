package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// process is a server run as a child process (MinIO, the Kafka broker): the
// directory of its files, its output and its exit. MinIO and Kafka embed
// it; call init before use.
type process struct {
	dir       string        // the server's files, removed by close
	cmd       *exec.Cmd     // the server process, nil until run
	exited    chan struct{} // closed when the process has exited
	waitErr   error         // why it exited; set before exited is closed
	log       *syncBuffer   // the server's output
	closeOnce sync.Once
	closeErr  error
}

// init finds n free ports for the server (its listener and others:
// MinIO's console, Kafka's controller and secured listeners) and readies p
// for a server whose files are in a new directory named prefix* under
// tmpDir (p.dir).
func (p *process) init(tmpDir, prefix string, n int) (ports []int, err error) {
	ports, err = freePorts(n)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tmpDir, prefix)
	if err != nil {
		return nil, err
	}
	p.dir, p.exited, p.log = dir, make(chan struct{}), &syncBuffer{}
	return ports, nil
}

// run starts cmd with its output going to p's log and watches for its exit.
// When cmd cannot start, p's directory is removed.
func (p *process) run(cmd *exec.Cmd) error {
	p.cmd = cmd
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		os.RemoveAll(p.dir)
		return err
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return nil
}

// close interrupts the process, kills it if it has not exited after grace,
// and removes its directory. Calls after the first return the first call's
// result.
func (p *process) close(grace time.Duration) error {
	p.closeOnce.Do(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		p.closeErr = os.RemoveAll(p.dir)
	})
	return p.closeErr
}

// Output returns what the server has written to stdout and stderr so far.
func (p *process) Output() string { return p.log.String() }

// startRetried calls start up to three times, as a free port can be taken
// between finding and binding it, and stops early when ctx is done. The
// last failure becomes an unavailable *startError saying that what did not
// start, with the output of the server if it ran (start returns it, or
// nil).
func startRetried[S interface {
	comparable
	Output() string
}](ctx context.Context, what string, start func() (S, error)) (S, error) {
	var s, none S
	var err error
	for range 3 {
		s, err = start()
		if err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		output := ""
		if s != none {
			output = s.Output()
		}
		return none, &startError{unavailable: true, msg: fmt.Sprintf("%s did not start: %v", what, err), output: output}
	}
	return s, nil
}

// startError is why StartServer or StartKafkaBroker failed.
type startError struct {
	unavailable bool   // no server could run: no install, or it did not start
	msg         string // what failed
	output      string // the server's output, if it ran
}

func (e *startError) Error() string {
	if e.output == "" {
		return "testenv: " + e.msg
	}
	return "testenv: " + e.msg + "\nserver output:\n" + e.output
}

// serverKind names a kind of server in the messages of a test that needs
// one.
type serverKind struct {
	name   string // "MinIO": what is stopped
	server string // "MinIO server": whose output it is
	output string // "server": the label of its output in a skip
	script string // the install script
	tests  string // what the install enables
}

var (
	minioKind = serverKind{name: "MinIO", server: "MinIO server", output: "server",
		script: "scripts/install-minio.sh", tests: "the S3 tests"}
	kafkaKind = serverKind{name: "Kafka", server: "Kafka broker", output: "broker",
		script: "scripts/install-kafka.sh", tests: "the Kafka broker tests"}
)

// skipUnavailable ends t because the server cannot run (why, with its
// output if it ran): a failure with CI=true, so that a missing install step
// cannot hide as a skipped test, a skip with a hint to run the install
// script otherwise.
func (k serverKind) skipUnavailable(t testing.TB, why, output string) {
	t.Helper()
	if output != "" {
		output = "\n" + k.output + " output:\n" + output
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("testenv: %s (CI=true, so this fails instead of skipping; scripts/test.sh runs %s)%s", why, k.script, output)
	}
	t.Skipf("testenv: %s; run %s to enable %s%s", why, k.script, k.tests, output)
}

// unavailableError returns the *startError of err when it says no server
// could run, else nil.
func unavailableError(err error) *startError {
	var se *startError
	if errors.As(err, &se) && se.unavailable {
		return se
	}
	return nil
}

// closeAtEnd closes s when t ends, and logs its output if t failed.
func (k serverKind) closeAtEnd(t testing.TB, s interface {
	Close() error
	Output() string
}) {
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("testenv: stop %s: %v", k.name, err)
		}
		if t.Failed() {
			t.Logf("testenv: %s output:\n%s", k.server, s.Output())
		}
	})
}
