package kafkasink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// testIdle is the idle timeout of test ingesters that must see records: long
// enough that a loaded machine's first fetch from the fake cluster arrives
// before the ingester gives up (200 ms made TestIngestBadRecords flaky).
const testIdle = 1500 * time.Millisecond

const (
	topic      = "events"
	partitions = 3
	query      = "ingest-events"
)

var quiet = slog.New(slog.DiscardHandler)

// The table: the message's JSON fields id and txn, plus where the record
// came from, filled in by recordDecoder.
var eventSchema = schema.NewStruct(
	schema.NewField("id", schema.Primitive(schema.Long), false),
	schema.NewField("txn", schema.Primitive(schema.Long), true),
	schema.NewField("kpartition", schema.Primitive(schema.Integer), true),
	schema.NewField("koffset", schema.Primitive(schema.Long), true),
)

// recordDecoder decodes the JSON value and records the partition and offset.
func recordDecoder(rec *kgo.Record, sch *schema.StructType) (value.Row, error) {
	row, err := JSONDecoder(rec, sch)
	if err != nil {
		return nil, err
	}
	row[2], row[3] = rec.Partition, rec.Offset
	return row, nil
}

// cluster is a test's Kafka: the seed brokers and a topic of its own with
// `partitions` partitions.
type cluster struct {
	brokers []string
	topic   string
	// newTopic creates another topic, with parts partitions.
	newTopic func(t *testing.T, name string, parts int32)
}

// clusterKinds are the Kafka implementations every ingest test runs on:
// franz-go's in-process fake, fast, and a real Apache Kafka broker
// (testenv), whose transactions, last stable offsets and read_committed
// fetches are the broker's own. The real broker is started once per test
// binary (see TestMain) and every test gets a new topic on it.
var clusterKinds = []struct {
	name  string
	start func(t *testing.T) cluster
}{
	{"kfake", startFake},
	{"kafka", startReal},
}

// onClusters runs fn as one subtest per cluster kind.
func onClusters(t *testing.T, fn func(t *testing.T, c cluster)) {
	for _, k := range clusterKinds {
		t.Run(k.name, func(t *testing.T) { fn(t, k.start(t)) })
	}
}

func startFake(t *testing.T) cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return cluster{brokers: c.ListenAddrs(), topic: topic, newTopic: func(t *testing.T, name string, parts int32) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, parts, 1
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(t.Context(), cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err != nil {
			t.Fatalf("create topic %q: %v", name, err)
		}
	}}
}

// broker is the real broker the tests of this binary share, started by the
// first test that needs it and stopped by TestMain.
var broker struct {
	once   sync.Once
	k      *testenv.Kafka
	err    error
	dir    string
	topics atomic.Int64
}

func startReal(t *testing.T) cluster {
	t.Helper()
	broker.once.Do(func() {
		broker.dir, broker.err = os.MkdirTemp("", "kafkasink-broker-")
		if broker.err == nil {
			broker.k, broker.err = testenv.StartKafkaBroker(context.Background(), broker.dir)
		}
		if broker.k != nil {
			fmt.Fprintf(os.Stderr, "kafkasink: Kafka broker at %s ready in %v\n", broker.k.Addr, broker.k.StartTime.Round(time.Millisecond))
		}
	})
	if broker.err != nil {
		testenv.KafkaUnavailable(t, broker.err)
	}
	name := fmt.Sprintf("%s-%d", topic, broker.topics.Add(1))
	if err := broker.k.CreateTopic(t.Context(), name, partitions); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out := broker.k.Output(); t.Failed() && out != "" {
			t.Logf("Kafka broker output:\n%s", out)
		}
	})
	return cluster{brokers: broker.k.Brokers(), topic: name, newTopic: func(t *testing.T, name string, parts int32) {
		t.Helper()
		if err := broker.k.CreateTopic(t.Context(), name, parts); err != nil {
			t.Fatal(err)
		}
	}}
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(ingestHelper())
	}
	code := m.Run()
	if broker.k != nil {
		if err := broker.k.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "kafkasink: stop the Kafka broker:", err)
		}
	}
	if broker.dir != "" {
		os.RemoveAll(broker.dir)
	}
	os.Exit(code)
}

// ledger is what the producers of a test produced.
type ledger struct {
	nextID int64
	round  int64
	// committed maps each committed record's id to its partition and offset.
	committed map[int64][2]int64
	aborted   int
}

// producer writes JSON records {"id": n, "txn": k} in Kafka transactions.
type producer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	parts int // the partitions records are spread over; 0: partitions
	*ledger
}

func newProducer(t *testing.T, c cluster) *producer {
	t.Helper()
	return newProducerID(t, c, "producer-"+c.topic, &ledger{committed: map[int64][2]int64{}})
}

// newProducerID returns a producer with the transactional id txnID that adds
// to l. A new producer with the id of an earlier one fences it: the
// broker aborts the earlier one's open transaction.
func newProducerID(t *testing.T, c cluster, txnID string, l *ledger) *producer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.TransactionalID(txnID),
		kgo.DefaultProduceTopic(c.topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &producer{t: t, cl: cl, topic: c.topic, ledger: l}
}

// produceOpen begins a transaction and produces n records spread over the
// partitions in it, and returns their results.
func (p *producer) produceOpen(ctx context.Context, n int) kgo.ProduceResults {
	p.t.Helper()
	if err := p.cl.BeginTransaction(); err != nil {
		p.t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range n {
		v, _ := json.Marshal(map[string]int64{"id": p.nextID, "txn": p.round})
		part := (int(p.nextID) + i) % partitions
		if p.parts > 0 {
			part = int(p.nextID) % p.parts // every partition, whatever p.parts
		}
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", p.nextID), Value: v, Partition: int32(part)})
		p.nextID++
	}
	res := p.cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		p.t.Fatal(err)
	}
	p.round++
	return res
}

// txn produces n records spread over the partitions in one transaction and
// commits or aborts it.
func (p *producer) txn(ctx context.Context, n int, commit bool) {
	p.t.Helper()
	res := p.produceOpen(ctx, n)
	if err := p.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		p.t.Fatal(err)
	}
	for _, r := range res {
		var v struct{ ID int64 }
		if err := json.Unmarshal(r.Record.Value, &v); err != nil {
			p.t.Fatal(err)
		}
		if commit {
			p.committed[v.ID] = [2]int64{int64(r.Record.Partition), r.Record.Offset}
		} else {
			p.aborted++
		}
	}
}

// produceRounds produces rounds transactions of 6 records; every third is
// aborted.
func (p *producer) produceRounds(ctx context.Context, rounds int) {
	for range rounds {
		p.txn(ctx, 6, p.round%3 != 1)
	}
}

func newSink(t *testing.T, store objectstore.Store) *streamsink.Sink {
	t.Helper()
	tbl, err := table.Open(t.Context(), "", table.WithStore(store), table.WithLogger(quiet),
		table.WithTxnOptions(txlog.WithBackoff(time.Millisecond, 5*time.Millisecond), txlog.WithLogger(quiet)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := streamsink.New(tbl, query, streamsink.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tableRows returns id → (partition, offset) of every row, failing on a
// repeated id or a repeated partition/offset.
func tableRows(t *testing.T, store objectstore.Store) map[int64][2]int64 {
	t.Helper()
	tbl, err := table.Open(t.Context(), "", table.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][2]int64{}
	seen := map[[2]int64]int64{}
	for row, err := range tbl.Scan(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		id := row[0].(int64)
		po := [2]int64{int64(row[2].(int32)), row[3].(int64)}
		if _, dup := out[id]; dup {
			t.Errorf("record id %d is in the table twice", id)
		}
		if other, dup := seen[po]; dup {
			t.Errorf("partition %d offset %d is in the table twice (ids %d and %d)", po[0], po[1], other, id)
		}
		out[id], seen[po] = po, id
	}
	return out
}

// checkIngested checks that the table holds exactly the committed records,
// once, and records as each partition's next offset the one after its last
// committed record.
func checkIngested(t *testing.T, store objectstore.Store, p *producer) {
	t.Helper()
	checkIngestedLedger(t, store, p.topic, p.ledger)
}

// checkIngestedLedger is checkIngested for the records of l on topic.
func checkIngestedLedger(t *testing.T, store objectstore.Store, topic string, p *ledger) {
	t.Helper()
	got := tableRows(t, store)
	if !maps.Equal(got, p.committed) {
		var missing, extra []int64
		for id := range p.committed {
			if _, ok := got[id]; !ok {
				missing = append(missing, id)
			}
		}
		for id := range got {
			if _, ok := p.committed[id]; !ok {
				extra = append(extra, id)
			}
		}
		slices.Sort(missing)
		slices.Sort(extra)
		t.Fatalf("table holds %d records, want the %d committed ones: missing ids %v, unexpected ids %v (aborted records: %d)",
			len(got), len(p.committed), missing, extra, p.aborted)
	}
	snap, err := txlog.Load(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	last := map[int64]int64{}
	for _, po := range p.committed {
		last[po[0]] = max(last[po[0]], po[1])
	}
	for part, off := range last {
		// The transaction's commit marker follows the last record: the next
		// offset is at least last+1 and at most the marker's offset + 1.
		got := snap.TxnVersion(AppID(query, topic, int32(part)))
		if got < off+1 || got > off+2 {
			t.Errorf("partition %d: table records next offset %d, want %d (after the last committed record)", part, got, off+1)
		}
	}
	rep, err := table.VerifyExactlyOnce(t.Context(), store)
	if err != nil {
		t.Fatal(err)
	}
	// The whole report is clean: the offset appIds advance by batch sizes,
	// which is no gap, and the query's epochs are exactly once.
	if !rep.OK() {
		for _, q := range rep.Queries {
			if !q.OK() {
				t.Errorf("appId %s not exactly once: %+v", q.AppID, *q)
			}
		}
	}
	if len(rep.Queries) < 2 {
		t.Errorf("report covers %d appIds, want the query and its offset appIds", len(rep.Queries))
	}
}

func createTable(t *testing.T, store objectstore.Store) {
	t.Helper()
	if _, err := table.Create(t.Context(), "", eventSchema, table.WithStore(store)); err != nil {
		t.Fatal(err)
	}
}

// Transactions with aborts, a run stopped after two batches, a run that
// crashes at a commit, and a final run until idle: the table ends with
// exactly the committed records, once.
func TestIngestExactlyOnceAcrossCrashes(t *testing.T) {
	for _, k := range clusterKinds {
		t.Run(k.name, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				phase faultstore.Phase
			}{
				{"crash before the commit lands", faultstore.Before},
				{"crash after the commit lands", faultstore.After},
			} {
				t.Run(tc.name, func(t *testing.T) { testExactlyOnceAcrossCrashes(t, k.start(t), tc.phase) })
			}
		})
	}
}

func testExactlyOnceAcrossCrashes(t *testing.T, c cluster, phase faultstore.Phase) {
	ctx := t.Context()
	brokers, topic := c.brokers, c.topic
	p := newProducer(t, c)
	mem := objectstore.NewMem(t.Name())
	createTable(t, mem)

	p.produceRounds(ctx, 5)
	// Run 1: two batches of at most 7 records, then stop.
	in, err := New(newSink(t, mem), brokers, []string{topic}, WithDecoder(recordDecoder),
		WithMaxBatches(2), WithMaxBatchRecords(7), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	st, err := in.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stopped != StopMaxBatches || st.Batches != 2 || st.StartEpoch != 0 || st.Records == 0 || st.Records > 14 {
		t.Fatalf("run 1: %+v, want 2 batches of at most 7 records from epoch 0", st)
	}
	// The partitions run 1 committed offsets for; a poll need not return
	// records of every partition, so the others may have none in the table.
	committed := maps.Clone(st.Offsets)

	p.produceRounds(ctx, 5)
	// Run 2: the writer dies at its second commit.
	wctx, kill := context.WithCancel(ctx)
	defer kill()
	f := faultstore.New(mem, faultstore.WithCrashHook(kill))
	f.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.LogPrefix, Nth: 2, Phase: phase, Kind: faultstore.Crash})
	in, _ = New(newSink(t, f), brokers, []string{topic}, WithDecoder(recordDecoder), WithMaxBatchRecords(5), WithLogger(quiet))
	st, err = in.Run(wctx)
	if err == nil || !f.Crashed() {
		t.Fatalf("run 2: %+v, %v; want the crash", st, err)
	}
	if st.StartEpoch != 2 || st.Batches != 1 {
		t.Fatalf("run 2: %+v, want one batch committed from epoch 2 before the crash", st)
	}

	p.produceRounds(ctx, 3)
	// Run 3: a restarted process reads until idle.
	in, _ = New(newSink(t, mem), brokers, []string{topic}, WithDecoder(recordDecoder), WithMaxBatchRecords(5),
		WithIdleTimeout(testIdle), WithLogger(quiet))
	st, err = in.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStart := int64(3) // run 2's second commit was lost...
	if phase == faultstore.After {
		wantStart = 4 // ...or landed without an acknowledgement
	}
	if st.Stopped != StopIdle || st.StartEpoch != wantStart || st.Batches == 0 {
		t.Fatalf("run 3: %+v, want a resume at epoch %d until idle", st, wantStart)
	}
	for tp := range committed {
		if off, ok := st.StartOffsets[tp]; !ok || off < committed[tp] {
			t.Errorf("run 3: %s started at %d (present %v), not at or after run 1's committed offset %d", tp, off, ok, committed[tp])
		}
	}
	checkIngested(t, mem, p)
	if p.aborted == 0 || len(p.committed) == 0 {
		t.Fatalf("producer: %d committed, %d aborted records; want both", len(p.committed), p.aborted)
	}
}

// A run that finds nothing new commits nothing; a restart after the end
// reads nothing twice.
func TestIngestIdleAndRestart(t *testing.T) { onClusters(t, testIdleAndRestart) }

func testIdleAndRestart(t *testing.T, c cluster) {
	ctx := t.Context()
	brokers, topic := c.brokers, c.topic
	p := newProducer(t, c)
	mem := objectstore.NewMem(t.Name())
	createTable(t, mem)
	p.produceRounds(ctx, 4)
	for run := range 3 {
		var batches []Batch
		in, _ := New(newSink(t, mem), brokers, []string{topic}, WithDecoder(recordDecoder),
			WithIdleTimeout(testIdle), WithLogger(quiet), WithBatchHook(func(b Batch) { batches = append(batches, b) }))
		st, err := in.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if run > 0 && (st.Batches != 0 || st.Records != 0) {
			t.Fatalf("run %d: %+v, want nothing new", run, st)
		}
		if run == 0 {
			var recs int
			for _, b := range batches {
				recs += b.Records
			}
			if st.Batches == 0 || len(batches) != st.Batches || int64(recs) != st.Records || st.Records != int64(len(p.committed)) {
				t.Fatalf("run 0: %+v, hooks %d batches of %d records; want all %d committed records", st, len(batches), recs, len(p.committed))
			}
		}
	}
	checkIngested(t, mem, p)
}

// Records that do not decode or that the table refuses stop the run by
// default, naming the record; WithBadRecords can drop them instead.
func TestIngestBadRecords(t *testing.T) { onClusters(t, testBadRecords) }

func testBadRecords(t *testing.T, c cluster) {
	ctx := t.Context()
	brokers, topic := c.brokers, c.topic
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	values := []string{`{"id": 1}`, `not json`, `{"id": 2}`, `{"txn": 5}` /* id is NOT NULL */, `{"id": 3}`}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("txn", schema.Primitive(schema.Long), true),
	)
	mem := objectstore.NewMem(t.Name())
	if _, err := table.Create(ctx, "", sch, table.WithStore(mem)); err != nil {
		t.Fatal(err)
	}

	in, _ := New(newSink(t, mem), brokers, []string{topic}, WithIdleTimeout(testIdle), WithLogger(quiet))
	if _, err := in.Run(ctx); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s/0 offset 1", topic)) {
		t.Fatalf("default policy: %v, want an error naming %s/0 offset 1", err, topic)
	}

	var dropped []int64
	in, _ = New(newSink(t, mem), brokers, []string{topic}, WithIdleTimeout(testIdle), WithLogger(quiet),
		WithBadRecords(func(rec *kgo.Record, err error) error {
			dropped = append(dropped, rec.Offset)
			return nil
		}))
	st, err := in.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dropped, []int64{1, 3}) || st.DroppedRecords != 2 || st.Rows != 3 || st.Offsets[TopicPartition{topic, 0}] != 5 {
		t.Fatalf("dropped offsets %v, stats %+v; want offsets 1 and 3 dropped, 3 rows, next offset 5", dropped, st)
	}
	tbl, err := table.Open(ctx, "", table.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for row, err := range tbl.Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row[0].(int64))
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int64{1, 2, 3}) {
		t.Fatalf("table ids %v, want [1 2 3]", ids)
	}
}

func TestIngestBadInput(t *testing.T) { onClusters(t, testBadInput) }

func testBadInput(t *testing.T, c cluster) {
	ctx := t.Context()
	brokers, topic := c.brokers, c.topic
	mem := objectstore.NewMem(t.Name())
	createTable(t, mem)
	s := newSink(t, mem)
	for _, tc := range []struct {
		name    string
		brokers []string
		topics  []string
		opts    []Option
	}{
		{"no brokers", nil, []string{topic}, nil},
		{"no topics", brokers, nil, nil},
		{"empty topic", brokers, []string{""}, nil},
		{"bad batch size", brokers, []string{topic}, []Option{WithMaxBatchRecords(-1)}},
	} {
		if _, err := New(s, tc.brokers, tc.topics, tc.opts...); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if _, err := New(nil, brokers, []string{topic}); err == nil {
		t.Error("nil sink accepted")
	}
	// A sink whose table does not exist yet: the records need its schema.
	pending, err := streamsink.CreateOrOpen(ctx, "", "q-pending", eventSchema, nil, table.WithStore(objectstore.NewMem(t.Name()+"-none")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(pending, brokers, []string{topic}); !errors.Is(err, table.ErrInvalidArgument) {
		t.Errorf("sink without a table: %v, want table.ErrInvalidArgument", err)
	}
	in, _ := New(s, brokers, []string{"no-such-topic"}, WithIdleTimeout(100*time.Millisecond), WithLogger(quiet))
	if _, err := in.Run(ctx); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v, want ErrUnknownTopic", err)
	}
	// A group member fails the same way instead of idling in the group.
	in, _ = New(s, brokers, []string{"no-such-topic"}, WithIdleTimeout(100*time.Millisecond), WithLogger(quiet),
		WithConsumerGroup("g-unknown", "q-unknown"))
	if _, err := in.Run(ctx); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("unknown topic in a group: %v, want ErrUnknownTopic", err)
	}
}

// AppID is injective where the legacy form was not, and ParseAppID
// inverts it.
func TestAppID(t *testing.T) {
	type key struct {
		q, topic string
		p        int32
	}
	keys := []key{
		{"a", "b-c", 0}, {"a-b", "c", 0}, // the legacy form's collision
		{"q", "events", 7}, {"q", "events", 70},
		{"a/kafka/b", "c", 1}, {"a", "b/kafka/c", 1}, // '/' in either part
		{"a/kafka", "b", 1}, {"a", "kafka/b", 1},
		{"", "t", 0}, {"q/", "t", 0}, {"q", "t%2F", 0}, {"q", "t/", 0}, {"q", "t.x_y-z", 2147483647},
	}
	seen := map[string]key{}
	for _, k := range keys {
		id := AppID(k.q, k.topic, k.p)
		if other, dup := seen[id]; dup {
			t.Errorf("AppID%v = AppID%v = %q", k, other, id)
		}
		seen[id] = k
		q, topic, p, ok := ParseAppID(id)
		if !ok || q != k.q || topic != k.topic || p != k.p {
			t.Errorf("ParseAppID(%q) = %q, %q, %d, %v; want %v", id, q, topic, p, ok, k)
		}
	}
	if got := AppID("q", "a-b", 7); got != "q/kafka/a-b/7" {
		t.Errorf("AppID = %q, want q/kafka/a-b/7", got)
	}
	if a, b := LegacyAppID("a", "b-c", 0), LegacyAppID("a-b", "c", 0); a != b || a != "a-b-c-0" {
		t.Errorf("legacy appIds %q, %q: the test's premise (they collide) is wrong", a, b)
	}
	for _, id := range []string{"q", "q-t-0", "q/kafka/t", "q/kafka/t/x", "q/kafka/t/-1", "q/kafka/t/01", "q/kafka//0", "q/kafka/a%zz/0", "q/kafka/a%2d/0", "q/kfk/t/0", "/kafka/t/99999999999"} {
		if q, topic, p, ok := ParseAppID(id); ok {
			t.Errorf("ParseAppID(%q) = %q, %q, %d: want not an offset appId", id, q, topic, p)
		}
	}
}

// Offsets reads the new form, falls back to the legacy form, and refuses a
// legacy appId that two queries of the table could have written.
func TestOffsets(t *testing.T) {
	ctx := t.Context()
	parts := []TopicPartition{{topic, 0}, {topic, 1}, {topic, 2}}
	for _, tc := range []struct {
		name    string
		txns    []txlog.Txn // committed at epoch 0 of query, besides its epoch txn
		queryID string
		parts   []TopicPartition
		want    map[TopicPartition]int64
		wantErr string // a substring of an ErrAmbiguousOffsets error
	}{
		{name: "new form", queryID: query, parts: parts,
			txns: []txlog.Txn{{AppID: AppID(query, topic, 1), Version: 42}},
			want: map[TopicPartition]int64{{topic, 0}: -1, {topic, 1}: 42, {topic, 2}: -1}},
		{name: "legacy form", queryID: query, parts: parts,
			txns: []txlog.Txn{{AppID: LegacyAppID(query, topic, 0), Version: 5}, {AppID: LegacyAppID(query, topic, 2), Version: 9}},
			want: map[TopicPartition]int64{{topic, 0}: 5, {topic, 1}: -1, {topic, 2}: 9}},
		{name: "new form wins over legacy", queryID: query, parts: parts,
			txns: []txlog.Txn{{AppID: LegacyAppID(query, topic, 0), Version: 5}, {AppID: AppID(query, topic, 0), Version: 8}},
			want: map[TopicPartition]int64{{topic, 0}: 8, {topic, 1}: -1, {topic, 2}: -1}},
		{name: "legacy appId of two queries", queryID: "a", parts: []TopicPartition{{"b-c", 0}},
			txns:    []txlog.Txn{{AppID: "a-b", Version: 3}, {AppID: "a-b-c-0", Version: 11}},
			wantErr: `txn appId "a-b-c-0" (next offset 11) may be partition 0 of topic "b-c" of query "a" or of query [a-b]`},
		{name: "legacy appId of two queries, from the other one", queryID: "a-b", parts: []TopicPartition{{"c", 0}},
			txns:    []txlog.Txn{{AppID: "a", Version: 3}, {AppID: "a-b-c-0", Version: 11}},
			wantErr: `txn appId "a-b-c-0" (next offset 11) may be partition 0 of topic "c" of query "a-b" or of query [a]`},
		{name: "legacy appId, other query is no prefix", queryID: "a", parts: []TopicPartition{{"b-c", 0}},
			txns: []txlog.Txn{{AppID: "a-b-c", Version: 3}, {AppID: "a-b-c-0", Version: 11}},
			want: map[TopicPartition]int64{{"b-c", 0}: 11}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem(t.Name())
			createTable(t, mem)
			tbl, err := table.Open(ctx, "", table.WithStore(mem), table.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			s, err := streamsink.New(tbl, tc.queryID, streamsink.WithLogger(quiet))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.WriteEpochWith(ctx, 0, nil, tc.txns...); err != nil {
				t.Fatal(err)
			}
			got, err := Offsets(s.Table().Snapshot(), tc.queryID, tc.parts)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrAmbiguousOffsets) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Offsets: %v, %v; want ErrAmbiguousOffsets saying %s", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("Offsets = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// A table written by a release with legacy offset appIds resumes at those
// offsets and records the new form from its first commit; an ambiguous one
// is refused and left unchanged.
func TestIngestResumesFromLegacyOffsets(t *testing.T) { onClusters(t, testResumesFromLegacyOffsets) }

func testResumesFromLegacyOffsets(t *testing.T, c cluster) {
	ctx := t.Context()
	p := newProducer(t, c)
	p.produceRounds(ctx, 3)
	mem := objectstore.NewMem(t.Name())
	createTable(t, mem)
	// The old release ingested everything committed so far (as an empty
	// epoch here: the rows are not the point) and recorded legacy offsets.
	next := map[int32]int64{}
	for _, po := range p.committed {
		next[int32(po[0])] = max(next[int32(po[0])], po[1]+1)
	}
	var txns []txlog.Txn
	for part, off := range next {
		txns = append(txns, txlog.Txn{AppID: LegacyAppID(query, c.topic, part), Version: off})
	}
	if _, err := newSink(t, mem).WriteEpochWith(ctx, 0, nil, txns...); err != nil {
		t.Fatal(err)
	}
	before := maps.Clone(p.committed)
	p.produceRounds(ctx, 3)
	in, _ := New(newSink(t, mem), c.brokers, []string{c.topic}, WithDecoder(recordDecoder), WithIdleTimeout(testIdle), WithLogger(quiet))
	st, err := in.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for part, off := range next {
		if got := st.StartOffsets[TopicPartition{c.topic, part}]; got != off {
			t.Errorf("partition %d started at %d, want the legacy offset %d", part, got, off)
		}
	}
	for id := range before {
		delete(p.committed, id) // the old release's rows are not in this table
	}
	checkIngested(t, mem, p)

	// A second query whose legacy appIds could be the first one's.
	amb := objectstore.NewMem(t.Name() + "-ambiguous")
	createTable(t, amb)
	// Query "ingest" with topic "events-<topic>" had the same legacy appIds.
	other, _, _ := strings.Cut(query, "-")
	if _, err := newSink(t, amb).WriteEpochWith(ctx, 0, nil, txns...); err != nil {
		t.Fatal(err)
	}
	tbl, _ := table.Open(ctx, "", table.WithStore(amb), table.WithLogger(quiet))
	os2, _ := streamsink.New(tbl, other, streamsink.WithLogger(quiet))
	if _, err := os2.WriteEpochWith(ctx, 0, nil); err != nil {
		t.Fatal(err)
	}
	version := os2.Table().Version()
	if other == query || !strings.HasPrefix(LegacyAppID(query, c.topic, 0), other+"-") {
		t.Fatalf("query %q cannot have written %s", other, LegacyAppID(query, c.topic, 0))
	}
	in, _ = New(newSink(t, amb), c.brokers, []string{c.topic}, WithDecoder(recordDecoder), WithIdleTimeout(testIdle), WithLogger(quiet))
	if st, err := in.Run(ctx); !errors.Is(err, ErrAmbiguousOffsets) || !strings.Contains(err.Error(), LegacyAppID(query, c.topic, 0)) {
		t.Fatalf("ambiguous legacy offsets: %+v, %v; want ErrAmbiguousOffsets naming %s", st, err, LegacyAppID(query, c.topic, 0))
	}
	if snap, err := txlog.Load(ctx, amb); err != nil || snap.Version() != version {
		t.Fatalf("the refused run changed the table: version %v, %v; want %d", snap, err, version)
	}
}

// New refuses a query id that is itself an offset appId.
func TestNewRefusesOffsetAppIDAsQueryID(t *testing.T) {
	mem := objectstore.NewMem(t.Name())
	createTable(t, mem)
	tbl, _ := table.Open(t.Context(), "", table.WithStore(mem), table.WithLogger(quiet))
	s, _ := streamsink.New(tbl, AppID("q", "t", 3), streamsink.WithLogger(quiet))
	if _, err := New(s, []string{"127.0.0.1:1"}, []string{"t"}); err == nil || !strings.Contains(err.Error(), `offset appId of query "q", topic "t", partition 3`) {
		t.Fatalf("New: %v, want a refusal naming the query, topic and partition", err)
	}
}

// One partition resumes at an offset from the table, the others start at
// their beginning (their start offsets resolve while the first fetch
// long-polls the broker): a short idle timeout must still see every
// record, not stop at the first quiet poll. (Before the fetch long poll was
// tied to the idle timeout, most runs stopped after the first partition's
// records.)
func TestIngestIdleTimeoutSeesEveryPartition(t *testing.T) {
	for _, k := range clusterKinds {
		t.Run(k.name, func(t *testing.T) {
			for run := range 3 {
				testIdleTimeoutSeesEveryPartition(t, k.start(t), run)
			}
		})
	}
}

func testIdleTimeoutSeesEveryPartition(t *testing.T, c cluster, run int) {
	ctx := t.Context()
	brokers, topic := c.brokers, c.topic
	p := newProducer(t, c)
	p.produceRounds(ctx, 4)
	mem := objectstore.NewMem(fmt.Sprint(t.Name(), run))
	createTable(t, mem)
	s := newSink(t, mem)
	// Partition 0 already ingested up to its second-to-last committed
	// record.
	var p0 []int64
	for _, po := range p.committed {
		if po[0] == 0 {
			p0 = append(p0, po[1])
		}
	}
	slices.Sort(p0)
	resume := p0[len(p0)-2]
	if _, err := s.WriteEpochWith(ctx, 0, nil, txlog.Txn{AppID: AppID(query, topic, 0), Version: resume}); err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	for _, po := range p.committed {
		if po[0] != 0 || po[1] >= resume {
			want++
		}
	}
	in, _ := New(s, brokers, []string{topic}, WithDecoder(recordDecoder), WithIdleTimeout(testIdle), WithLogger(quiet))
	st, err := in.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != want || st.StartOffsets[TopicPartition{topic, 0}] != resume || st.StartOffsets[TopicPartition{topic, 1}] != -2 {
		t.Fatalf("run %d: stats %+v, want %d records, partition 0 from offset %d, the others from their start", run, st, want, resume)
	}
}
