package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The headers a dead letter carries after the record's own headers (see
// WithDeadLetterTopic).
const (
	HeaderError     = "deltakit.error"            // why the record was not written: the decoder's error or the table's refusal
	HeaderTopic     = "deltakit.source.topic"     // the topic the record was consumed from
	HeaderPartition = "deltakit.source.partition" // its partition, in decimal
	HeaderOffset    = "deltakit.source.offset"    // its offset, in decimal
)

// ErrDeadLetter is returned (wrapped) by Run when a dead letter could not
// be produced to the dead-letter topic; the batch it belongs to is not
// committed.
var ErrDeadLetter = errors.New("kafkasink: producing a dead letter failed")

// WithDeadLetterTopic sends records that fail to decode (the decoder's
// error) or that the table refuses (a *table.RowError: a null in a NOT
// NULL column, a CHECK constraint, ...) to topic on the same cluster
// instead of stopping the run, and leaves them out of the table. A dead
// letter has the record's key, value and headers, plus HeaderError (the
// reason), HeaderTopic, HeaderPartition and HeaderOffset (where it came
// from). The topic must exist: Run checks it before consuming
// (ErrUnknownTopic).
//
// The dead letters of a batch are produced, and acknowledged by the
// brokers (acks=all, idempotent), before the batch is committed, so no
// bad record is lost: a record's offset is in the table only after its
// dead letter is in the topic. Delivery is at least once: a run that
// stops between producing a batch's dead letters and committing the batch
// produces them again when the next run reads the batch again, and a
// reader that must see each once deduplicates them by the source headers.
// WithBadRecords is not called for the records that go to the topic; the
// two options cannot be combined.
func WithDeadLetterTopic(topic string) Option {
	return func(c *config) { c.deadLetterTopic, c.deadLetterSet = topic, true }
}

// deadLetters collects the dead letters of one batch and produces them.
// sent remembers the records already produced, so that a batch a consumer
// group member retries (see writeBatch) produces each once.
type deadLetters struct {
	topic   string
	cl      *kgo.Client
	pending []*kgo.Record
	sent    map[TopicPartition]map[int64]bool
}

// add queues the dead letter of rec refused for err, unless it was
// produced before.
func (d *deadLetters) add(rec *kgo.Record, err error) {
	tp := TopicPartition{Topic: rec.Topic, Partition: rec.Partition}
	if d.sent[tp][rec.Offset] {
		return
	}
	if d.sent == nil {
		d.sent = map[TopicPartition]map[int64]bool{}
	}
	if d.sent[tp] == nil {
		d.sent[tp] = map[int64]bool{}
	}
	d.sent[tp][rec.Offset] = true
	headers := append(slices.Clip(rec.Headers),
		kgo.RecordHeader{Key: HeaderError, Value: []byte(err.Error())},
		kgo.RecordHeader{Key: HeaderTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderPartition, Value: strconv.AppendInt(nil, int64(rec.Partition), 10)},
		kgo.RecordHeader{Key: HeaderOffset, Value: strconv.AppendInt(nil, rec.Offset, 10)},
	)
	d.pending = append(d.pending, &kgo.Record{Topic: d.topic, Key: rec.Key, Value: rec.Value, Headers: headers})
}

// flush produces the queued dead letters and waits for the brokers'
// acknowledgements.
func (d *deadLetters) flush(ctx context.Context) error {
	if len(d.pending) == 0 {
		return nil
	}
	recs := d.pending
	d.pending = nil
	if err := d.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %d record(s) to topic %q: %w", ErrDeadLetter, len(recs), d.topic, err)
	}
	return nil
}

// count returns how many dead letters were produced or are queued.
func (d *deadLetters) count() int {
	n := 0
	for _, m := range d.sent {
		n += len(m)
	}
	return n
}

// deadLetterClient returns the producer of the dead-letter topic, or nil
// without one. The topic must exist.
func (in *Ingester) deadLetterClient(ctx context.Context) (*kgo.Client, error) {
	if !in.cfg.deadLetterSet {
		return nil, nil
	}
	if _, err := in.listPartitions(ctx, []string{in.cfg.deadLetterTopic}); err != nil {
		return nil, fmt.Errorf("kafkasink: dead-letter topic: %w", err)
	}
	cl, err := kgo.NewClient(append(slices.Clone(in.cfg.clientOpts),
		kgo.SeedBrokers(in.brokers...), kgo.ProducerLinger(0))...)
	if err != nil {
		return nil, fmt.Errorf("kafkasink: dead-letter producer: %w", err)
	}
	return cl, nil
}
