package table_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// Renaming and dropping columns is metadata only on a table with column
// mapping: the data files keep their physical column names.
func ExampleTable_RenameColumn() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "colmap")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("delay", schema.Primitive(schema.Long), true),
		schema.NewField("note", schema.Primitive(schema.String), true))
	tbl, err := table.Create(ctx, dir, sch, table.WithProperties(map[string]string{"delta.columnMapping.mode": "name"}))
	if err != nil {
		log.Fatal(err)
	}
	if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(1), int64(12), "late"}}); err != nil {
		log.Fatal(err)
	}
	if tbl, err = tbl.RenameColumn(ctx, "delay", "delay_min"); err != nil {
		log.Fatal(err)
	}
	if tbl, err = tbl.DropColumn(ctx, "note"); err != nil {
		log.Fatal(err)
	}
	fmt.Println(tbl.Schema())
	for r, err := range tbl.Scan(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r)
	}
	// Output:
	// struct<id:long,delay_min:long>
	// [1 12]
}
