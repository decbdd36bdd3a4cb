package streamsink_test

import (
	"context"
	"fmt"
	"log"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// A sink restart: the query dies after the commit of epoch 1 landed but
// before its source recorded epoch 1 as done (its offsets lag the table).
// The restarted query replays from epoch 1; the sink skips the replayed
// epoch and the table holds every epoch once.
func ExampleOpen() {
	ctx := context.Background()
	mem := objectstore.NewMem("restart-example") // or objectstore.Open(ctx, "s3://bucket/events")
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	if _, err := table.Create(ctx, "", sch, table.WithStore(mem)); err != nil {
		log.Fatal(err)
	}
	source := func(epoch int64) []value.Row { return []value.Row{{epoch}} }

	// First run: epochs 0 and 1 commit, then the process dies.
	sink, err := streamsink.Open(ctx, "", "query-1", nil, table.WithStore(mem))
	if err != nil {
		log.Fatal(err)
	}
	for epoch := int64(0); epoch < 2; epoch++ {
		res, err := sink.WriteEpoch(ctx, epoch, source(epoch))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("epoch %d: committed, version %d\n", epoch, res.Version)
	}

	// Restart: the source replays from the last epoch it knows was
	// acknowledged (0), so epoch 1 comes again.
	sink, err = streamsink.Open(ctx, "", "query-1", nil, table.WithStore(mem))
	if err != nil {
		log.Fatal(err)
	}
	last, err := sink.LastCommittedEpoch(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last committed epoch in the table:", last)
	for epoch := int64(1); epoch < 3; epoch++ {
		res, err := sink.WriteEpoch(ctx, epoch, source(epoch))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("epoch %d: skipped %v, version %d\n", epoch, res.Skipped, res.Version)
	}
	// Output:
	// epoch 0: committed, version 1
	// epoch 1: committed, version 2
	// last committed epoch in the table: 1
	// epoch 1: skipped true, version 2
	// epoch 2: skipped false, version 3
}
