package table_test

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

type wfoRow struct {
	ID   int64   `delta:"id"`
	Zone string  `delta:"zone"`
	Note *string `delta:"note"`
}

// dataKeys lists the store's keys outside the log.
func dataKeys(t *testing.T, store objectstore.Store) []string {
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

// TestWriteFilesOf writes typed rows through a draft on an unpartitioned
// table (the columnar path) and a partitioned one (the row path): the rows
// scan back as written, each once, with the stats Append[T] writes for the
// same rows; a field without a column and a Go type its column cannot hold
// are refused with nothing written.
func TestWriteFilesOf(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("zone", schema.Primitive(schema.String), true),
		schema.NewField("note", schema.Primitive(schema.String), true),
	)
	n := "late"
	rows := []wfoRow{{ID: 3, Zone: "b", Note: &n}, {ID: 1, Zone: "a"}, {ID: 2, Zone: "b"}}
	want := []value.Row{{int64(1), "a", nil}, {int64(2), "b", nil}, {int64(3), "b", "late"}}
	for _, tc := range []struct {
		name string
		opts []table.Option
	}{{"unpartitioned", nil}, {"partitioned", []table.Option{table.WithPartitionColumns("zone")}}} {
		t.Run(tc.name, func(t *testing.T) {
			store := objectstore.NewMem("t")
			tbl, err := table.Create(ctx, "", sch, append(tc.opts, table.WithStore(store))...)
			if err != nil {
				t.Fatal(err)
			}
			d, err := tbl.DraftAppend(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			adds, err := table.WriteFilesOf(ctx, d, rows)
			if err != nil {
				t.Fatal(err)
			}
			ntbl, _, err := d.CommitOn(ctx, tbl, adds)
			if err != nil {
				t.Fatal(err)
			}
			var got []value.Row
			for r, err := range ntbl.Scan(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r)
			}
			sortRows(got)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("scan %v, want %v", got, want)
			}
			// The stats of Append[T] of the same rows.
			other, err := table.Create(ctx, "", sch, append(tc.opts, table.WithStore(objectstore.NewMem("u")))...)
			if err != nil {
				t.Fatal(err)
			}
			if other, err = table.Append(ctx, other, rows); err != nil {
				t.Fatal(err)
			}
			ref, err := other.Files(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ref) != len(adds) {
				t.Fatalf("%d files, Append[T] wrote %d", len(adds), len(ref))
			}
			stats := func(as []*table.Add) map[string]string {
				m := map[string]string{}
				for _, a := range as {
					m[a.PartitionValues["zone"]] = a.Stats
				}
				return m
			}
			if g, w := stats(adds), stats(ref); !reflect.DeepEqual(g, w) {
				t.Fatalf("stats %v, Append[T] wrote %v", g, w)
			}
		})
	}

	type extra struct {
		ID    int64  `delta:"id"`
		Other string `delta:"other"`
	}
	type wrongType struct {
		ID string `delta:"id"`
	}
	store := objectstore.NewMem("t")
	tbl, err := table.Create(ctx, "", sch, table.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	d, err := tbl.DraftAppend(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.WriteFilesOf(ctx, d, []extra{{ID: 1, Other: "x"}}); !errors.Is(err, table.ErrSchemaMismatch) || !strings.Contains(err.Error(), "other") {
		t.Fatalf("field without a column: %v, want ErrSchemaMismatch naming other", err)
	}
	if _, err := table.WriteFilesOf(ctx, d, []wrongType{{ID: "x"}}); !errors.Is(err, table.ErrSchemaMismatch) || !strings.Contains(err.Error(), "id") {
		t.Fatalf("string for a long column: %v, want ErrSchemaMismatch naming id", err)
	}
	if keys := dataKeys(t, store); len(keys) != 0 {
		t.Fatalf("refused writes left files %v", keys)
	}
}

func sortRows(rows []value.Row) {
	slices.SortFunc(rows, func(a, b value.Row) int { return cmp.Compare(a[0].(int64), b[0].(int64)) })
}

// TestWithUploadGate: files are stored only after the gate returns nil;
// a gate's error fails the write with nothing stored.
func TestWithUploadGate(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), false))
	store := objectstore.NewMem("t")
	tbl, err := table.Create(ctx, "", sch, table.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	rows := []value.Row{{int64(1)}, {int64(2)}}
	refused := errors.New("not now")
	var calls int
	gate := func(context.Context) error {
		calls++
		if keys := dataKeys(t, store); len(keys) != 0 {
			t.Errorf("files %v stored before the gate returned", keys)
		}
		return refused
	}
	if _, err := tbl.WriteFiles(ctx, rows, table.WithUploadGate(gate)); !errors.Is(err, refused) {
		t.Fatalf("refused gate: %v, want its error", err)
	}
	if keys := dataKeys(t, store); len(keys) != 0 || calls != 1 {
		t.Fatalf("refused gate (%d calls) left files %v", calls, keys)
	}
	adds, err := tbl.WriteFiles(ctx, rows, table.WithUploadGate(func(context.Context) error { return nil }))
	if err != nil || len(adds) != 1 {
		t.Fatalf("open gate: %d files, %v", len(adds), err)
	}
	if keys := dataKeys(t, store); len(keys) != 1 {
		t.Fatalf("open gate stored %v, want 1 file", keys)
	}
}
