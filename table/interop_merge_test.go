package table

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/value"
)

// Interop of MERGE: tables merged into by deltakit (every clause kind,
// with and without deletion vectors, partitioned and not) are read back by
// delta-rs; the expected rows come from mergeRef, a Go map merge of the
// input rows.

func writeMergeInteropTables(t *testing.T, newStore func(name string) objectstore.Store) []dmlInteropTable {
	ctx := context.Background()
	input := slices.Concat(maintRowsFor(0, 40, "ams", "ber", "cph"), maintRowsFor(40, 40, "ams"), maintRowsFor(80, 40, "ber", "cph"))
	src1 := maintRowsFor(90, 40, "ams", "cph") // ids 90..119 exist
	for _, r := range src1 {
		r[2] = -float64(r[0].(int64))
	}
	src2 := maintRowsFor(0, 30, "ber")
	var out []dmlInteropTable
	for _, dv := range []bool{false, true} {
		for _, partitioned := range []bool{false, true} {
			name := fmt.Sprintf("merge-dv%v-part%v", dv, partitioned)
			var props map[string]string
			if dv {
				props = dvProps
			}
			opts := []Option{WithStore(newStore(name)), WithProperties(props)}
			if partitioned {
				opts = append(opts, WithPartitionColumns("city"))
			}
			tbl, err := Create(ctx, "", maintSchema(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			tbl = maintAppend(t, tbl, input[:40])
			tbl = maintAppend(t, tbl, input[40:80])
			tbl = maintAppend(t, tbl, input[80:])
			// 1: upsert with a conditional delete.
			m := NewMerge(mergeSource(src1), MergeOn("id")).
				WhenMatched().If(Source("id").Lt(95)).Delete().
				WhenMatched().UpdateAll().
				WhenNotMatched().InsertAll()
			tbl, _, err = tbl.Merge(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			want := mergeRef{
				matched: func(t, s value.Row) (value.Row, bool) { return s, s[0].(int64) >= 95 },
				insert:  func(s value.Row) value.Row { return s },
			}.apply(input, src1)
			// 2: update by key, delete and update what the source lacks.
			m = NewMerge(mergeSource(src2), MergeOn("id")).
				WhenMatched().Update(map[string]Value{"v": Plus(Target("v"), 1000)}).
				WhenNotMatchedBySource().If(Target("id").Ge(125)).Delete().
				WhenNotMatchedBySource().If(Target("city").Eq("ams")).Update(map[string]Value{"v": Lit(0)})
			tbl, _, err = tbl.Merge(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			want = mergeRef{
				matched: func(t, s value.Row) (value.Row, bool) {
					return value.Row{t[0], t[1], t[2].(float64) + 1000}, true
				},
				bySource: func(t value.Row) (value.Row, bool) {
					if t[0].(int64) >= 125 {
						return nil, false
					}
					if t[1] == "ams" {
						return value.Row{t[0], t[1], 0.0}, true
					}
					return t, true
				},
			}.apply(want, src2)
			out = append(out, dmlInteropTable{name: name, tbl: tbl, want: want})
		}
	}
	return out
}

func TestInteropMergeLocal(t *testing.T) {
	py := testsupport.Python(t)
	newStore, uris := interopLocalStores(t)
	checkDMLInterop(t, py, writeMergeInteropTables(t, newStore), uris, nil)
}

func TestInteropMergeMinIO(t *testing.T) {
	py := testsupport.Python(t)
	newStore, uris, env := interopMinIOStores(t)
	checkDMLInterop(t, py, writeMergeInteropTables(t, newStore), uris, env)
}
