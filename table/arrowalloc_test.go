package table

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/value"
)

// TestScanArrowStringsOutliveBatches: strings taken with String.Value
// (which aliases the array's bytes) keep their values after their batch is
// released and the scan goes on, for plain-encoded and dictionary-read
// string columns, also when the rows reach the caller through a filter or
// a nested column: the scan's pooled buffers never recycle the bytes of
// variable-length data it emitted.
func TestScanArrowStringsOutliveBatches(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("id", prim(schema.Long), false), field("u", prim(schema.String), true),
		field("d", prim(schema.String), true), field("b", prim(schema.Binary), true))
	tbl, err := Create(ctx, t.TempDir(), sch)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	var rows []value.Row
	for i := range n {
		// u: distinct (read plain), d: 7 values (read as a dictionary).
		rows = append(rows, value.Row{int64(i), fmt.Sprintf("unique-%08d-%s", i, strings.Repeat("x", i%23)),
			fmt.Sprintf("d%d", i%7), []byte(fmt.Sprintf("bin-%08d", i))})
	}
	for range 2 {
		if tbl, err = tbl.AppendRows(ctx, rows[:n/2]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n/2:]
	}
	for _, tc := range []struct {
		name string
		opts []ScanOption
		want func(i int) bool
	}{
		{"all", nil, func(int) bool { return true }},
		{"filter", []ScanOption{WithFilter(Col("d").Ne("d3"))}, func(i int) bool { return i%7 != 3 }},
	} {
		for _, conc := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/conc%d", tc.name, conc), func(t *testing.T) {
				opts := append([]ScanOption{withArrowTuning(scan.ArrowTuning{Batch: 500}), WithScanConcurrency(conc)}, tc.opts...)
				rr, err := tbl.ScanArrow(ctx, opts...)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int64
				var us, ds []string
				var bs [][]byte
				for rr.Next() {
					rec := rr.RecordBatch()
					id := rec.Column(0).(*array.Int64)
					u, d, b := rec.Column(1).(*array.String), rec.Column(2).(*array.String), rec.Column(3).(*array.Binary)
					for k := range int(rec.NumRows()) {
						ids = append(ids, id.Value(k))
						us = append(us, u.Value(k))
						ds = append(ds, d.Value(k))
						bs = append(bs, b.Value(k))
					}
				}
				if err := rr.Err(); err != nil {
					t.Fatal(err)
				}
				rr.Release()
				var want int
				for i := range n {
					if tc.want(i) {
						want++
					}
				}
				if len(ids) != want {
					t.Fatalf("%d rows, want %d", len(ids), want)
				}
				for k, id := range ids {
					i := int(id)
					if wu := fmt.Sprintf("unique-%08d-%s", i, strings.Repeat("x", i%23)); us[k] != wu {
						t.Fatalf("row %d: u %q after its batch was released, want %q", i, us[k], wu)
					}
					if wd := fmt.Sprintf("d%d", i%7); ds[k] != wd {
						t.Fatalf("row %d: d %q after its batch was released, want %q", i, ds[k], wd)
					}
					if wb := fmt.Sprintf("bin-%08d", i); string(bs[k]) != wb {
						t.Fatalf("row %d: b %q after its batch was released, want %q", i, bs[k], wb)
					}
				}
			})
		}
	}
}
