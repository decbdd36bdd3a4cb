package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrGroupLag is returned (wrapped in a *GroupLagError) by Run in a
// consumer group when it stopped at the idle timeout while partitions of
// its topics still held records the table has not got and no member
// consumed them while it waited (see WithIdleTimeout).
var ErrGroupLag = errors.New("kafkasink: the consumer group left records unread")

// PartitionLag is a partition that holds records the table has not got.
type PartitionLag struct {
	TopicPartition
	// Next is the next offset the table records for the partition (-1:
	// none); End is its last stable offset, the end a read_committed
	// consumer can reach.
	Next, End int64
	// First is the offset of the first record from Next on that a
	// read_committed consumer receives (not a transaction marker, not of
	// an aborted transaction); -1 when the broker did not answer the look
	// in time and the partition is counted as lagging.
	First int64
	// Owner names the group member the partition was assigned to ("" when
	// none or unknown): its member id, client id and host.
	Owner string
}

func (l PartitionLag) String() string {
	s := fmt.Sprintf("%s (table offset %d, last stable offset %d", l.TopicPartition, l.Next, l.End)
	if l.First >= 0 {
		s += fmt.Sprintf(", first unread record at %d", l.First)
	}
	if l.Owner != "" {
		return s + ", held by member " + l.Owner + ")"
	}
	return s + ", held by no member)"
}

// GroupLagError is the error of a consumer group member that stopped at
// its idle timeout while partitions held by other members (or by the
// session of a member that died) still had records the table has not got,
// and none of them advanced while it waited. It wraps ErrGroupLag.
type GroupLagError struct {
	Group string
	// Lag lists the partitions that did not advance, by topic and
	// partition.
	Lag []PartitionLag
	// Idle is the idle timeout, Waited how long the member waited after
	// it, SessionTimeout the member's group session timeout.
	Idle, Waited, SessionTimeout time.Duration
}

func (e *GroupLagError) Error() string {
	parts := make([]string, len(e.Lag))
	for i, l := range e.Lag {
		parts[i] = l.String()
	}
	return fmt.Sprintf("kafkasink: consumer group %q: no record arrived for the idle timeout %v, but partitions still hold records the table has not got: %s; "+
		"no member consumed them in the %v waited after it (the session timeout %v plus a rebalance): the member holding them is alive but stuck, or did not give them up",
		e.Group, e.Idle, strings.Join(parts, "; "), e.Waited.Round(time.Millisecond), e.SessionTimeout)
}

// Unwrap returns ErrGroupLag.
func (e *GroupLagError) Unwrap() error { return ErrGroupLag }

// minLagWait is the least time a member waits beyond the session timeout
// for a rebalance to hand it the partitions of a member that died.
const minLagWait = 5 * time.Second

// lagProbeTimeout bounds how long groupLag reads partitions to tell
// records from transaction markers.
const lagProbeTimeout = 5 * time.Second

// idleWait is what a group member that reached its idle timeout while the
// group had lag waits for: since when, how long at most, and the table
// offsets of the lagging partitions when it began.
type idleWait struct {
	since time.Time
	limit time.Duration
	base  map[TopicPartition]int64
}

// idleInGroup decides what a group member does when no record arrived for
// the idle timeout: stop (true, nil) when no partition of the topics holds
// records the table has not got, or when every partition that does
// advanced since the wait began (their owners are consuming them); wait
// (false, nil) for the partitions of a member that died to be reassigned,
// up to the session timeout plus the larger of the idle timeout and
// minLagWait; after that, stop with a *GroupLagError naming the
// partitions that did not advance.
func (in *Ingester) idleInGroup(ctx context.Context, cl *kgo.Client, w *idleWait) (stop bool, _ error) {
	lag, err := in.groupLag(ctx, cl)
	if err != nil {
		return true, err
	}
	log := in.cfg.logger.With("query", in.sink.QueryID(), "group", in.cfg.group)
	if len(lag) == 0 {
		if !w.since.IsZero() {
			log.Info("kafkasink: the group's records are all in the table")
		}
		return true, nil
	}
	session := sessionTimeout(cl)
	now := time.Now()
	if w.since.IsZero() {
		*w = idleWait{since: now, limit: session + max(in.cfg.idle, minLagWait), base: map[TopicPartition]int64{}}
		for _, l := range lag {
			w.base[l.TopicPartition] = l.Next
		}
		log.Warn("kafkasink: no record arrived for the idle timeout, but partitions of the group hold records the table has not got: "+
			"waiting for their owners, or for the group to reassign them (a member that died holds its partitions until its session times out)",
			"idle", in.cfg.idle, "wait", w.limit, "partitions", lagString(lag))
		return false, nil
	}
	var stuck []PartitionLag
	for _, l := range lag {
		base, ok := w.base[l.TopicPartition]
		if !ok {
			w.base[l.TopicPartition] = l.Next // lag that began during the wait
			base = l.Next
		}
		if l.Next <= base {
			stuck = append(stuck, l)
		}
	}
	if len(stuck) == 0 {
		log.Info("kafkasink: stopping at the idle timeout: the partitions that still hold records are being consumed by other members",
			"partitions", lagString(lag))
		return true, nil
	}
	if waited := now.Sub(w.since); waited >= w.limit {
		return true, &GroupLagError{Group: in.cfg.group, Lag: stuck, Idle: in.cfg.idle, Waited: waited, SessionTimeout: session}
	}
	return false, nil
}

func lagString(lag []PartitionLag) string {
	parts := make([]string, len(lag))
	for i, l := range lag {
		parts[i] = l.String()
	}
	return strings.Join(parts, "; ")
}

// sessionTimeout returns the client's group session timeout.
func sessionTimeout(cl *kgo.Client) time.Duration {
	if d, ok := cl.OptValue(kgo.SessionTimeout).(time.Duration); ok {
		return d
	}
	return 45 * time.Second // franz-go's default
}

// groupLag returns the partitions of the topics that hold records the
// table has not got, by topic and partition: their last stable offset is
// beyond the table's next offset (or, for a partition without one that
// starts at its earliest record, beyond its log start), and a
// read_committed read from there receives a record before that end (the
// offsets between may be transaction markers and aborted records only).
// Partitions without a table offset that start at their end or at a time
// are not counted: where they would start depends on when they are
// assigned.
func (in *Ingester) groupLag(ctx context.Context, cl *kgo.Client) ([]PartitionLag, error) {
	parts, err := partitionsOf(ctx, cl, in.topics)
	if err != nil {
		return nil, err
	}
	if _, err := in.sink.LastCommittedEpoch(ctx); err != nil { // refreshes the table
		return nil, fmt.Errorf("kafkasink: query %s: %w", in.sink.QueryID(), err)
	}
	next, err := Offsets(in.sink.Table().Snapshot(), in.offsetsQuery(), parts)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: query %s: %w", in.offsetsQuery(), err)
	}
	ends, err := listOffsets(ctx, cl, parts, -1)
	if err != nil {
		return nil, err
	}
	var starts map[TopicPartition]int64
	from := map[TopicPartition]int64{}
	for _, tp := range parts {
		switch {
		case next[tp] >= 0:
			from[tp] = next[tp]
		case in.cfg.startAt.kind == startEarliest:
			if starts == nil {
				if starts, err = listOffsets(ctx, cl, parts, -2); err != nil {
					return nil, err
				}
			}
			from[tp] = starts[tp]
		default:
			continue
		}
		if ends[tp] <= from[tp] {
			delete(from, tp)
		}
	}
	if len(from) == 0 {
		return nil, nil
	}
	first, err := in.firstRecords(ctx, from, ends)
	if err != nil {
		return nil, err
	}
	owners := in.groupOwners(ctx, cl)
	var out []PartitionLag
	for _, tp := range slices.SortedFunc(maps.Keys(first), compareTP) {
		out = append(out, PartitionLag{TopicPartition: tp, Next: next[tp], End: ends[tp], First: first[tp], Owner: owners[tp]})
	}
	return out, nil
}

// firstRecords reads each partition of from, read_committed and with the
// transaction markers, from its offset, and returns the offset of the
// first record it receives below the partition's end, or -1 for a
// partition it did not get to read within lagProbeTimeout. Partitions
// whose offsets up to the end hold only markers and aborted records are
// left out.
func (in *Ingester) firstRecords(ctx context.Context, from, ends map[TopicPartition]int64) (map[TopicPartition]int64, error) {
	start := map[string]map[int32]kgo.Offset{}
	pending := map[TopicPartition]bool{}
	for tp, o := range from {
		if start[tp.Topic] == nil {
			start[tp.Topic] = map[int32]kgo.Offset{}
		}
		start[tp.Topic][tp.Partition] = kgo.NewOffset().At(o)
		pending[tp] = true
	}
	cl, err := kgo.NewClient(append(slices.Clone(in.cfg.clientOpts),
		kgo.SeedBrokers(in.brokers...),
		kgo.ConsumePartitions(start),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: %w", err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, lagProbeTimeout)
	defer cancel()
	out := map[TopicPartition]int64{}
	for len(pending) > 0 && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		var ferr error
		fs.EachError(func(topic string, partition int32, err error) {
			if ferr == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("kafkasink: reading %s/%d for unread records: %w", topic, partition, err)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
			switch {
			case !pending[tp]:
			case r.Offset >= ends[tp]:
				delete(pending, tp) // only markers and aborted records before the end
			case !r.Attrs.IsControl():
				out[tp] = r.Offset
				delete(pending, tp)
			case r.Offset >= ends[tp]-1:
				delete(pending, tp) // the marker at the end
			}
		})
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for tp := range pending {
		out[tp] = -1
	}
	return out, nil
}

// groupOwners returns the member each partition of the group is assigned
// to, as the group coordinator describes it; nil when it cannot say.
func (in *Ingester) groupOwners(ctx context.Context, cl *kgo.Client) map[TopicPartition]string {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{in.cfg.group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return nil
	}
	out := map[TopicPartition]string{}
	for _, m := range resp.Groups[0].Members {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil {
			continue
		}
		who := fmt.Sprintf("%s (client id %s, host %s)", m.MemberID, m.ClientID, m.ClientHost)
		for _, t := range a.Topics {
			for _, p := range t.Partitions {
				out[TopicPartition{Topic: t.Topic, Partition: p}] = who
			}
		}
	}
	return out
}

// listOffsets returns the offset at ts (-1: the last stable offset, -2:
// the log start) of each partition, isolation level read_committed.
func listOffsets(ctx context.Context, cl *kgo.Client, parts []TopicPartition, ts int64) (map[TopicPartition]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = 1
	byTopic := map[string]int{}
	for _, tp := range parts {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = tp.Partition, ts, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: listing offsets: %w", err)
	}
	out := make(map[TopicPartition]int64, len(parts))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("kafkasink: listing offsets of %s/%d: %w", t.Topic, p.Partition, err)
			}
			out[TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
		}
	}
	for _, tp := range parts {
		if _, ok := out[tp]; !ok {
			return nil, fmt.Errorf("kafkasink: listing offsets: no answer for %s", tp)
		}
	}
	return out, nil
}
