package streamsink

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// The two-phase crash matrix: a checkpointing processor (Flink's model)
// drives Prepare and Commit, and crashes at every object-store call it
// makes.
//
// The processor's stream of crashEpochs epochs: at the barrier of epoch e
// it calls Prepare(e) and adds the committable's bytes to its pending
// list; then checkpoint e completes, storing {next epoch e+1, pending
// committables} in the processor's own checkpoint storage (outside the
// table's store: it survives the crash); then the checkpoint-complete
// notification commits every pending committable in order and drops them
// from the pending list. The notification of every even checkpoint is
// lost (Flink does not guarantee it), so the next checkpoint holds two
// committables and commits both.
//
// One fault-free run enumerates the calls (twice, to prove they repeat).
// Then for each call and each phase (before, after) a fresh scenario
// crashes the processor there (FaultCrash). A restarted processor on a
// fault-free view of the store restores the last completed checkpoint,
// commits its pending committables (a committable that had committed is a
// no-op, one that had not commits now), and continues the stream from the
// checkpoint's next epoch. The crash matrix's checker (checkTable) then
// proves every epoch is in the table exactly once, nothing the log
// references is missing and VerifyExactlyOnce is clean; orphans (files of
// a Prepare whose checkpoint never completed) are counted, and must never
// have been referenced.

// tpCheckpoint is one completed checkpoint of the processor.
type tpCheckpoint struct {
	next    int64    // the first epoch after the checkpoint
	pending [][]byte // committables not known to be committed, in epoch order
}

// tpStep names the processor's steps, for the coverage report.
type tpStep string

const (
	tpOpen    tpStep = "open"
	tpPrepare tpStep = "prepare"
	tpCommit  tpStep = "commit"
)

// tpOutcome is what one two-phase scenario did.
type tpOutcome struct {
	calls   []objectstore.Call
	steps   []tpStep // steps[i]: the step of call i+1
	crashed bool
	acked   []int64 // epochs whose Commit committed before the crash
	// restored is the checkpoint the restart restored.
	restored     tpCheckpoint
	resumedAfter int64 // the query's txn version at the (last) restart
	// restoreCalls are the calls [from, to) of the first restart that
	// committed the restored committables; restartCrashed is true when
	// that restart crashed.
	restoreCalls   [2]int
	restartCrashed bool
	check          *tableCheck
}

// tpProcessor is one run of the processor on a store.
type tpProcessor struct {
	sink *Sink
	ckpt *tpCheckpoint // the processor's checkpoint storage
	// pending are the committables prepared since the last commit.
	pending [][]byte
	// mark records a step starting (nil: no recording).
	mark func(tpStep)
}

func openTPProcessor(ctx context.Context, store objectstore.Store, ckpt *tpCheckpoint) (*tpProcessor, error) {
	tbl, err := table.Open(ctx, "", tableOpts(store)...)
	if err != nil {
		return nil, err
	}
	s, err := New(tbl, crashQuery, WithLogger(quiet), WithWriteOptions(table.WithWriteConcurrency(1)))
	if err != nil {
		return nil, err
	}
	return &tpProcessor{sink: s, ckpt: ckpt, mark: func(tpStep) {}}, nil
}

// commitPending commits every pending committable in order (the
// checkpoint-complete notification); committed ones leave the list. It
// calls onCommit with each result.
func (p *tpProcessor) commitPending(ctx context.Context, onCommit func(*CommitResult)) error {
	for len(p.pending) > 0 {
		c, err := DecodeCommittable(p.pending[0])
		if err != nil {
			return err
		}
		p.mark(tpCommit)
		res, err := p.sink.Commit(ctx, c)
		if err != nil {
			return err
		}
		onCommit(res)
		p.pending = p.pending[1:]
	}
	return nil
}

// run runs epochs from..crashEpochs-1.
func (p *tpProcessor) run(ctx context.Context, from int64, onCommit func(*CommitResult)) error {
	for e := from; e < crashEpochs; e++ {
		p.mark(tpPrepare)
		c, err := p.sink.Prepare(ctx, e, rowsOf(e))
		if err != nil {
			return fmt.Errorf("prepare epoch %d: %w", e, err)
		}
		if c.Skipped() {
			return fmt.Errorf("prepare epoch %d: skipped, the table holds an epoch no completed checkpoint had", e)
		}
		b, err := c.MarshalBinary()
		if err != nil {
			return err
		}
		p.pending = append(p.pending, b)
		// Checkpoint e completes: the pending committables are stored.
		*p.ckpt = tpCheckpoint{next: e + 1, pending: slices.Clone(p.pending)}
		if e%2 == 0 {
			continue // the notification of checkpoint e is lost
		}
		if err := p.commitPending(ctx, onCommit); err != nil {
			return fmt.Errorf("after checkpoint %d: %w", e, err)
		}
	}
	return nil
}

// runTwoPhase runs one scenario on a new memory store.
// props are the table's properties; faults are injected into the first
// processor's store calls, restartFaults into the restarted one's.
func runTwoPhase(t *testing.T, props map[string]string, faults, restartFaults []objectstore.Fault) *tpOutcome {
	ctx := t.Context()
	out := &tpOutcome{check: &tableCheck{}}
	c := out.check
	base := objectstore.NewMem(t.Name())
	if _, err := table.Create(ctx, "", eventSchema, append(tableOpts(base), table.WithProperties(props))...); err != nil {
		c.addf("create: %v", err)
		return out
	}
	ckpt := &tpCheckpoint{}

	// The first processor: dies at the injected crash, or finishes.
	wctx, kill := context.WithCancel(ctx)
	defer kill()
	f := objectstore.NewFaulty(base, objectstore.WithCrashHook(kill))
	f.Inject(faults...)
	step := tpOpen
	record := func() {
		for len(out.steps) < len(f.Calls()) {
			out.steps = append(out.steps, step)
		}
	}
	p, err := openTPProcessor(wctx, f, ckpt)
	switch {
	case err != nil && !f.Crashed():
		c.addf("first processor: open: %v", err)
		return out
	case err == nil:
		p.mark = func(s tpStep) { record(); step = s }
		err = p.run(wctx, 0, func(r *CommitResult) {
			if r.AlreadyCommitted {
				c.addf("first processor: epoch %d already committed on its first commit", r.Epoch)
			}
			out.acked = append(out.acked, r.Epoch)
		})
		if err != nil && !f.Crashed() {
			c.addf("first processor: %v", err)
			return out
		}
	}
	record()
	kill()
	out.calls, out.crashed = f.Calls(), f.Crashed()

	// The restarted processor restores the last completed checkpoint; when
	// it crashes too, a third one does.
	if tpRestart(ctx, base, ckpt, out, restartFaults) {
		out.restartCrashed = true
		if tpRestart(ctx, base, ckpt, out, nil) && len(c.problems) == 0 {
			c.addf("the third processor crashed")
		}
	}
	if len(c.problems) > 0 {
		return out
	}
	final := checkTable(ctx, base, crashQuery, crashEpochs, crashRowsPerEpoch, crashEpochs)
	c.problems = append(c.problems, final.problems...)
	c.lost += final.lost
	c.duplicated += final.duplicated
	c.orphans = final.orphans
	return out
}

// tpRestart restores ckpt on store, commits its pending committables,
// checks what each commit did, and finishes the stream. Its store calls go
// through a Faulty with faults (nil: none), whose crash ends the restart
// early (crashed true): out.restoreCalls then says which calls (1-based,
// [from, to)) committed the restored committables.
func tpRestart(ctx context.Context, base objectstore.Store, ckpt *tpCheckpoint, out *tpOutcome, faults []objectstore.Fault) (crashed bool) {
	ctx, kill := context.WithCancel(ctx)
	defer kill()
	f := objectstore.NewFaulty(base, objectstore.WithCrashHook(kill))
	f.Inject(faults...)
	c := out.check
	// fail reports a problem unless the injected crash caused it.
	fail := func(format string, args ...any) bool {
		if f.Crashed() {
			return true
		}
		c.addf(format, args...)
		return false
	}
	out.restored = tpCheckpoint{next: ckpt.next, pending: slices.Clone(ckpt.pending)}
	p, err := openTPProcessor(ctx, f, ckpt)
	if err != nil {
		return fail("restart: open: %v", err)
	}
	last, err := p.sink.LastCommittedEpoch(ctx)
	if err != nil {
		return fail("restart: last committed epoch: %v", err)
	}
	out.resumedAfter = last
	// What the table holds: epochs 0..last, each whole, all of them in a
	// completed checkpoint; nothing acknowledged is lost.
	if n := len(out.acked); n > 0 && out.acked[n-1] > last {
		c.lost += int(out.acked[n-1]-last) * crashRowsPerEpoch
		c.addf("restart: table's last epoch %d, but epoch %d was acknowledged", last, out.acked[n-1])
	}
	if last >= ckpt.next {
		c.addf("restart: table holds epoch %d, the last completed checkpoint ends before %d", last, ckpt.next)
	}
	counts, err := epochCounts(ctx, p.sink.Table())
	if err != nil {
		return fail("restart: %v", err)
	}
	var held []int64
	for e := range last + 1 {
		held = append(held, e)
	}
	checkEpochRows(c, counts, held, crashRowsPerEpoch, nil)
	if len(c.problems) > 0 {
		return false
	}

	// Restore: commit the checkpoint's pending committables.
	p.pending = slices.Clone(ckpt.pending)
	acked := func(r *CommitResult) {
		if !r.AlreadyCommitted {
			out.acked = append(out.acked, r.Epoch)
		}
	}
	check := func(r *CommitResult) {
		acked(r)
		switch want := r.Epoch <= last; {
		case r.AlreadyCommitted != want:
			c.addf("restart: commit of restored epoch %d: already committed %v, want %v (last committed %d)", r.Epoch, r.AlreadyCommitted, want, last)
		case r.ByOtherFiles:
			c.addf("restart: restored epoch %d was committed with other files", r.Epoch)
		case r.Version < 1:
			c.addf("restart: restored epoch %d: version %d", r.Epoch, r.Version)
		}
	}
	out.restoreCalls[0] = len(f.Calls()) + 1
	err = p.commitPending(ctx, check)
	out.restoreCalls[1] = len(f.Calls()) + 1
	if err != nil {
		return fail("restart: commit pending: %v", err)
	}
	// Continue the stream.
	err = p.run(ctx, ckpt.next, func(r *CommitResult) {
		acked(r)
		if r.AlreadyCommitted {
			c.addf("restart: new epoch %d already committed", r.Epoch)
		}
	})
	if err != nil {
		return fail("restart: %v", err)
	}
	// A second restart that replays the restored committables again: all
	// no-ops, committed with their own files.
	for _, b := range out.restored.pending {
		cm, err := DecodeCommittable(b)
		if err != nil {
			return fail("replay: %v", err)
		}
		r, err := p.sink.Commit(ctx, cm)
		switch {
		case err != nil:
			return fail("replay: epoch %d: %v", cm.EpochID(), err)
		case !r.AlreadyCommitted || r.ByOtherFiles:
			c.addf("replay: epoch %d: %+v, want already committed with its own files", cm.EpochID(), *r)
		}
	}
	return f.Crashed()
}

// TestTwoPhaseCrashMatrix crashes the checkpointing processor at every
// store call of every step (open, prepare, commit), before and after the
// call, on a table without and with log checkpoints (every second commit
// writes one: the commit step then crashes in checkpoint writes too), and
// prints how many crash points it covered.
func TestTwoPhaseCrashMatrix(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
	}{
		{"no log checkpoints", nil},
		{"log checkpoint every 2 commits", map[string]string{txlog.PropCheckpointInterval: "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) { twoPhaseMatrix(t, tc.props) })
	}
}

// tpEnumerate runs the processor without faults, twice, and returns the
// first run's calls with the step of each; both runs must make the same
// calls, or the crash points would not name what they claim to.
func tpEnumerate(t *testing.T, props map[string]string) ([]objectstore.Call, []tpStep) {
	t.Helper()
	var runs [2]*tpOutcome
	for i := range runs {
		out := runTwoPhase(t, props, nil, nil)
		if len(out.check.problems) > 0 || out.crashed || len(out.acked) != crashEpochs {
			t.Fatalf("fault-free run: crashed %v, acked %v, problems:\n%s", out.crashed, out.acked, strings.Join(out.check.problems, "\n"))
		}
		runs[i] = out
	}
	names := func(o *tpOutcome) string {
		var s []string
		for _, c := range o.calls {
			s = append(s, callString(c))
		}
		return strings.Join(s, "\n")
	}
	if names(runs[0]) != names(runs[1]) {
		t.Fatalf("two fault-free runs made different calls:\n%s\n---\n%s", names(runs[0]), names(runs[1]))
	}
	if len(runs[0].steps) != len(runs[0].calls) {
		t.Fatalf("%d steps recorded for %d calls", len(runs[0].steps), len(runs[0].calls))
	}
	return runs[0].calls, runs[0].steps
}

func twoPhaseMatrix(t *testing.T, props map[string]string) {
	calls, steps := tpEnumerate(t, props)
	var (
		st        matrixStats
		wg        sync.WaitGroup
		sem       = make(chan struct{}, 2)
		mu        sync.Mutex
		perStep   = map[tpStep]int{}
		committed atomic.Int64 // restored committables that had committed before the crash
		redone    atomic.Int64 // restored committables committed by the restart
	)
	for i := 1; i <= len(calls); i++ {
		for _, phase := range []objectstore.Phase{objectstore.Before, objectstore.After} {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				name := fmt.Sprintf("crash %s call %d (%s, %s)", phaseName(phase), i, steps[i-1], callString(calls[i-1]))
				out := runTwoPhase(t, props, []objectstore.Fault{{Nth: i, Phase: phase, Kind: objectstore.FaultCrash}}, nil)
				st.points.Add(1)
				st.lost.Add(int64(out.check.lost))
				st.duplicated.Add(int64(out.check.duplicated))
				st.orphans.Add(int64(out.check.orphans))
				for _, b := range out.restored.pending {
					if cm, err := DecodeCommittable(b); err == nil && cm.EpochID() <= out.resumedAfter {
						committed.Add(1)
					} else {
						redone.Add(1)
					}
				}
				mu.Lock()
				perStep[steps[i-1]]++
				mu.Unlock()
				if !out.crashed {
					t.Errorf("%s: the crash never struck (%d calls made)", name, len(out.calls))
				} else if got := callString(out.calls[i-1]); got != callString(calls[i-1]) {
					t.Errorf("%s: call %d was %s this time", name, i, got)
				}
				if len(out.check.problems) > 0 {
					t.Errorf("%s: acked %v, restored %d pending (next %d), resumed after %d:\n  %s", name, out.acked,
						len(out.restored.pending), out.restored.next, out.resumedAfter, strings.Join(out.check.problems, "\n  "))
				}
			}()
		}
	}
	wg.Wait()
	for _, s := range []tpStep{tpOpen, tpPrepare, tpCommit} {
		if perStep[s] == 0 {
			t.Errorf("no crash point in step %s", s)
		}
	}
	if committed.Load() == 0 || redone.Load() == 0 {
		t.Errorf("restored committables: %d had committed, %d committed on restore; want both cases", committed.Load(), redone.Load())
	}
	var stepCounts []string
	for _, s := range slices.Sorted(maps.Keys(perStep)) {
		stepCounts = append(stepCounts, fmt.Sprintf("%s %d", s, perStep[s]))
	}
	summary := fmt.Sprintf("crash matrix: two-phase, %s: %d points (%s); restored committables: %d already committed, %d committed on restore; %d lost, %d duplicated, %d orphan files never referenced",
		t.Name()[strings.LastIndex(t.Name(), "/")+1:], st.points.Load(), strings.Join(stepCounts, ", "), committed.Load(), redone.Load(), st.lost.Load(), st.duplicated.Load(), st.orphans.Load())
	if st.lost.Load() != 0 || st.duplicated.Load() != 0 {
		t.Error(summary)
	}
	t.Log(summary)
	fmt.Println(summary) // scripts/test.sh shows the crash matrix lines
}

// TestTwoPhaseCrashDuringRecovery crashes the processor twice: first at
// every store call of its run (as TestTwoPhaseCrashMatrix), then the
// restarted processor at every store call (before and after it) of its
// restore, while it commits the restored committables; a third processor
// restores the same checkpoint and finishes. Exactly once still holds.
// First crashes that leave the same state to restore (the checkpoint's
// next epoch and pending committables, the table's last epoch) make the
// same restore calls; the second crashes run once per distinct state.
func TestTwoPhaseCrashDuringRecovery(t *testing.T) {
	calls, _ := tpEnumerate(t, nil)
	var (
		st     matrixStats
		wg     sync.WaitGroup
		sem    = make(chan struct{}, 2)
		phases = []objectstore.Phase{objectstore.Before, objectstore.After}
		states = map[string]bool{}
	)
	for i := 1; i <= len(calls); i++ {
		for _, phase := range phases {
			first := []objectstore.Fault{{Nth: i, Phase: phase, Kind: objectstore.FaultCrash}}
			// The restore's calls after this first crash, from a run whose
			// restart does not crash.
			probe := runTwoPhase(t, nil, first, nil)
			if len(probe.check.problems) > 0 {
				t.Fatalf("crash %s call %d: %s", phaseName(phase), i, strings.Join(probe.check.problems, "\n  "))
			}
			state := fmt.Sprintf("next %d, %d pending, last %d", probe.restored.next, len(probe.restored.pending), probe.resumedAfter)
			if states[state] {
				continue
			}
			states[state] = true
			for j := probe.restoreCalls[0]; j < probe.restoreCalls[1]; j++ {
				for _, phase2 := range phases {
					sem <- struct{}{}
					wg.Add(1)
					go func() {
						defer func() { <-sem; wg.Done() }()
						name := fmt.Sprintf("crash %s call %d (%s), then %s restore call %d", phaseName(phase), i, callString(calls[i-1]), phaseName(phase2), j)
						out := runTwoPhase(t, nil, first, []objectstore.Fault{{Nth: j, Phase: phase2, Kind: objectstore.FaultCrash}})
						st.points.Add(1)
						st.lost.Add(int64(out.check.lost))
						st.duplicated.Add(int64(out.check.duplicated))
						st.orphans.Add(int64(out.check.orphans))
						if !out.restartCrashed {
							t.Errorf("%s: the restart did not crash", name)
						}
						if len(out.check.problems) > 0 {
							t.Errorf("%s: acked %v, resumed after %d:\n  %s", name, out.acked, out.resumedAfter, strings.Join(out.check.problems, "\n  "))
						}
					}()
				}
			}
		}
	}
	wg.Wait()
	if len(states) < crashEpochs || st.points.Load() < int64(4*len(states)) {
		t.Errorf("only %d double-crash points from %d restore states", st.points.Load(), len(states))
	}
	summary := fmt.Sprintf("crash matrix: two-phase, crash during recovery: %d points from %d distinct restore states; %d lost, %d duplicated, %d orphan files never referenced",
		st.points.Load(), len(states), st.lost.Load(), st.duplicated.Load(), st.orphans.Load())
	if st.lost.Load() != 0 || st.duplicated.Load() != 0 {
		t.Error(summary)
	}
	t.Log(summary)
	fmt.Println(summary) // scripts/test.sh shows the crash matrix lines
}
