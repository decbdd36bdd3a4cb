package table

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/value"
)

// TestSparkMerge, in one Spark batch: Spark reads every table of
// writeMergeInteropTables to the reference rows and lists our MERGE
// commits in DESCRIBE HISTORY; and on twin tables (same appends, DVs on
// and off) Spark runs the same MERGE as deltakit: both end with the same
// rows, and Spark's row metrics equal ours under the same keys.
func TestSparkMerge(t *testing.T) {
	spark := testsupport.Spark(t)
	ctx := context.Background()
	root := t.TempDir()
	dirs := map[string]string{}
	newStore := func(name string) objectstore.Store {
		dir := filepath.Join(root, name)
		s, err := objectstore.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		dirs[name] = dir
		return s
	}
	cols := []string{"id", "city", "v"}
	var checks []sparkCheck
	for _, it := range writeMergeInteropTables(t, newStore) {
		checks = append(checks, sparkCheck{it.name + "/latest", testsupport.ReadRequest(dirs[it.name], nil), wantSparkRows(it.want, cols)})
		latest := it.tbl.Version()
		checks = append(checks, sparkCheck{it.name + "/history", testsupport.SQLRequest(fmt.Sprintf("DESCRIBE HISTORY delta.`%s`", dirs[it.name])),
			func(t *testing.T, res *testsupport.SparkResult) {
				h := sparkHistory(t, res)
				for _, v := range []int64{latest - 1, latest} {
					if h[v].operation != "MERGE" || h[v].params["predicate"] == "" {
						t.Errorf("version %d: Spark's history %+v, want MERGE with a predicate", v, h[v])
					}
				}
			}})
	}
	// Twins: deltakit merges into one, Spark into the other.
	input := slices.Concat(maintRowsFor(0, 40, "ams", "ber", "cph"), maintRowsFor(40, 40, "ams"))
	src := maintRowsFor(30, 20, "ams", "cph") // ids 30..49 exist, 50..79 too
	src = append(src, maintRowsFor(100, 5, "osl")...)
	for _, r := range src {
		r[2] = -float64(r[0].(int64))
	}
	var values []string
	for _, r := range src {
		values = append(values, fmt.Sprintf("(%dL, '%s', %gD)", r[0], r[1], r[2]))
	}
	for _, dv := range []bool{false, true} {
		var props map[string]string
		if dv {
			props = dvProps
		}
		var twins [2]*Table
		var names [2]string
		for i := range twins {
			names[i] = fmt.Sprintf("twin%d-dv%v", i, dv)
			tbl, err := Create(ctx, "", maintSchema(), WithStore(newStore(names[i])), WithProperties(props))
			if err != nil {
				t.Fatal(err)
			}
			tbl = maintAppend(t, tbl, input[:40])
			twins[i] = maintAppend(t, tbl, input[40:])
		}
		m := NewMerge(mergeSource(src), MergeOn("id")).
			WhenMatched().If(Source("id").Lt(35)).Delete().
			WhenMatched().UpdateAll().
			WhenNotMatched().InsertAll()
		_, res, err := twins[0].Merge(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		want := mergeRef{
			matched: func(t, s value.Row) (value.Row, bool) { return s, s[0].(int64) >= 35 },
			insert:  func(s value.Row) value.Row { return s },
		}.apply(input, src)
		dir, sparkV := dirs[names[1]], twins[1].Version()+1
		stmt := fmt.Sprintf("MERGE INTO delta.`%s` t USING (SELECT * FROM VALUES %s AS s(id, city, v)) s ON t.id = s.id "+
			"WHEN MATCHED AND s.id < 35 THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", dir, strings.Join(values, ", "))
		checks = append(checks,
			sparkCheck{names[0] + "/deltakit's MERGE", testsupport.ReadRequest(dirs[names[0]], nil), wantSparkRows(want, cols)},
			sparkCheck{names[1] + "/Spark's MERGE", testsupport.SQLRequest(stmt), func(*testing.T, *testsupport.SparkResult) {}},
			sparkCheck{names[1] + "/Spark's rows", testsupport.ReadRequest(dir, nil), wantSparkRows(want, cols)},
			sparkCheck{names[1] + "/Spark's metrics", testsupport.SQLRequest(fmt.Sprintf("DESCRIBE HISTORY delta.`%s`", dir)),
				func(t *testing.T, r *testsupport.SparkResult) {
					h := sparkHistory(t, r)[sparkV]
					if h.operation != "MERGE" {
						t.Fatalf("Spark's version %d is %q", sparkV, h.operation)
					}
					// Row counts are defined alike; file counts depend on
					// how each engine splits its output.
					for _, k := range []string{"numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsMatchedUpdated",
						"numTargetRowsNotMatchedBySourceUpdated", "numTargetRowsDeleted", "numTargetRowsMatchedDeleted",
						"numTargetRowsNotMatchedBySourceDeleted", "numTargetRowsCopied", "numOutputRows"} {
						if got, want := res.Metrics[k], h.metrics[k]; got != want {
							t.Errorf("%s: deltakit %q, Spark %q", k, got, want)
						}
					}
					for k := range h.metrics {
						if _, ok := res.Metrics[k]; !ok {
							t.Logf("Spark's metric %s = %s is not in deltakit's", k, h.metrics[k])
						}
					}
					for k := range res.Metrics {
						if _, ok := h.metrics[k]; !ok {
							t.Errorf("deltakit's metric %s is not one of Spark's %v", k, h.metrics)
						}
					}
					t.Logf("Spark: %v\ndeltakit: %v\nSpark params: %v", h.metrics, res.Metrics, h.params)
				}})
	}
	runSparkChecks(t, spark, checks)
}
