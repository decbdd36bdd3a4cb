package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ingest kafka --group --idle-timeout while another member of the group
// holds a partition with records and commits nothing (a consumer that
// never writes the table): the command does not exit 0 at its idle
// timeout with those records unread; it waits out the session timeout
// and more, then exits 1 naming the partition and the member holding it.
func TestIngestKafkaGroupLagExit(t *testing.T) {
	t.Parallel()
	k, topic := sharedKafka(t, 2)
	group := "lag-" + topic
	assigned := make(chan map[string][]int32, 10)
	holder, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.ClientID("stuck-member"),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { assigned <- m }))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	select {
	case <-assigned: // both partitions: it is alone in the group
	case <-time.After(60 * time.Second):
		t.Fatal("the holder got no partition in 60 s")
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 4 {
		rec := &kgo.Record{Value: fmt.Appendf(nil, `{"id": %d}`, i), Partition: int32(i % 2)}
		if err := prod.ProduceSync(t.Context(), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "events")
	mustRun(t, "create", dir, "--schema", "id long not null, msg string")
	var stdout, stderr bytes.Buffer
	began := time.Now()
	code := run(t.Context(), []string{"ingest", "kafka", dir, "--brokers", k.Addr, "--topic", topic, "--query-id", "q",
		"--group", group, "--member", "m1", "--idle-timeout", "1500ms", "--session-timeout", "2s"},
		env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr})
	took := time.Since(began)
	msg := stderr.String()
	t.Logf("exit %d after %v; stderr:\n%s", code, took.Round(time.Millisecond), msg)
	if code != exitError || !strings.Contains(msg, "stuck-member") || !strings.Contains(msg, "records the table has not got") {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit %d naming the records left unread and the member stuck-member", code, msg, exitError)
	}
	if took < 1500*time.Millisecond+2*time.Second {
		t.Errorf("exited after %v, before the idle timeout plus the session timeout", took)
	}
	if ids := tableIDs(t, dir); len(ids) != 2 {
		t.Errorf("table ids %v, want the 2 records of the partition the command held", ids)
	}
}
