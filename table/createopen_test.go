package table

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// raceStores returns a fresh mem store and a fresh local store.
func raceStores(t *testing.T) map[string]func() objectstore.Store {
	return map[string]func() objectstore.Store{
		"mem": func() objectstore.Store { return objectstore.NewMem(t.Name()) },
		"local": func() objectstore.Store {
			s, err := objectstore.NewLocal(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// TestCreateRaceFallsThroughToAppend races N first writers into a location
// with no table: one creates it, the others append to it, no row is lost.
func TestCreateRaceFallsThroughToAppend(t *testing.T) {
	const n = 8
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("p", prim(schema.String), true))
	for name, newStore := range raceStores(t) {
		for _, mode := range []string{"CreateOrOpen", "Draft"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				ctx := context.Background()
				store := newStore()
				var wg sync.WaitGroup
				errs := make([]error, n)
				created := make([]bool, n)
				start := make(chan struct{})
				for w := range n {
					wg.Go(func() {
						<-start
						rows := []value.Row{{int64(w), "a"}, {int64(100 + w), "b"}}
						opts := []Option{WithStore(store), WithPartitionColumns("p")}
						if mode == "Draft" {
							d, err := NewDraft(ctx, "", sch, opts...)
							if err != nil {
								errs[w] = err
								return
							}
							adds, err := d.WriteFiles(ctx, rows)
							if err != nil {
								errs[w] = err
								return
							}
							_, created[w], errs[w] = d.Commit(ctx, adds)
							return
						}
						tbl, c, err := CreateOrOpen(ctx, "", sch, opts...)
						if err != nil {
							errs[w] = err
							return
						}
						created[w] = c
						_, errs[w] = tbl.AppendRows(ctx, rows, WithRowSchema(sch))
					})
				}
				close(start)
				wg.Wait()
				for w, err := range errs {
					if err != nil {
						t.Fatalf("writer %d: %v", w, err)
					}
				}
				if c := countTrue(created); c != 1 {
					t.Fatalf("%d writers report having created the table, want 1", c)
				}
				tbl, err := Open(ctx, "", WithStore(store))
				if err != nil {
					t.Fatal(err)
				}
				// CreateOrOpen: CREATE TABLE, then one append per writer; a
				// draft: the winner's version 0 holds its rows (CREATE TABLE
				// AS SELECT), each loser appends one version.
				want := int64(n)
				if mode == "Draft" {
					want = n - 1
				}
				if tbl.Version() != want {
					t.Fatalf("version %d, want %d", tbl.Version(), want)
				}
				var ids []int64
				for _, r := range readAllRows(t, tbl) {
					ids = append(ids, r[0].(int64))
				}
				slices.Sort(ids)
				var wantIDs []int64
				for w := range n {
					wantIDs = append(wantIDs, int64(w))
				}
				for w := range n {
					wantIDs = append(wantIDs, int64(100+w))
				}
				if !slices.Equal(ids, wantIDs) {
					t.Fatalf("ids %v, want %v", ids, wantIDs)
				}
			})
		}
	}
}

func countTrue(b []bool) int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

// TestCreateOrOpenIncompatible: a table already there with another schema
// or other partition columns is a clear error, and a draft's files are
// deleted.
func TestCreateOrOpenIncompatible(t *testing.T) {
	ctx := context.Background()
	have := schema.NewStruct(field("id", prim(schema.Long), true), field("s", prim(schema.String), true), field("p", prim(schema.String), true))
	tests := []struct {
		name  string
		sch   *schema.StructType
		parts []string
		draft bool // also refused for a draft, which cannot convert written files
		ok    bool
	}{
		{"identical", have, []string{"p"}, true, true},
		{"subset", schema.NewStruct(field("id", prim(schema.Long), true), field("p", prim(schema.String), true)), []string{"p"}, true, true},
		{"other partitioning", have, nil, true, false},
		{"new column", schema.NewStruct(field("id", prim(schema.Long), true), field("p", prim(schema.String), true), field("x", prim(schema.Long), true)), []string{"p"}, true, false},
		{"string for long", schema.NewStruct(field("id", prim(schema.String), true), field("p", prim(schema.String), true)), []string{"p"}, true, false},
		{"int converts to long, but not as files", schema.NewStruct(field("id", prim(schema.Integer), true), field("p", prim(schema.String), true)), []string{"p"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := objectstore.NewMem(t.Name())
			if _, err := Create(ctx, "", have, WithStore(store), WithPartitionColumns("p")); err != nil {
				t.Fatal(err)
			}
			opts := []Option{WithStore(store), WithPartitionColumns(tc.parts...)}
			tbl, created, err := CreateOrOpen(ctx, "", tc.sch, opts...)
			if tc.ok {
				if err != nil || created || tbl.Version() != 0 {
					t.Fatalf("CreateOrOpen: created %v, %v", created, err)
				}
			} else if !errors.Is(err, ErrSchemaMismatch) || !errors.Is(err, ErrTableExists) {
				t.Fatalf("CreateOrOpen: %v, want ErrSchemaMismatch and ErrTableExists", err)
			}
			d, err := NewDraft(ctx, "", tc.sch, opts...)
			if err != nil {
				t.Fatal(err)
			}
			row := make(value.Row, len(tc.sch.Fields))
			for i, f := range tc.sch.Fields {
				switch f.Type.(*schema.PrimitiveType).Name {
				case schema.Long:
					row[i] = int64(1)
				case schema.Integer:
					row[i] = int32(1)
				default:
					row[i] = "1"
				}
			}
			adds, err := d.WriteFiles(ctx, []value.Row{row})
			if err != nil {
				t.Fatal(err)
			}
			nt, _, err := d.Commit(ctx, adds)
			if tc.draft && tc.ok {
				if err != nil || nt.Version() != 1 {
					t.Fatalf("draft commit: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrSchemaMismatch) {
				t.Fatalf("draft commit: %v, want ErrSchemaMismatch", err)
			}
			if keys := dataKeys(t, store); len(keys) != 0 {
				t.Fatalf("data files left behind: %v", keys)
			}
			if v, _ := Open(ctx, "", WithStore(store)); v.Version() != 0 {
				t.Fatalf("refused draft committed version %d", v.Version())
			}
		})
	}
}

// TestDraftFailedWriteCreatesNothing: a draft whose rows are refused
// leaves no table.
func TestDraftFailedWriteCreatesNothing(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem(t.Name())
	sch := schema.NewStruct(field("id", prim(schema.Long), false))
	d, err := NewDraft(ctx, "", sch, WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteFiles(ctx, []value.Row{{nil}}); err == nil {
		t.Fatal("null in a NOT NULL column accepted")
	}
	if _, err := Open(ctx, "", WithStore(store)); !errors.Is(err, txlog.ErrTableNotFound) {
		t.Fatalf("open after a failed draft write: %v, want ErrTableNotFound", err)
	}
	if keys := listKeys(t, store, ""); len(keys) != 0 {
		t.Fatalf("keys left behind: %v", keys)
	}
}

// TestDraftAppendEvolves: the schema change of a draft append lands with
// its files in one commit, and not at all when the draft is discarded.
func TestDraftAppendEvolves(t *testing.T) {
	ctx := context.Background()
	tbl := newMemTable(t, schema.NewStruct(field("id", prim(schema.Long), true)))
	in := schema.NewStruct(field("id", prim(schema.Long), true), field("name", prim(schema.String), true))
	if _, err := tbl.DraftAppend(ctx, in); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("draft append of a new column without evolution: %v, want ErrSchemaMismatch", err)
	}
	d, err := tbl.DraftAppend(ctx, in, WithSchemaEvolution())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteFiles(ctx, []value.Row{{int64(1), "a"}}); err != nil {
		t.Fatal(err)
	}
	d.Discard()
	if keys := dataKeys(t, tbl.Store()); len(keys) != 0 {
		t.Fatalf("discarded files left: %v", keys)
	}
	if again, _ := tbl.Refresh(ctx); again.Version() != 0 || len(again.Schema().Fields) != 1 {
		t.Fatalf("discarded draft changed the table: version %d schema %s", again.Version(), again.Schema())
	}
	d, err = tbl.DraftAppend(ctx, in, WithSchemaEvolution())
	if err != nil {
		t.Fatal(err)
	}
	adds, err := d.WriteFiles(ctx, []value.Row{{int64(2), "b"}})
	if err != nil {
		t.Fatal(err)
	}
	nt, _, err := d.Commit(ctx, adds)
	if err != nil {
		t.Fatal(err)
	}
	if nt.Version() != 1 || nt.Schema().Field("name") == nil {
		t.Fatalf("version %d schema %s, want 1 with column name", nt.Version(), nt.Schema())
	}
	assertRows(t, readAllRows(t, nt), []value.Row{{int64(2), "b"}})
}

// TestDraftCommitOnRebase: the draft's files were written for version 0;
// another writer changes the schema (version 1) before CommitOn.
func TestDraftCommitOnRebase(t *testing.T) {
	ctx := context.Background()
	base := schema.NewStruct(field("id", prim(schema.Long), true))
	in := schema.NewStruct(field("id", prim(schema.Long), true), field("name", prim(schema.String), true))
	cases := []struct {
		name    string
		mapping string              // delta.columnMapping.mode, "" none
		other   *schema.StructField // the concurrent writer's new column
		want    []string            // the columns after the commit; nil: a conflict
	}{
		{"no mapping, other column", "", field("x", prim(schema.Integer), true), []string{"id", "x", "name"}},
		{"no mapping, same column and type", "", field("name", prim(schema.String), true), []string{"id", "name"}},
		{"no mapping, same column, other type", "", field("name", prim(schema.Long), true), nil},
		{"column mapping", "name", field("x", prim(schema.Integer), true), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var opts []Option
			if c.mapping != "" {
				opts = append(opts, WithProperties(map[string]string{txlog.PropColumnMappingMode: c.mapping}))
			}
			tbl := newMemTable(t, base, opts...)
			d, err := tbl.DraftAppend(ctx, in, WithSchemaEvolution())
			if err != nil {
				t.Fatal(err)
			}
			adds, err := d.WriteFiles(ctx, []value.Row{{int64(1), "a"}})
			if err != nil {
				t.Fatal(err)
			}
			osch := schema.NewStruct(field("id", prim(schema.Long), true), c.other)
			fresh, err := tbl.AppendRows(ctx, nil, WithRowSchema(osch), WithSchemaEvolution())
			if err != nil {
				t.Fatal(err)
			}
			nt, _, err := d.CommitOn(ctx, fresh, adds)
			if c.want == nil {
				if !errors.Is(err, ErrConcurrentModification) || !errors.Is(err, txlog.ErrMetadataChanged) || !errors.Is(err, ErrSchemaMismatch) {
					t.Fatalf("err %v, want a metadata conflict", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range nt.Schema().Fields {
				got = append(got, f.Name)
			}
			if nt.Version() != 2 || !slices.Equal(got, c.want) {
				t.Fatalf("version %d columns %v, want 2 %v", nt.Version(), got, c.want)
			}
		})
	}
}
