package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ingest kafka --start-at and --dead-letter-topic: records stamped two
// hours ago are skipped by --start-at one hour ago, the newer ones are
// ingested, and those of them that do not decode or fit the table go to
// the dead-letter topic (the reason in a header), counted in the output.
// Bad flag values and combinations are usage errors.
func TestIngestKafkaStartAtDeadLetters(t *testing.T) {
	k, topic := sharedKafka(t, 1)
	dlq := topic + "-dlq"
	if err := k.CreateTopic(t.Context(), dlq, 1); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	produceJSON(t, k.Brokers(), topic, old, `{"id": 1}`, `not json`, `{"id": 2}`)
	produceJSON(t, k.Brokers(), topic, time.Time{}, `{"id": 3}`, `{"msg": "no id"}`, `[1, 2]`, `{"id": 4}`)
	dir := filepath.Join(t.TempDir(), "events")
	mustRun(t, "create", dir, "--schema", "id long not null, msg string")
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	base := []string{dir, "--brokers", k.Addr, "--topic", topic, "--query-id", "q"}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--start-at", "yesterday"}, "--start-at"},
		{[]string{"--start-at", "latest", "--start-at-end"}, "--start-at-end"},
		{[]string{"--dead-letter-topic", dlq, "--skip-bad-records"}, "--dead-letter-topic"},
	} {
		if _, _, err := runKafkaCLI(t, append(slices.Clone(base), bad.args...)...); err == nil || !isUsageError(err) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want a usage error naming %s", bad.args, err, bad.want)
		}
	}
	out, errs, err := runKafkaCLI(t, append(slices.Clone(base), "-o", "json", "--start-at", since, "--dead-letter-topic", dlq, "--idle-timeout", "1500ms")...)
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errs)
	}
	var v IngestView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := tableIDs(t, dir); !slices.Equal(got, []int64{3, 4}) || v.DeadLetters != 2 || v.DeadLetterTopic != dlq {
		t.Fatalf("table ids %v, view %+v; want ids [3 4] and 2 dead letters in %s", got, v, dlq)
	}
	// The dead-letter topic holds the two bad records after the start
	// point, each with a reason.
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...), kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for len(got) < 2 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			reason := ""
			for _, h := range r.Headers {
				if h.Key == "deltakit.error" {
					reason = string(h.Value)
				}
			}
			if reason == "" {
				t.Errorf("dead letter %q has no deltakit.error header: %v", r.Value, r.Headers)
			}
			got = append(got, string(r.Value))
		})
	}
	slices.Sort(got)
	if want := []string{`[1, 2]`, `{"msg": "no id"}`}; !slices.Equal(got, want) {
		t.Fatalf("dead letters %q, want %q", got, want)
	}
	// The text output says where they went.
	mustRun(t, "create", dir+"2", "--schema", "id long not null, msg string")
	out, _, err = runKafkaCLI(t, dir+"2", "--brokers", k.Addr, "--topic", topic, "--query-id", "q", "--start-at", since, "--dead-letter-topic", dlq, "--idle-timeout", "1500ms")
	if err != nil || !strings.Contains(out, "2 bad record(s) sent to the dead-letter topic "+dlq) {
		t.Fatalf("text output %q, %v; want it to count the dead letters", out, err)
	}
}
