package table_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/deltakit/deltakit/table"
)

// Flight is one row of the example table; field tags name the columns.
type Flight struct {
	Date     time.Time `delta:"date,timestamp_ntz"`
	Delay    int64     `delta:"delay"`
	Distance int64     `delta:"distance"`
	Origin   string    `delta:"origin"`
}

// Create a partitioned table, append typed rows and scan them back with a
// filter.
func Example() {
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
	tbl, err := table.Create(ctx, dir, sch, table.WithPartitionColumns("origin"))
	if err != nil {
		log.Fatal(err)
	}
	day := time.Date(2024, 1, 2, 8, 30, 0, 0, time.UTC)
	tbl, err = table.Append(ctx, tbl, []Flight{
		{day, 5, 300, "SFO"},
		{day, 42, 1200, "JFK"},
		{day.Add(time.Hour), 0, 300, "SFO"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", tbl.Version())
	for f, err := range table.ScanAs[Flight](ctx, tbl, table.WithFilter(table.Col("origin").Eq("SFO"))) {
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
