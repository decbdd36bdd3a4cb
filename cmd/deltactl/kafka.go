package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/streamsink/kafkasink"
	"github.com/deltakit/deltakit/table"
)

type kafkaFlags struct {
	brokers      []string
	topics       []string
	queryID      string
	maxBatches   int
	idleTimeout  time.Duration
	batchRecords int
	startAtEnd   bool
	startAt      string
	deadLetter   string
	skipBad      bool
	targetSize   string
	group        string
	member       string
	mergeOn      []string
	conn         kafkaConnFlags
}

// newKafkaCmd is "deltactl ingest kafka": Kafka topics into an existing
// table, exactly once, through streamsink/kafkasink. It is a subcommand of
// ingest (newIngestCmd adds it).
func newKafkaCmd(a *app) *cobra.Command {
	var f kafkaFlags
	cmd := &cobra.Command{
		Use:   "kafka <table>",
		Short: "Ingest Kafka topics into a table exactly once (offsets kept in the table)",
		Long: `ingest kafka consumes Kafka topics into an existing table, exactly once.

Records are read with isolation level read_committed (records of aborted
Kafka transactions never arrive) and decoded as JSON objects, matched to the
table's columns by name. Each poll batch (at most --batch-records records)
is committed as one epoch of the streaming query --query-id, together with
the next offset of every partition it read, recorded as a txn action
{appId: "<query-id>/kafka/<topic>/<partition>", version: offset} in the same
commit (tables written by releases that recorded "<query-id>-<topic>-<partition>"
resume at those offsets, unless another query of the table could have
written them: then the run refuses, naming the appId). On start, every partition resumes at the offset the table records;
partitions without one start where --start-at says: earliest (their first
record, the default), latest (their end: only records produced from then
on) or a time (the first record with a timestamp at or after it). A run
killed at any point loses nothing and duplicates nothing: run it again
with the same query id.

A record that does not decode, or that the table refuses (a null in a NOT
NULL column, ...), stops the run (the next run meets it again), unless
--skip-bad-records drops it (logged) or --dead-letter-topic sends it to
that topic: the record's key, value and headers, plus the headers
deltakit.error (the reason), deltakit.source.topic, deltakit.source.partition
and deltakit.source.offset. A batch's dead letters are in the topic before
the batch commits (at least once: a run stopped in between produces them
again).

With --group, the process joins that Kafka consumer group and consumes only
the partitions the group assigns it (cooperative-sticky): run several with
the same --group and --query-id, each with its own --member, to spread a
topic over processes. The offsets stay in the table under the query id,
whichever member commits them; each member commits its epochs under
"<query-id>/member/<member>". When a partition moves, its new owner resumes
at the table's offset, and a member that lost it (after a pause the group
took for a crash) never commits its records twice: 'deltactl verify
--exactly-once' stays clean. No offsets are committed to Kafka.

SASL (--sasl-mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, --sasl-user,
--sasl-password or $DELTACTL_KAFKA_PASSWORD) and TLS (--tls, --tls-ca,
--tls-cert/--tls-key, --tls-insecure-skip-verify) connect to secured
clusters. On a terminal a progress line shows records/s, the last committed
version and the lag of each partition.

With --merge-on k1,k2 each batch is upserted instead of appended: one
MERGE by those key columns per epoch (matched rows updated, the others
inserted; of a batch's records with one key the last one wins), committed
exactly once with the offsets, so that the table holds the latest record
of every key. Produce the records of a key to one partition (Kafka's keyed
partitioning does): across partitions a batch has no order.

The run ends after --max-batches batches, after --idle-timeout without a
record, or on an interrupt (Ctrl-C), which is a clean stop: every batch
reported as committed is in the table. 'deltactl txn <table>' shows the
offsets. With --group, a member whose partitions are idle does not stop
while other partitions of the topics hold records the table has not got:
a member that died holds its partitions until its session times out
(--session-timeout), so the member waits for them (up to the session
timeout plus the larger of --idle-timeout and 5s), ingests them when the
group hands them over, and stops when every partition is in the table or
being consumed by a live member. If a partition has not moved by then,
it exits 1 naming the partitions, their offsets and the member holding
them.`,
		Example: `  deltactl create ./events --schema 'id long not null, msg string'
  deltactl ingest kafka ./events --brokers localhost:9092 --topic events --query-id events-ingest --idle-timeout 10s`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.ingestKafka(cmd.Context(), args[0], &f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.brokers, "brokers", nil, "Kafka seed brokers host:port, comma-separated (required)")
	fl.StringSliceVar(&f.topics, "topic", nil, "topics to consume, comma-separated or repeated (required)")
	fl.StringVar(&f.queryID, "query-id", "", "streaming query id: names the epochs and offsets in the table; keep it stable across runs (required)")
	fl.IntVar(&f.maxBatches, "max-batches", 0, "stop after this many committed batches (0: no limit)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 0, "stop when no record arrived for this long (0: run until interrupted)")
	fl.IntVar(&f.batchRecords, "batch-records", kafkasink.DefaultMaxBatchRecords, "records per batch (one epoch, one commit) at most")
	fl.StringVar(&f.startAt, "start-at", "", "where partitions without an offset in the table start: earliest (default), latest, or a time (RFC 3339, or 2006-01-02[ 15:04:05] in UTC): the first record at or after it")
	fl.BoolVar(&f.startAtEnd, "start-at-end", false, "the same as --start-at latest")
	fl.BoolVar(&f.skipBad, "skip-bad-records", false, "drop records that do not decode or fit the table (logged) instead of stopping")
	fl.StringVar(&f.deadLetter, "dead-letter-topic", "", "send records that do not decode or fit the table to this topic (with the reason in the deltakit.error header) instead of stopping")
	fl.StringVar(&f.targetSize, "target-size", "128MB", "target size of the data files")
	fl.StringVar(&f.group, "group", "", "join this Kafka consumer group: several processes with the same --group and --query-id split the partitions (offsets stay in the table)")
	fl.StringSliceVar(&f.mergeOn, "merge-on", nil, "upsert by these key columns (comma-separated) instead of appending: the table keeps the latest record per key")
	fl.StringVar(&f.member, "member", "", "with --group: this process's name in the group, unique and stable across restarts (default: host name and process id)")
	f.conn.register(cmd)
	return cmd
}

// check returns a usage error for a missing or out-of-range flag.
func (f *kafkaFlags) check() error {
	switch {
	case len(f.brokers) == 0:
		return usagef("--brokers is required")
	case len(f.topics) == 0:
		return usagef("--topic is required")
	case f.queryID == "":
		return usagef("--query-id is required")
	case f.maxBatches < 0:
		return usagef("--max-batches must be >= 0")
	case f.idleTimeout < 0:
		return usagef("--idle-timeout must be >= 0")
	case f.batchRecords <= 0:
		return usagef("--batch-records must be > 0")
	case f.startAtEnd && f.startAt != "":
		return usagef("--start-at-end and --start-at cannot be combined (--start-at-end is --start-at latest)")
	case f.skipBad && f.deadLetter != "":
		return usagef("--skip-bad-records and --dead-letter-topic cannot be combined: choose whether bad records are dropped or sent to the topic")
	}
	return nil
}

// startPoint returns the start point of --start-at (and --start-at-end).
func (f *kafkaFlags) startPoint() (kafkasink.StartAt, error) {
	switch f.startAt {
	case "", "earliest":
		if f.startAtEnd {
			return kafkasink.StartLatest(), nil
		}
		return kafkasink.StartEarliest(), nil
	case "latest":
		return kafkasink.StartLatest(), nil
	}
	t, err := parseTime(f.startAt)
	if err != nil {
		return kafkasink.StartAt{}, usagef("--start-at %q: want earliest, latest or a time (RFC 3339, or 2006-01-02[ 15:04:05] in UTC)", f.startAt)
	}
	return kafkasink.StartAtTime(t), nil
}

// groupQuery returns the streaming query id of this process's sink and
// the consumer group options: with --group, the member's own query id
// (kafkasink.MemberQueryID) and the group; without, --query-id. --member
// without --group is a usage error.
func (f *kafkaFlags) groupQuery() (string, []kafkasink.Option, error) {
	switch {
	case f.group != "":
		member := f.member
		if member == "" {
			host, _ := os.Hostname()
			member = fmt.Sprintf("%s-%d", cmp.Or(host, "deltactl"), os.Getpid())
		}
		return kafkasink.MemberQueryID(f.queryID, member), []kafkasink.Option{kafkasink.WithConsumerGroup(f.group, f.queryID)}, nil
	case f.member != "":
		return "", nil, usagef("--member needs --group")
	}
	return f.queryID, nil, nil
}

// reportResumed records in view, and prints, the epochs the table already
// holds for the sink's query: a run resumes after them.
func reportResumed(ctx context.Context, sink *streamsink.Sink, view *IngestView, out Output) error {
	last, err := sink.LastCommittedEpoch(ctx)
	if err != nil || last < 0 {
		return err
	}
	view.Resumed = int(last + 1)
	for e := int64(0); e <= last; e++ {
		view.Epochs = append(view.Epochs, EpochView{Epoch: e, Status: "resumed", Version: -1})
	}
	return out.Epoch(&EpochView{Epoch: last, Status: "resumed", Version: sink.Table().Version()})
}

func (a *app) ingestKafka(ctx context.Context, uri string, f *kafkaFlags) error {
	if err := f.check(); err != nil {
		return err
	}
	start, err := f.startPoint()
	if err != nil {
		return err
	}
	target, err := parseTargetSize(f.targetSize)
	if err != nil {
		return err
	}
	tbl, err := a.openTable(ctx, uri)
	if err != nil {
		return err
	}
	if err := checkMergeKeys("--merge-on", f.mergeOn, tbl.Schema(), nil); err != nil {
		return err
	}
	sopts := a.streamSinkOptions([]table.WriteOption{table.WithTargetFileSize(target)}, f.mergeOn)
	clientOpts, err := f.conn.clientOpts(a.getenv)
	if err != nil {
		return err
	}
	sinkQuery, gopts, err := f.groupQuery()
	if err != nil {
		return err
	}
	sink, err := streamsink.New(tbl, sinkQuery, sopts...)
	if err != nil {
		return err
	}
	out := a.out()
	view := &IngestView{Table: tbl.URI(), Format: "kafka", Schema: fieldViews(tbl.Schema()), QueryID: sinkQuery, Epochs: []EpochView{}, MergeOn: f.mergeOn,
		DeadLetterTopic: f.deadLetter}
	for _, t := range f.topics {
		view.Sources = append(view.Sources, "kafka://"+strings.Join(f.brokers, ",")+"/"+t)
	}
	var hookErr error
	bar := a.newProgress(-1, "kafka", "records")
	defer bar.Finish()
	lag := map[string]int64{}
	kopts := []kafkasink.Option{
		kafkasink.WithLogger(a.logger),
		kafkasink.WithMaxBatches(f.maxBatches),
		kafkasink.WithIdleTimeout(f.idleTimeout),
		kafkasink.WithMaxBatchRecords(f.batchRecords),
		kafkasink.WithClientOptions(clientOpts...),
		kafkasink.WithBatchHook(func(b kafkasink.Batch) {
			for tp, l := range b.Lag {
				lag[tp.String()] = l
			}
			bar.Describe(fmt.Sprintf("kafka v%d lag %s", b.Version, lagString(lag, slices.Sorted(maps.Keys(lag)))))
			bar.Add(int64(b.Records))
			bar.Clear()
			view.DeadLetters += int64(b.DeadLetters)
			ev := view.addEpoch(b.Epoch, &streamsink.Result{Epoch: b.Epoch, Version: b.Version, Rows: b.Rows, Files: b.Files, Bytes: b.Bytes, Merge: b.Merge})
			if err := out.Epoch(&ev); err != nil && hookErr == nil {
				hookErr = err
			}
		}),
	}
	kopts = append(kopts, gopts...)
	kopts = append(kopts, kafkasink.WithStartAt(start))
	if f.skipBad {
		kopts = append(kopts, kafkasink.WithBadRecords(func(*kgo.Record, error) error { return nil }))
	}
	if f.deadLetter != "" {
		kopts = append(kopts, kafkasink.WithDeadLetterTopic(f.deadLetter))
	}
	in, err := kafkasink.New(sink, f.brokers, f.topics, kopts...)
	if err != nil {
		return usagef("%v", err)
	}
	if err := reportResumed(ctx, sink, view, out); err != nil {
		return err
	}
	st, err := in.Run(ctx)
	interrupted := errors.Is(err, context.Canceled) && ctx.Err() != nil
	if err != nil && !interrupted {
		if st != nil && st.Batches > 0 {
			return fmt.Errorf("ingest kafka: %w (the %d batch(es) reported before are committed; run again to resume)", err, st.Batches)
		}
		return fmt.Errorf("ingest kafka: %w", err)
	}
	if hookErr != nil {
		return hookErr
	}
	view.Stopped = st.Stopped == kafkasink.StopMaxBatches
	view.Version = sink.Table().Version()
	if len(view.MergeOn) > 0 {
		view.setTableRows(sink.Table().URI(), sink.Table().Snapshot())
	}
	if st.DroppedRecords > 0 {
		a.logger.Warn("ingest kafka: dropped bad records", "count", st.DroppedRecords)
	}
	if st.DeadLetters > 0 {
		a.logger.Warn("ingest kafka: sent bad records to the dead-letter topic", "topic", f.deadLetter, "count", st.DeadLetters)
	}
	return out.Ingest(view)
}
