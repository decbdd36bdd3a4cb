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

// Time travel: open an older version by number (AtVersion) or by time
// (AtTimestamp). History shows the timestamps time travel uses, so any of
// them opens its version.
func ExampleAtTimestamp() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "timetravel")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	tbl, err := table.Create(ctx, dir, sch)
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(i)}}); err != nil {
			log.Fatal(err)
		}
	}
	count := func(t *table.Table) int {
		n := 0
		for _, err := range t.Scan(ctx) {
			if err != nil {
				log.Fatal(err)
			}
			n++
		}
		return n
	}

	v1, err := table.Open(ctx, dir, table.AtVersion(1))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("AtVersion(1): version %d, %d rows\n", v1.Version(), count(v1))

	history, err := tbl.History(ctx, 0) // newest first
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range history {
		at, err := table.Open(ctx, dir, table.AtTimestamp(e.Timestamp))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("AtTimestamp(history's time of v%d): version %d, %d rows\n", e.Version, at.Version(), count(at))
	}
	// Output:
	// AtVersion(1): version 1, 1 rows
	// AtTimestamp(history's time of v3): version 3, 3 rows
	// AtTimestamp(history's time of v2): version 2, 2 rows
	// AtTimestamp(history's time of v1): version 1, 1 rows
	// AtTimestamp(history's time of v0): version 0, 0 rows
}
