package streamsink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

var (
	evoBase = schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("name", schema.Primitive(schema.String), true),
	)
	// evoWide adds the nullable column score.
	evoWide = schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("name", schema.Primitive(schema.String), true),
		schema.NewField("score", schema.Primitive(schema.Long), true),
	)
	// evoBad has name as a long: an incompatible type change.
	evoBad = schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), true),
		schema.NewField("name", schema.Primitive(schema.Long), true),
	)
)

// evoTyped is a row of evoWide (or evoWideNotNull) as a Go struct.
type evoTyped struct {
	ID    int64   `delta:"id"`
	Name  *string `delta:"name"`
	Score *int64  `delta:"score"`
}

// evoKind writes epoch e of rows of sch (evoWide or evoBad) with one of the
// sink's epoch methods.
type evoKind struct {
	name  string
	write func(ctx context.Context, t *testing.T, s *Sink, e int64, sch *schema.StructType, rows []value.Row) (*Result, error)
	// rowSchema: the sink needs WithRowSchema(sch) for untyped rows.
	rowSchema bool
}

func evoKinds() []evoKind {
	batches := func(t *testing.T, sch *schema.StructType, rows []value.Row) ([]arrow.RecordBatch, *arrow.Schema) {
		rr := arrowEpoch(t, sch, rows, 1)
		var recs []arrow.RecordBatch
		for rr.Next() {
			rec := rr.RecordBatch()
			rec.Retain()
			t.Cleanup(rec.Release)
			recs = append(recs, rec)
		}
		return recs, rr.Schema()
	}
	return []evoKind{
		{name: "WriteEpoch", rowSchema: true, write: func(ctx context.Context, _ *testing.T, s *Sink, e int64, _ *schema.StructType, rows []value.Row) (*Result, error) {
			return s.WriteEpoch(ctx, e, rows)
		}},
		{name: "WriteEpochWith", rowSchema: true, write: func(ctx context.Context, _ *testing.T, s *Sink, e int64, _ *schema.StructType, rows []value.Row) (*Result, error) {
			return s.WriteEpochWith(ctx, e, rows, table.Txn{AppID: "src-0", Version: e})
		}},
		{name: "WriteEpochChecked", rowSchema: true, write: func(ctx context.Context, _ *testing.T, s *Sink, e int64, _ *schema.StructType, rows []value.Row) (*Result, error) {
			return s.WriteEpochChecked(ctx, e, rows, func(*table.Table) error { return nil })
		}},
		{name: "WriteEpochOf", write: func(ctx context.Context, t *testing.T, s *Sink, e int64, sch *schema.StructType, rows []value.Row) (*Result, error) {
			if sch == evoBad {
				type bad struct {
					ID   int64 `delta:"id"`
					Name int64 `delta:"name"`
				}
				var in []bad
				for _, r := range rows {
					in = append(in, bad{ID: r[0].(int64), Name: r[1].(int64)})
				}
				return WriteEpochOf(ctx, s, e, in)
			}
			var in []evoTyped
			for _, r := range rows {
				n, sc := r[1].(string), r[2].(int64)
				in = append(in, evoTyped{ID: r[0].(int64), Name: &n, Score: &sc})
			}
			return WriteEpochOf(ctx, s, e, in)
		}},
		{name: "WriteEpochBatches", write: func(ctx context.Context, t *testing.T, s *Sink, e int64, sch *schema.StructType, rows []value.Row) (*Result, error) {
			recs, in := batches(t, sch, rows)
			return s.WriteEpochBatches(ctx, e, recs, in)
		}},
		{name: "WriteEpochArrow", write: func(ctx context.Context, t *testing.T, s *Sink, e int64, sch *schema.StructType, rows []value.Row) (*Result, error) {
			return s.WriteEpochArrow(ctx, e, arrowEpoch(t, sch, rows, 1))
		}},
	}
}

// evoTable creates a filesystem table of evoBase holding epoch 0 of query q
// (rows 1 "a", 2 "b") at version 1 and returns its directory.
func evoTable(ctx context.Context, t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t")
	tbl, err := table.Create(ctx, dir, evoBase)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(tbl, "q")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteEpoch(ctx, 0, []table.Row{{int64(1), "a"}, {int64(2), "b"}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func evoSink(ctx context.Context, t *testing.T, dir string, k evoKind, sch *schema.StructType, evolve bool, opts ...Option) *Sink {
	t.Helper()
	tbl, err := table.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if k.rowSchema {
		opts = append(opts, WithRowSchema(sch))
	}
	if evolve {
		opts = append(opts, WithWriteOptions(table.WithSchemaEvolution()))
	}
	s, err := New(tbl, "q", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dataFiles lists the Parquet files under dir.
func dataFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "_delta_log") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// commitActions reads the action kinds of version v's commit file, with
// its metaData's schema and txn appIds.
func commitActions(t *testing.T, dir string, v int64) (kinds []string, schemaString string, txns map[string]int64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		t.Fatal(err)
	}
	txns = map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var a map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatal(err)
		}
		for k, raw := range a {
			kinds = append(kinds, k)
			switch k {
			case "metaData":
				var m struct{ SchemaString string }
				_ = json.Unmarshal(raw, &m)
				schemaString = m.SchemaString
			case "txn":
				var x struct {
					AppID   string
					Version int64
				}
				_ = json.Unmarshal(raw, &x)
				txns[x.AppID] = x.Version
			case "commitInfo":
				var c struct{ Operation string }
				_ = json.Unmarshal(raw, &c)
				kinds = append(kinds, "op:"+c.Operation)
			}
		}
	}
	slices.Sort(kinds)
	return slices.Compact(kinds), schemaString, txns
}

// readDeltaRS reads the table at dir with delta-rs as JSON rows sorted by
// id, with the column names.
func readDeltaRS(t *testing.T, dir string) (cols []string, rows [][]any) {
	t.Helper()
	py := testsupport.Python(t)
	out := testsupport.RunPython(t, py, `
import sys, json
from deltalake import DeltaTable
t = DeltaTable(sys.argv[1]).to_pyarrow_table().sort_by("id")
print(json.dumps({"cols": t.column_names, "rows": [list(r.values()) for r in t.to_pylist()]}))
`, dir)
	var res struct {
		Cols []string
		Rows [][]any
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return res.Cols, res.Rows
}

func TestAppendEpochsEvolveSchema(t *testing.T) {
	ctx := context.Background()
	epoch1 := []value.Row{{int64(3), "c", int64(30)}, {int64(4), "d", int64(40)}}
	for _, k := range evoKinds() {
		t.Run(k.name, func(t *testing.T) {
			dir := evoTable(ctx, t)
			s := evoSink(ctx, t, dir, k, evoWide, true)
			res, err := k.write(ctx, t, s, 1, evoWide, epoch1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Skipped || res.Version != 2 || res.Rows != 2 {
				t.Fatalf("result %+v, want version 2 with 2 rows", res)
			}
			kinds, sch, txns := commitActions(t, dir, 2)
			if want := []string{"add", "commitInfo", "metaData", "op:STREAMING UPDATE", "txn"}; !slices.Equal(kinds, want) {
				t.Fatalf("commit 2 holds %v, want %v", kinds, want)
			}
			if got, err := schema.Parse(sch); err != nil || got.String() != evoWide.String() || txns["q"] != 1 {
				t.Fatalf("commit 2: schema %s, txns %v", sch, txns)
			}
			// Replay: skipped, nothing new.
			files := dataFiles(t, dir)
			res, err = k.write(ctx, t, s, 1, evoWide, epoch1)
			if err != nil || !res.Skipped || res.Version != 2 {
				t.Fatalf("replay: %+v, %v", res, err)
			}
			if got := dataFiles(t, dir); len(got) != len(files) {
				t.Fatalf("replay wrote files: %d -> %d", len(files), len(got))
			}
			cols, rows := readDeltaRS(t, dir)
			want := [][]any{{1.0, "a", nil}, {2.0, "b", nil}}
			for _, r := range epoch1 {
				want = append(want, []any{float64(r[0].(int64)), r[1], float64(r[2].(int64))})
			}
			if !slices.Equal(cols, []string{"id", "name", "score"}) || fmt.Sprint(rows) != fmt.Sprint(want) {
				t.Fatalf("delta-rs reads %v %v, want %v", cols, rows, want)
			}
		})
	}
}

func TestAppendEpochsRefuseSchemaChange(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		sch    *schema.StructType
		rows   []value.Row
		evolve bool
		want   []string
	}{
		{"new column without the option", evoWide, []value.Row{{int64(3), "c", int64(30)}}, false,
			[]string{`column "score" is not in the table schema`, "table.WithSchemaEvolution"}},
		{"incompatible type", evoBad, []value.Row{{int64(3), int64(7)}}, true,
			[]string{`column "name" has type string`}},
	}
	for _, k := range evoKinds() {
		for _, c := range cases {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				dir := evoTable(ctx, t)
				files := dataFiles(t, dir)
				s := evoSink(ctx, t, dir, k, c.sch, c.evolve)
				_, err := k.write(ctx, t, s, 1, c.sch, c.rows)
				if !errors.Is(err, table.ErrSchemaMismatch) {
					t.Fatalf("err %v, want ErrSchemaMismatch", err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("err %q lacks %q", err, w)
					}
				}
				if got := dataFiles(t, dir); !slices.Equal(got, files) {
					t.Fatalf("data files %v, want %v", got, files)
				}
				tbl, err := table.Open(ctx, dir)
				if err != nil || tbl.Version() != 1 || tbl.Schema().String() != evoBase.String() {
					t.Fatalf("table after refusal: %v", err)
				}
			})
		}
	}
}

// TestEvolveEpochKeepsColumnMetadata: an epoch that adds a column leaves
// every existing column's field as it was (nullability, metadata), for
// every epoch kind, as table.Append[T] with WithSchemaEvolution does: a
// NOT NULL column stays NOT NULL when the epoch's data cannot be null
// (a non-pointer Go field, a non-nullable row schema or Arrow field).
func TestEvolveEpochKeepsColumnMetadata(t *testing.T) {
	ctx := context.Background()
	base := schema.NewStruct(
		&schema.StructField{Name: "id", Type: schema.Primitive(schema.Long), Metadata: map[string]any{"comment": "key"}},
		&schema.StructField{Name: "name", Type: schema.Primitive(schema.String), Nullable: true, Metadata: map[string]any{"comment": "who"}},
	)
	wide := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("name", schema.Primitive(schema.String), true),
		schema.NewField("score", schema.Primitive(schema.Long), true),
	)
	// The expected schema: base's fields as JSON, then score, nullable.
	want := `{"fields":[` +
		`{"metadata":{"comment":"key"},"name":"id","nullable":false,"type":"long"},` +
		`{"metadata":{"comment":"who"},"name":"name","nullable":true,"type":"string"},` +
		`{"metadata":{},"name":"score","nullable":true,"type":"long"}],"type":"struct"}`
	for _, k := range evoKinds() {
		t.Run(k.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			tbl, err := table.Create(ctx, dir, base)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.AppendRows(ctx, []value.Row{{int64(1), "a"}}); err != nil {
				t.Fatal(err)
			}
			s := evoSink(ctx, t, dir, k, wide, true)
			res, err := k.write(ctx, t, s, 0, wide, []value.Row{{int64(2), "b", int64(20)}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Version != 2 {
				t.Fatalf("result %+v, want version 2", res)
			}
			_, sch, _ := commitActions(t, dir, 2)
			if sch != want {
				t.Fatalf("commit 2 schema\n%s\nwant\n%s", sch, want)
			}
		})
	}
}

// TestEvolveEpochConcurrentSchemaChange: another writer changes the schema
// after the epoch's files are written (the sink's clock runs just before
// each commit); the retry from the fresh snapshot re-merges, or fails as a
// metadata conflict when the files no longer fit.
func TestEvolveEpochConcurrentSchemaChange(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		other   *schema.StructField // the concurrent writer's new column
		wantErr bool
		cols    []string
		rows    [][]any
	}{
		{"other column: re-merged", schema.NewField("other", schema.Primitive(schema.String), true), false,
			[]string{"id", "name", "other", "score"}, [][]any{{1.0, "a", nil, nil}, {2.0, "b", nil, nil}, {3.0, "c", nil, 30.0}}},
		{"same column, same type", schema.NewField("score", schema.Primitive(schema.Long), true), false,
			[]string{"id", "name", "score"}, [][]any{{1.0, "a", nil}, {2.0, "b", nil}, {3.0, "c", 30.0}}},
		{"same column, other type: conflict", schema.NewField("score", schema.Primitive(schema.String), true), true, nil, nil},
	}
	k := evoKinds()[0]
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := evoTable(ctx, t)
			other, err := table.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			osch := schema.NewStruct(append(slices.Clone(evoBase.Fields), c.other)...)
			calls := 0
			clock := func() time.Time {
				if calls++; calls == 1 {
					if _, err := other.AppendRows(ctx, nil, table.WithRowSchema(osch), table.WithSchemaEvolution()); err != nil {
						t.Errorf("concurrent schema change: %v", err)
					}
				}
				return time.UnixMilli(1_700_000_000_000)
			}
			s := evoSink(ctx, t, dir, k, evoWide, true, WithClock(clock))
			res, err := k.write(ctx, t, s, 1, evoWide, []value.Row{{int64(3), "c", int64(30)}})
			if c.wantErr {
				if !errors.Is(err, table.ErrConcurrentModification) || !errors.Is(err, txlog.ErrMetadataChanged) || !strings.Contains(err.Error(), `"score"`) {
					t.Fatalf("err %v, want a metadata conflict naming score", err)
				}
				tbl, oerr := table.Open(ctx, dir)
				if oerr != nil || tbl.Version() != 2 || tbl.Snapshot().TxnVersion("q") != 0 {
					t.Fatalf("table after the conflict: %v", oerr)
				}
				return
			}
			if err != nil || res.Version != 3 {
				t.Fatalf("res %+v, err %v", res, err)
			}
			if kinds, _, txns := commitActions(t, dir, 3); !slices.Contains(kinds, "add") || txns["q"] != 1 {
				t.Fatalf("commit 3: %v %v", kinds, txns)
			}
			cols, rows := readDeltaRS(t, dir)
			if !slices.Equal(cols, c.cols) || fmt.Sprint(rows) != fmt.Sprint(c.rows) {
				t.Fatalf("delta-rs reads %v %v, want %v %v", cols, rows, c.cols, c.rows)
			}
		})
	}
}
