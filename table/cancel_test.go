package table

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

type cancelRow struct {
	ID   int64   `delta:"id"`
	Name string  `delta:"name"`
	V    float64 `delta:"v"`
	P    string  `delta:"p"`
}

// TestAppendCancelIsPrompt cancels large appends mid-write: each returns
// within 100 ms of the cancel with an error matching context.Canceled that
// names the operation and the table, commits nothing and leaves no data
// file behind.
func TestAppendCancelIsPrompt(t *testing.T) {
	if testing.Short() {
		t.Skip("writes large batches")
	}
	const n = 1_500_000
	typed := make([]cancelRow, n)
	rows := make([]value.Row, n)
	backing := make([]any, 4*n)
	for i := range n {
		typed[i] = cancelRow{ID: int64(i), Name: "name-" + string(rune('a'+i%26)), V: float64(i) / 3, P: string(rune('a' + i%4))}
		r := backing[4*i : 4*i+4 : 4*i+4]
		r[0], r[1], r[2], r[3] = typed[i].ID, typed[i].Name, typed[i].V, typed[i].P
		rows[i] = r
	}
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("name", prim(schema.String), true),
		field("v", prim(schema.Double), true), field("p", prim(schema.String), true))
	for _, tc := range []struct {
		name  string
		parts []string
		write func(ctx context.Context, tbl *Table) (*Table, error)
	}{
		{"AppendRows", nil, func(ctx context.Context, tbl *Table) (*Table, error) { return tbl.AppendRows(ctx, rows) }},
		{"AppendRows partitioned", []string{"p"}, func(ctx context.Context, tbl *Table) (*Table, error) { return tbl.AppendRows(ctx, rows) }},
		{"AppendRows with row schema", nil, func(ctx context.Context, tbl *Table) (*Table, error) {
			return tbl.AppendRows(ctx, rows, WithRowSchema(sch))
		}},
		{"Append columnar", nil, func(ctx context.Context, tbl *Table) (*Table, error) { return Append(ctx, tbl, typed) }},
		{"Append partitioned", []string{"p"}, func(ctx context.Context, tbl *Table) (*Table, error) { return Append(ctx, tbl, typed) }},
	} {
		// The whole write, uncancelled, on this machine now: a cancelled
		// write must return long before it would have finished (no CI
		// assertion on absolute times; the <= 100 ms goal of an idle
		// machine is in the log).
		var full time.Duration
		t.Run(tc.name+"/uncancelled", func(t *testing.T) {
			store, err := objectstore.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := Create(context.Background(), "", sch, WithStore(store), WithPartitionColumns(tc.parts...))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if _, err := tc.write(context.Background(), tbl); err != nil {
				t.Fatal(err)
			}
			full = time.Since(start)
			t.Logf("the whole write takes %s", full)
		})
		for _, after := range []time.Duration{0, 30 * time.Millisecond, 300 * time.Millisecond} {
			t.Run(tc.name+"/"+after.String(), func(t *testing.T) {
				store, err := objectstore.NewLocal(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				tbl, err := Create(context.Background(), "", sch, WithStore(store), WithPartitionColumns(tc.parts...))
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					_, err := tc.write(ctx, tbl)
					done <- err
				}()
				time.Sleep(after)
				cancel()
				cancelled := time.Now()
				err = <-done
				latency := time.Since(cancelled)
				if err == nil {
					t.Skipf("the write finished before the cancel (%s)", after)
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("error %v does not match context.Canceled", err)
				}
				if !strings.Contains(err.Error(), store.URI()) || !strings.Contains(err.Error(), "append") {
					t.Errorf("error %q names neither the operation nor the table", err)
				}
				t.Logf("returned %s after the cancel", latency)
				if bound := max(full/2, 100*time.Millisecond); latency > bound {
					t.Errorf("returned %s after the cancel, want <= %s (half the whole write, %s)", latency, bound, full)
				}
				if v, _ := tbl.Refresh(context.Background()); v.Version() != 0 {
					t.Errorf("cancelled append committed version %d", v.Version())
				}
				if keys := dataKeys(t, store); len(keys) != 0 {
					t.Errorf("%d data files left behind: %v", len(keys), keys[:min(3, len(keys))])
				}
			})
		}
	}
}
