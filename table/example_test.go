package table_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/deltakit/deltakit/table"
)

// Create a partitioned table, append typed rows and scan them back with a
// filter.
func Example() {
	ctx := context.Background()
	uri, err := os.MkdirTemp("", "flights") // or "s3://bucket/flights"
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(uri)

	type Flight struct {
		Date     time.Time `delta:"date,timestamp_ntz"`
		Delay    int64     `delta:"delay"`
		Distance int64     `delta:"distance"`
		Origin   string    `delta:"origin"`
	}
	sch, err := table.SchemaOf[Flight]()
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := table.Create(ctx, uri, sch, table.WithPartitionColumns("origin"))
	if err != nil {
		log.Fatal(err)
	}
	day := time.Date(2024, 1, 2, 8, 30, 0, 0, time.UTC)
	tbl, err = table.Append(ctx, tbl, []Flight{ // one commit; returns the table at the new version
		{day, 5, 300, "SFO"},
		{day, 42, 1200, "JFK"},
		{day.Add(time.Hour), 0, 300, "SFO"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", tbl.Version())
	for f, err := range table.ScanAs[Flight](ctx, tbl, table.WithFilter(table.Col("origin").Eq("SFO"))) { // typed rows
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(f.Origin, f.Delay, f.Date.Format(time.DateTime))
	}
	// Output:
	// version 1
	// SFO 5 2024-01-02 08:30:00
	// SFO 0 2024-01-02 09:30:00
}
