package streamsink

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// upsertRef is the reference of an upsert stream: the latest row per key
// (id) over the epochs applied in order, computed from the inputs alone.
func upsertRef(epochs ...[]value.Row) map[int64]string {
	out := map[int64]string{}
	for _, rows := range epochs {
		for _, r := range rows {
			out[r[0].(int64)] = fmt.Sprintf("%d/%v", r[1], r[2])
		}
	}
	return out
}

// tableByID scans tbl (eventSchema) into id -> "epoch/payload", failing on
// a repeated id.
func tableByID(t *testing.T, tbl *table.Table) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	for row, err := range tbl.Scan(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		id := row[0].(int64)
		if prev, ok := out[id]; ok {
			t.Fatalf("id %d twice in the table: %s and %d/%v", id, prev, row[1], row[2])
		}
		out[id] = fmt.Sprintf("%d/%v", row[1], row[2])
	}
	return out
}

func ev(id, epoch int64, payload string) value.Row { return value.Row{id, epoch, payload} }

func TestUpsertEpochs(t *testing.T) {
	ctx := context.Background()
	epochs := [][]value.Row{
		{ev(1, 0, "a"), ev(2, 0, "b"), ev(1, 0, "a2"), ev(3, 0, "c")}, // 1 twice: a2 wins
		{ev(2, 1, "b1"), ev(4, 1, "d")},
		{}, // an empty epoch still commits
		{ev(3, 3, "c3"), ev(3, 3, "c3b"), ev(3, 3, "c3c"), ev(5, 3, "e"), ev(1, 3, "a3")},
	}
	for _, props := range []map[string]string{nil, {txlog.PropEnableDeletionVectors: "true"}} {
		t.Run(fmt.Sprintf("props=%v", props), func(t *testing.T) {
			mem := objectstore.NewMem("t")
			tbl, err := table.Create(ctx, "", eventSchema, table.WithStore(mem), table.WithProperties(props))
			if err != nil {
				t.Fatal(err)
			}
			sink, err := New(tbl, "up", WithMergeKeys("id"), WithOperationParameters(map[string]string{"source": "test"}))
			if err != nil {
				t.Fatal(err)
			}
			steps := []struct {
				epoch                     int64
				wantSkipped               bool
				wantVersion               int64
				wantInserted, wantUpdated int64
				wantSourceRows            int64
				wantTable                 map[int64]string
			}{
				{0, false, 1, 3, 0, 3, upsertRef(epochs[0])},
				{1, false, 2, 1, 1, 2, upsertRef(epochs[:2]...)},
				{1, true, 2, 0, 0, 0, upsertRef(epochs[:2]...)}, // replay
				{0, true, 2, 0, 0, 0, upsertRef(epochs[:2]...)}, // older replay: would revert 2 to b
				{2, false, 3, 0, 0, 0, upsertRef(epochs[:3]...)},
				{3, false, 4, 1, 2, 3, upsertRef(epochs...)},
			}
			for _, st := range steps {
				res, err := sink.WriteEpoch(ctx, st.epoch, epochs[st.epoch])
				if err != nil {
					t.Fatalf("epoch %d: %v", st.epoch, err)
				}
				if res.Skipped != st.wantSkipped || res.Version != st.wantVersion {
					t.Fatalf("epoch %d: skipped %v version %d, want %v %d", st.epoch, res.Skipped, res.Version, st.wantSkipped, st.wantVersion)
				}
				if !st.wantSkipped {
					m := res.Merge
					if m == nil || m.InsertedRows != st.wantInserted || m.UpdatedRows != st.wantUpdated || m.SourceRows != st.wantSourceRows || res.Rows != int64(len(epochs[st.epoch])) {
						t.Fatalf("epoch %d: result %+v merge %+v, want inserted %d updated %d source rows %d", st.epoch, res, m, st.wantInserted, st.wantUpdated, st.wantSourceRows)
					}
				}
				if got := tableByID(t, sink.Table()); !maps.Equal(got, st.wantTable) {
					t.Fatalf("after epoch %d: table %v, want %v", st.epoch, got, st.wantTable)
				}
			}
			// The commit of epoch 3: MERGE with the txn, queryId/epochId, and
			// the sink's parameters.
			data, err := mem.Get(ctx, txlog.CommitKey(4), objectstore.FullObject)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"operation":"MERGE"`, `"queryId":"up"`, `"epochId":"3"`, `"source":"test"`,
				`"numSourceRows":"3"`, `"numTargetRowsInserted":"1"`, `"numTargetRowsUpdated":"2"`,
				`{"txn":{"appId":"up","version":3,"lastUpdated":`} {
				if !strings.Contains(string(data), want) {
					t.Errorf("commit 4 lacks %s:\n%s", want, data)
				}
			}
			eo, err := table.VerifyExactlyOnce(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			if len(eo.Queries) != 1 || !eo.Queries[0].OK() || eo.Queries[0].First != 0 || eo.Queries[0].Last != 3 {
				t.Fatalf("verify exactly once: %+v", eo.Queries)
			}
		})
	}
}

// Every epoch write path of the sink upserts in upsert mode: typed rows,
// Arrow, rows of another schema, extra txns.
func TestUpsertPaths(t *testing.T) {
	ctx := context.Background()
	type event struct {
		ID      int64  `delta:"id"`
		Epoch   int64  `delta:"epoch"`
		Payload string `delta:"payload"`
	}
	first := []value.Row{ev(1, 0, "a"), ev(2, 0, "b")}
	second := []value.Row{ev(2, 1, "b1"), ev(3, 1, "c"), ev(2, 1, "b2")}
	tests := []struct {
		name  string
		opts  []Option
		write func(t *testing.T, s *Sink, e int64, rows []value.Row) (*Result, error)
	}{
		{name: "WriteEpoch", write: func(_ *testing.T, s *Sink, e int64, rows []value.Row) (*Result, error) {
			return s.WriteEpoch(ctx, e, rows)
		}},
		{name: "WriteEpochOf", write: func(_ *testing.T, s *Sink, e int64, rows []value.Row) (*Result, error) {
			var typed []event
			for _, r := range rows {
				typed = append(typed, event{r[0].(int64), r[1].(int64), r[2].(string)})
			}
			return WriteEpochOf(ctx, s, e, typed)
		}},
		{name: "WriteEpochArrow", write: func(t *testing.T, s *Sink, e int64, rows []value.Row) (*Result, error) {
			return s.WriteEpochArrow(ctx, e, arrowEpoch(t, reorderedSchema, reorder(rows), 2))
		}},
		{name: "WithRowSchema", opts: []Option{WithRowSchema(reorderedSchema)}, write: func(_ *testing.T, s *Sink, e int64, rows []value.Row) (*Result, error) {
			return s.WriteEpoch(ctx, e, reorder(rows))
		}},
		{name: "WriteEpochWith", write: func(_ *testing.T, s *Sink, e int64, rows []value.Row) (*Result, error) {
			return s.WriteEpochWith(ctx, e, rows, table.Txn{AppID: "up-offsets", Version: 100 + e})
		}},
		{name: "WriteEpochChecked", write: func(_ *testing.T, s *Sink, e int64, rows []value.Row) (*Result, error) {
			return s.WriteEpochChecked(ctx, e, rows, func(*table.Table) error { return nil })
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			sink, err := New(newTable(t, mem), "up", append(tc.opts, WithMergeKeys("id"))...)
			if err != nil {
				t.Fatal(err)
			}
			for e, rows := range [][]value.Row{first, second} {
				res, err := tc.write(t, sink, int64(e), rows)
				if err != nil || res.Skipped {
					t.Fatalf("epoch %d: %+v, %v", e, res, err)
				}
			}
			if res, err := tc.write(t, sink, 0, first); err != nil || !res.Skipped {
				t.Fatalf("replay of epoch 0: %+v, %v; want skipped", res, err)
			}
			if got, want := tableByID(t, sink.Table()), upsertRef(first, second); !maps.Equal(got, want) {
				t.Fatalf("table %v, want %v", got, want)
			}
			if tc.name == "WriteEpochWith" {
				if v := sink.Table().Snapshot().TxnVersion("up-offsets"); v != 101 {
					t.Errorf("extra txn version %d, want 101", v)
				}
			}
		})
	}
}

func TestUpsertRefusals(t *testing.T) {
	ctx := context.Background()
	other := schema.NewStruct(schema.NewField("key", schema.Primitive(schema.Long), true))
	tests := []struct {
		name string
		opts []Option
		want error
	}{
		{"unknown key", []Option{WithMergeKeys("nope")}, table.ErrInvalidArgument},
		{"one unknown key of two", []Option{WithMergeKeys("id", "nope")}, table.ErrInvalidArgument},
		{"empty key list", []Option{WithMergeKeys()}, table.ErrInvalidArgument},
		{"complete mode", []Option{WithMergeKeys("id"), WithOutputMode(Complete)}, table.ErrInvalidArgument},
		{"key missing from the row schema", []Option{WithMergeKeys("id"), WithRowSchema(other)}, table.ErrInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			if _, err := New(newTable(t, mem), "up", tc.opts...); !errors.Is(err, tc.want) {
				t.Fatalf("New: %v, want %v", err, tc.want)
			}
		})
	}
	// Two-phase epochs are refused, and nothing is written.
	mem := objectstore.NewMem("t")
	sink, err := New(newTable(t, mem), "up", WithMergeKeys("id"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Prepare(ctx, 0, epochRows(0, 3)); !errors.Is(err, ErrUpsertMode) {
		t.Fatalf("Prepare: %v, want ErrUpsertMode", err)
	}
	plain, err := New(sink.Table(), "up")
	if err != nil {
		t.Fatal(err)
	}
	c, err := plain.Prepare(ctx, 0, epochRows(0, 3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Commit(ctx, c); !errors.Is(err, ErrUpsertMode) {
		t.Fatalf("Commit: %v, want ErrUpsertMode", err)
	}
	if v := sink.Table().Version(); v != 0 {
		t.Fatalf("table at version %d after refusals, want 0", v)
	}
	// A row of the wrong type fails the epoch with nothing committed.
	if _, err := sink.WriteEpoch(ctx, 0, []value.Row{{"x", int64(0), "p"}}); err == nil {
		t.Fatal("a string id upserted")
	}
	if last, _ := sink.LastCommittedEpoch(ctx); last != -1 {
		t.Fatalf("last committed epoch %d after a failed epoch, want -1", last)
	}
}
