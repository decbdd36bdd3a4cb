package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// mergeRef is a reference MERGE on maintSchema rows keyed by id (and city
// when byCity), written as a plain Go map merge: matched(t, s) returns the
// new target row and whether to keep it (nil fn: no matched clause);
// insert(s) the row to insert (nil: none); bySource(t) for target rows
// without a source row.
type mergeRef struct {
	byCity   bool
	matched  func(t, s value.Row) (value.Row, bool)
	insert   func(s value.Row) value.Row
	bySource func(t value.Row) (value.Row, bool)
}

func (m mergeRef) apply(target, source []value.Row) []value.Row {
	key := func(r value.Row) string {
		if r[0] == nil || m.byCity && r[1] == nil {
			return "" // null keys never match
		}
		if m.byCity {
			return fmt.Sprint(r[0], "/", r[1])
		}
		return fmt.Sprint(r[0])
	}
	src := map[string]value.Row{}
	for _, s := range source {
		if k := key(s); k != "" {
			src[k] = s
		}
	}
	matchedSrc := map[string]bool{}
	var out []value.Row
	for _, t := range target {
		k := key(t)
		s, ok := src[k]
		switch {
		case ok && k != "":
			matchedSrc[k] = true
			if m.matched == nil {
				out = append(out, t)
			} else if nr, keep := m.matched(t, s); keep {
				out = append(out, nr)
			}
		case m.bySource != nil:
			if nr, keep := m.bySource(t); keep {
				out = append(out, nr)
			}
		default:
			out = append(out, t)
		}
	}
	for _, s := range source {
		if k := key(s); (k == "" || !matchedSrc[k]) && m.insert != nil {
			if nr := m.insert(s); nr != nil {
				out = append(out, nr)
			}
		}
	}
	return out
}

func renderSorted(rows []value.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(r...)
	}
	slices.Sort(out)
	return out
}

func mergeSource(rows []value.Row) *MergeSource { return MergeRows(maintSchema(), rows) }

func TestMerge(t *testing.T) {
	ctx := context.Background()
	target := slices.Concat(maintRowsFor(0, 40, "ams", "ber", "cph"), maintRowsFor(40, 40, "ams", "ber"), maintRowsFor(80, 40, "cph"))
	// Source: ids 100..139, v = -id, cities cycling (ids 100..119 exist).
	source := maintRowsFor(100, 40, "ams", "cph")
	for _, r := range source {
		r[2] = -float64(r[0].(int64))
	}
	same := func(t, s value.Row) (value.Row, bool) { return s, true }
	ins := func(s value.Row) value.Row { return s }
	cases := []struct {
		name   string
		m      *MergeBuilder
		ref    mergeRef
		source []value.Row
	}{
		{name: "upsert (update all, insert all)",
			m:   NewMerge(mergeSource(source), MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll(),
			ref: mergeRef{matched: same, insert: ins}},
		{name: "matched delete",
			m:   NewMerge(mergeSource(source), MergeOn("id")).WhenMatched().Delete(),
			ref: mergeRef{matched: func(t, s value.Row) (value.Row, bool) { return nil, false }}},
		{name: "conditional clauses in order",
			m: NewMerge(mergeSource(source), MergeOn("id")).
				WhenMatched().If(Source("v").Gt(-105)).Delete().
				WhenMatched().If(Target("city").Eq("cph")).Update(map[string]Value{"v": Plus(Target("v"), Source("v")), "target.city": Lit("x")}).
				WhenNotMatched().If(Source("id").Lt(130)).Insert(map[string]Value{"id": Source("id"), "city": Lit("new"), "v": Times(Source("v"), 2)}),
			ref: mergeRef{
				matched: func(t, s value.Row) (value.Row, bool) {
					if s[2].(float64) > -105 {
						return nil, false
					}
					if t[1] == "cph" {
						return value.Row{t[0], "x", t[2].(float64) + s[2].(float64)}, true
					}
					return t, true
				},
				insert: func(s value.Row) value.Row {
					if s[0].(int64) >= 130 {
						return nil
					}
					return value.Row{s[0], "new", s[2].(float64) * 2}
				}}},
		{name: "insert only",
			m:   NewMerge(mergeSource(source), MergeOn("id")).WhenNotMatched().InsertAll(),
			ref: mergeRef{insert: ins}},
		{name: "not matched by source: delete some, update the others",
			m: NewMerge(mergeSource(source), MergeOn("id")).WhenMatched().UpdateAll().
				WhenNotMatchedBySource().If(Target("id").Lt(20)).Delete().
				WhenNotMatchedBySource().If(Target("city").Eq("ber")).Update(map[string]Value{"v": Lit(0)}),
			ref: mergeRef{matched: same, bySource: func(t value.Row) (value.Row, bool) {
				if t[0].(int64) < 20 {
					return nil, false
				}
				if t[1] == "ber" {
					return value.Row{t[0], t[1], 0.0}, true
				}
				return t, true
			}}},
		{name: "key with the partition column and a target-only term",
			m: NewMerge(mergeSource(source), And(MergeOn("id", "city"), Target("id").Ge(110))).
				WhenMatched().UpdateAll().WhenNotMatched().InsertAll(),
			ref: mergeRef{byCity: true,
				matched: func(t, s value.Row) (value.Row, bool) {
					return s, true
				}, insert: ins}},
		{name: "null keys never match",
			source: []value.Row{{int64(5), nil, 1.5}, {int64(6), "ams", 2.5}, {int64(500), nil, 3.5}},
			ref:    mergeRef{byCity: true, matched: same, insert: ins}},
		{name: "SQL condition from ParsePredicate",
			source: source,
			ref: mergeRef{matched: func(t, s value.Row) (value.Row, bool) {
				if t[2].(float64) > 27 {
					return value.Row{t[0], t[1], s[2]}, true
				}
				return t, true
			}}},
	}
	for _, partitioned := range []bool{false, true} {
		for _, dv := range []bool{false, true} {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s/partitioned=%v/dv=%v", c.name, partitioned, dv), func(t *testing.T) {
					var props map[string]string
					if dv {
						props = dvProps
					}
					tbl, _ := maintTable(t, partitioned, props)
					tbl = maintAppend(t, tbl, target[:40])
					tbl = maintAppend(t, tbl, target[40:80])
					tbl = maintAppend(t, tbl, target[80:])
					src, m := source, c.m
					switch c.name {
					case "null keys never match":
						src = c.source
						m = NewMerge(mergeSource(src), MergeOn("id", "city")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll()
					case "SQL condition from ParsePredicate":
						on, err := ParsePredicate("target.id = source.id", nil)
						if err != nil {
							t.Fatal(err)
						}
						cond, err := ParsePredicate("target.v > 27 AND source.v < 0", nil)
						if err != nil {
							t.Fatal(err)
						}
						m = NewMerge(mergeSource(src), on).WhenMatched().If(cond).Update(map[string]Value{"v": Source("v")})
					}
					before := tbl.Snapshot().Files()
					nt, res, err := tbl.Merge(ctx, m)
					if err != nil {
						t.Fatal(err)
					}
					ref := c.ref
					if c.name == "key with the partition column and a target-only term" {
						// target.id >= 110 is part of the condition: rows
						// below it match nothing.
						ref.matched = func(t, s value.Row) (value.Row, bool) { return s, true }
						want := mergeRefWithCond(target, src, func(t value.Row) bool { return t[0].(int64) >= 110 })
						if got := maintScan(t, nt); !slices.Equal(got, renderSorted(want)) {
							t.Fatalf("rows:\n got %v\nwant %v", got, renderSorted(want))
						}
					} else {
						want := renderSorted(ref.apply(target, src))
						if got := maintScan(t, nt); !slices.Equal(got, want) {
							t.Fatalf("rows:\n got %v\nwant %v", got, want)
						}
					}
					if !res.Committed || nt.Version() != tbl.Version()+1 {
						t.Fatalf("Committed %v version %d", res.Committed, nt.Version())
					}
					ci := lastCommitInfo(t, nt)
					if ci.Operation != "MERGE" {
						t.Errorf("operation %q", ci.Operation)
					}
					for _, k := range []string{"numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted", "numTargetRowsCopied", "numOutputRows", "numTargetFilesAdded", "numTargetFilesRemoved"} {
						if _, ok := ci.OperationMetrics[k]; !ok {
							t.Errorf("metric %s missing", k)
						}
					}
					if got := ci.OperationMetrics["numSourceRows"]; got != fmt.Sprint(len(src)) {
						t.Errorf("numSourceRows = %s, want %d", got, len(src))
					}
					// Files of the first append (ids < 40) are untouched
					// unless a NOT MATCHED BY SOURCE clause reads them.
					if len(m.bySource) == 0 && c.name != "null keys never match" {
						live := map[string]bool{}
						for _, f := range nt.Snapshot().Files() {
							live[f.Path] = true
						}
						for _, f := range before {
							if n, _ := f.NumRecords(); n > 0 && fileMaxID(t, tbl, f) < 100 && !live[f.Path] {
								t.Errorf("file %s (ids below the source's) was rewritten", f.Path)
							}
						}
					}
					// The counts add up with the rows.
					n := int64(len(target)) + res.InsertedRows - res.DeletedRows
					if got := int64(len(maintScan(t, nt))); got != n {
						t.Errorf("rows %d, want %d from the counts %+v", got, n, res)
					}
				})
			}
		}
	}
}

// mergeRefWithCond is the upsert reference of MergeOn("id","city") AND a
// target-only condition.
func mergeRefWithCond(target, source []value.Row, cond func(value.Row) bool) []value.Row {
	type k struct {
		id   any
		city any
	}
	src := map[k]value.Row{}
	for _, s := range source {
		src[k{s[0], s[1]}] = s
	}
	used := map[k]bool{}
	var out []value.Row
	for _, t := range target {
		if s, ok := src[k{t[0], t[1]}]; ok && cond(t) {
			used[k{t[0], t[1]}] = true
			out = append(out, s)
			continue
		}
		out = append(out, t)
	}
	for _, s := range source {
		if !used[k{s[0], s[1]}] {
			out = append(out, s)
		}
	}
	return out
}

// fileMaxID returns the max id of a file from its stats.
func fileMaxID(t *testing.T, tbl *Table, f *txlog.Add) int64 {
	t.Helper()
	var st struct {
		MaxValues map[string]any `json:"maxValues"`
	}
	if err := json.Unmarshal([]byte(f.Stats), &st); err != nil {
		t.Fatal(err)
	}
	v, _ := st.MaxValues["id"].(float64)
	return int64(v)
}

func TestMergeMetricsAndParams(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, nil)
	tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
	tbl = maintAppend(t, tbl, maintRowsFor(10, 10, "ber"))
	src := []value.Row{{int64(12), "x", 1.0}, {int64(13), "x", 2.0}, {int64(14), "x", 3.0}, {int64(50), "y", 4.0}}
	m := NewMerge(mergeSource(src), MergeOn("id")).
		WhenMatched().If(Source("v").Eq(3.0)).Delete().
		WhenMatched().UpdateAll().
		WhenNotMatched().InsertAll()
	nt, res, err := tbl.Merge(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	ci := lastCommitInfo(t, nt)
	want := map[string]string{
		"numSourceRows": "4", "numTargetRowsInserted": "1", "numTargetRowsUpdated": "2", "numTargetRowsMatchedUpdated": "2",
		"numTargetRowsNotMatchedBySourceUpdated": "0", "numTargetRowsDeleted": "1", "numTargetRowsMatchedDeleted": "1",
		"numTargetRowsNotMatchedBySourceDeleted": "0", "numTargetRowsCopied": "7", "numOutputRows": "10",
		"numTargetFilesRemoved": "1", "numTargetChangeFilesAdded": "0",
	}
	for k, v := range want {
		if got := ci.OperationMetrics[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if res.InsertedRows != 1 || res.UpdatedRows != 2 || res.DeletedRows != 1 || res.CopiedRows != 7 || res.RemovedFiles != 1 {
		t.Errorf("result %+v", res)
	}
	wantParams := map[string]string{
		"predicate":                    `["target.id = source.id"]`,
		"matchedPredicates":            `[{"predicate":"source.v = 3","actionType":"delete"},{"actionType":"update"}]`,
		"notMatchedPredicates":         `[{"actionType":"insert"}]`,
		"notMatchedBySourcePredicates": `[]`,
	}
	for k, v := range wantParams {
		if got := ci.OperationParameters[k]; got != v {
			t.Errorf("param %s = %s, want %s", k, got, v)
		}
	}
	// Nothing to change: nothing committed.
	nt2, res2, err := nt.Merge(ctx, NewMerge(mergeSource([]value.Row{{int64(999), "z", 1.0}}), MergeOn("id")).WhenMatched().Delete())
	if err != nil {
		t.Fatal(err)
	}
	if res2.Committed || nt2.Version() != nt.Version() {
		t.Errorf("no-op merge committed: %+v", res2)
	}
}

func TestMergeMultipleMatches(t *testing.T) {
	ctx := context.Background()
	dup := []value.Row{{int64(3), "a", 1.0}, {int64(3), "b", 2.0}, {int64(77), "c", 3.0}, {int64(77), "d", 4.0}}
	for _, c := range []struct {
		name    string
		m       *MergeBuilder
		wantErr bool
		want    int // rows after
	}{
		{"update", NewMerge(mergeSource(dup), MergeOn("id")).WhenMatched().UpdateAll(), true, 0},
		{"conditional delete", NewMerge(mergeSource(dup), MergeOn("id")).WhenMatched().If(Source("v").Gt(0)).Delete(), true, 0},
		// Spark: a single unconditional delete and insert-only merges
		// allow duplicates.
		{"unconditional delete", NewMerge(mergeSource(dup), MergeOn("id")).WhenMatched().Delete(), false, 9},
		{"insert only", NewMerge(mergeSource(dup), MergeOn("id")).WhenNotMatched().InsertAll(), false, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl, mem := maintTable(t, false, nil)
			tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
			keys := maintKeys(t, mem)
			nt, _, err := tbl.Merge(ctx, c.m)
			if c.wantErr {
				if !errors.Is(err, ErrMergeMultipleMatches) || !strings.Contains(err.Error(), "(id=3)") {
					t.Fatalf("err = %v, want ErrMergeMultipleMatches naming (id=3)", err)
				}
				if got := maintKeys(t, mem); !slices.Equal(got, keys) {
					t.Errorf("store changed: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := len(maintScan(t, nt)); got != c.want {
				t.Errorf("rows %d, want %d", got, c.want)
			}
		})
	}
}

func TestMergeBadInput(t *testing.T) {
	ctx := context.Background()
	src := []value.Row{{int64(1), "x", 1.0}}
	strSch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.String), true), schema.NewField("v", schema.Primitive(schema.Double), true))
	noID := schema.NewStruct(schema.NewField("key", schema.Primitive(schema.Long), true), schema.NewField("v", schema.Primitive(schema.Double), true))
	vStr := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true), schema.NewField("city", schema.Primitive(schema.String), true), schema.NewField("v", schema.Primitive(schema.String), true))
	cases := []struct {
		name     string
		props    map[string]string
		m        *MergeBuilder
		want     []error
		contains string
	}{
		{"key missing from the source", nil, NewMerge(MergeRows(noID, []value.Row{{int64(1), 1.0}}), MergeOn("id")).WhenMatched().Delete(),
			[]error{ErrInvalidArgument}, "source.id"},
		{"key type mismatch", nil, NewMerge(MergeRows(strSch, []value.Row{{"1", 1.0}}), MergeOn("id")).WhenMatched().Delete(),
			[]error{ErrInvalidArgument, ErrSchemaMismatch}, "merge key"},
		{"value type mismatch", nil, NewMerge(MergeRows(vStr, []value.Row{{int64(1), "a", "x"}}), MergeOn("id")).WhenMatched().UpdateAll(),
			[]error{ErrSchemaMismatch}, "v"},
		{"SET type mismatch", nil, NewMerge(mergeSource(src), MergeOn("id")).WhenMatched().Update(map[string]Value{"v": Source("city")}),
			[]error{ErrInvalidArgument}, "does not fit"},
		{"no key equality", nil, NewMerge(mergeSource(src), Target("id").Gt(3)).WhenMatched().Delete(),
			[]error{ErrInvalidArgument}, "no equality"},
		{"no clause", nil, NewMerge(mergeSource(src), MergeOn("id")), []error{ErrInvalidArgument}, "no WHEN clause"},
		{"unknown SET column", nil, NewMerge(mergeSource(src), MergeOn("id")).WhenMatched().Update(map[string]Value{"nope": Lit(1)}),
			[]error{ErrInvalidArgument}, "nope"},
		{"ambiguous column", nil, NewMerge(mergeSource(src), MergeOn("id")).WhenMatched().If(Col("v").Gt(1)).Delete(),
			[]error{ErrInvalidArgument}, "ambiguous"},
		{"delete on append-only", map[string]string{"delta.appendOnly": "true"}, NewMerge(mergeSource(src), MergeOn("id")).WhenMatched().Delete(),
			[]error{ErrAppendOnly}, "merge into"},
		{"update on append-only", map[string]string{"delta.appendOnly": "true"}, NewMerge(mergeSource(src), MergeOn("id")).WhenMatched().UpdateAll(),
			[]error{ErrAppendOnly}, "merge into"},
		{"short source row", nil, NewMerge(MergeRows(maintSchema(), []value.Row{{int64(1)}}), MergeOn("id")).WhenMatched().Delete(),
			[]error{ErrInvalidArgument}, "row 0"},
		{"NULL into NOT NULL", nil, NewMerge(mergeSource([]value.Row{{int64(100), "x", 1.0}}), MergeOn("id")).WhenNotMatched().Insert(map[string]Value{"v": Source("v")}),
			nil, "id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, mem := maintTable(t, false, c.props)
			tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
			keys := maintKeys(t, mem)
			rows := maintScan(t, tbl)
			_, _, err := tbl.Merge(ctx, c.m)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want %v", err, w)
				}
			}
			if !strings.Contains(err.Error(), c.contains) {
				t.Errorf("err = %v, want it to name %q", err, c.contains)
			}
			if got := maintKeys(t, mem); !slices.Equal(got, keys) {
				t.Errorf("store changed: %v", got)
			}
			nt, err := Open(ctx, "", WithStore(mem))
			if err != nil {
				t.Fatal(err)
			}
			if nt.Version() != tbl.Version() || !slices.Equal(maintScan(t, nt), rows) {
				t.Errorf("table changed")
			}
		})
	}
	// An insert-only MERGE into an append-only table is allowed.
	tbl, _ := maintTable(t, false, map[string]string{"delta.appendOnly": "true"})
	tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
	nt, res, err := tbl.Merge(ctx, NewMerge(mergeSource([]value.Row{{int64(3), "x", 1.0}, {int64(30), "x", 1.0}}), MergeOn("id")).WhenNotMatched().InsertAll())
	if err != nil || res.InsertedRows != 1 || len(maintScan(t, nt)) != 11 {
		t.Fatalf("insert-only merge on append-only: %v %+v", err, res)
	}
}

type mergeRow struct {
	ID   int64   `delta:"id"`
	City *string `delta:"city"`
	V    float64 `delta:"v"`
	Note string  `delta:"note"`
}

func TestMergeTypedAndSchemaEvolution(t *testing.T) {
	ctx := context.Background()
	city := "zzz"
	src, err := MergeStructs([]mergeRow{{ID: 2, City: &city, V: 9, Note: "two"}, {ID: 100, V: 1, Note: "new"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprint("partitioned=", partitioned), func(t *testing.T) {
			tbl, _ := maintTable(t, partitioned, nil)
			tbl = maintAppend(t, tbl, maintRowsFor(0, 5, "ams"))
			// Without evolution, the extra source column is ignored.
			nt, _, err := tbl.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll())
			if err != nil {
				t.Fatal(err)
			}
			if len(nt.Schema().Fields) != 3 {
				t.Fatalf("schema evolved without the option: %v", nt.Schema())
			}
			want := renderSorted([]value.Row{{int64(0), "ams", 0.0}, {int64(1), "ams", 0.25}, {int64(100), nil, 1.0}, {int64(2), "zzz", 9.0}, {int64(3), "ams", 0.75}, {int64(4), "ams", 1.0}})
			if got := maintScan(t, nt); !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}
			nt, _, err = nt.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll(), WithSchemaEvolution())
			if err != nil {
				t.Fatal(err)
			}
			if f := nt.Schema().Field("note"); f == nil || !f.Nullable {
				t.Fatalf("schema %v: want a nullable note column", nt.Schema())
			}
			want = renderSorted([]value.Row{{int64(0), "ams", 0.0, nil}, {int64(1), "ams", 0.25, nil}, {int64(100), nil, 1.0, "new"}, {int64(2), "zzz", 9.0, "two"}, {int64(3), "ams", 0.75, nil}, {int64(4), "ams", 1.0, nil}})
			if got := maintScan(t, nt); !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}
		})
	}
}

func TestMergeTxn(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, true, dvProps)
	tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams", "ber"))
	m := NewMerge(mergeSource([]value.Row{{int64(1), "ams", 5.0}, {int64(50), "ber", 6.0}}), MergeOn("id")).
		WhenMatched().UpdateAll().WhenNotMatched().InsertAll()
	nt, res, err := tbl.Merge(ctx, m, WithTxn("q1", 7))
	if err != nil || !res.Committed {
		t.Fatal(err, res)
	}
	rows := maintScan(t, nt)
	if v := nt.Snapshot().TxnVersion("q1"); v != 7 {
		t.Fatalf("txn version %d", v)
	}
	// The replayed epoch is skipped.
	nt2, res, err := nt.Merge(ctx, m, WithTxn("q1", 7))
	if err != nil || res.Committed || nt2.Version() != nt.Version() || !slices.Equal(maintScan(t, nt2), rows) {
		t.Fatalf("replay: %v %+v", err, res)
	}
	// A txn MERGE that changes nothing still records its version.
	nt3, res, err := nt2.Merge(ctx, NewMerge(mergeSource(nil), MergeOn("id")).WhenMatched().Delete(), WithTxn("q1", 8))
	if err != nil || !res.Committed || nt3.Snapshot().TxnVersion("q1") != 8 {
		t.Fatalf("empty txn merge: %v %+v", err, res)
	}
}

// opMerge is a dmlOp of TestMergeConflicts: an upsert (or insert-only)
// MERGE of src by id and city.
func opMerge(src []value.Row, insertOnly bool) dmlOp {
	build := func() *MergeBuilder {
		m := NewMerge(mergeSource(src), MergeOn("id", "city"))
		if !insertOnly {
			m = m.WhenMatched().UpdateAll()
		}
		return m.WhenNotMatched().InsertAll()
	}
	ref := mergeRef{byCity: true, insert: func(s value.Row) value.Row { return s }}
	if !insertOnly {
		ref.matched = func(t, s value.Row) (value.Row, bool) { return s, true }
	}
	return dmlOp{
		name: fmt.Sprintf("merge(insertOnly=%v)", insertOnly),
		run: func(ctx context.Context, tbl *Table) error {
			_, _, err := tbl.Merge(ctx, build())
			return err
		},
		apply: func(rows []value.Row) []value.Row { return ref.apply(rows, src) },
	}
}

func TestMergeConflicts(t *testing.T) {
	input := maintRowsFor(0, 40, "ams", "ber", "cph")
	ams := func(start int) []value.Row { return maintRowsFor(start, 4, "ams") }
	ber := func(start int) []value.Row { return maintRowsFor(start, 4, "ber") }
	cases := []struct {
		name          string
		first, second dmlOp
		wantKinds     []error
	}{
		{"MERGE into the partition another MERGE read", opMerge(ams(2000), false), opMerge(slices.Concat(ams(0), ams(3000)), false),
			[]error{txlog.ErrConcurrentAppend}},
		{"insert-only MERGE into the partition another insert-only MERGE read", opMerge(ams(2000), true), opMerge(ams(3000), true),
			[]error{txlog.ErrConcurrentAppend}},
		{"insert-only MERGEs into other partitions", opMerge(ber(2000), true), opMerge(ams(3000), true), nil},
		{"upsert MERGEs of other partitions", opMerge(slices.Concat(ber(1), ber(2000)), false), opMerge(slices.Concat(ams(0), ams(3000)), false), nil},
		{"DELETE of a file a MERGE read", opDelete(Col("id").Eq(0), func(r value.Row) bool { return r[0] == int64(0) }), opMerge(ams(3), false),
			[]error{txlog.ErrConcurrentDeleteRead}},
		{"blind append into the partition a MERGE read: the merge retries", opAppend(ams(2000)), opMerge(ams(3000), false), nil},
	}
	dmlBackends(t, func(t *testing.T, newStore func(t *testing.T) objectstore.Store) {
		for _, c := range cases {
			for _, dv := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/dv=%v", c.name, dv), func(t *testing.T) {
					ctx := context.Background()
					store := newStore(t)
					tbl := conflictTable(t, store, true, dv)
					tbl, err := tbl.AppendRows(ctx, input)
					if err != nil {
						t.Fatal(err)
					}
					if err := c.first.run(ctx, tbl); err != nil {
						t.Fatalf("first: %v", err)
					}
					err = c.second.run(ctx, tbl)
					want := c.first.apply(input)
					if len(c.wantKinds) == 0 {
						if err != nil {
							t.Fatalf("second: %v", err)
						}
						want = c.second.apply(want)
					} else {
						for _, k := range c.wantKinds {
							if !errors.Is(err, k) {
								t.Fatalf("second: err = %v, want %v", err, k)
							}
						}
						assertNoOrphans(t, store)
					}
					latest, err := Open(ctx, "", WithStore(store))
					if err != nil {
						t.Fatal(err)
					}
					if got := maintScan(t, latest); !slices.Equal(got, renderSorted(want)) {
						t.Fatalf("rows:\n got %v\nwant %v", got, renderSorted(want))
					}
				})
			}
		}
	})
}

// TestColumnComparison: a predicate may compare two columns (MERGE's
// conditions need it; DELETE and ParsePredicate take it too).
func TestColumnComparison(t *testing.T) {
	ctx := context.Background()
	rows := []value.Row{{int64(1), "a", 0.5}, {int64(2), "b", 3.0}, {int64(3), nil, nil}, {int64(4), "d", 4.0}}
	for _, c := range []struct {
		where string
		keep  []int64
	}{
		{"id < v", []int64{1, 3, 4}},  // null v: not deleted
		{"id >= v", []int64{2, 3}},    // 4 >= 4.0 deleted, long vs double
		{"NOT id = v", []int64{3, 4}}, // 1 != 0.5 and 2 != 3
	} {
		t.Run(c.where, func(t *testing.T) {
			tbl, _ := maintTable(t, false, nil)
			tbl = maintAppend(t, tbl, rows)
			e, err := ParsePredicate(c.where, tbl.Schema())
			if err != nil {
				t.Fatal(err)
			}
			nt, _, err := tbl.Delete(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for r, err := range nt.Scan(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, r[0].(int64))
			}
			slices.Sort(got)
			if !slices.Equal(got, c.keep) {
				t.Errorf("kept %v, want %v", got, c.keep)
			}
		})
	}
	if _, _, err := newMemTableMaint(t).Delete(ctx, Col("id").Eq(Col("city"))); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("long = string: err = %v, want ErrInvalidArgument", err)
	}
}

func newMemTableMaint(t *testing.T) *Table {
	tbl, _ := maintTable(t, false, nil)
	return maintAppend(t, tbl, maintRowsFor(0, 3, "a"))
}
