package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/testenv"
)

// kafkaBroker is the real Kafka broker the tests of this binary share
// (its PLAINTEXT, SASL and TLS listeners), started by the first test that
// needs it and stopped by TestMain.
var kafkaBroker struct {
	once   sync.Once
	k      *testenv.Kafka
	err    error
	dir    string
	topics atomic.Int64
}

// sharedKafka returns the shared broker and a new topic of parts
// partitions on it. Without a broker install it skips t (fails it with
// CI=true).
func sharedKafka(t *testing.T, parts int32) (*testenv.Kafka, string) {
	t.Helper()
	kafkaBroker.once.Do(func() {
		kafkaBroker.dir, kafkaBroker.err = os.MkdirTemp("", "deltactl-kafka-")
		if kafkaBroker.err == nil {
			kafkaBroker.k, kafkaBroker.err = testenv.StartKafkaBroker(context.Background(), kafkaBroker.dir)
		}
		if kafkaBroker.k != nil {
			fmt.Fprintf(os.Stderr, "deltactl: Kafka broker at %s ready in %v\n", kafkaBroker.k.Addr, kafkaBroker.k.StartTime.Round(time.Millisecond))
		}
	})
	if kafkaBroker.err != nil {
		testenv.KafkaUnavailable(t, kafkaBroker.err)
	}
	topic := fmt.Sprintf("events-%d", kafkaBroker.topics.Add(1))
	if err := kafkaBroker.k.CreateTopic(t.Context(), topic, parts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Kafka broker output:\n%s", kafkaBroker.k.Output())
		}
	})
	return kafkaBroker.k, topic
}

func TestMain(m *testing.M) {
	code := m.Run()
	if kafkaBroker.k != nil {
		if err := kafkaBroker.k.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "deltactl: stop the Kafka broker:", err)
		}
	}
	if kafkaBroker.dir != "" {
		os.RemoveAll(kafkaBroker.dir)
	}
	os.Exit(code)
}
