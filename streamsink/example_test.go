package streamsink_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/streamsink"
	"github.com/deltakit/deltakit/streamsink/kafkasink"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/value"
)

// The sink loop of a streaming query: ask the table for the last committed
// epoch, resume after it, write each epoch with WriteEpoch. A source that
// cannot tell what landed (a restart that replays from an older position)
// just writes the old epochs again: they are skipped.
func ExampleSink_WriteEpoch() {
	ctx := context.Background()
	store := objectstore.NewMem("events") // or objectstore.Open(ctx, "s3://bucket/events")
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("msg", schema.Primitive(schema.String), true),
	)
	tbl, err := table.Create(ctx, "", sch, table.WithStore(store))
	if err != nil {
		log.Fatal(err)
	}

	// A query id must be stable across restarts: it is the txn appId that
	// records which epochs the table holds.
	sink, err := streamsink.New(tbl, "events-query")
	if err != nil {
		log.Fatal(err)
	}
	source := func(epoch int64) []value.Row { // the stream's epoch-th micro-batch
		return []value.Row{{epoch * 10, "a"}, {epoch*10 + 1, "b"}}
	}

	// First run: epochs 0..2.
	for epoch := int64(0); epoch < 3; epoch++ {
		res, err := sink.WriteEpoch(ctx, epoch, source(epoch))
		if err != nil {
			log.Fatal(err) // nothing is half-written: write the epoch again after a restart
		}
		fmt.Printf("epoch %d: version %d, %d rows\n", epoch, res.Version, res.Rows)
	}

	// A restart: a new sink on the same table resumes after the last
	// committed epoch; a replay of epoch 2 is skipped.
	restarted, err := streamsink.Open(ctx, "", "events-query", nil, table.WithStore(store))
	if err != nil {
		log.Fatal(err)
	}
	last, err := restarted.LastCommittedEpoch(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last committed epoch:", last)
	for epoch := last; epoch < 5; epoch++ {
		res, err := restarted.WriteEpoch(ctx, epoch, source(epoch))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("epoch %d: skipped %v, version %d\n", epoch, res.Skipped, res.Version)
	}
	// Output:
	// epoch 0: version 1, 2 rows
	// epoch 1: version 2, 2 rows
	// epoch 2: version 3, 2 rows
	// last committed epoch: 2
	// epoch 2: skipped true, version 3
	// epoch 3: skipped false, version 4
	// epoch 4: skipped false, version 5
}

// Typed epochs: rows of a Go struct, mapped to the table's columns by their
// delta tags.
func ExampleWriteEpochOf() {
	ctx := context.Background()
	type Click struct {
		User string    `delta:"user,notnull"`
		At   time.Time `delta:"at"`
	}
	sch, err := table.SchemaOf[Click]()
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := table.Create(ctx, "", sch, table.WithStore(objectstore.NewMem("clicks")))
	if err != nil {
		log.Fatal(err)
	}
	sink, err := streamsink.New(tbl, "clicks-query")
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	res, err := streamsink.WriteEpochOf(ctx, sink, 0, []Click{{"ann", at}, {"bob", at.Add(time.Second)}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("epoch %d: %d rows at version %d\n", res.Epoch, res.Rows, res.Version)
	// Output:
	// epoch 0: 2 rows at version 1
}

// Kafka → Delta exactly once: kafkasink consumes with read_committed, writes
// one epoch per poll batch and commits each partition's next offset in the
// same commit as the data. A restart resumes at the offsets in the table,
// so nothing is read twice; records of aborted Kafka transactions never
// arrive. (An in-process Kafka stands in for the brokers here.)
func Example_kafkaIngest() {
	ctx := context.Background()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	// A transactional producer: two committed transactions, one aborted.
	producer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("producer"), kgo.DefaultProduceTopic("events"))
	if err != nil {
		log.Fatal(err)
	}
	defer producer.Close()
	for i, commit := range []bool{true, false, true} {
		if err := producer.BeginTransaction(); err != nil {
			log.Fatal(err)
		}
		for j := range 3 {
			v := fmt.Sprintf(`{"id": %d, "msg": "txn %d"}`, i*3+j, i)
			if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				log.Fatal(err)
			}
		}
		if err := producer.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			log.Fatal(err)
		}
	}

	store := objectstore.NewMem("kafka-events")
	sch := schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("msg", schema.Primitive(schema.String), true),
	)
	if _, err := table.Create(ctx, "", sch, table.WithStore(store)); err != nil {
		log.Fatal(err)
	}
	// Each run is a process start: open the table, read the offsets from
	// it, consume until no record arrives for a while.
	ingest := func() *kafkasink.Stats {
		sink, err := streamsink.Open(ctx, "", "events-ingest", []streamsink.Option{streamsink.WithLogger(slog.New(slog.DiscardHandler))}, table.WithStore(store))
		if err != nil {
			log.Fatal(err)
		}
		in, err := kafkasink.New(sink, brokers, []string{"events"}, // values decode as JSON objects by column name
			kafkasink.WithIdleTimeout(300*time.Millisecond), kafkasink.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			log.Fatal(err)
		}
		st, err := in.Run(ctx)
		if err != nil {
			log.Fatal(err)
		}
		return st
	}
	st := ingest()
	fmt.Printf("first run: %d records, next offset of events/0: %d\n", st.Records, st.Offsets[kafkasink.TopicPartition{Topic: "events", Partition: 0}])
	st = ingest()
	fmt.Printf("second run: started at offset %d, %d records\n", st.StartOffsets[kafkasink.TopicPartition{Topic: "events", Partition: 0}], st.Records)

	tbl, err := table.Open(ctx, "", table.WithStore(store))
	if err != nil {
		log.Fatal(err)
	}
	var ids []int64
	for row, err := range tbl.Scan(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		ids = append(ids, row[0].(int64))
	}
	slices.Sort(ids)
	fmt.Println("ids in the table:", ids)
	// Output:
	// first run: 6 records, next offset of events/0: 11
	// second run: started at offset 11, 0 records
	// ids in the table: [0 1 2 6 7 8]
}
