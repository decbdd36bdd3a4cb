package kafkasink

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// gateStore holds the first PutIfAbsent of a log entry (a commit) until
// release is closed, after telling arrived: a commit whose PUT is slow,
// deterministically.
type gateStore struct {
	objectstore.Store
	once    sync.Once
	arrived chan struct{}
	release chan struct{}
}

func newGate(s objectstore.Store) *gateStore {
	return &gateStore{Store: s, arrived: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, txlog.LogPrefix) && strings.HasSuffix(key, ".json") {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.arrived)
			select {
			case <-g.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return g.Store.PutIfAbsent(ctx, key, data)
}

// member is one group member's ingester without a Kafka client: its
// batches are given as records.
type member struct {
	in *Ingester
	g  *groupState
}

func newMember(t *testing.T, store objectstore.Store, name string, owns map[TopicPartition]int64) *member {
	t.Helper()
	tbl, err := table.Open(t.Context(), "", table.WithStore(store), table.WithLogger(quiet),
		table.WithTxnOptions(txlog.WithBackoff(0, 0), txlog.WithLogger(quiet)))
	if err != nil {
		t.Fatal(err)
	}
	sink := newSinkOn(t, tbl, MemberQueryID(query, name))
	in, err := New(sink, []string{"127.0.0.1:1"}, []string{topic}, WithDecoder(recordDecoder),
		WithConsumerGroup("g", query), WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	return &member{in: in, g: &groupState{next: maps.Clone(owns), seek: map[TopicPartition]int64{}, start: map[TopicPartition]int64{}}}
}

// records returns records of partition p at offsets [from, to), with ids
// 1000*p + offset.
func records(p int32, from, to int64) []*kgo.Record {
	var out []*kgo.Record
	for o := from; o < to; o++ {
		v, _ := json.Marshal(map[string]int64{"id": 1000*int64(p) + o})
		out = append(out, &kgo.Record{Topic: topic, Partition: p, Offset: o, Value: v})
	}
	return out
}

func (m *member) write(t *testing.T, epoch int64, recs []*kgo.Record) *Batch {
	t.Helper()
	b, err := m.in.writeBatch(t.Context(), epoch, recs, nil, &Stats{}, m.g, nil)
	if err != nil {
		t.Fatalf("%s: %v", m.in.sink.QueryID(), err)
	}
	return b
}

// A partition moved from member A (the old owner, not yet aware, or a
// zombie the group has dropped) to member B, and both commit records of
// it from the table's offset 10. Whatever the order, the table ends with
// every record once, the offsets never go back, and the member that
// commits second leaves out exactly the records the other committed:
//   - A's commit PUT is slow and B's first commit lands meanwhile: A's
//     commit conflicts (ErrConcurrentTransaction: it read p0's offset txn,
//     which B wrote), and its retry finds the table at B's offset and
//     commits only its other partition, and seeks p0 past B's records;
//   - B's first commit is the slow one: B's retry keeps the records after
//     A's offset;
//   - B's commit landed before A's commit started (A's snapshot holds it):
//     A's precondition sees the offset and A seeks past it.
func TestGroupFencingRace(t *testing.T) {
	p0, p1 := TopicPartition{topic, 0}, TopicPartition{topic, 1}
	for _, tc := range []struct {
		name         string
		slow         string // the member whose first commit PUT waits for the other's commit: "A", "B" or "" (B commits before A starts)
		wantDroppedA int
		wantDroppedB int
		wantSeekA    bool
	}{
		{"old owner's commit is slow", "A", 10, 0, true},
		{"new owner's first commit is slow", "B", 0, 10, false},
		{"new owner committed first", "", 10, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem(t.Name())
			createTable(t, mem)
			// Offsets 10 of p0 and p1 are in the table (rows 0..9 elsewhere).
			setup := newMember(t, mem, "setup", nil)
			if _, err := setup.in.sink.WriteEpochWith(t.Context(), 0, nil,
				txlog.Txn{AppID: AppID(query, topic, 0), Version: 10}, txlog.Txn{AppID: AppID(query, topic, 1), Version: 10}); err != nil {
				t.Fatal(err)
			}
			storeA, storeB := objectstore.Store(mem), objectstore.Store(mem)
			var gate *gateStore
			switch tc.slow {
			case "A":
				gate = newGate(mem)
				storeA = gate
			case "B":
				gate = newGate(mem)
				storeB = gate
			}
			a := newMember(t, storeA, "a", map[TopicPartition]int64{p0: 10, p1: 10})
			b := newMember(t, storeB, "b", map[TopicPartition]int64{p0: 10})
			recsA := append(records(0, 10, 20), records(1, 10, 15)...)
			recsB := records(0, 10, 25)
			var batchA, batchB *Batch
			switch tc.slow {
			case "A", "B":
				slow, fast := a, b
				slowRecs, fastRecs := recsA, recsB
				if tc.slow == "B" {
					slow, fast, slowRecs, fastRecs = b, a, recsB, recsA
				}
				done := make(chan *Batch)
				go func() {
					bt, err := slow.in.writeBatch(t.Context(), 0, slowRecs, nil, &Stats{}, slow.g, nil)
					if err != nil {
						t.Error(err)
					}
					done <- bt
				}()
				<-gate.arrived // the slow commit has its snapshot and is writing
				fb := fast.write(t, 0, fastRecs)
				close(gate.release)
				sb := <-done
				batchA, batchB = sb, fb
				if tc.slow == "B" {
					batchA, batchB = fb, sb
				}
			default:
				batchB = b.write(t, 0, recsB)
				batchA = a.write(t, 0, recsA)
			}
			if batchA == nil || batchB == nil {
				t.Fatalf("batches %+v, %+v: want both committed", batchA, batchB)
			}
			if batchA.Dropped != tc.wantDroppedA || batchB.Dropped != tc.wantDroppedB {
				t.Errorf("left out A %d, B %d records; want %d, %d", batchA.Dropped, batchB.Dropped, tc.wantDroppedA, tc.wantDroppedB)
			}
			if s := a.g.seeks(); tc.wantSeekA != (s != nil) || (s != nil && s[topic][0].Offset != 25) {
				t.Errorf("A's seeks %v, want a seek of p0 to 25: %v", s, tc.wantSeekA)
			}
			want := map[int64][2]int64{}
			for _, r := range append(records(0, 10, 25), records(1, 10, 15)...) {
				want[1000*int64(r.Partition)+r.Offset] = [2]int64{int64(r.Partition), r.Offset}
			}
			if got := tableRows(t, mem); !maps.Equal(got, want) {
				t.Fatalf("table holds %v, want %v", got, want)
			}
			snap, err := txlog.Load(t.Context(), mem)
			if err != nil {
				t.Fatal(err)
			}
			if o0, o1 := snap.TxnVersion(AppID(query, topic, 0)), snap.TxnVersion(AppID(query, topic, 1)); o0 != 25 || o1 != 15 {
				t.Errorf("table offsets p0 %d, p1 %d; want 25, 15", o0, o1)
			}
			rep, err := table.VerifyExactlyOnce(t.Context(), mem)
			if err != nil || !rep.OK() {
				t.Fatalf("VerifyExactlyOnce: %v", err)
			}
		})
	}
}

func newSinkOn(t *testing.T, tbl *table.Table, queryID string) *streamsink.Sink {
	t.Helper()
	s, err := streamsink.New(tbl, queryID, streamsink.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
