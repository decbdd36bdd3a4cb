// Package kafkasink ingests Kafka topics into a Delta table exactly once,
// the way kafka-delta-ingest does: the consumed offsets live in the table,
// not in a consumer group.
//
// Each poll batch becomes one epoch of a streamsink.Sink. Its commit holds
// the batch's rows, the query's epoch (txn{appId: queryId, version: epoch})
// and, for every partition in the batch, the next offset to consume
// (txn{appId: AppID(queryId, topic, partition), version: offset}), all in
// one atomic Delta commit. On start the Ingester reads those offsets from the
// table and seeks every partition to them exactly (kgo.ConsumePartitions),
// so whatever happened before (a crash after the data files were written,
// a commit whose reply was lost, a kill between two batches), the table
// holds each consumed record once and the stream resumes after the last
// one it holds. Records are read with isolation level read_committed: the
// records of aborted Kafka transactions never reach the table.
//
// Two runs of one query (or two queries claiming a partition) fence each
// other through the txn actions they read: the later commit fails with
// table.ErrConcurrentTransaction and its run stops. Without a consumer
// group every run reads all partitions of its topics; to spread them over
// processes, see below.
//
// # Several processes: a consumer group
//
// With WithConsumerGroup, N Ingesters (processes) share one table and the
// partitions of the topics: they join one Kafka consumer group, balanced
// cooperative-sticky, and each commits epochs of its own (its sink's query
// id, e.g. MemberQueryID) holding the records and offsets of the
// partitions it owns. The offsets stay in the table under the appIds of
// the query all members share, and nothing is committed to Kafka: a
// member that is assigned a partition starts it at the table's offset.
// Rebalances wait for the batch under way (kgo.BlockRebalanceOnPoll): a
// member's revoke completes only after its commit of the revoked
// partitions finished or failed, and it never commits them afterwards.
//
// That is not enough when the group drops a member it believes dead (a
// session timeout during a long pause, a partition of the network) while
// the member is still committing: the old and the new owner of a
// partition then both hold records from the same offset. The table fences
// them. Every commit of a member carries, for each partition of its
// batch, the txn {appId of the partition, version: next offset}, and
// records that appId as read, and it commits only if the table still
// records for each partition the next offset the member expects (the one
// the member started at, or after its own last commit), checked on the
// very snapshot the commit is based on (streamsink.Sink.WriteEpochChecked).
// So of two commits of one partition from one offset, the second either
// conflicts with table.ErrConcurrentTransaction (the first landed after
// its snapshot: a winner wrote an appId it read) or sees the new offset on
// its snapshot (the first landed before). Either way it finds that its
// offset is behind the table's, leaves out its records below the table's
// offset (the other member committed them), and commits the rest, which
// follow on from the table's offset; when nothing is left of a partition,
// its consumer seeks to the table's offset. A partition's offset in the
// table thus only grows, and each record is committed by exactly one
// member. A member that finds its own epoch already in the table (another
// live process with its sink query id) stops with ErrFenced.
//
// A member with an idle timeout stops only when the whole group is done:
// while partitions held by other members (or by the session of a member
// that died) still hold records the table has not got, it waits for them
// to advance or to be handed over, and fails with ErrGroupLag when they
// do not (see WithIdleTimeout).
//
// # Where partitions start, and bad records
//
// A partition the table holds no offset for starts at its first record,
// its end, or the first record at or after a time (WithStartAt). Records
// that do not decode or that the table refuses stop the run, unless
// WithBadRecords drops them or WithDeadLetterTopic sends them, with the
// reason in a header, to a topic (acknowledged before the batch commits).
//
// # Offset appIds
//
// The offset of a partition is recorded under the appId
// "<queryId>/kafka/<topic>/<partition>", the topic escaped with
// url.PathEscape (legal Kafka topic names, [a-zA-Z0-9._-], are unchanged).
// The mapping is injective: the topic holds no '/' once escaped and the
// partition is a number, so ParseAppID splits an appId from its end into
// the one (query, topic, partition) it names, however many '/' or '-' the
// query id holds. A query id must not itself be such an appId (New refuses
// one), and no other writer of the table should use one as its own.
//
// Earlier releases wrote "<queryId>-<topic>-<partition>" (LegacyAppID),
// which is not injective: query "a" with topic "b-c" and query "a-b" with
// topic "c" both map partition 0 to "a-b-c-0". Tables written so keep
// working: a partition without an offset in the new form resumes at its
// legacy-form offset, unless the table also holds epochs of another query
// whose legacy appIds could have written it; then Offsets and Run refuse
// with ErrAmbiguousOffsets, naming the appId, rather than resume at
// another query's offset. The next commit records the partition in the new
// form, which wins from then on.
package kafkasink

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/deltakit/deltakit/ingest"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
)

// DefaultMaxBatchRecords is how many records one poll batch (one epoch)
// holds at most when WithMaxBatchRecords is not given.
const DefaultMaxBatchRecords = 10_000

// ErrFenced is returned by Run when the epoch it was about to write was
// already in the table: another run of the same query is writing it.
var ErrFenced = errors.New("kafkasink: another run of the query committed first")

// ErrAmbiguousOffsets is returned (wrapped) by Offsets and Run when a
// partition's offset exists only in the legacy appId form and that appId
// could belong to more than one query of the table (see the package doc).
var ErrAmbiguousOffsets = errors.New("kafkasink: ambiguous legacy offset appId")

// ErrUnknownTopic is returned (wrapped) by Run for a topic the cluster does
// not have.
var ErrUnknownTopic = errors.New("kafkasink: unknown topic")

// Decoder turns one Kafka record into a row aligned with schema, the schema
// of the table the row is written to. A nil row with a nil error drops the
// record (its offset still counts as consumed).
type Decoder func(rec *kgo.Record, sch *schema.StructType) (table.Row, error)

// JSONDecoder decodes a record's value as one JSON object, by column name
// (see ingest.JSONRow). It is the default decoder.
func JSONDecoder(rec *kgo.Record, sch *schema.StructType) (table.Row, error) {
	return ingest.JSONRow(sch, rec.Value)
}

// BadRecordFunc decides what happens to a record that cannot be decoded or
// written (err says why; for a row the table refuses, it is a
// *table.RowError). Returning nil drops the record, returning an error
// stops the run with it.
type BadRecordFunc func(rec *kgo.Record, err error) error

// Batch reports one committed epoch to WithBatchHook.
type Batch struct {
	Epoch int64
	// Version is the table version of the commit.
	Version int64
	// Records is how many records the batch consumed; Rows how many rows it
	// wrote (fewer when bad records were dropped) in Files data files of
	// Bytes bytes.
	Records int
	Rows    int64
	Files   int
	Bytes   int64
	// Offsets are the next offsets to consume after the batch, of the
	// partitions it read.
	Offsets map[TopicPartition]int64
	// Lag is, per partition of the batch, how many offsets the partition's
	// last stable offset (the end a read_committed consumer can reach)
	// was ahead of Offsets when the batch was fetched; 0 when caught up.
	Lag map[TopicPartition]int64
	// Dropped counts the records of the batch left out because another
	// member of the consumer group had committed them first (see the
	// package doc); they are in the table once, from that member.
	Dropped int
	// DeadLetters counts the records of the batch sent to the
	// WithDeadLetterTopic topic instead of the table.
	DeadLetters int
	// Merge is what the batch's MERGE did when the sink upserts
	// (streamsink.WithMergeKeys), nil otherwise.
	Merge *table.MergeResult
}

// TopicPartition names one Kafka partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic/partition".
func (tp TopicPartition) String() string { return tp.Topic + "/" + strconv.Itoa(int(tp.Partition)) }

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// StopReason says why Run returned without an error.
type StopReason string

// The reasons Run stops without an error.
const (
	StopMaxBatches StopReason = "max-batches" // WithMaxBatches batches were committed
	StopIdle       StopReason = "idle"        // no record arrived for WithIdleTimeout
)

// Stats reports what Run did.
type Stats struct {
	// StartEpoch is the first epoch id of this run (the query's last
	// committed epoch + 1); Batches counts the epochs it committed.
	StartEpoch int64
	Batches    int
	// Records counts consumed records, Rows written rows, DroppedRecords the
	// records a BadRecordFunc or the decoder dropped, DeadLetters the
	// records sent to the WithDeadLetterTopic topic.
	Records, Rows, DroppedRecords, DeadLetters int64
	// StartOffsets are the offsets each partition started at (for
	// partitions the table had no offset for, StartOffsetEarliest,
	// StartOffsetLatest or StartOffsetTime, as WithStartAt says); Offsets
	// the next offsets to consume after the run, as the table records
	// them.
	StartOffsets, Offsets map[TopicPartition]int64
	// Version is the table version after the run.
	Version int64
	// Stopped says why Run returned without an error ("" when it failed).
	Stopped StopReason
}

// Option configures an Ingester.
type Option func(*config)

type config struct {
	decoder    Decoder
	badRecord  BadRecordFunc
	maxBatches int
	idle       time.Duration
	maxRecords int
	startAt    StartAt
	clientOpts []kgo.Opt
	logger     *slog.Logger
	onBatch    func(Batch)
	// deadLetterTopic is set by WithDeadLetterTopic (deadLetterSet).
	deadLetterTopic string
	deadLetterSet   bool
	// group and offsetsQuery are set by WithConsumerGroup.
	group        string
	offsetsQuery string
}

// WithDecoder sets how records become rows (default JSONDecoder).
func WithDecoder(d Decoder) Option { return func(c *config) { c.decoder = d } }

// WithBadRecords sets what happens to records that cannot be decoded or
// written (default: the run stops with the error, naming the record's
// topic, partition and offset; the next run meets the same record).
func WithBadRecords(fn BadRecordFunc) Option { return func(c *config) { c.badRecord = fn } }

// WithMaxBatches stops Run after n committed batches (default 0: no
// limit).
func WithMaxBatches(n int) Option { return func(c *config) { c.maxBatches = max(0, n) } }

// WithIdleTimeout stops Run when no record arrived for d (default 0: run
// until ctx ends or WithMaxBatches is reached). It also shortens the
// client's fetch long poll (FetchMaxWait) to d/4, so that records waiting
// on a partition are not mistaken for silence.
//
// In a consumer group (WithConsumerGroup) a member's silence says nothing
// about the partitions other members hold, and a member that died (killed,
// cut off) holds its partitions until its session times out. So when no
// record arrived for d, the member looks at every partition of the topics:
// it stops (StopIdle) when none holds records the table has not got (a
// read_committed read past the table's offset finds no record: transaction
// markers and aborted records do not count), or when each that does
// advances in the table (other members are consuming them). Otherwise it
// says so in a warning and waits, still in the group, so that the
// partitions of a dead member come to it when its session times out: up to
// the session timeout plus the larger of d and 5 s. Records that arrive
// meanwhile are ingested as usual, and the idle timeout starts again. When
// the wait ends with partitions that did not advance, Run returns a
// *GroupLagError (ErrGroupLag) naming them, their offsets and the member
// holding them.
func WithIdleTimeout(d time.Duration) Option { return func(c *config) { c.idle = max(0, d) } }

// WithMaxBatchRecords bounds the records of one batch (one epoch, one
// commit); default DefaultMaxBatchRecords.
func WithMaxBatchRecords(n int) Option { return func(c *config) { c.maxRecords = n } }

// WithStartAtEnd makes partitions without an offset in the table start at
// their end (only records produced from now on) instead of their start:
// WithStartAt(StartLatest()).
func WithStartAtEnd() Option { return WithStartAt(StartLatest()) }

// WithClientOptions adds options to the Kafka client (TLS, SASL, client id,
// fetch sizes, ...). Options that choose what to consume or the isolation
// level are overridden: the Ingester consumes its partitions from the
// table's offsets with read_committed.
func WithClientOptions(opts ...kgo.Opt) Option {
	return func(c *config) { c.clientOpts = append(c.clientOpts, opts...) }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithBatchHook calls fn after each committed batch, for progress output.
func WithBatchHook(fn func(Batch)) Option { return func(c *config) { c.onBatch = fn } }

// Ingester consumes Kafka topics into the table of a streamsink.Sink. Run it
// once at a time per query; a second concurrent run is fenced.
type Ingester struct {
	sink    *streamsink.Sink
	brokers []string
	topics  []string
	cfg     config
}

// New returns an Ingester that reads topics from the cluster at brokers
// ("host:port" seeds) into sink's table. The sink's query id names the
// offsets in the table: keep it stable across restarts. The table must
// exist (a streamsink.CreateOrOpen sink whose table does not exist yet is
// ErrInvalidArgument of package table): the records are decoded against
// its schema.
func New(sink *streamsink.Sink, brokers, topics []string, opts ...Option) (*Ingester, error) {
	switch {
	case sink == nil:
		return nil, errors.New("kafkasink: nil sink")
	case sink.Table() == nil:
		return nil, fmt.Errorf("kafkasink: %w: the sink's table does not exist yet", table.ErrInvalidArgument)
	case len(brokers) == 0:
		return nil, errors.New("kafkasink: no brokers")
	case len(topics) == 0:
		return nil, errors.New("kafkasink: no topics")
	}
	for _, t := range topics {
		if t == "" {
			return nil, errors.New("kafkasink: empty topic name")
		}
	}
	if q, t, p, ok := ParseAppID(sink.QueryID()); ok {
		return nil, fmt.Errorf("kafkasink: query id %q has the form of the offset appId of query %q, topic %q, partition %d: choose another",
			sink.QueryID(), q, t, p)
	}
	cfg := config{decoder: JSONDecoder, maxRecords: DefaultMaxBatchRecords}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.decoder == nil {
		cfg.decoder = JSONDecoder
	}
	if cfg.maxRecords <= 0 {
		return nil, fmt.Errorf("kafkasink: max batch records %d must be > 0", cfg.maxRecords)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if err := checkGroup(&cfg, sink.QueryID()); err != nil {
		return nil, err
	}
	switch {
	case cfg.deadLetterSet && cfg.deadLetterTopic == "":
		return nil, errors.New("kafkasink: empty dead-letter topic name")
	case cfg.deadLetterSet && cfg.badRecord != nil:
		return nil, errors.New("kafkasink: WithDeadLetterTopic and WithBadRecords both given: bad records go to the dead-letter topic; choose one")
	case cfg.deadLetterSet && slices.Contains(topics, cfg.deadLetterTopic):
		return nil, fmt.Errorf("kafkasink: the dead-letter topic %q is one of the topics consumed", cfg.deadLetterTopic)
	}
	topics = slices.Compact(slices.Sorted(slices.Values(topics)))
	return &Ingester{sink: sink, brokers: slices.Clone(brokers), topics: topics, cfg: cfg}, nil
}

// appIDInfix separates the query id from the topic in an offset appId.
const appIDInfix = "/kafka/"

// AppID returns the txn appId under which the table records the next
// offset to consume of a partition for the query:
// "<queryID>/kafka/<topic>/<partition>", the topic escaped with
// url.PathEscape. Distinct (queryID, topic, partition) give distinct appIds
// (ParseAppID inverts it); see the package doc.
func AppID(queryID, topic string, partition int32) string {
	return queryID + appIDInfix + url.PathEscape(topic) + "/" + strconv.Itoa(int(partition))
}

// ParseAppID splits an appId made by AppID into its query id, topic and
// partition; ok is false when appID does not have that form.
func ParseAppID(appID string) (queryID, topic string, partition int32, ok bool) {
	rest, part, found := cutLast(appID, "/")
	if !found {
		return "", "", 0, false
	}
	p, err := strconv.ParseInt(part, 10, 32)
	if err != nil || p < 0 || strconv.Itoa(int(p)) != part {
		return "", "", 0, false
	}
	q, esc, found := cutLast(rest, "/")
	if !found || !strings.HasSuffix(q+"/", appIDInfix) {
		return "", "", 0, false
	}
	t, err := url.PathUnescape(esc)
	if err != nil || t == "" || url.PathEscape(t) != esc {
		return "", "", 0, false
	}
	return strings.TrimSuffix(q+"/", appIDInfix), t, int32(p), true
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// LegacyAppID returns the offset appId of earlier releases,
// "<queryID>-<topic>-<partition>". It is not injective; Offsets still reads
// it (see the package doc), nothing writes it.
func LegacyAppID(queryID, topic string, partition int32) string {
	return queryID + "-" + topic + "-" + strconv.Itoa(int(partition))
}

// Offsets returns the next offset to consume of each given partition as
// snap records it for the query, or -1 for a partition it has none for.
// A partition recorded only under its LegacyAppID gets that offset, unless
// the appId could also be another query's: then Offsets returns an error
// wrapping ErrAmbiguousOffsets that names the appId and the queries.
func Offsets(snap *table.Snapshot, queryID string, partitions []TopicPartition) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64, len(partitions))
	var txns map[string]*table.Txn // loaded on the first legacy offset
	for _, tp := range partitions {
		if v := snap.TxnVersion(AppID(queryID, tp.Topic, tp.Partition)); v >= 0 {
			out[tp] = v
			continue
		}
		legacy := LegacyAppID(queryID, tp.Topic, tp.Partition)
		v := snap.TxnVersion(legacy)
		if v >= 0 {
			if txns == nil {
				txns = snap.Txns()
			}
			if others := legacyOwners(txns, legacy, queryID); len(others) > 0 {
				return nil, fmt.Errorf("%w: table version %d: txn appId %q (next offset %d) may be partition %d of topic %q of query %q or of query %v; "+
					"a release before injective offset appIds wrote it; commit the partition's offset under %q to resume",
					ErrAmbiguousOffsets, snap.Version(), legacy, v, tp.Partition, tp.Topic, queryID, others, AppID(queryID, tp.Topic, tp.Partition))
			}
		}
		out[tp] = v
	}
	return out, nil
}

// legacyOwners returns the query ids other than queryID that the table has
// epochs of (a txn appId of their own) and whose legacy offset appIds
// could be legacy: every split of legacy at a '-' into a query id and a
// non-empty "<topic>-<partition>".
func legacyOwners(txns map[string]*table.Txn, legacy, queryID string) []string {
	var out []string
	for i := range max(0, strings.LastIndex(legacy, "-")-1) {
		if legacy[i] != '-' {
			continue
		}
		if q := legacy[:i]; q != queryID && txns[q] != nil {
			out = append(out, q)
		}
	}
	return out
}

// Run consumes until ctx ends (returning ctx's error), WithMaxBatches
// batches are committed or WithIdleTimeout passes without a record. Each
// non-empty poll batch is committed as the next epoch with the offsets of
// its partitions. On an error nothing uncommitted counts: run again, and
// the Ingester resumes from what the table holds.
//
// The partitions of the topics are listed once, at the start; partitions
// added later are picked up by the next run.
func (in *Ingester) Run(ctx context.Context) (*Stats, error) {
	if in.cfg.group != "" {
		return in.runGroup(ctx)
	}
	q := in.sink.QueryID()
	last, err := in.sink.LastCommittedEpoch(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: query %s: %w", q, err)
	}
	st := &Stats{StartEpoch: last + 1, StartOffsets: map[TopicPartition]int64{}, Offsets: map[TopicPartition]int64{}}
	parts, err := in.partitions(ctx)
	if err != nil {
		return nil, err
	}
	committed, err := Offsets(in.sink.Table().Snapshot(), q, parts)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: query %s: %w", q, err)
	}
	start := map[string]map[int32]kgo.Offset{}
	for _, tp := range parts {
		o, so := in.cfg.startAt.offset()
		st.StartOffsets[tp] = so
		if v := committed[tp]; v >= 0 {
			o, st.StartOffsets[tp] = kgo.NewOffset().At(v), v
			st.Offsets[tp] = v
		}
		if start[tp.Topic] == nil {
			start[tp.Topic] = map[int32]kgo.Offset{}
		}
		start[tp.Topic][tp.Partition] = o
	}
	in.cfg.logger.Info("kafkasink: starting", "query", q, "epoch", st.StartEpoch, "partitions", len(parts))
	var opts []kgo.Opt
	if in.cfg.idle > 0 {
		// A fetch long-polls a broker for up to FetchMaxWait (5 s by
		// default), and partitions that become ready meanwhile (their start
		// offset just resolved) join only the next fetch: a poll can see
		// nothing for that long while records wait. Keep the long poll well
		// under the idle timeout, so idle means no records. The caller's
		// client options may still override it.
		opts = append(opts, kgo.FetchMaxWait(min(max(in.cfg.idle/4, 10*time.Millisecond), 5*time.Second)))
	}
	opts = append(append(opts, in.cfg.clientOpts...),
		kgo.SeedBrokers(in.brokers...),
		kgo.ConsumePartitions(start),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
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

	epoch := st.StartEpoch
	for in.cfg.maxBatches == 0 || st.Batches < in.cfg.maxBatches {
		recs, ends, idle, err := in.poll(ctx, cl)
		if err != nil {
			return in.finish(st, err)
		}
		if idle {
			st.Stopped = StopIdle
			return in.finish(st, nil)
		}
		if len(recs) == 0 {
			continue
		}
		b, err := in.writeBatch(ctx, epoch, recs, ends, st, nil, dlq)
		if err != nil {
			return in.finish(st, err)
		}
		in.batchDone(st, b)
		epoch++
	}
	st.Stopped = StopMaxBatches
	return in.finish(st, nil)
}

// batchDone counts the committed batch b in st and reports it to the
// WithBatchHook function.
func (in *Ingester) batchDone(st *Stats, b *Batch) {
	st.Batches++
	maps.Copy(st.Offsets, b.Offsets)
	if in.cfg.onBatch != nil {
		in.cfg.onBatch(*b)
	}
}

func (in *Ingester) finish(st *Stats, err error) (*Stats, error) {
	st.Version = in.sink.Table().Version()
	return st, err
}

// partitions lists the partitions of the topics.
func (in *Ingester) partitions(ctx context.Context) ([]TopicPartition, error) {
	return in.listPartitions(ctx, in.topics)
}

// listPartitions lists the partitions of topics.
func (in *Ingester) listPartitions(ctx context.Context, topics []string) ([]TopicPartition, error) {
	cl, err := kgo.NewClient(append(slices.Clone(in.cfg.clientOpts), kgo.SeedBrokers(in.brokers...))...)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: %w", err)
	}
	defer cl.Close()
	return partitionsOf(ctx, cl, topics)
}

// partitionsOf lists the partitions of topics through cl.
func partitionsOf(ctx context.Context, cl *kgo.Client, topics []string) ([]TopicPartition, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: listing partitions of %v: %w", topics, err)
	}
	var out []TopicPartition
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return nil, fmt.Errorf("%w %q", ErrUnknownTopic, name)
			}
			return nil, fmt.Errorf("kafkasink: topic %q: %w", name, err)
		}
		for _, p := range t.Partitions {
			out = append(out, TopicPartition{Topic: name, Partition: p.Partition})
		}
	}
	slices.SortFunc(out, compareTP)
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no partitions in %v", ErrUnknownTopic, topics)
	}
	return out, nil
}

// poll returns the next batch of records and the last stable offsets of
// their partitions; idle is true when none arrived within the idle
// timeout.
func (in *Ingester) poll(ctx context.Context, cl *kgo.Client) (recs []*kgo.Record, ends map[TopicPartition]int64, idle bool, err error) {
	pctx, cancel := ctx, context.CancelFunc(func() {})
	if in.cfg.idle > 0 {
		pctx, cancel = context.WithTimeout(ctx, in.cfg.idle)
	}
	defer cancel()
	fetches := cl.PollRecords(pctx, in.cfg.maxRecords)
	if ctx.Err() != nil {
		return nil, nil, false, ctx.Err()
	}
	var ferr error
	fetches.EachError(func(topic string, partition int32, err error) {
		if ferr != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		var gs *kgo.ErrGroupSession
		if errors.As(err, &gs) {
			// The member lost its group session (a long pause, a network
			// blip): franz-go rejoins on the next poll; its partitions were
			// revoked or lost, and their offsets fence any stale commit.
			in.cfg.logger.Info("kafkasink: group session lost, rejoining", "query", in.sink.QueryID(), "group", in.cfg.group, "err", err)
			return
		}
		ferr = fmt.Errorf("kafkasink: fetching %s/%d: %w", topic, partition, err)
	})
	if ferr != nil {
		return nil, nil, false, ferr
	}
	recs = fetches.Records()
	ends = map[TopicPartition]int64{}
	fetches.EachPartition(func(p kgo.FetchTopicPartition) {
		tp := TopicPartition{Topic: p.Topic, Partition: p.Partition}
		ends[tp] = max(ends[tp], p.LastStableOffset)
	})
	return recs, ends, len(recs) == 0 && pctx.Err() != nil, nil
}

// writeBatch decodes recs and commits them as epoch with their offsets;
// ends are the partitions' last stable offsets, for Batch.Lag. In a
// consumer group (g != nil) it first leaves out the records other members
// committed (see the package doc) and returns a nil Batch when none is
// left: the epoch is not used. dlq, when not nil, produces the batch's dead
// letters (WithDeadLetterTopic).
func (in *Ingester) writeBatch(ctx context.Context, epoch int64, recs []*kgo.Record, ends map[TopicPartition]int64, st *Stats, g *groupState, dlq *kgo.Client) (*Batch, error) {
	var dead *deadLetters
	if dlq != nil {
		dead = &deadLetters{topic: in.cfg.deadLetterTopic, cl: dlq}
	}
	// Decode against the table's current schema.
	if _, err := in.sink.LastCommittedEpoch(ctx); err != nil {
		return nil, fmt.Errorf("kafkasink: query %s: %w", in.sink.QueryID(), err)
	}
	dropped := 0
	for attempt := 1; ; attempt++ {
		if g != nil {
			var n int
			recs, n = g.keep(recs)
			dropped += n
			if len(recs) == 0 {
				in.cfg.logger.Info("kafkasink: batch left out: other members committed its records", "query", in.sink.QueryID(), "epoch", epoch, "records", dropped)
				return nil, nil
			}
		}
		b, bad, err := in.commitRecords(ctx, epoch, recs, g, dead)
		if err == nil {
			b.Dropped = dropped
			if dead != nil {
				b.DeadLetters = dead.count()
				st.DeadLetters += int64(b.DeadLetters)
			}
			b.Lag = map[TopicPartition]int64{}
			for tp, next := range b.Offsets {
				if end, ok := ends[tp]; ok {
					b.Lag[tp] = max(0, end-next)
				}
			}
			st.Records += int64(len(recs))
			st.Rows += b.Rows
			st.DroppedRecords += bad
			in.cfg.logger.Debug("kafkasink: batch committed", "query", in.sink.QueryID(), "epoch", epoch,
				"version", b.Version, "records", len(recs), "rows", b.Rows)
			return b, nil
		}
		if g == nil {
			return nil, err
		}
		var moved *movedError
		switch {
		case errors.As(err, &moved):
			if err := g.moved(moved); err != nil {
				return nil, err
			}
		case errors.Is(err, table.ErrConcurrentTransaction):
			last, lerr := in.sink.LastCommittedEpoch(ctx)
			if lerr != nil {
				return nil, fmt.Errorf("kafkasink: query %s: %w", in.sink.QueryID(), lerr)
			}
			if last >= epoch {
				return nil, fmt.Errorf("%w: epoch %d of member query %s is in the table: %v", ErrFenced, epoch, in.sink.QueryID(), err)
			}
			// Another member committed one of the batch's partitions after
			// the snapshot: the next attempt's precondition sees its offset.
		default:
			return nil, err
		}
		if attempt >= maxMoveRetries {
			return nil, fmt.Errorf("kafkasink: query %s epoch %d: gave up after %d attempts: other members keep committing the batch's partitions: %w",
				in.sink.QueryID(), epoch, attempt, err)
		}
		in.cfg.logger.Info("kafkasink: another member committed a partition of the batch, retrying without its records", "query", in.sink.QueryID(), "epoch", epoch, "err", err)
	}
}

// maxMoveRetries bounds the attempts of one batch in a consumer group
// whose partitions other members keep committing.
const maxMoveRetries = 10

// commitRecords decodes recs and commits them as epoch with their offsets
// (in a group, under the precondition that the table's offsets of their
// partitions are still g's); bad counts the records the bad-record policy
// dropped. With dead (WithDeadLetterTopic), bad records become dead
// letters instead, produced before each commit attempt.
func (in *Ingester) commitRecords(ctx context.Context, epoch int64, recs []*kgo.Record, g *groupState, dead *deadLetters) (_ *Batch, bad int64, _ error) {
	sch := in.sink.Table().Schema()
	b := &Batch{Epoch: epoch, Records: len(recs), Offsets: map[TopicPartition]int64{}}
	rows := make([]table.Row, 0, len(recs))
	src := make([]*kgo.Record, 0, len(recs)) // the record of each row
	for _, r := range recs {
		tp := TopicPartition{Topic: r.Topic, Partition: r.Partition}
		b.Offsets[tp] = max(b.Offsets[tp], r.Offset+1)
		row, err := in.cfg.decoder(r, sch)
		if err != nil && dead != nil {
			dead.add(r, err)
			continue
		}
		if err != nil {
			if err := in.bad(r, err); err != nil {
				return nil, 0, err
			}
			bad++
			continue
		}
		if row == nil {
			bad++
			continue
		}
		rows = append(rows, row)
		src = append(src, r)
	}
	parts := slices.SortedFunc(maps.Keys(b.Offsets), compareTP)
	txns := make([]table.Txn, 0, len(b.Offsets))
	for _, tp := range parts {
		txns = append(txns, table.Txn{AppID: AppID(in.offsetsQuery(), tp.Topic, tp.Partition), Version: b.Offsets[tp]})
	}
	for {
		if dead != nil {
			// Every record the commit leaves out is in the dead-letter
			// topic before its offset is in the table.
			if err := dead.flush(ctx); err != nil {
				return nil, 0, err
			}
		}
		var res *streamsink.Result
		var err error
		if g != nil {
			res, err = in.sink.WriteEpochChecked(ctx, epoch, rows, g.check(in.offsetsQuery(), parts), txns...)
		} else {
			res, err = in.sink.WriteEpochWith(ctx, epoch, rows, txns...)
		}
		var re *table.RowError
		if errors.As(err, &re) && re.Row >= 0 && re.Row < len(rows) && sameSchema(sch, in.sink.Table().Schema()) {
			// The table refused one row before writing anything: drop its
			// record if the bad-record policy says so (or send it to the
			// dead-letter topic), and write again.
			if dead != nil {
				dead.add(src[re.Row], fmt.Errorf("the table refuses the row: %w", re.Err))
			} else {
				if err := in.bad(src[re.Row], err); err != nil {
					return nil, 0, err
				}
				bad++
			}
			rows = slices.Delete(rows, re.Row, re.Row+1)
			src = slices.Delete(src, re.Row, re.Row+1)
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("kafkasink: query %s: %w", in.sink.QueryID(), err)
		}
		if res.Skipped {
			return nil, 0, fmt.Errorf("%w: epoch %d is already in the table (version %d)", ErrFenced, epoch, res.Version)
		}
		b.Version, b.Rows, b.Files, b.Bytes, b.Merge = res.Version, res.Rows, res.Files, res.Bytes, res.Merge
		if g != nil {
			g.committed(b.Offsets)
		}
		return b, bad, nil
	}
}

// offsetsQuery is the query id the offset appIds are recorded under: the
// sink's, or in a consumer group the one all members share.
func (in *Ingester) offsetsQuery() string {
	if in.cfg.offsetsQuery != "" {
		return in.cfg.offsetsQuery
	}
	return in.sink.QueryID()
}

// sameSchema reports whether the table schema is still the one the batch
// was decoded with; after a concurrent schema change a refused row says
// nothing about its record, and the run stops instead of dropping it.
func sameSchema(a, b *schema.StructType) bool {
	if a == b {
		return true
	}
	ja, err1 := schema.Marshal(a)
	jb, err2 := schema.Marshal(b)
	return err1 == nil && err2 == nil && ja == jb
}

// bad applies the bad-record policy to rec.
func (in *Ingester) bad(rec *kgo.Record, err error) error {
	err = fmt.Errorf("kafkasink: record %s/%d offset %d: %w", rec.Topic, rec.Partition, rec.Offset, err)
	if in.cfg.badRecord == nil {
		return err
	}
	if herr := in.cfg.badRecord(rec, err); herr != nil {
		return herr
	}
	in.cfg.logger.Warn("kafkasink: dropped a bad record", "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "err", err)
	return nil
}
