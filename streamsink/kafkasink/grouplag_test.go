package kafkasink

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
)

// lagSession is the session timeout of the group members of the idle
// tests: a member that dies holds its partitions this long.
const lagSession = 3 * time.Second

// runResult is what a Run in a goroutine returned.
type runResult struct {
	st  *Stats
	err error
}

// startGroupMember runs, in a goroutine, the member "local" of group into
// the table on store until idle (testIdle, well under lagSession), and
// sends each committed batch to batches (if not nil).
func startGroupMember(t *testing.T, c cluster, store objectstore.Store, group string, batches chan<- Batch) <-chan runResult {
	t.Helper()
	tbl, err := table.Open(t.Context(), "", table.WithStore(store), table.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := streamsink.New(tbl, MemberQueryID(query, "local"), streamsink.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	in, err := New(sink, c.brokers, []string{c.topic}, WithDecoder(recordDecoder), WithMaxBatchRecords(5), WithLogger(quiet),
		WithIdleTimeout(testIdle), WithConsumerGroup(group, query),
		WithClientOptions(kgo.SessionTimeout(lagSession), kgo.HeartbeatInterval(300*time.Millisecond), kgo.RebalanceTimeout(10*time.Second)),
		WithBatchHook(func(b Batch) {
			if batches != nil {
				select {
				case batches <- b:
				default:
				}
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan runResult, 1)
	go func() {
		st, err := in.Run(t.Context())
		done <- runResult{st, err}
	}()
	return done
}

// awaitRun waits for the member's Run to return.
func awaitRun(t *testing.T, done <-chan runResult) runResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(90 * time.Second):
		t.Fatal("the member's Run did not return within 90 s")
		return runResult{}
	}
}

// A member of a consumer group is killed (SIGKILL, its own process) just
// before its first commit lands, holding partitions with records the
// table has not got; its session keeps them for lagSession. The member in
// this process, whose idle timeout is shorter, does not stop at the idle
// timeout while they are unread: it waits, gets them when the dead
// member's session times out, and ends idle with every committed record
// in the table once.
func TestIngestGroupIdleWaitsForDeadMember(t *testing.T) {
	t.Parallel()
	c := startReal(t)
	ctx := t.Context()
	p := newProducer(t, c)
	dir := t.TempDir()
	local, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	createTable(t, local)
	group := "idle-dead-" + c.topic
	p.produceRounds(ctx, 2)
	done := startGroupMember(t, c, local, group, nil)
	dead := startIngestProcess(t, "dead", helperJob{Brokers: c.brokers, Topic: c.topic, Table: dir, Group: group, Member: "dead", StopAt: 1, Session: lagSession})
	deadline := time.After(60 * time.Second)
	for stopped := false; !stopped; {
		select {
		case <-dead.stopped:
			stopped = true
		case err := <-dead.exited:
			t.Fatalf("the member to kill exited (%v) before its stop; output %q, stderr:\n%s", err, dead.output(), dead.stderr.String())
		case r := <-done:
			t.Fatalf("the local member stopped (%+v, %v) before the other one was killed", r.st, r.err)
		case <-deadline:
			t.Fatalf("the member to kill did not reach its first commit in 60 s; stderr:\n%s", dead.stderr.String())
		case <-time.After(100 * time.Millisecond):
			p.produceRounds(ctx, 1)
		}
	}
	dead.wait(syscall.SIGKILL)
	killed := time.Now()
	r := awaitRun(t, done)
	t.Logf("the local member stopped %v after the kill: %+v", time.Since(killed).Round(time.Millisecond), r.st)
	if r.err != nil || r.st.Stopped != StopIdle {
		t.Fatalf("Run: %+v, %v; want an idle stop", r.st, r.err)
	}
	checkIngestedLedger(t, local, c.topic, p.ledger)
}

// A live member of the group holds partitions with records and commits
// nothing (a plain consumer that never writes the table). The member in
// this process reaches its idle timeout, waits for the partitions (the
// session timeout plus the wait after it) and then fails with a
// *GroupLagError naming exactly the held partitions and the member
// holding them, instead of ending idle as if all were read.
func TestIngestGroupIdleFailsOnStuckMember(t *testing.T) {
	t.Parallel()
	c := startReal(t)
	ctx := t.Context()
	p := newProducer(t, c)
	store := objectstore.NewMem(t.Name())
	createTable(t, store)
	group := "idle-stuck-" + c.topic
	p.produceRounds(ctx, 2)
	batches := make(chan Batch, 100)
	done := startGroupMember(t, c, store, group, batches)
	select {
	case <-batches:
	case r := <-done:
		t.Fatalf("the local member stopped (%+v, %v) before its first batch", r.st, r.err)
	case <-time.After(60 * time.Second):
		t.Fatal("the local member committed no batch in 60 s")
	}
	assigned := make(chan map[string][]int32, 10)
	holder, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.ClientID("stuck-holder"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(c.topic), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(lagSession), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { assigned <- m }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(holder.Close)
	var held []int32
	for len(held) == 0 {
		select {
		case m := <-assigned:
			held = append(held, m[c.topic]...)
		case r := <-done:
			t.Fatalf("the local member stopped (%+v, %v) before the holder got partitions", r.st, r.err)
		case <-time.After(60 * time.Second):
			t.Fatal("the holder got no partition in 60 s")
		}
	}
	slices.Sort(held)
	p.produceRounds(ctx, 2) // records on every partition, the held ones too
	began := time.Now()
	r := awaitRun(t, done)
	t.Logf("Run returned %v after the last records: %v", time.Since(began).Round(time.Millisecond), r.err)
	var lagErr *GroupLagError
	if !errors.Is(r.err, ErrGroupLag) || !errors.As(r.err, &lagErr) {
		t.Fatalf("Run: %+v, %v; want a *GroupLagError", r.st, r.err)
	}
	var got []int32
	for _, l := range lagErr.Lag {
		got = append(got, l.Partition)
		if l.Topic != c.topic || l.First < max(l.Next, 0) || l.End <= l.First || !strings.Contains(l.Owner, "stuck-holder") {
			t.Errorf("lag %+v: want a record at or after the table offset, before the end, held by stuck-holder", l)
		}
	}
	if !slices.Equal(got, held) {
		t.Errorf("lagging partitions %v, want the held ones %v", got, held)
	}
	if lagErr.Waited < lagSession || lagErr.SessionTimeout != lagSession || !strings.Contains(r.err.Error(), "stuck-holder") {
		t.Errorf("error %v (waited %v, session %v): want a wait of at least the session timeout %v and the holder named", r.err, lagErr.Waited, lagErr.SessionTimeout, lagSession)
	}
	// Every committed record of the partitions it kept is in the table.
	want := map[int64][2]int64{}
	for id, po := range p.committed {
		if !slices.Contains(held, int32(po[0])) {
			want[id] = po
		}
	}
	gotRows := tableRows(t, store)
	maps.DeleteFunc(gotRows, func(_ int64, po [2]int64) bool { return slices.Contains(held, int32(po[0])) })
	if !maps.Equal(gotRows, want) {
		t.Errorf("the table holds %d records of the partitions not held, want %d", len(gotRows), len(want))
	}
}
