package streamsink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
)

// commitTxns returns the txn actions of commit version v by appId.
func commitTxns(t *testing.T, store objectstore.Store, v int64) map[string]*txlog.Txn {
	t.Helper()
	actions, err := txlog.ReadCommit(context.Background(), store, v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*txlog.Txn{}
	for _, a := range actions {
		if a.Txn != nil {
			out[a.Txn.AppID] = a.Txn
		}
	}
	return out
}

func TestWriteEpochWithExtraTxns(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	clock := time.UnixMilli(1_700_000_000_000)
	sink, err := New(newTable(t, mem), "q", WithClock(func() time.Time { return clock }))
	if err != nil {
		t.Fatal(err)
	}
	given := int64(42)
	res, err := sink.WriteEpochWith(ctx, 0, epochRows(0, 5),
		txlog.Txn{AppID: "q-topic-0", Version: 17},
		txlog.Txn{AppID: "q-topic-1", Version: 3, LastUpdated: &given})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.Version != 1 || res.Rows != 5 || res.Files != 1 {
		t.Fatalf("result %+v, want version 1, 5 rows in 1 file", res)
	}
	bytes1 := res.Bytes
	txns := commitTxns(t, mem, 1)
	for _, want := range []struct {
		app          string
		version, upd int64
	}{{"q", 0, clock.UnixMilli()}, {"q-topic-0", 17, clock.UnixMilli()}, {"q-topic-1", 3, 42}} {
		got := txns[want.app]
		if got == nil || got.Version != want.version || got.LastUpdated == nil || *got.LastUpdated != want.upd {
			t.Errorf("txn %s = %+v, want version %d lastUpdated %d", want.app, got, want.version, want.upd)
		}
	}
	if len(txns) != 3 {
		t.Errorf("commit has %d txn actions, want 3", len(txns))
	}

	// A replayed epoch is skipped together with its extra txns.
	res, err = sink.WriteEpochWith(ctx, 0, epochRows(0, 5), txlog.Txn{AppID: "q-topic-0", Version: 99})
	if err != nil || !res.Skipped {
		t.Fatalf("replay: %+v, %v; want skipped", res, err)
	}
	snap, err := txlog.Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != 1 || snap.TxnVersion("q-topic-0") != 17 {
		t.Fatalf("after replay: version %d, q-topic-0 at %d; want 1 and 17", snap.Version(), snap.TxnVersion("q-topic-0"))
	}
	if files := snap.Files(); len(files) != 1 || files[0].Size != bytes1 || bytes1 <= 0 {
		t.Errorf("epoch 0 reported %d bytes; the table holds %d file(s) of it", bytes1, len(files))
	}

	// An epoch without rows still records its txns.
	res, err = sink.WriteEpochWith(ctx, 1, nil, txlog.Txn{AppID: "q-topic-0", Version: 18})
	if err != nil || res.Skipped || res.Files != 0 || res.Bytes != 0 || res.Version != 2 {
		t.Fatalf("empty epoch: %+v, %v; want version 2 with no files", res, err)
	}
	if got := commitTxns(t, mem, 2)["q-topic-0"]; got == nil || got.Version != 18 {
		t.Fatalf("empty epoch txn %+v, want version 18", got)
	}
}

func TestWriteEpochWithBadTxns(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sink, _ := New(newTable(t, mem), "q")
	for _, tc := range []struct {
		name  string
		extra []txlog.Txn
	}{
		{"empty appId", []txlog.Txn{{AppID: "", Version: 1}}},
		{"query's own appId", []txlog.Txn{{AppID: "q", Version: 1}}},
		{"appId twice", []txlog.Txn{{AppID: "a", Version: 1}, {AppID: "a", Version: 2}}},
	} {
		if _, err := sink.WriteEpochWith(ctx, 0, epochRows(0, 1), tc.extra...); !errors.Is(err, ErrInvalidTxn) {
			t.Errorf("%s: %v, want ErrInvalidTxn", tc.name, err)
		}
	}
	if got := liveRows(t, mem); got != 0 {
		t.Fatalf("bad txns wrote %d rows", got)
	}
}

// Two queries that both claim one extra appId (two ingest runs reading the
// same Kafka partition under different query ids): the later commit is
// fenced, the first one's offsets stand.
func TestWriteEpochWithExtraTxnFences(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	tbl := newTable(t, mem)
	slow := faultstore.New(mem)
	slowTbl, err := table.Open(ctx, "", table.WithStore(slow))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := New(tbl, "qa")
	b, _ := New(slowTbl, "qb")
	slow.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.LogPrefix, Nth: 1, Kind: faultstore.Latency, Latency: 300 * time.Millisecond})
	var wg sync.WaitGroup
	var errB error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, errB = b.WriteEpochWith(ctx, 0, epochRows(1, 10), txlog.Txn{AppID: "shared-partition", Version: 20})
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := a.WriteEpochWith(ctx, 0, epochRows(0, 10), txlog.Txn{AppID: "shared-partition", Version: 10}); err != nil {
		t.Fatalf("a: %v", err)
	}
	wg.Wait()
	if !errors.Is(errB, txlog.ErrConcurrentTransaction) {
		t.Fatalf("b: %v, want ErrConcurrentTransaction", errB)
	}
	snap, err := txlog.Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if v := snap.TxnVersion("shared-partition"); v != 10 {
		t.Fatalf("shared-partition at %d, want a's 10", v)
	}
	if got := liveRows(t, mem); got != 10 {
		t.Fatalf("table holds %d rows, want 10", got)
	}
}

type event struct {
	ID      int64   `delta:"id"`
	Epoch   int64   `delta:"epoch"`
	Payload *string `delta:"payload"`
}

type badEvent struct {
	ID    string `delta:"id"` // a string for a long column
	Epoch int64  `delta:"epoch"`
}

func TestWriteEpochOf(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sink, _ := New(newTable(t, mem), "q")
	p := "hello"
	res, err := WriteEpochOf(ctx, sink, 0, []event{{ID: 1, Epoch: 0, Payload: &p}, {ID: 2, Epoch: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || res.Rows != 2 || res.Version != 1 {
		t.Fatalf("result %+v, want 2 rows at version 1", res)
	}
	var got [][3]any
	for row, err := range sink.Table().Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, [3]any{row[0], row[1], row[2]})
	}
	if len(got) != 2 || got[0] != [3]any{int64(1), int64(0), "hello"} || got[1] != [3]any{int64(2), int64(0), nil} {
		t.Fatalf("scan %v, want [1 0 hello] [2 0 <nil>]", got)
	}
	// A replay is skipped before any conversion: even rows that could not
	// be converted are fine.
	res, err = WriteEpochOf(ctx, sink, 0, []badEvent{{ID: "x"}})
	if err != nil || !res.Skipped {
		t.Fatalf("replay: %+v, %v; want skipped", res, err)
	}
	// A Go type that does not fit the table is refused; nothing is written.
	if _, err := WriteEpochOf(ctx, sink, 1, []badEvent{{ID: "x"}}); !errors.Is(err, table.ErrSchemaMismatch) {
		t.Fatalf("bad type: %v, want ErrSchemaMismatch", err)
	}
	if last, _ := sink.LastCommittedEpoch(ctx); last != 0 {
		t.Fatalf("LastCommittedEpoch %d after a refused epoch, want 0", last)
	}
}

// TestWriteEpochOfColumnar writes typed epochs (the columnar path: every
// column of eventSchema is a top-level primitive) and the same rows as
// untyped epochs on a second table: each epoch's rows land once, with the
// untyped epoch's stats; a replay is skipped and writes no file; a nil *T
// row is refused and leaves no data file behind.
func TestWriteEpochOfColumnar(t *testing.T) {
	ctx := context.Background()
	typedStore, rowStore := objectstore.NewMem("typed"), objectstore.NewMem("rows")
	typed, _ := New(newTable(t, typedStore), "q")
	untypedSink, _ := New(newTable(t, rowStore), "q")
	for e := int64(0); e < 3; e++ {
		evs := make([]*event, 100)
		rows := make([]table.Row, len(evs))
		for i := range evs {
			id := e*100 + int64(i)
			evs[i] = &event{ID: id, Epoch: e}
			rows[i] = table.Row{id, e, nil}
			if i%3 == 0 {
				p := fmt.Sprintf("p%d", id)
				evs[i].Payload, rows[i][2] = &p, p
			}
		}
		res, err := WriteEpochOf(ctx, typed, e, evs)
		if err != nil || res.Skipped || res.Rows != 100 || res.Files != 1 {
			t.Fatalf("epoch %d: %+v, %v; want 100 rows in 1 file", e, res, err)
		}
		ref, err := untypedSink.WriteEpoch(ctx, e, rows)
		if err != nil {
			t.Fatal(err)
		}
		got, want := fileStats(t, typed), fileStats(t, untypedSink)
		if len(got) != int(e+1) || !slices.Equal(got, want) || res.Version != ref.Version {
			t.Fatalf("epoch %d: stats %v at version %d; untyped %v at %d", e, got, res.Version, want, ref.Version)
		}
		// A replay is skipped: no file, no commit.
		before := len(storeDataKeys(t, typedStore))
		if res, err := WriteEpochOf(ctx, typed, e, evs); err != nil || !res.Skipped {
			t.Fatalf("replay of %d: %+v, %v; want skipped", e, res, err)
		}
		if n := len(storeDataKeys(t, typedStore)); n != before {
			t.Fatalf("replay of %d wrote %d files", e, n-before)
		}
	}
	if got := liveRows(t, typedStore); got != 300 {
		t.Fatalf("table holds %d rows, want 300", got)
	}
	before := len(storeDataKeys(t, typedStore))
	if _, err := WriteEpochOf(ctx, typed, 3, []*event{{ID: 1}, nil}); !errors.Is(err, table.ErrInvalidArgument) {
		t.Fatalf("nil row: %v, want ErrInvalidArgument", err)
	}
	if n := len(storeDataKeys(t, typedStore)); n != before {
		t.Fatalf("refused epoch wrote %d files", n-before)
	}
	if last, _ := typed.LastCommittedEpoch(ctx); last != 2 {
		t.Fatalf("LastCommittedEpoch %d, want 2", last)
	}
}

// storeDataKeys lists the store's keys outside the log.
func storeDataKeys(t *testing.T, store objectstore.Store) []string {
	t.Helper()
	var keys []string
	for o, err := range store.List(context.Background(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(o.Key, "_delta_log/") {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// fileStats returns the stats of the sink table's live files, sorted.
func fileStats(t *testing.T, s *Sink) []string {
	t.Helper()
	files, err := s.Table().Files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, f.Stats)
	}
	slices.Sort(out)
	return out
}

// TestEpochEncodedDuringRefresh covers the first attempt's overlap of the
// refresh with encoding the epoch for the sink's older snapshot: an epoch
// that another run of the query committed meanwhile is skipped and stores
// no file; after another writer changed the table's metadata (a property,
// a new column), the epoch is encoded again for the fresh table, and only
// those files are stored.
func TestEpochEncodedDuringRefresh(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	base := newTable(t, store)
	a, _ := New(base, "q")
	b, _ := New(base, "q") // the same query, its snapshot left at version 0
	if _, err := a.WriteEpoch(ctx, 0, epochRows(0, 5)); err != nil {
		t.Fatal(err)
	}
	files := len(storeDataKeys(t, store))
	res, err := WriteEpochOf(ctx, b, 0, []event{{ID: 1}})
	if err != nil || !res.Skipped || res.Version != 1 {
		t.Fatalf("epoch committed by another run: %+v, %v; want skipped at version 1", res, err)
	}
	if res, err := b.WriteEpoch(ctx, 0, epochRows(0, 5)); err != nil || !res.Skipped {
		t.Fatalf("untyped replay: %+v, %v; want skipped", res, err)
	}
	if n := len(storeDataKeys(t, store)); n != files {
		t.Fatalf("skipped epochs stored %d files", n-files)
	}

	// Another writer sets a property and adds a column; b's snapshot is
	// at version 1.
	other, err := table.Open(ctx, "", table.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if other, err = other.SetProperties(ctx, map[string]string{"delta.appendOnly": "true"}); err != nil {
		t.Fatal(err)
	}
	wide := schema.NewStruct(append(slices.Clone(eventSchema.Fields), schema.NewField("extra", schema.Primitive(schema.String), true))...)
	if _, err = other.AppendRows(ctx, []table.Row{{int64(99), int64(99), nil, "x"}}, table.WithRowSchema(wide), table.WithSchemaEvolution()); err != nil {
		t.Fatal(err)
	}
	files = len(storeDataKeys(t, store))
	res, err = WriteEpochOf(ctx, b, 1, []event{{ID: 10, Epoch: 1}, {ID: 11, Epoch: 1}})
	if err != nil || res.Skipped || res.Rows != 2 || res.Version != 4 {
		t.Fatalf("epoch after a metadata change: %+v, %v; want 2 rows at version 4", res, err)
	}
	if n := len(storeDataKeys(t, store)); n != files+1 {
		t.Fatalf("epoch stored %d files, want 1", n-files)
	}
	if got := b.Table().Schema().Fields; len(got) != 4 || got[3].Name != "extra" {
		t.Fatalf("schema %v, want the fresh table's 4 columns", b.Table().Schema())
	}
	if got := liveRows(t, store); got != 8 {
		t.Fatalf("table holds %d rows, want 8", got)
	}
}
