package table_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// A typed append: the schema comes from the struct, rows are split by the
// partition column into Hive-style directories.
func ExampleAppend() {
	type Flight struct {
		Date   time.Time `delta:"date,timestamp_ntz"`
		Delay  int64     `delta:"delay,notnull"`
		Origin string    `delta:"origin"`
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "flights")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	sch, err := table.SchemaOf[Flight]()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sch)
	tbl, err := table.Create(ctx, dir, sch, table.WithPartitionColumns("origin"))
	if err != nil {
		log.Fatal(err)
	}
	day := time.Date(2024, 6, 1, 8, 30, 0, 0, time.UTC)
	tbl, err = table.Append(ctx, tbl, []Flight{
		{Date: day, Delay: 12, Origin: "AMS"},
		{Date: day.Add(time.Hour), Delay: -3, Origin: "SFO"},
		{Date: day.Add(2 * time.Hour), Delay: 40, Origin: "AMS"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", tbl.Version())
	for _, f := range tbl.Snapshot().Files() {
		n, _ := f.NumRecords()
		fmt.Println(f.PartitionValues["origin"], n, "rows")
	}
	// Output:
	// struct<date:timestamp_ntz,delay:long,origin:string>
	// version 1
	// AMS 2 rows
	// SFO 1 rows
}

// Untyped rows follow the table schema; replaceWhere overwrites only the
// partitions a predicate on partition columns selects.
func ExampleTable_OverwriteRows() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "events")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sch := schema.NewStruct(
		schema.NewField("day", schema.Primitive(schema.Date), false),
		schema.NewField("count", schema.Primitive(schema.Long), true),
	)
	tbl, err := table.Create(ctx, dir, sch, table.WithPartitionColumns("day"))
	if err != nil {
		log.Fatal(err)
	}
	d1 := value.DateOf(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	tbl, err = tbl.AppendRows(ctx, []value.Row{{d1, int64(1)}, {d1 + 1, int64(2)}})
	if err != nil {
		log.Fatal(err)
	}
	tbl, err = tbl.OverwriteRows(ctx, []value.Row{{d1, int64(10)}},
		table.WithReplaceWhere(table.Col("day").Eq(d1)))
	if err != nil {
		log.Fatal(err)
	}
	ci := tbl.Snapshot().CommitInfo()
	fmt.Println(ci.Operation, ci.OperationParameters["mode"], ci.OperationParameters["predicate"])
	for row, err := range tbl.Scan(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(row[0], row[1])
	}
	// Unordered output:
	// WRITE Overwrite ["day = DATE '2024-01-01'"]
	// 2024-01-01 10
	// 2024-01-02 2
}

// A typed overwrite replaces every row of the table with the given ones.
func ExampleOverwrite() {
	type Count struct {
		Day   string `delta:"day"`
		Count int64  `delta:"count"`
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "counts")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sch, err := table.SchemaOf[Count]()
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := table.Create(ctx, dir, sch)
	if err != nil {
		log.Fatal(err)
	}
	if tbl, err = table.Append(ctx, tbl, []Count{{"mon", 1}, {"tue", 2}}); err != nil {
		log.Fatal(err)
	}
	if tbl, err = table.Overwrite(ctx, tbl, []Count{{"wed", 3}}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", tbl.Version(), tbl.Snapshot().CommitInfo().OperationParameters["mode"])
	for c, err := range table.ScanAs[Count](ctx, tbl) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.Day, c.Count)
	}
	// Output:
	// version 2 Overwrite
	// wed 3
}
