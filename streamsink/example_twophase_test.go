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

// A checkpointing processor (Flink's model) with the two-phase API: on
// each checkpoint barrier it prepares the epoch and stores the
// committable's bytes in its checkpoint; when the checkpoint completes it
// commits. Here the process dies after checkpoint 1 completed but before
// (or while) committing epoch 1; the restart restores the checkpoint,
// commits its pending committable and continues.
func ExampleSink_Prepare() {
	ctx := context.Background()
	mem := objectstore.NewMem("two-phase-example") // or objectstore.Open(ctx, "s3://bucket/events")
	sch := schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true))
	if _, err := table.Create(ctx, "", sch, table.WithStore(mem)); err != nil {
		log.Fatal(err)
	}
	source := func(epoch int64) []value.Row { return []value.Row{{epoch * 10}, {epoch*10 + 1}} }

	// The processor's own checkpoint storage: the committables not yet
	// known to be committed, and where the source resumes.
	var checkpoint struct {
		next    int64
		pending [][]byte
	}

	sink, err := streamsink.Open(ctx, "", "query-1", nil, table.WithStore(mem))
	if err != nil {
		log.Fatal(err)
	}
	for epoch := int64(0); epoch < 2; epoch++ {
		// Barrier: pre-commit the epoch.
		c, err := sink.Prepare(ctx, epoch, source(epoch))
		if err != nil {
			log.Fatal(err)
		}
		b, err := c.MarshalBinary()
		if err != nil {
			log.Fatal(err)
		}
		checkpoint.next, checkpoint.pending = epoch+1, [][]byte{b} // checkpoint complete
		if epoch == 1 {
			break // the process dies before the commit of epoch 1
		}
		res, err := sink.Commit(ctx, c)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("epoch %d: committed in version %d\n", epoch, res.Version)
	}

	// Restart: restore the checkpoint, commit what it holds, continue.
	restarted, err := streamsink.Open(ctx, "", "query-1", nil, table.WithStore(mem))
	if err != nil {
		log.Fatal(err)
	}
	for range 2 { // a replayed commit is a no-op
		for _, b := range checkpoint.pending {
			c, err := streamsink.DecodeCommittable(b)
			if err != nil {
				log.Fatal(err)
			}
			res, err := restarted.Commit(ctx, c)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("restored epoch %d: already committed %v, version %d\n", c.EpochID(), res.AlreadyCommitted, res.Version)
		}
	}
	c, err := restarted.Prepare(ctx, checkpoint.next, source(checkpoint.next))
	if err != nil {
		log.Fatal(err)
	}
	res, err := restarted.Commit(ctx, c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("epoch %d: committed in version %d\n", res.Epoch, res.Version)
	last, err := restarted.LastCommittedEpoch(ctx)
	if err != nil {
		log.Fatal(err)
	}
	n := 0
	for _, err := range restarted.Table().Scan(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		n++
	}
	fmt.Printf("last committed epoch %d, %d rows\n", last, n)
	// Output:
	// epoch 0: committed in version 1
	// restored epoch 1: already committed false, version 2
	// restored epoch 1: already committed true, version 2
	// epoch 2: committed in version 3
	// last committed epoch 2, 6 rows
}
