package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/txlog"
)

// dmlParallelTable is a table of 12 files of 10 rows each, every file
// holding both cities, so that Col("city").Eq("ams") must read all of them
// (DefaultScanConcurrency at once); it returns the table, its store and
// the store keys of its files in the order a DML scan plans them.
func dmlParallelTable(t *testing.T, props map[string]string) (*Table, *objectstore.Mem, []string) {
	t.Helper()
	tbl, mem := maintTable(t, false, props)
	for i := range 12 {
		tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, "ams", "ber"))
	}
	adds, err := tbl.Files(context.Background(), WithFilter(Col("city").Eq("ams")))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, a := range adds {
		keys = append(keys, txlog.DecodePath(a.Path))
	}
	if len(keys) != 12 {
		t.Fatalf("planned %d files, want 12", len(keys))
	}
	return tbl, mem, keys
}

// A DELETE or UPDATE over many files read at once, one of them corrupt,
// fails naming that file and writes nothing.
func TestDeleteUpdateParallelReadCorruptFile(t *testing.T) {
	ctx := context.Background()
	for _, dv := range []bool{false, true} {
		for _, op := range []string{"delete", "update"} {
			t.Run(fmt.Sprintf("%s/dv=%v", op, dv), func(t *testing.T) {
				var props map[string]string
				if dv {
					props = dvProps
				}
				tbl, mem, keys := dmlParallelTable(t, props)
				bad := keys[6]
				data, err := mem.Get(ctx, bad, objectstore.FullObject)
				if err != nil {
					t.Fatal(err)
				}
				if err := mem.Put(ctx, bad, bytes.Repeat([]byte{'x'}, len(data))); err != nil {
					t.Fatal(err)
				}
				before := maintKeys(t, mem)
				// The first files answer slowly: the corrupt one is read
				// while they are in flight.
				f := faultstore.New(mem)
				for _, k := range keys[:3] {
					f.Inject(faultstore.Fault{Op: faultstore.OpGet, KeyPrefix: k, Nth: 1, Kind: faultstore.Latency, Latency: 20 * time.Millisecond})
				}
				ft, err := Open(ctx, "", WithStore(f), WithTxnOptions(txlog.WithoutAutoCheckpoint()))
				if err != nil {
					t.Fatal(err)
				}
				where := Col("city").Eq("ams")
				if op == "delete" {
					_, _, err = ft.Delete(ctx, where)
				} else {
					_, _, err = ft.Update(ctx, where, map[string]Value{"v": Lit(-1.0)})
				}
				if err == nil {
					t.Fatal("DML over a corrupt file succeeded")
				}
				if !errors.Is(err, parquetio.ErrCorrupt) || !strings.Contains(err.Error(), "data file "+bad+":") {
					t.Fatalf("error %q does not name the corrupt file %s as corrupt", err, bad)
				}
				if after := maintKeys(t, mem); !slices.Equal(after, before) {
					t.Fatalf("failed DML left the store changed:\n got %v\nwant %v", after, before)
				}
				re, err := Open(ctx, "", WithStore(mem))
				if err != nil {
					t.Fatal(err)
				}
				if re.Version() != tbl.Version() {
					t.Fatalf("version %d after the failed DML, want %d", re.Version(), tbl.Version())
				}
			})
		}
	}
}

// Files read at once, the first answering last, still make the commit's
// removes (and the deletion vectors' re-adds) come out in the planned file
// order, run after run, with the same metrics.
func TestDeleteParallelReadOrder(t *testing.T) {
	ctx := context.Background()
	for _, dv := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", dv), func(t *testing.T) {
			var props map[string]string
			if dv {
				props = dvProps
			}
			base, mem, keys := dmlParallelTable(t, props)
			var firstMetrics map[string]string
			for run := range 3 {
				// A copy of the table, its first planned file slow to answer.
				cp := objectstore.NewMem(fmt.Sprintf("%s-%d", t.Name(), run))
				for _, k := range maintKeys(t, mem) {
					data, err := mem.Get(ctx, k, objectstore.FullObject)
					if err != nil {
						t.Fatal(err)
					}
					if err := cp.Put(ctx, k, data); err != nil {
						t.Fatal(err)
					}
				}
				f := faultstore.New(cp)
				f.Inject(faultstore.Fault{Op: faultstore.OpGet, KeyPrefix: keys[0], Nth: 1, Kind: faultstore.Latency, Latency: 30 * time.Millisecond})
				ft, err := Open(ctx, "", WithStore(f), WithTxnOptions(txlog.WithoutAutoCheckpoint()))
				if err != nil {
					t.Fatal(err)
				}
				nt, res, err := ft.Delete(ctx, Col("city").Eq("ams"))
				if err != nil {
					t.Fatal(err)
				}
				if nt.Version() != base.Version()+1 || res.DeletedRows != 60 {
					t.Fatalf("run %d: version %d, %d rows deleted; want version %d, 60 rows", run, nt.Version(), res.DeletedRows, base.Version()+1)
				}
				var removes, dvAdds []string
				for _, a := range commitActions(t, cp, nt.Version()) {
					switch {
					case a.Remove != nil:
						removes = append(removes, txlog.DecodePath(a.Remove.Path))
					case a.Add != nil && a.Add.DeletionVector != nil:
						dvAdds = append(dvAdds, txlog.DecodePath(a.Add.Path))
					}
				}
				if !slices.Equal(removes, keys) {
					t.Fatalf("run %d: removes in order\n%v\nwant the planned order\n%v", run, removes, keys)
				}
				if dv && !slices.Equal(dvAdds, keys) {
					t.Fatalf("run %d: deletion vector adds in order\n%v\nwant the planned order\n%v", run, dvAdds, keys)
				}
				m := maps.Clone(res.Metrics)
				for _, k := range []string{"executionTimeMs", "scanTimeMs", "rewriteTimeMs"} {
					delete(m, k)
				}
				if run == 0 {
					firstMetrics = m
				} else if !maps.Equal(m, firstMetrics) {
					t.Fatalf("run %d: metrics %v, run 0 had %v", run, m, firstMetrics)
				}
			}
		})
	}
}
