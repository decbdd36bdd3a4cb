package table

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// countFiles returns the number of regular files under dir.
func countFiles(t testing.TB, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type constrained struct {
	ID *int64 `delta:"id"`
	S  string `delta:"s"`
}

func TestCheckConstraintsRefuseViolatingRows(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("s", prim(schema.String), true))
	dir := t.TempDir()
	tbl, err := Create(ctx, dir, sch, WithProperties(map[string]string{
		"delta.constraints.idpos":   "id > 0",
		"delta.constraints.s_known": "s IN ('a', 'b', 'c') OR s IS NULL",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p := tbl.Snapshot().Protocol(); p.MinReaderVersion != 1 || p.MinWriterVersion != 3 {
		t.Fatalf("protocol %+v, want (1,3) for CHECK constraints", p)
	}
	ptr := func(v int64) *int64 { return &v }
	tests := []struct {
		name   string
		write  func() error
		constr string
		row    int
		values []string
	}{
		{"append, second row", func() error {
			_, err := tbl.AppendRows(ctx, []value.Row{{int64(1), "a"}, {int64(-5), "b"}})
			return err
		}, "idpos", 1, []string{"id => -5"}},
		{"null violates as in Spark", func() error {
			_, err := tbl.AppendRows(ctx, []value.Row{{nil, "a"}})
			return err
		}, "idpos", 0, []string{"id => NULL"}},
		{"second constraint", func() error {
			_, err := tbl.AppendRows(ctx, []value.Row{{int64(2), "a"}, {int64(3), "zz"}})
			return err
		}, "s_known", 1, []string{"s => 'zz'"}},
		{"overwrite", func() error {
			_, err := tbl.OverwriteRows(ctx, []value.Row{{int64(0), "a"}})
			return err
		}, "idpos", 0, []string{"id => 0"}},
		{"WriteFiles (the sink's and ingest's path)", func() error {
			_, err := tbl.WriteFiles(ctx, []value.Row{{int64(-1), "c"}})
			return err
		}, "idpos", 0, []string{"id => -1"}},
		{"typed append", func() error {
			_, err := Append(ctx, tbl, []constrained{{ID: ptr(4), S: "a"}, {ID: ptr(-4), S: "a"}})
			return err
		}, "idpos", 1, []string{"id => -4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := countFiles(t, dir)
			err := tc.write()
			var cv *ConstraintViolationError
			if !errors.Is(err, ErrConstraintViolation) || !errors.As(err, &cv) {
				t.Fatalf("write: %v, want a constraint violation", err)
			}
			if cv.Name != tc.constr || cv.Row != tc.row || !slices.Equal(cv.Values, tc.values) || cv.Kind != "CHECK constraint" {
				t.Errorf("violation %+v, want %s row %d %v", cv, tc.constr, tc.row, tc.values)
			}
			if !strings.Contains(err.Error(), cv.Expression) || cv.Expression == "" {
				t.Errorf("error %q does not name the expression", err)
			}
			if after := countFiles(t, dir); after != before {
				t.Errorf("%d files before, %d after a refused write", before, after)
			}
		})
	}
	// Valid rows (a null s passes the second constraint's IS NULL) go in.
	nt, err := tbl.AppendRows(ctx, []value.Row{{int64(1), "a"}, {int64(7), nil}})
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, nt), []value.Row{{int64(1), "a"}, {int64(7), nil}})
	if _, err := Append(ctx, nt, []constrained{{ID: ptr(9), S: "b"}}); err != nil {
		t.Fatalf("valid typed append: %v", err)
	}
}

func TestUnsupportedConstraintRefusesWrites(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("s", prim(schema.String), true))
	dir := t.TempDir()
	// Create refuses such a constraint; a table another engine made with
	// it is written here as Spark would.
	store, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := schema.Marshal(sch)
	if err != nil {
		t.Fatal(err)
	}
	m := &txlog.Metadata{ID: "slen", Format: txlog.Format{Provider: "parquet"}, SchemaString: ss,
		Configuration: map[string]string{"delta.constraints.slen": "length(s) > 2"}}
	if _, err := txlog.CreateTransaction(store, &txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 3}, m).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	before := countFiles(t, dir)
	_, err = tbl.AppendRows(ctx, []value.Row{{int64(1), "abc"}})
	if !errors.Is(err, ErrUnsupportedConstraint) || !strings.Contains(err.Error(), "slen") || !strings.Contains(err.Error(), "length(s) > 2") {
		t.Fatalf("append: %v, want ErrUnsupportedConstraint naming slen and its expression", err)
	}
	if after := countFiles(t, dir); after != before {
		t.Errorf("%d files before, %d after", before, after)
	}
}

func TestNotNullIsAConstraintViolation(t *testing.T) {
	tbl := newMemTable(t, schema.NewStruct(field("id", prim(schema.Long), false)))
	_, err := tbl.AppendRows(context.Background(), []value.Row{{int64(1)}, {nil}})
	var re *RowError
	if !errors.Is(err, ErrConstraintViolation) || !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &re) || re.Row != 1 ||
		!strings.Contains(err.Error(), `column "id"`) {
		t.Fatalf("append of a null id: %v", err)
	}
	if len(dataKeys(t, tbl.Store())) != 0 {
		t.Error("data files written")
	}
}

func TestInvariantsAreChecked(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("inv")
	m := &txlog.Metadata{ID: "inv", Format: txlog.Format{Provider: "parquet"}, Configuration: map[string]string{},
		SchemaString: `{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{"delta.invariants":"{\"expression\":{\"expression\":\"x > 3\"}}"}}]}`}
	if _, err := txlog.CreateTransaction(mem, &txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, m).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err := Open(ctx, "", WithStore(mem))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tbl.AppendRows(ctx, []value.Row{{int64(4)}, {int64(3)}})
	var cv *ConstraintViolationError
	if !errors.As(err, &cv) || cv.Kind != "invariant" || cv.Name != "x" || cv.Row != 1 {
		t.Fatalf("append: %v, want the invariant on x violated by row 1", err)
	}
	if _, err := tbl.AppendRows(ctx, []value.Row{{int64(4)}}); err != nil {
		t.Fatal(err)
	}
}

// TestUnsupportedWriterFeatureRefusedBeforeWriting (issue 18 item 14): a
// table that uses a writer feature deltakit cannot honour is refused by
// feature name, and no data file is written, on every write path.
func TestUnsupportedWriterFeatureRefusedBeforeWriting(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		p       *txlog.Protocol
		schema  string
		feature string
	}{
		{"generated column", &txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"generatedColumns"}},
			`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"g","type":"long","nullable":true,"metadata":{"delta.generationExpression":"id * 2"}}]}`,
			"generatedColumns"},
		{"legacy writer 4 generated column", &txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 4},
			`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"g","type":"long","nullable":true,"metadata":{"delta.generationExpression":"id * 2"}}]}`,
			"generatedColumns"},
		{"unknown writer feature", &txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"fancyFeature"}},
			`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"g","type":"long","nullable":true,"metadata":{}}]}`,
			"fancyFeature"},
	}
	type row struct {
		ID int64 `delta:"id"`
		G  int64 `delta:"g"`
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := objectstore.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			m := &txlog.Metadata{ID: "x", Format: txlog.Format{Provider: "parquet"}, Configuration: map[string]string{}, SchemaString: tc.schema}
			if _, err := txlog.CreateTransaction(store, tc.p, m).Commit(ctx); err != nil {
				// The commit path itself refuses unknown features: write the commit by hand.
				writeRawCommit(t, store, tc.p, m)
			}
			tbl, err := Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			writes := map[string]func() error{
				"AppendRows": func() error { _, err := tbl.AppendRows(ctx, []value.Row{{int64(1), int64(2)}}); return err },
				"OverwriteRows": func() error {
					_, err := tbl.OverwriteRows(ctx, []value.Row{{int64(1), int64(2)}})
					return err
				},
				"WriteFiles": func() error { _, err := tbl.WriteFiles(ctx, []value.Row{{int64(1), int64(2)}}); return err },
				"Append[T]":  func() error { _, err := Append(ctx, tbl, []row{{1, 2}}); return err },
			}
			for name, w := range writes {
				before := countFiles(t, dir)
				err := w()
				var fe *txlog.UnsupportedFeatureError
				if !errors.Is(err, txlog.ErrUnsupportedFeature) || !errors.As(err, &fe) || !slices.Contains(fe.Features, tc.feature) {
					t.Errorf("%s: %v, want %s refused", name, err, tc.feature)
				}
				if after := countFiles(t, dir); after != before {
					t.Errorf("%s: %d files before, %d after", name, before, after)
				}
			}
		})
	}
}

// writeRawCommit writes version 0 with protocol p and metadata m, bypassing
// the commit path's checks.
func writeRawCommit(t testing.TB, store objectstore.Store, p *txlog.Protocol, m *txlog.Metadata) {
	t.Helper()
	pj, err := json.Marshal(map[string]any{"protocol": p})
	if err != nil {
		t.Fatal(err)
	}
	mj, err := json.Marshal(map[string]any{"metaData": m})
	if err != nil {
		t.Fatal(err)
	}
	b := append(append(append(pj, '\n'), mj...), '\n')
	if err := store.Put(context.Background(), txlog.CommitKey(0), b); err != nil {
		t.Fatal(err)
	}
}

// A constraint deltakit cannot evaluate is refused when the table is
// created, naming it, and nothing is written.
func TestCreateRefusesUnevaluableConstraints(t *testing.T) {
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("s", prim(schema.String), true))
	for _, expr := range []string{"length(s) < 5", "s LIKE 'a%'", "id > ", "nosuch > 0"} {
		t.Run(expr, func(t *testing.T) {
			mem := objectstore.NewMem(t.Name())
			_, err := Create(context.Background(), "", sch, WithStore(mem),
				WithProperties(map[string]string{"delta.constraints.c1": expr}))
			if !errors.Is(err, ErrUnsupportedConstraint) || !strings.Contains(err.Error(), "c1") {
				t.Fatalf("err = %v, want ErrUnsupportedConstraint naming c1", err)
			}
			for info, err := range mem.List(context.Background(), "", "") {
				t.Fatalf("store holds %v (%v) after a refused create", info.Key, err)
			}
		})
	}
	// One that can be evaluated is accepted.
	if _, err := Create(context.Background(), "", sch, WithStore(objectstore.NewMem("ok")),
		WithProperties(map[string]string{"delta.constraints.c1": "id > 0 AND s IS NOT NULL"})); err != nil {
		t.Fatal(err)
	}
}
