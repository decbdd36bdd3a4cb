package table

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// A MERGE whose source is Arrow record batches: the same upsert as from
// rows, the result computed here from the inputs.
func TestMergeArrowSource(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("v", schema.Primitive(schema.String), true))
	tbl, err := Create(ctx, t.TempDir(), sch)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(1), "a"}, {int64(2), "b"}, {int64(3), "c"}}); err != nil {
		t.Fatal(err)
	}
	asch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	for _, batch := range [][]struct {
		id int64
		v  string
	}{{{2, "B"}, {4, "d"}}, {{3, "C"}}} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
		for _, r := range batch {
			b.Field(0).(*array.Int64Builder).Append(r.id)
			b.Field(1).(*array.StringBuilder).Append(r.v)
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	rdr, err := array.NewRecordReader(asch, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	src, err := MergeArrow(ctx, rdr)
	if err != nil {
		t.Fatal(err)
	}
	tbl, res, err := tbl.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll())
	if err != nil {
		t.Fatal(err)
	}
	if res.SourceRows != 3 || res.UpdatedRows != 2 || res.InsertedRows != 1 {
		t.Errorf("merge result %+v, want 3 source rows, 2 updated, 1 inserted", res)
	}
	var got []string
	for r, err := range tbl.Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r[1].(string))
	}
	slices.Sort(got)
	if want := []string{"B", "C", "a", "d"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if _, err := MergeArrow(ctx, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil reader: %v, want ErrInvalidArgument", err)
	}
}
