package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

var dvProps = map[string]string{"delta.enableDeletionVectors": "true"}

// refFilter renders the rows of maintRowsFor-style input that keep does
// not drop, as maintScan renders them: the reference a test compares with.
func refFilter(rows []value.Row, drop func(value.Row) bool) []string {
	var out []string
	for _, r := range rows {
		if !drop(r) {
			out = append(out, fmt.Sprint(r...))
		}
	}
	slices.Sort(out)
	return out
}

func TestDelete(t *testing.T) {
	ctx := context.Background()
	// 3 appends of 40 rows: 3+ files (per city when partitioned).
	input := slices.Concat(maintRowsFor(0, 40, "ams", "ber", "cph"), maintRowsFor(40, 40, "ams", "ber"), maintRowsFor(80, 40, "cph"))
	cases := []struct {
		name  string
		where Expr
		drop  func(value.Row) bool
		// wantRemovedWhole: files removed without being read (partition predicate)
	}{
		{"by data column", Col("id").Lt(10), func(r value.Row) bool { return r[0].(int64) < 10 }},
		{"by partition column", Col("city").Eq("ber"), func(r value.Row) bool { return r[1] == "ber" }},
		{"mixed", And(Col("city").Eq("ams"), Col("id").Ge(50)), func(r value.Row) bool { return r[1] == "ams" && r[0].(int64) >= 50 }},
		{"or across files", Or(Col("id").Eq(3), Col("id").Eq(100)), func(r value.Row) bool { return r[0] == int64(3) || r[0] == int64(100) }},
		{"every row", nil, func(value.Row) bool { return true }},
		{"null never matches", Col("v").IsNull(), func(value.Row) bool { return false }},
	}
	for _, partitioned := range []bool{false, true} {
		for _, dv := range []bool{false, true} {
			for _, c := range cases {
				name := fmt.Sprintf("%s/partitioned=%v/dv=%v", c.name, partitioned, dv)
				t.Run(name, func(t *testing.T) {
					var props map[string]string
					if dv {
						props = dvProps
					}
					tbl, _ := maintTable(t, partitioned, props)
					tbl = maintAppend(t, tbl, input[:40])
					tbl = maintAppend(t, tbl, input[40:80])
					tbl = maintAppend(t, tbl, input[80:])
					before := tbl.Version()
					nt, res, err := tbl.Delete(ctx, c.where)
					if err != nil {
						t.Fatal(err)
					}
					want := refFilter(input, c.drop)
					wantDeleted := int64(len(input) - len(want))
					if res.DeletedRows != wantDeleted {
						t.Errorf("DeletedRows = %d, want %d", res.DeletedRows, wantDeleted)
					}
					if wantDeleted == 0 {
						if res.Committed || nt.Version() != before {
							t.Fatalf("nothing matched but committed version %d (Committed %v)", nt.Version(), res.Committed)
						}
						return
					}
					if !res.Committed || nt.Version() != before+1 {
						t.Fatalf("committed %v at version %d, want version %d", res.Committed, nt.Version(), before+1)
					}
					if got := maintScan(t, nt); !slices.Equal(got, want) {
						t.Fatalf("rows after delete:\n got %v\nwant %v", got, want)
					}
					// Re-opened from the log, the same.
					re, err := Open(ctx, "", WithStore(nt.Store()))
					if err != nil {
						t.Fatal(err)
					}
					if got := maintScan(t, re); !slices.Equal(got, want) {
						t.Fatalf("rows after reopen:\n got %v\nwant %v", got, want)
					}
					// DVs only where enabled; copy-on-write otherwise.
					var withDV int
					for _, f := range re.Snapshot().Files() {
						if f.DeletionVector != nil {
							withDV++
						}
					}
					if !dv && withDV > 0 {
						t.Errorf("%d files carry a DV on a table without deletion vectors", withDV)
					}
					if dv && c.name == "by data column" && withDV == 0 {
						t.Errorf("no DV written on a table with deletion vectors")
					}
					ci := lastCommitInfo(t, re)
					if ci.Operation != "DELETE" || ci.OperationMetrics["numDeletedRows"] != fmt.Sprint(wantDeleted) {
						t.Errorf("commitInfo %s metrics %v", ci.Operation, ci.OperationMetrics)
					}
					maintAssertLive(t, re)
				})
			}
		}
	}
}

// lastCommitInfo reads the commitInfo of the table's latest version.
func lastCommitInfo(t *testing.T, tbl *Table) *txlog.CommitInfo {
	t.Helper()
	actions, err := txlog.ReadCommit(context.Background(), tbl.Store(), tbl.Version())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if a.CommitInfo != nil {
			return a.CommitInfo
		}
	}
	t.Fatalf("version %d has no commitInfo", tbl.Version())
	return nil
}

func TestDeleteTwiceMergesDeletionVectors(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, dvProps)
	input := maintRowsFor(0, 50, "ams")
	tbl = maintAppend(t, tbl, input)
	tbl, res, err := tbl.Delete(ctx, Col("id").Lt(5))
	if err != nil || res.DeletionVectorsAdded != 1 {
		t.Fatalf("first delete: %+v, %v", res, err)
	}
	tbl, res, err = tbl.Delete(ctx, Col("id").Ge(45))
	if err != nil || res.DeletionVectorsUpdated != 1 || res.DeletedRows != 5 {
		t.Fatalf("second delete: %+v, %v", res, err)
	}
	files := tbl.Snapshot().Files()
	if len(files) != 1 || files[0].DeletionVector == nil || files[0].DeletionVector.Cardinality != 10 {
		t.Fatalf("files after two deletes: %+v", files)
	}
	want := refFilter(input, func(r value.Row) bool { id := r[0].(int64); return id < 5 || id >= 45 })
	if got := maintScan(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %v\nwant %v", got, want)
	}
	// Deleting the rest removes the file and its DV.
	tbl, res, err = tbl.Delete(ctx, nil)
	if err != nil || res.DeletedRows != 40 || res.DeletionVectorsRemoved != 1 || len(tbl.Snapshot().Files()) != 0 {
		t.Fatalf("delete rest: %+v, %v, files %d", res, err, len(tbl.Snapshot().Files()))
	}
}

func TestDeleteBadInput(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		props map[string]string
		where Expr
		want  error
		msg   string
	}{
		{"missing column", nil, Col("nope").Eq(1), ErrInvalidArgument, "nope"},
		{"type mismatch", nil, Col("id").Eq("x"), ErrInvalidArgument, "id"},
		{"append-only", map[string]string{"delta.appendOnly": "true"}, Col("id").Eq(1), ErrAppendOnly, "append-only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, mem := maintTable(t, true, c.props)
			tbl = maintAppend(t, tbl, maintRowsFor(0, 10, "ams"))
			keys := maintKeys(t, mem)
			_, _, err := tbl.Delete(ctx, c.where)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %v naming %q", err, c.want, c.msg)
			}
			if got := maintKeys(t, mem); !slices.Equal(got, keys) {
				t.Fatalf("store changed:\n got %v\nwant %v", got, keys)
			}
		})
	}
}

// Deletion vectors are table data: vacuum keeps the live ones and the data
// files they apply to, deletes the replaced ones; optimize applies them and
// writes files without DVs. Rows stay those of the reference throughout.
func TestDeletionVectorsVacuumOptimize(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, dvProps)
	input := maintRowsFor(0, 60, "ams")
	tbl = maintAppend(t, tbl, input)
	var err error
	if tbl, _, err = tbl.Delete(ctx, Col("id").Lt(10)); err != nil {
		t.Fatal(err)
	}
	first := tbl.Snapshot().Files()[0].DeletionVector
	if tbl, _, err = tbl.Delete(ctx, Col("id").Ge(50)); err != nil {
		t.Fatal(err)
	}
	second := tbl.Snapshot().Files()[0].DeletionVector
	firstKey, _ := first.AbsolutePath()
	secondKey, _ := second.AbsolutePath()
	want := refFilter(input, func(r value.Row) bool { id := r[0].(int64); return id < 10 || id >= 50 })

	res, err := reopenAt(t, tbl, maintAt(time.Hour)).Vacuum(ctx, WithVacuumRetention(0), WithVacuumForce(true))
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, f := range res.Files {
		deleted = append(deleted, f.Path)
	}
	if !slices.Contains(deleted, firstKey) || slices.Contains(deleted, secondKey) || len(deleted) != 1 {
		t.Fatalf("vacuum deleted %v; want only the replaced DV file %s (live one %s)", deleted, firstKey, secondKey)
	}
	if got := maintScan(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("rows after vacuum:\n got %v\nwant %v", got, want)
	}
	maintAssertLive(t, tbl)

	tbl, ores, err := tbl.Optimize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tbl.Snapshot().Files() {
		if f.DeletionVector != nil {
			t.Fatalf("optimize left a DV on %s (result %+v)", f.Path, ores)
		}
	}
	if got := maintScan(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("rows after optimize:\n got %v\nwant %v", got, want)
	}
}

// Files whose stats prove that every row matches are removed without being
// read; files the stats cannot decide are read.
func TestDeleteByStatsReadsNothing(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		where     Expr
		wantRead  int // data files read
		wantWhole int // files removed whole
	}{
		{"range covers the middle file", And(Col("id").Ge(40), Col("id").Lt(80)), 0, 1},
		{"range covers two files", Col("id").Ge(40), 0, 2},
		{"range cuts a file", Col("id").Ge(50), 1, 1},
		{"not-null column", Col("id").IsNotNull(), 0, 3},
		{"float bounds are not trusted", Col("v").Ge(0.0), 3, 3},
		{"or of a covered file and a cut one", Or(Col("id").Lt(40), Col("id").Eq(100)), 1, 1},
	}
	for _, dv := range []bool{false, true} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/dv=%v", c.name, dv), func(t *testing.T) {
				var props map[string]string
				if dv {
					props = dvProps
				}
				tbl, mem := maintTable(t, false, props)
				input := maintRowsFor(0, 120, "ams")
				tbl = maintAppend(t, tbl, input[:40])
				tbl = maintAppend(t, tbl, input[40:80])
				maintAppend(t, tbl, input[80:])
				f := faultstore.New(mem)
				ft, err := Open(ctx, "", WithStore(f), WithTxnOptions(txlog.WithoutAutoCheckpoint()))
				if err != nil {
					t.Fatal(err)
				}
				before := len(f.Calls())
				nt, res, err := ft.Delete(ctx, c.where)
				if err != nil {
					t.Fatal(err)
				}
				read := map[string]bool{}
				for _, call := range f.Calls()[before:] {
					if call.Op == faultstore.OpGet && strings.HasSuffix(call.Key, ".parquet") {
						read[call.Key] = true
					}
				}
				if len(read) != c.wantRead {
					t.Errorf("read %d data files %v, want %d", len(read), read, c.wantRead)
				}
				if whole := res.RemovedFiles - res.AddedFiles; dv && res.RemovedFiles != c.wantWhole {
					t.Errorf("removed %d files whole, want %d (%+v)", res.RemovedFiles, c.wantWhole, res)
				} else if !dv && whole != c.wantWhole {
					t.Errorf("removed %d files whole, want %d (%+v)", whole, c.wantWhole, res)
				}
				want := refFilter(input, func(r value.Row) bool { return matchesRef(c.name, r) })
				if got := maintScan(t, nt); !slices.Equal(got, want) {
					t.Fatalf("rows:\n got %v\nwant %v", got, want)
				}
			})
		}
	}
}

// matchesRef is TestDeleteByStatsReadsNothing's predicates over input rows.
func matchesRef(name string, r value.Row) bool {
	id := r[0].(int64)
	switch name {
	case "range covers the middle file":
		return id >= 40 && id < 80
	case "range covers two files":
		return id >= 40
	case "range cuts a file":
		return id >= 50
	case "or of a covered file and a cut one":
		return id < 40 || id == 100
	}
	return true
}
