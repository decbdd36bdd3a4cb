package table

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// TestVerifyValues: Verify checks the values of the live files' add
// actions, not only that the files exist (issue 18 item 5).
func TestVerifyValues(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(
		schema.NewField("v", schema.Primitive(schema.Long), true),
		schema.NewField("p", schema.Primitive(schema.Integer), true),
		schema.NewField("d", schema.Primitive(schema.Date), true))
	tests := []struct {
		name   string
		mutate func(a *txlog.Add)
		want   string // substring of the invalid-value detail; "" for none
	}{
		{"valid", func(*txlog.Add) {}, ""},
		{"null partition value", func(a *txlog.Add) { a.PartitionValues["p"] = "" }, ""},
		{"negative size", func(a *txlog.Add) { a.Size = -5 }, "add.size is negative: -5"},
		{"negative numRecords", func(a *txlog.Add) { a.Stats = `{"numRecords":-9223372036854775800}` }, "is negative"},
		{"absurd numRecords", func(a *txlog.Add) { a.Stats = `{"numRecords":4611686018427387904}` }, "above 2^53"},
		{"fractional numRecords", func(a *txlog.Add) { a.Stats = `{"numRecords":1.5}` }, "not an integer"},
		{"numRecords beyond int64", func(a *txlog.Add) { a.Stats = `{"numRecords":1e30}` }, "not an integer"},
		{"stats not JSON", func(a *txlog.Add) { a.Stats = `{"numRecords":` }, "not a JSON object"},
		{"int partition value", func(a *txlog.Add) { a.PartitionValues["p"] = "abc" }, `partition value "abc" of column p`},
		{"int partition value overflows", func(a *txlog.Add) { a.PartitionValues["p"] = "3000000000" }, "column p"},
		{"date partition value", func(a *txlog.Add) { a.PartitionValues["d"] = "2024-13-45" }, "column d"},
		{"missing partition column", func(a *txlog.Add) { delete(a.PartitionValues, "d") }, "lacks partition column d"},
		{"extra partition key", func(a *txlog.Add) { a.PartitionValues["zz"] = "1" }, `names "zz"`},
		{"DV cardinality above numRecords", func(a *txlog.Add) { *a = *withDV(t, a, 0, 1, 2, 3) }, "above stats.numRecords 2"},
		{"negative DV cardinality", func(a *txlog.Add) { *a = *withDV(t, a, 0); a.DeletionVector.Cardinality = -1 }, "cardinality is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newScanFixture(t, sch, []string{"p", "d"}, nil, nil)
			d := value.Date(19000)
			a := f.file("x", value.Row{int64(1), int32(7), d}, value.Row{int64(2), int32(7), d})
			tc.mutate(a)
			f.commit(a)
			rep, err := Verify(ctx, f.store)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.Problems {
				if p.Kind == ProblemInvalidValue {
					got = append(got, p.String())
					if p.Version != 0 || p.Path != txlog.DecodePath(a.Path) {
						t.Errorf("problem %v: want version 0 and path %s", p, a.Path)
					}
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("problems %v, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("problems %v, want one containing %q", got, tc.want)
			}
		})
	}
}

// TestVerifyIncompleteMultiPartCheckpoint: an incomplete multi-part
// checkpoint is reported under the names of the parts that exist, with the
// missing parts, not under a classic checkpoint name that does not exist.
func TestVerifyIncompleteMultiPartCheckpoint(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("v", schema.Primitive(schema.Long), true))
	f := newScanFixture(t, sch, nil, nil, nil)
	f.commit(f.file("a", value.Row{int64(1)}))
	f.commit(f.file("b", value.Row{int64(2)}))
	snap, err := txlog.Load(ctx, f.store)
	if err != nil {
		t.Fatal(err)
	}
	if err := txlog.WriteCheckpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	// Turn the classic checkpoint of version 1 into parts 1 and 3 of 3.
	data, err := f.store.Get(ctx, txlog.CheckpointKey(1), objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Delete(ctx, txlog.CheckpointKey(1)); err != nil {
		t.Fatal(err)
	}
	part := func(p, n int) string {
		return fmt.Sprintf("%s%020d.checkpoint.%010d.%010d.parquet", txlog.LogPrefix, 1, p, n)
	}
	for _, k := range []string{part(1, 3), part(3, 3)} {
		if err := f.store.Put(ctx, k, data); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(ctx, f.store)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 {
		t.Fatalf("problems %v, want one", rep.Problems)
	}
	p := rep.Problems[0]
	if p.Kind != ProblemCheckpoint || p.Version != 1 || p.Path != part(1, 3)+", "+part(3, 3) ||
		!strings.Contains(p.Detail, "part 2 of 3 missing") || strings.Contains(p.String(), txlog.CheckpointKey(1)) {
		t.Errorf("problem %v, want the incomplete checkpoint under its part names", p)
	}
}
