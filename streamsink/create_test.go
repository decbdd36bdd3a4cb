package streamsink

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

func eventsOf(rows []value.Row) []event {
	out := make([]event, len(rows))
	for i, r := range rows {
		p := r[2].(string)
		out[i] = event{ID: r[0].(int64), Epoch: r[1].(int64), Payload: &p}
	}
	return out
}

// TestFirstEpochCreatesTable: a CreateOrOpen sink on an empty location
// writes nothing until its first epoch, whose commit is version 0 of the
// new table (protocol, metaData, txn, adds, commitInfo STREAMING UPDATE);
// a replay of that epoch is skipped, by the sink and by a sink of a
// restarted run; the next epoch is version 1.
func TestFirstEpochCreatesTable(t *testing.T) {
	ctx := context.Background()
	clock := time.UnixMilli(1_700_000_000_000)
	rows := epochRows(0, 7)
	tests := []struct {
		name  string
		parts []string
		write func(s *Sink, epoch int64, rows []value.Row) (*Result, error)
		// extra are the txns besides the query's that version 0 holds.
		extra map[string]int64
	}{
		{name: "rows", write: func(s *Sink, e int64, rows []value.Row) (*Result, error) { return s.WriteEpoch(ctx, e, rows) }},
		{name: "rows, partitioned", parts: []string{"epoch"},
			write: func(s *Sink, e int64, rows []value.Row) (*Result, error) { return s.WriteEpoch(ctx, e, rows) }},
		{name: "rows with extra txns", extra: map[string]int64{"q/kafka/t/0": 17},
			write: func(s *Sink, e int64, rows []value.Row) (*Result, error) {
				return s.WriteEpochWith(ctx, e, rows, txlog.Txn{AppID: "q/kafka/t/0", Version: 17})
			}},
		{name: "structs", write: func(s *Sink, e int64, rows []value.Row) (*Result, error) {
			return WriteEpochOf(ctx, s, e, eventsOf(rows))
		}},
		{name: "arrow", write: func(s *Sink, e int64, rows []value.Row) (*Result, error) {
			r := arrowEpoch(t, eventSchema, rows, 3)
			defer r.Release()
			return s.WriteEpochArrow(ctx, e, r)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem(t.Name())
			topts := []table.Option{table.WithStore(mem), table.WithPartitionColumns(tc.parts...)}
			sink, err := CreateOrOpen(ctx, "", "q", eventSchema, []Option{WithClock(func() time.Time { return clock })}, topts...)
			if err != nil {
				t.Fatal(err)
			}
			if last, err := sink.LastCommittedEpoch(ctx); err != nil || last != -1 || sink.Table() != nil {
				t.Fatalf("before the first epoch: last %d, %v, table %v; want -1, no table", last, err, sink.Table())
			}
			if _, err := table.Open(ctx, "", table.WithStore(mem)); !errors.Is(err, table.ErrTableNotFound) || len(storeDataKeys(t, mem)) != 0 {
				t.Fatalf("CreateOrOpen wrote a table (%v) or files %v", err, storeDataKeys(t, mem))
			}

			res, err := tc.write(sink, 0, rows)
			if err != nil {
				t.Fatal(err)
			}
			if res.Skipped || !res.Created || res.Version != 0 || res.Rows != 7 || res.Files < 1 || res.Attempts != 1 {
				t.Fatalf("epoch 0: %+v; want created at version 0, 7 rows", res)
			}
			actions, err := txlog.ReadCommit(ctx, mem, 0)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			txns := map[string]int64{}
			var adds int
			var ci *txlog.CommitInfo
			for _, a := range actions {
				switch {
				case a.Protocol != nil:
					kinds = append(kinds, "protocol")
				case a.Metadata != nil:
					kinds = append(kinds, "metaData")
					if got := strings.Join(a.Metadata.PartitionColumns, ","); got != strings.Join(tc.parts, ",") {
						t.Errorf("partition columns %q, want %q", got, strings.Join(tc.parts, ","))
					}
				case a.Txn != nil:
					txns[a.Txn.AppID] = a.Txn.Version
					if a.Txn.LastUpdated == nil || *a.Txn.LastUpdated != clock.UnixMilli() {
						t.Errorf("txn %s lastUpdated %v, want %d", a.Txn.AppID, a.Txn.LastUpdated, clock.UnixMilli())
					}
				case a.Add != nil:
					adds++
				case a.CommitInfo != nil:
					ci = a.CommitInfo
				}
			}
			if strings.Join(kinds, ",") != "protocol,metaData" || adds != res.Files {
				t.Errorf("version 0 holds %v and %d adds; want protocol, metaData and %d adds", kinds, adds, res.Files)
			}
			want := map[string]int64{"q": 0}
			for k, v := range tc.extra {
				want[k] = v
			}
			if len(txns) != len(want) {
				t.Errorf("txns %v, want %v", txns, want)
			}
			for k, v := range want {
				if got, ok := txns[k]; !ok || got != v {
					t.Errorf("txn %s = %d (present %v), want %d", k, got, ok, v)
				}
			}
			if ci == nil {
				t.Fatal("version 0 has no commitInfo")
			}
			p := ci.OperationParameters
			if ci.Operation != Operation || p["queryId"] != "q" || p["epochId"] != "0" || p["outputMode"] != "Append" ||
				ci.OperationMetrics["numOutputRows"] != "7" {
				t.Errorf("commitInfo %s %v %v; want STREAMING UPDATE, queryId q, epochId 0, outputMode Append, 7 rows", ci.Operation, p, ci.OperationMetrics)
			}

			// The replay is skipped, by this sink and by a restarted run's.
			if res, err := tc.write(sink, 0, rows); err != nil || !res.Skipped || res.Version != 0 {
				t.Fatalf("replay: %+v, %v; want skipped at version 0", res, err)
			}
			again, err := CreateOrOpen(ctx, "", "q", eventSchema, nil, topts...)
			if err != nil {
				t.Fatal(err)
			}
			if last, err := again.LastCommittedEpoch(ctx); err != nil || last != 0 {
				t.Fatalf("restarted run: last epoch %d, %v; want 0", last, err)
			}
			if res, err := tc.write(again, 0, rows); err != nil || !res.Skipped {
				t.Fatalf("restarted run's replay: %+v, %v; want skipped", res, err)
			}
			if res, err := tc.write(again, 1, epochRows(1, 3)); err != nil || res.Created || res.Version != 1 {
				t.Fatalf("epoch 1: %+v, %v; want version 1", res, err)
			}
			if n := liveRows(t, mem); n != 10 {
				t.Errorf("table holds %d rows, want 10", n)
			}
		})
	}
}

// TestFirstEpochCreateRace: when another writer creates the table between
// the sink's look and its first commit, the epoch is appended to that table
// if its files fit (version 1, txn recorded), refused with ErrTableExists
// and ErrSchemaMismatch if not (nothing committed), and fenced when the
// winner is a run of the same query that committed the epoch.
func TestFirstEpochCreateRace(t *testing.T) {
	ctx := context.Background()
	other := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.String), true))
	tests := []struct {
		name string
		// winner creates the table after the sink's CreateOrOpen.
		winner      func(t *testing.T, store objectstore.Store)
		wantVersion int64
		wantErr     []error
	}{
		{name: "winner fits", wantVersion: 1, winner: func(t *testing.T, store objectstore.Store) { newTable(t, store) }},
		{name: "winner of another schema", wantErr: []error{table.ErrTableExists, table.ErrSchemaMismatch},
			winner: func(t *testing.T, store objectstore.Store) {
				if _, err := table.Create(ctx, "", other, table.WithStore(store)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "winner committed the epoch", wantErr: []error{table.ErrConcurrentTransaction},
			winner: func(t *testing.T, store objectstore.Store) {
				s, err := CreateOrOpen(ctx, "", "q", eventSchema, nil, table.WithStore(store))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.WriteEpoch(ctx, 0, epochRows(0, 2)); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem(t.Name())
			// The winner's table lands just before the sink's version 0.
			hooked := &hookStore{Store: mem, before: func(key string) {
				if key == version0 {
					tc.winner(t, mem)
				}
			}}
			sink, err := CreateOrOpen(ctx, "", "q", eventSchema, nil, table.WithStore(hooked))
			if err != nil {
				t.Fatal(err)
			}
			res, err := sink.WriteEpoch(ctx, 0, epochRows(0, 5))
			if tc.wantErr != nil {
				for _, w := range tc.wantErr {
					if !errors.Is(err, w) {
						t.Errorf("error %v, want %v", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Created || res.Version != tc.wantVersion || commitTxns(t, mem, tc.wantVersion)["q"].Version != 0 {
				t.Fatalf("result %+v; want appended at version %d with txn q 0", res, tc.wantVersion)
			}
		})
	}
}

const version0 = "_delta_log/00000000000000000000.json"

// hookStore calls before, once, with the key of the first PutIfAbsent it
// passes on.
type hookStore struct {
	objectstore.Store
	before func(key string)
	done   bool
}

func (h *hookStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if !h.done {
		h.done = true
		h.before(key)
	}
	return h.Store.PutIfAbsent(ctx, key, data)
}

// TestLostCreateNamesVersion: a create lost to another writer is
// ErrTableExists naming the version that writer committed.
func TestLostCreateNamesVersion(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem(t.Name())
	hooked := &hookStore{Store: mem, before: func(string) { newTable(t, mem) }}
	_, err := table.Create(ctx, "", eventSchema, table.WithStore(hooked))
	if !errors.Is(err, table.ErrTableExists) || !strings.Contains(err.Error(), "another writer committed version 0 first") {
		t.Fatalf("error %v, want ErrTableExists naming version 0", err)
	}
}
