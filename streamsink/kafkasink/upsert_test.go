package kafkasink

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// An upsert sink (streamsink.WithMergeKeys) under the Kafka source: keyed
// records, each key always on one partition, updated over several
// transactions (some aborted), consumed in small batches over two runs:
// the table ends with the latest committed record of every key, and the
// epochs and offsets are exactly once.
func TestIngestUpsert(t *testing.T) { onClusters(t, testUpsert) }

func testUpsert(t *testing.T, c cluster) {
	ctx := t.Context()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.TransactionalID("upsert-"+c.topic),
		kgo.DefaultProduceTopic(c.topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	const keys = 8
	// want is the reference: per id, the txn round, partition and offset of
	// its latest committed record.
	want := map[int64][3]int64{}
	produce := func(round int64, commit bool) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for id := range int64(keys) {
			for rep := range 1 + id%2 { // odd ids twice per round: in-batch duplicates
				v, _ := json.Marshal(map[string]int64{"id": id, "txn": round*10 + rep})
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", id), Value: v, Partition: int32(id % partitions)})
			}
		}
		res := cl.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			for _, r := range res {
				var v struct{ ID, Txn int64 }
				if err := json.Unmarshal(r.Record.Value, &v); err != nil {
					t.Fatal(err)
				}
				want[v.ID] = [3]int64{v.Txn, int64(r.Record.Partition), r.Record.Offset}
			}
		}
	}
	mem := objectstore.NewMem(t.Name())
	createTable(t, mem)
	sink := func() *streamsink.Sink {
		tbl, err := table.Open(ctx, "", table.WithStore(mem), table.WithLogger(quiet),
			table.WithTxnOptions(txlog.WithBackoff(time.Millisecond, 5*time.Millisecond), txlog.WithLogger(quiet)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := streamsink.New(tbl, query, streamsink.WithLogger(quiet), streamsink.WithMergeKeys("id"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	produce(0, true)
	produce(1, false) // aborted: never in the table
	produce(2, true)
	// Run 1: two batches of at most 5 records, then stop.
	in, err := New(sink(), c.brokers, []string{c.topic}, WithDecoder(recordDecoder), WithLogger(quiet),
		WithMaxBatchRecords(5), WithMaxBatches(2))
	if err != nil {
		t.Fatal(err)
	}
	if st, err := in.Run(ctx); err != nil || st.Batches != 2 {
		t.Fatalf("run 1: %+v, %v; want 2 batches", st, err)
	}
	produce(3, true)
	// Run 2: the rest, until idle.
	in, err = New(sink(), c.brokers, []string{c.topic}, WithDecoder(recordDecoder), WithLogger(quiet),
		WithMaxBatchRecords(7), WithIdleTimeout(testIdle))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Run(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err := table.Open(ctx, "", table.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64][3]int64{}
	for row, err := range tbl.Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		id := row[0].(int64)
		if _, dup := got[id]; dup {
			t.Fatalf("id %d twice in the table", id)
		}
		got[id] = [3]int64{row[1].(int64), int64(row[2].(int32)), row[3].(int64)}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("table (id -> txn, partition, offset):\n got %v\nwant %v", got, want)
	}
	rep, err := table.VerifyExactlyOnce(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Queries) < 2 {
		t.Fatalf("verify exactly once: %+v", rep.Queries)
	}
	// Every epoch commit is a MERGE.
	for v := int64(1); v <= tbl.Version(); v++ {
		actions, err := txlog.ReadCommit(ctx, mem, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range actions {
			if a.CommitInfo != nil && a.CommitInfo.Operation != streamsink.MergeOperation {
				t.Errorf("version %d: operation %s, want MERGE", v, a.CommitInfo.Operation)
			}
		}
	}
}
