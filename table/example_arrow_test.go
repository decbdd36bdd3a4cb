package table_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/table"
)

// Record batches in and out: AppendArrow writes an Arrow stream to a new
// table (its schema from arrowio.DeltaSchema of the batches' schema), and
// ScanArrow reads it back as record batches, here with a filter and a
// projection.
func ExampleTable_AppendArrow() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "arrow")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	asch := arrow.NewSchema([]arrow.Field{
		{Name: "origin", Type: arrow.BinaryTypes.String},
		{Name: "delay", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, asch)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"AMS", "SFO", "SFO"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{12, 0, 40}, []bool{true, false, true})
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(asch, []arrow.RecordBatch{rec})
	if err != nil {
		log.Fatal(err)
	}
	defer rr.Release()

	sch, err := arrowio.DeltaSchema(asch)
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := table.Create(ctx, dir, sch)
	if err != nil {
		log.Fatal(err)
	}
	if tbl, err = tbl.AppendArrow(ctx, rr); err != nil {
		log.Fatal(err)
	}
	fmt.Println(sch, "version", tbl.Version())

	out, err := tbl.ScanArrow(ctx,
		table.WithFilter(table.Col("origin").Eq("SFO")), table.WithColumns("delay"))
	if err != nil {
		log.Fatal(err)
	}
	defer out.Release()
	for out.Next() {
		batch := out.RecordBatch()
		fmt.Println(batch.Schema().Field(0), batch.NumRows(), "rows:", batch.Column(0))
	}
	if err := out.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// struct<origin:string,delay:long> version 1
	// delay: type=int64, nullable 2 rows: [(null) 40]
}
