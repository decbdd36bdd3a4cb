package streamsink

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

var eventSchema = schema.NewStruct(
	schema.NewField("id", schema.Primitive(schema.Long), false),
	schema.NewField("epoch", schema.Primitive(schema.Long), false),
	schema.NewField("payload", schema.Primitive(schema.String), true),
)

// epochRows returns n rows for an epoch with ids epoch*1000 + i.
func epochRows(epoch int64, n int) []value.Row {
	rows := make([]value.Row, n)
	for i := range rows {
		rows[i] = value.Row{epoch*1000 + int64(i), epoch, fmt.Sprintf("e%d-%d", epoch, i)}
	}
	return rows
}

func newTable(t *testing.T, store objectstore.Store) *table.Table {
	t.Helper()
	tbl, err := table.Create(context.Background(), "", eventSchema, table.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// liveRows sums numRecords over the live files of the latest snapshot.
func liveRows(t *testing.T, store objectstore.Store) int64 {
	t.Helper()
	snap, err := txlog.Load(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range snap.Files() {
		r, ok := f.NumRecords()
		if !ok {
			t.Fatalf("%s has no numRecords", f.Path)
		}
		n += r
	}
	return n
}

func TestWriteEpochSkipsReplays(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sink, err := New(newTable(t, mem), "query-1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		epoch       int64
		wantSkipped bool
		wantVersion int64
	}{
		{0, false, 1},
		{1, false, 2},
		{2, false, 3},
		{2, true, 3}, // replay of the last epoch
		{0, true, 3}, // an epoch older than the recorded one
		{3, false, 4},
		{7, false, 5}, // epochs may jump forward
		{5, true, 5},  // but never go back
	}
	for _, tc := range tests {
		res, err := sink.WriteEpoch(ctx, tc.epoch, epochRows(tc.epoch, 10))
		if err != nil {
			t.Fatalf("epoch %d: %v", tc.epoch, err)
		}
		if res.Skipped != tc.wantSkipped || res.Version != tc.wantVersion {
			t.Fatalf("epoch %d: skipped %v version %d, want %v %d", tc.epoch, res.Skipped, res.Version, tc.wantSkipped, tc.wantVersion)
		}
	}
	if got := liveRows(t, mem); got != 50 {
		t.Fatalf("table holds %d rows, want 50 (5 epochs of 10)", got)
	}
	last, err := sink.LastCommittedEpoch(ctx)
	if err != nil || last != 7 {
		t.Fatalf("LastCommittedEpoch = %d, %v; want 7", last, err)
	}
	// A fresh sink (a restarted query) sees the same.
	reopened, err := Open(ctx, "", "query-1", nil, table.WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := reopened.LastCommittedEpoch(ctx); last != 7 {
		t.Fatalf("after restart LastCommittedEpoch = %d, want 7", last)
	}
	// commitInfo of an epoch commit is what Spark's sink writes.
	data, err := mem.Get(ctx, txlog.CommitKey(2), objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"operation":"STREAMING UPDATE"`, `"outputMode":"Append"`, `"queryId":"query-1"`, `"epochId":"1"`,
		`{"txn":{"appId":"query-1","version":1,"lastUpdated":`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("commit 2 lacks %s:\n%s", want, data)
		}
	}
}

func TestCompleteModeReplacesContents(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	sink, err := New(newTable(t, mem), "q", WithOutputMode(Complete))
	if err != nil {
		t.Fatal(err)
	}
	for e := int64(0); e < 3; e++ {
		if _, err := sink.WriteEpoch(ctx, e, epochRows(e, int(e)+5)); err != nil {
			t.Fatal(err)
		}
	}
	if got := liveRows(t, mem); got != 7 {
		t.Fatalf("table holds %d rows, want 7 (the last epoch)", got)
	}
}

// Two live runs of one query: the one that commits second is fenced with
// ErrConcurrentTransaction and the epoch lands once.
func TestSameQueryTwiceIsFenced(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	tbl := newTable(t, mem)
	slow := faultstore.New(mem)
	slowTbl, err := table.Open(ctx, "", table.WithStore(slow))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := New(tbl, "q")
	b, _ := New(slowTbl, "q")
	// b's commit PUT waits long enough for a to commit the same epoch first.
	slow.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: txlog.LogPrefix, Nth: 1, Kind: faultstore.Latency, Latency: 300 * time.Millisecond})
	var wg sync.WaitGroup
	var errB error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, errB = b.WriteEpoch(ctx, 0, epochRows(0, 10))
	}()
	time.Sleep(100 * time.Millisecond)
	if _, err := a.WriteEpoch(ctx, 0, epochRows(0, 10)); err != nil {
		t.Fatalf("a: %v", err)
	}
	wg.Wait()
	if !errors.Is(errB, txlog.ErrConcurrentTransaction) {
		t.Fatalf("b: %v, want ErrConcurrentTransaction", errB)
	}
	if got := liveRows(t, mem); got != 10 {
		t.Fatalf("table holds %d rows, want 10", got)
	}
}

// Different queries write one table concurrently; each keeps its own epochs.
func TestQueriesWriteConcurrently(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	tbl := newTable(t, mem)
	const queries, epochs = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, queries)
	for q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sink, _ := New(tbl, fmt.Sprintf("query-%d", q))
			for e := range int64(epochs) {
				if _, err := sink.WriteEpoch(ctx, e, epochRows(e, 3)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	snap, err := txlog.Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != queries*epochs {
		t.Fatalf("version %d, want %d", snap.Version(), queries*epochs)
	}
	for q := range queries {
		if v := snap.TxnVersion(fmt.Sprintf("query-%d", q)); v != epochs-1 {
			t.Errorf("query-%d txn version %d, want %d", q, v, epochs-1)
		}
	}
	if got := liveRows(t, mem); got != queries*epochs*3 {
		t.Fatalf("table holds %d rows, want %d", got, queries*epochs*3)
	}
}

func TestBadInput(t *testing.T) {
	mem := objectstore.NewMem("t")
	tbl := newTable(t, mem)
	if _, err := New(tbl, ""); err == nil {
		t.Error("empty queryId accepted")
	}
	if _, err := New(tbl, "q", WithOutputMode("Update")); err == nil {
		t.Error("unknown output mode accepted")
	}
	sink, _ := New(tbl, "q")
	if _, err := sink.WriteEpoch(context.Background(), -1, nil); !errors.Is(err, ErrInvalidEpoch) {
		t.Errorf("epoch -1: %v, want ErrInvalidEpoch", err)
	}
	// A row violating NOT NULL fails before anything reaches the log.
	if _, err := sink.WriteEpoch(context.Background(), 0, []value.Row{{nil, int64(0), "x"}}); err == nil {
		t.Error("NOT NULL violation accepted")
	}
	snap, err := txlog.Load(context.Background(), mem)
	if err != nil || snap.Version() != 0 {
		t.Fatalf("log moved: %v", err)
	}
}

// A Complete-mode epoch removes every live file with dataChange=true, which
// an append-only table forbids (spec "Append-only Tables"): the commit is
// refused below the sink, and the table keeps its rows.
// TestCompleteModeOnAppendOnlyWritesNothing: the refusal of a Complete
// epoch on an append-only table with live files comes before any data file
// is written (table.WithStreamingUpdate's precheck in WriteFiles), not
// only at the commit, so it leaves no orphan files behind.
func TestCompleteModeOnAppendOnlyWritesNothing(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	tbl, err := table.Create(ctx, "", eventSchema, table.WithStore(mem),
		table.WithProperties(map[string]string{"delta.appendOnly": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.AppendRows(ctx, epochRows(0, 5)); err != nil {
		t.Fatal(err)
	}
	countObjects := func() (data, logs int) {
		for info, err := range mem.List(ctx, "", "") {
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(info.Key, "_delta_log/") {
				logs++
			} else {
				data++
			}
		}
		return data, logs
	}
	data0, logs0 := countObjects()
	if data0 == 0 {
		t.Fatal("no data file after the append")
	}
	sink, err := New(tbl, "q", WithOutputMode(Complete))
	if err != nil {
		t.Fatal(err)
	}
	for epoch := int64(0); epoch < 2; epoch++ { // a retried epoch is refused the same way
		_, err := sink.WriteEpoch(ctx, epoch, epochRows(epoch, 3))
		if !errors.Is(err, table.ErrAppendOnly) {
			t.Fatalf("epoch %d: err = %v, want ErrAppendOnly", epoch, err)
		}
		if data, logs := countObjects(); data != data0 || logs != logs0 {
			t.Fatalf("epoch %d: %d data and %d log objects, want %d and %d: the refused epoch wrote files", epoch, data, logs, data0, logs0)
		}
	}
}

func TestCompleteModeRefusedOnAppendOnlyTable(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	tbl, err := table.Create(ctx, "", eventSchema, table.WithStore(mem),
		table.WithProperties(map[string]string{"delta.appendOnly": "true"}))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := New(tbl, "q", WithOutputMode(Complete))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.WriteEpoch(ctx, 0, epochRows(0, 5)); err != nil {
		t.Fatalf("epoch 0 (no live files to remove): %v", err)
	}
	_, err = sink.WriteEpoch(ctx, 1, epochRows(1, 3))
	if !errors.Is(err, table.ErrAppendOnly) || !errors.Is(err, txlog.ErrAppendOnly) {
		t.Fatalf("epoch 1 in Complete mode on an append-only table: err = %v, want ErrAppendOnly", err)
	}
	if got := liveRows(t, mem); got != 5 {
		t.Fatalf("table holds %d rows, want the 5 of epoch 0", got)
	}
	snap, err := txlog.Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != 1 {
		t.Fatalf("table at version %d, want 1 (epoch 1 not committed)", snap.Version())
	}
}
