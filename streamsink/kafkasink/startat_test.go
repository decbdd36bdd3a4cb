package kafkasink

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
)

// Records stamped three hours, two hours and one hour ago: WithStartAt
// decides where partitions without an offset in the table start (the
// first record, the end, the first record at or after a time), and a
// partition with an offset in the table resumes there whatever the start
// point says.
func TestIngestStartAt(t *testing.T) { onClusters(t, testStartAt) }

func testStartAt(t *testing.T, c cluster) {
	ctx := t.Context()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	now := time.Now().Truncate(time.Millisecond)
	stamps := []time.Time{now.Add(-3 * time.Hour), now.Add(-2 * time.Hour), now.Add(-time.Hour)}
	var mu sync.Mutex
	stampOf := map[int64]time.Time{} // id → its record's timestamp
	nextID := int64(0)
	// produce writes one record stamped ts on every partition of topic
	// and returns their ids.
	produce := func(t *testing.T, topic string, ts time.Time) (ids []int64) {
		t.Helper()
		for p := range int32(partitions) {
			mu.Lock()
			id := nextID
			nextID++
			stampOf[id] = ts
			mu.Unlock()
			v := fmt.Appendf(nil, `{"id": %d}`, id)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v, Partition: p, Timestamp: ts}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}
	var all []int64 // the ids on c.topic
	for _, ts := range stamps {
		all = append(all, produce(t, c.topic, ts)...)
	}
	idsFrom := func(from time.Time) []int64 {
		var ids []int64
		for _, id := range all {
			if !stampOf[id].Before(from) {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	run := func(t *testing.T, store objectstore.Store, topic string, opts ...Option) *Stats {
		t.Helper()
		in, err := New(newSink(t, store), c.brokers, []string{topic},
			append([]Option{WithDecoder(recordDecoder), WithIdleTimeout(testIdle), WithLogger(quiet)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		st, err := in.Run(ctx)
		if err != nil || st.Stopped != StopIdle {
			t.Fatalf("Run: %+v, %v", st, err)
		}
		return st
	}
	ids := func(t *testing.T, store objectstore.Store) []int64 {
		return slices.Sorted(maps.Keys(tableRows(t, store)))
	}
	for _, tc := range []struct {
		name  string
		opts  []Option
		from  time.Time // the records stamped from then on are ingested
		start int64     // Stats.StartOffsets of every partition
	}{
		{"default", nil, stamps[0], StartOffsetEarliest},
		{"earliest", []Option{WithStartAt(StartEarliest())}, stamps[0], StartOffsetEarliest},
		{"latest", []Option{WithStartAt(StartLatest())}, now.Add(time.Hour), StartOffsetLatest},
		{"at the second stamp", []Option{WithStartAt(StartAtTime(stamps[1]))}, stamps[1], StartOffsetTime},
		{"just after the second stamp", []Option{WithStartAt(StartAtTime(stamps[1].Add(time.Millisecond)))}, stamps[2], StartOffsetTime},
		{"after every record", []Option{WithStartAt(StartAtTime(now.Add(-time.Minute)))}, now.Add(time.Hour), StartOffsetTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			store := objectstore.NewMem(t.Name())
			createTable(t, store)
			st := run(t, store, c.topic, tc.opts...)
			for tp, o := range st.StartOffsets {
				if o != tc.start {
					t.Errorf("partition %s started at %d, want %d", tp, o, tc.start)
				}
			}
			if got, want := ids(t, store), idsFrom(tc.from); !slices.Equal(got, want) {
				t.Errorf("table ids %v, want %v (stamped at or after %v)", got, want, tc.from)
			}
		})
	}

	// The table holds offsets after the third stamp's records: records
	// produced later with the first stamp are ingested from there, not
	// skipped for being older than the start point.
	t.Run("resume", func(t *testing.T) {
		t.Parallel()
		topic := c.topic + "-resume"
		c.newTopic(t, topic, partitions)
		var want []int64
		for i, ts := range stamps {
			if ids := produce(t, topic, ts); i == 2 {
				want = append(want, ids...)
			}
		}
		store := objectstore.NewMem(t.Name())
		createTable(t, store)
		opt := WithStartAt(StartAtTime(stamps[2]))
		run(t, store, topic, opt)
		want = append(want, produce(t, topic, stamps[0])...)
		st := run(t, store, topic, opt)
		for tp, o := range st.StartOffsets {
			if o != 3 {
				t.Errorf("resumed partition %s at %d, want 3 (after its records of the three stamps)", tp, o)
			}
		}
		slices.Sort(want)
		if got := ids(t, store); !slices.Equal(got, want) {
			t.Errorf("table ids after the resume %v, want %v", got, want)
		}
	})
}
