package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/table"
)

// WithConsumerGroup makes the Ingester one member of the Kafka consumer
// group group: the group's members split the partitions of the topics
// between them (cooperative-sticky balancing) and move them when members
// come and go. queryID is the query all members share: the offsets are
// recorded under its appIds (AppID(queryID, topic, partition)), whichever
// member commits them. The sink's query id names this member's epochs and
// must be its own, different from queryID and from every other member's
// (MemberQueryID(queryID, member) makes one); two live members with one
// sink query id fence each other. Offsets are never committed to Kafka:
// the table holds them (see the package doc for how the members fence
// each other through them).
func WithConsumerGroup(group, queryID string) Option {
	return func(c *config) { c.group, c.offsetsQuery = group, queryID }
}

// MemberQueryID returns the sink query id of member (a name unique within
// the group, stable across restarts if the member should resume its
// epochs, e.g. a host name) in the consumer group ingest of the query
// queryID: "<queryID>/member/<member>".
func MemberQueryID(queryID, member string) string { return queryID + "/member/" + member }

// checkGroup validates WithConsumerGroup's arguments against the sink.
func checkGroup(cfg *config, sinkQuery string) error {
	switch {
	case cfg.group == "" && cfg.offsetsQuery == "":
		return nil
	case cfg.group == "":
		return errors.New("kafkasink: empty consumer group name")
	case cfg.offsetsQuery == "":
		return fmt.Errorf("kafkasink: consumer group %q: empty query id", cfg.group)
	case cfg.offsetsQuery == sinkQuery:
		return fmt.Errorf("kafkasink: consumer group %q: the sink's query id %q is the group's query id: give each member a sink query id of its own (MemberQueryID)",
			cfg.group, sinkQuery)
	}
	if q, t, p, ok := ParseAppID(cfg.offsetsQuery); ok {
		return fmt.Errorf("kafkasink: query id %q has the form of the offset appId of query %q, topic %q, partition %d: choose another",
			cfg.offsetsQuery, q, t, p)
	}
	return nil
}

// groupState is what a group member knows of its partitions: for each
// partition it owns, the next offset the table recorded for it when the
// member last looked (at the assignment, after its own commits, after
// finding another member's commit), -1 when the table had none.
type groupState struct {
	mu   sync.Mutex
	next map[TopicPartition]int64
	// seek holds, per partition, an offset the consumer must move to: the
	// table is ahead of everything the member fetched.
	seek map[TopicPartition]int64
	// startOffsets collects the offsets partitions were assigned at.
	start map[TopicPartition]int64
}

// movedError is the precondition failure of a group member's commit: the
// table records other offsets for some of the batch's partitions than the
// member expected, because another member committed them.
type movedError struct {
	want, got map[TopicPartition]int64
}

func (e *movedError) Error() string {
	var b strings.Builder
	for i, tp := range slices.SortedFunc(maps.Keys(e.got), compareTP) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s at %d, not %d", tp, e.got[tp], e.want[tp])
	}
	return "kafkasink: another member committed partitions of the batch: the table records " + b.String()
}

// check returns the precondition of a commit of parts: the table (the
// snapshot the commit starts from) records for each exactly the next
// offset the member expects.
func (g *groupState) check(offsetsQuery string, parts []TopicPartition) func(*table.Table) error {
	g.mu.Lock()
	want := make(map[TopicPartition]int64, len(parts))
	for _, tp := range parts {
		want[tp] = g.next[tp]
	}
	g.mu.Unlock()
	return func(tbl *table.Table) error {
		got, err := Offsets(tbl.Snapshot(), offsetsQuery, parts)
		if err != nil {
			return err
		}
		moved := &movedError{want: want, got: map[TopicPartition]int64{}}
		for _, tp := range parts {
			if got[tp] != want[tp] {
				moved.got[tp] = got[tp]
			}
		}
		if len(moved.got) > 0 {
			return moved
		}
		return nil
	}
}

// moved takes in the offsets another member committed. The table's offset
// of a partition only grows (every commit of it checked the one before);
// one that went back, or vanished, means a writer outside the group.
func (g *groupState) moved(m *movedError) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for tp, got := range m.got {
		if got < m.want[tp] {
			return fmt.Errorf("kafkasink: partition %s: the table's next offset went back from %d to %d: a writer outside the group changed it", tp, m.want[tp], got)
		}
		if _, owned := g.next[tp]; owned {
			g.next[tp] = got
		}
	}
	return nil
}

// keep returns the records of recs the member may still commit: of the
// partitions it owns, at or after the table's next offset; n counts the
// others. A partition whose records are all left out and whose table
// offset is beyond them is marked for a seek.
func (g *groupState) keep(recs []*kgo.Record) (kept []*kgo.Record, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	last := map[TopicPartition]int64{}
	kept = recs[:0:0]
	for _, r := range recs {
		tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
		next, owned := g.next[tp]
		if !owned || r.Offset < next {
			n++
			if owned {
				last[tp] = max(last[tp], r.Offset)
			}
			continue
		}
		kept = append(kept, r)
	}
	for tp, l := range last {
		if g.next[tp] > l+1 {
			g.seek[tp] = g.next[tp]
		}
	}
	return kept, n
}

// committed records the member's own commit of offsets.
func (g *groupState) committed(offsets map[TopicPartition]int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for tp, o := range offsets {
		if _, owned := g.next[tp]; owned {
			g.next[tp] = o
		}
		delete(g.seek, tp)
	}
}

// seeks returns and clears the pending seeks.
func (g *groupState) seeks() map[string]map[int32]kgo.EpochOffset {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.seek) == 0 {
		return nil
	}
	out := map[string]map[int32]kgo.EpochOffset{}
	for tp, o := range g.seek {
		if out[tp.Topic] == nil {
			out[tp.Topic] = map[int32]kgo.EpochOffset{}
		}
		out[tp.Topic][tp.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o}
	}
	clear(g.seek)
	return out
}

// drop forgets revoked or lost partitions.
func (g *groupState) drop(parts map[string][]int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for t, ps := range parts {
		for _, p := range ps {
			delete(g.next, TopicPartition{Topic: t, Partition: p})
			delete(g.seek, TopicPartition{Topic: t, Partition: p})
		}
	}
}

// assign reads the table's offsets of newly assigned partitions and makes
// them the consumer's start offsets (AdjustFetchOffsetsFn).
func (in *Ingester) assign(ctx context.Context, g *groupState, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	if _, err := in.sink.LastCommittedEpoch(ctx); err != nil { // refreshes the table
		return nil, fmt.Errorf("kafkasink: query %s: %w", in.sink.QueryID(), err)
	}
	var parts []TopicPartition
	for t, ps := range assigned {
		for p := range ps {
			parts = append(parts, TopicPartition{Topic: t, Partition: p})
		}
	}
	slices.SortFunc(parts, compareTP)
	offs, err := Offsets(in.sink.Table().Snapshot(), in.offsetsQuery(), parts)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: query %s: %w", in.offsetsQuery(), err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]map[int32]kgo.Offset{}
	for _, tp := range parts {
		o, start := in.cfg.startAt.offset()
		if v := offs[tp]; v >= 0 {
			o, start = kgo.NewOffset().At(v).WithEpoch(-1), v
		}
		if out[tp.Topic] == nil {
			out[tp.Topic] = map[int32]kgo.Offset{}
		}
		out[tp.Topic][tp.Partition] = o
		g.next[tp] = offs[tp]
		g.start[tp] = start
	}
	in.cfg.logger.Info("kafkasink: partitions assigned", "query", in.sink.QueryID(), "group", in.cfg.group, "partitions", fmt.Sprint(parts))
	return out, nil
}

// runGroup is Run as a member of a consumer group.
func (in *Ingester) runGroup(ctx context.Context) (*Stats, error) {
	last, err := in.sink.LastCommittedEpoch(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: query %s: %w", in.sink.QueryID(), err)
	}
	st := &Stats{StartEpoch: last + 1, StartOffsets: map[TopicPartition]int64{}, Offsets: map[TopicPartition]int64{}}
	g := &groupState{next: map[TopicPartition]int64{}, seek: map[TopicPartition]int64{}, start: map[TopicPartition]int64{}}
	var assignErr error
	var assignMu sync.Mutex
	revoked := func(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
		// Rebalances wait for AllowRebalance (BlockRebalanceOnPoll): no
		// commit of these partitions is under way; forget them before the
		// revoke completes.
		g.drop(parts)
		if len(parts) > 0 {
			in.cfg.logger.Info("kafkasink: partitions revoked", "query", in.sink.QueryID(), "group", in.cfg.group, "partitions", fmt.Sprint(parts))
		}
	}
	// The topics must exist and the brokers answer (TLS, SASL): a group
	// member that only waits for an assignment would otherwise idle
	// silently on a wrong topic or a refused connection.
	if _, err := in.partitions(ctx); err != nil {
		return in.finish(st, err)
	}
	in.cfg.logger.Info("kafkasink: joining consumer group", "query", in.sink.QueryID(), "group", in.cfg.group, "epoch", st.StartEpoch)
	var opts []kgo.Opt
	if in.cfg.idle > 0 {
		opts = append(opts, kgo.FetchMaxWait(min(max(in.cfg.idle/4, 10*time.Millisecond), 5*time.Second)))
	}
	reset, _ := in.cfg.startAt.offset()
	opts = append(append(opts, in.cfg.clientOpts...),
		kgo.SeedBrokers(in.brokers...),
		kgo.ConsumerGroup(in.cfg.group),
		kgo.ConsumeTopics(in.topics...),
		kgo.ConsumeResetOffset(reset),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {}),
		kgo.AdjustFetchOffsetsFn(func(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
			out, err := in.assign(ctx, g, assigned)
			if err != nil {
				assignMu.Lock()
				assignErr = err
				assignMu.Unlock()
			}
			return out, err
		}),
		kgo.OnPartitionsRevoked(revoked),
		kgo.OnPartitionsLost(revoked),
	)
	dlq, err := in.deadLetterClient(ctx)
	if err != nil {
		return in.finish(st, err)
	}
	if dlq != nil {
		defer dlq.Close()
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: %w", err)
	}
	defer cl.Close()
	done := func(err error) (*Stats, error) {
		g.mu.Lock()
		maps.Copy(st.StartOffsets, g.start)
		g.mu.Unlock()
		cl.AllowRebalance()
		return in.finish(st, err)
	}
	epoch := st.StartEpoch
	var wait idleWait // set while idle with lag in the group
	for in.cfg.maxBatches == 0 || st.Batches < in.cfg.maxBatches {
		recs, ends, idle, err := in.poll(ctx, cl)
		assignMu.Lock()
		aerr := assignErr
		assignMu.Unlock()
		switch {
		case aerr != nil:
			return done(aerr)
		case err != nil:
			return done(err)
		case idle:
			// The idle timeout passed without a record for this member;
			// other members (or a dead member's session) may still hold
			// partitions with records the table has not got.
			stop, err := in.idleInGroup(ctx, cl, &wait)
			if err != nil || stop {
				if err == nil {
					st.Stopped = StopIdle
				}
				return done(err)
			}
		}
		if len(recs) == 0 {
			cl.AllowRebalance()
			continue
		}
		wait = idleWait{}
		b, err := in.writeBatch(ctx, epoch, recs, ends, st, g, dlq)
		if err != nil {
			return done(err)
		}
		if s := g.seeks(); s != nil {
			cl.SetOffsets(s)
		}
		cl.AllowRebalance()
		if b == nil {
			continue
		}
		in.batchDone(st, b)
		epoch++
	}
	st.Stopped = StopMaxBatches
	return done(nil)
}
