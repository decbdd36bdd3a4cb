package kafkasink

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// Records that do not decode, or that the table refuses, go to the
// dead-letter topic with their key, value and headers and the reason and
// source in headers; the good ones go to the table. The dead letters of a
// batch are in the topic before the batch commits: a run that crashes at
// the commit leaves them there, and the run after it produces them again
// (at least once) while the table gets every good record once.
func TestIngestDeadLetters(t *testing.T) { onClusters(t, testDeadLetters) }

func testDeadLetters(t *testing.T, c cluster) {
	ctx := t.Context()
	dlq := c.topic + "-dlq"
	c.newTopic(t, dlq, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.DefaultProduceTopic(c.topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	type input struct {
		value string
		bad   string // for a bad record, a word its reason names
	}
	inputs := []input{
		{`{"id": 1}`, ""},
		{`not json`, "JSON"},
		{`{"id": 2}`, ""},
		{`{"txn": 5}`, "id"}, // id is NOT NULL
		{`{"id": "x"}`, "id"},
		{`{"id": 3}`, ""},
	}
	for i, in := range inputs {
		rec := &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte(in.value), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}}}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
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

	// Refused options, and a dead-letter topic that does not exist: the
	// run stops before it consumes anything.
	if _, err := New(newSink(t, mem), c.brokers, []string{c.topic}, WithDeadLetterTopic(dlq), WithBadRecords(func(*kgo.Record, error) error { return nil })); err == nil {
		t.Error("New with WithDeadLetterTopic and WithBadRecords: no error")
	}
	if _, err := New(newSink(t, mem), c.brokers, []string{c.topic}, WithDeadLetterTopic(c.topic)); err == nil {
		t.Error("New with a consumed topic as the dead-letter topic: no error")
	}
	in, _ := New(newSink(t, mem), c.brokers, []string{c.topic}, WithDeadLetterTopic(dlq+"-missing"), WithIdleTimeout(testIdle), WithLogger(quiet))
	if st, err := in.Run(ctx); !errors.Is(err, ErrUnknownTopic) || !strings.Contains(err.Error(), dlq+"-missing") || st.Version != 0 {
		t.Fatalf("missing dead-letter topic: %+v, %v; want ErrUnknownTopic naming it, table at version 0", st, err)
	}

	// A run that crashes at its commit, after the dead letters went out.
	wctx, kill := context.WithCancel(ctx)
	f := faultstore.New(mem, faultstore.WithCrashHook(kill))
	f.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.LogPrefix, Nth: 1, Phase: faultstore.Before, Kind: faultstore.Crash})
	in, _ = New(newSink(t, f), c.brokers, []string{c.topic}, WithDeadLetterTopic(dlq), WithMaxBatchRecords(100), WithLogger(quiet))
	if st, err := in.Run(wctx); err == nil || !f.Crashed() || st.Batches != 0 {
		t.Fatalf("crash run: %+v, %v; want a crash at the first commit", st, err)
	}
	kill()
	// The next run commits the batch and produces its dead letters again.
	in, _ = New(newSink(t, mem), c.brokers, []string{c.topic}, WithDeadLetterTopic(dlq), WithMaxBatchRecords(100), WithIdleTimeout(testIdle), WithLogger(quiet))
	st, err := in.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wantBad []int64
	for i, in := range inputs {
		if in.bad != "" {
			wantBad = append(wantBad, int64(i))
		}
	}
	if st.DeadLetters != int64(len(wantBad)) || st.DroppedRecords != 0 || st.Rows != 3 || st.Offsets[TopicPartition{c.topic, 0}] != int64(len(inputs)) {
		t.Fatalf("stats %+v; want %d dead letters, 3 rows, next offset %d", st, len(wantBad), len(inputs))
	}
	var ids []int64
	tbl, err := table.Open(ctx, "", table.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
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

	// The topic holds the bad records twice (crash run and retry) and
	// nothing else. Within a batch the records that do not decode come
	// first, then those the table refuses: compare by source offset.
	letters := consumeAll(t, c, dlq, 2*len(wantBad))
	header := func(r *kgo.Record, key string) string {
		for _, h := range r.Headers {
			if h.Key == key {
				return string(h.Value)
			}
		}
		return ""
	}
	for round := range 2 {
		slices.SortFunc(letters[round*len(wantBad):(round+1)*len(wantBad)], func(a, b *kgo.Record) int {
			return strings.Compare(header(a, HeaderOffset), header(b, HeaderOffset))
		})
	}
	for i, r := range letters {
		src := wantBad[i%len(wantBad)]
		hdr := map[string]string{}
		for _, h := range r.Headers {
			hdr[h.Key] = string(h.Value)
		}
		if string(r.Value) != inputs[src].value || string(r.Key) != "k"+strconv.Itoa(int(src)) || r.Headers[0].Key != "h" || hdr["h"] != strconv.Itoa(int(src)) ||
			hdr[HeaderTopic] != c.topic || hdr[HeaderPartition] != "0" || hdr[HeaderOffset] != strconv.Itoa(int(src)) ||
			!strings.Contains(hdr[HeaderError], inputs[src].bad) {
			t.Errorf("dead letter %d: key %q value %q headers %v; want record %d (%q) with its header and its source, and a reason naming %q",
				i, r.Key, r.Value, hdr, src, inputs[src].value, inputs[src].bad)
		}
	}
	t.Logf("reasons: %q", func() (out []string) {
		for _, r := range letters[:len(wantBad)] {
			out = append(out, header(r, HeaderError))
		}
		return out
	}())
}

// consumeAll reads topic (one partition) from its start and returns its
// records, failing unless it holds exactly n.
func consumeAll(t *testing.T, c cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := listOffsets(t.Context(), cl, []TopicPartition{{topic, 0}}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if end := ends[TopicPartition{topic, 0}]; end != int64(n) {
		t.Fatalf("topic %s holds %d records, want %d", topic, end, n)
	}
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading %s: %v after %d records", topic, err, len(out))
		}
		out = append(out, fs.Records()...)
	}
	return out
}
