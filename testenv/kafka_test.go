package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/testenv"
)

// The broker runs transactions: a read_committed consumer sees the
// committed records, not the aborted ones.
func TestStartKafka(t *testing.T) {
	k := testenv.StartKafka(t)
	t.Logf("broker ready %v after the JVM started", k.StartTime)
	ctx := t.Context()
	if err := k.CreateTopic(ctx, "t", 2); err != nil {
		t.Fatal(err)
	}
	if err := k.CreateTopic(ctx, "t", 2); err == nil {
		t.Fatal("creating an existing topic succeeded")
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.TransactionalID("testenv"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i, commit := range []bool{true, false, true} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.ConsumeTopics("t"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < 2 && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cons.PollFetches(pctx)
		cancel()
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	if len(got) != 2 || got[0] == "b" || got[1] == "b" {
		t.Fatalf("read_committed consumer got %q, want a and c", got)
	}
}

// Without an install StartKafkaBroker says so, and the error is one that
// KafkaUnavailable turns into a skip (or a failure with CI=true).
func TestStartKafkaWithoutInstall(t *testing.T) {
	t.Setenv(testenv.KafkaHomeEnv, t.TempDir())
	_, err := testenv.StartKafkaBroker(t.Context(), t.TempDir())
	if err == nil {
		t.Fatal("started a broker without jars")
	}
	if want := "Kafka broker jars not found"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}
