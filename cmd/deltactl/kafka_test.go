package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/deltakit/deltakit/table"
)

// runKafkaCLI runs "deltactl ingest kafka args..." in-process and returns
// stdout, stderr and the error.
func runKafkaCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{env: env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}}
	root := newRootCmd(a)
	root.SetArgs(append([]string{"ingest", "kafka"}, args...))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

// The command on franz-go's fake cluster and on a real Kafka broker
// (testenv: skipped without an install, failed with CI=true).
func TestIngestKafkaCmd(t *testing.T) {
	t.Run("kfake", func(t *testing.T) {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
		if err != nil {
			t.Fatal(err)
		}
		defer cluster.Close()
		testIngestKafkaCmd(t, cluster.ListenAddrs(), "events")
	})
	t.Run("kafka", func(t *testing.T) {
		k, topic := sharedKafka(t, 2)
		testIngestKafkaCmd(t, k.Brokers(), topic)
	})
}

func testIngestKafkaCmd(t *testing.T, seeds []string, topic string) {
	ctx := t.Context()
	brokers := strings.Join(seeds, ",")
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("cli-test"), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(first, n int, commit bool) {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := first; i < first+n; i++ {
			rec := &kgo.Record{Key: fmt.Appendf(nil, "%d", i), Value: fmt.Appendf(nil, `{"id": %d, "msg": "m%d"}`, i, i)}
			if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 10, true)
	produce(100, 5, false) // aborted: never ingested
	produce(10, 10, true)

	dir := filepath.Join(t.TempDir(), "events")
	if code := run(context.Background(), []string{"create", dir, "--schema", "id long not null, msg string"},
		env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}); code != 0 {
		t.Fatalf("create: exit %d", code)
	}

	for _, tc := range []struct {
		name      string
		args      []string
		wantErr   string
		wantJSON  bool
		check     func(t *testing.T, v *IngestView)
		wantInOut string
		before    func()
	}{
		{name: "no brokers", args: []string{dir, "--topic", topic, "--query-id", "q"}, wantErr: "--brokers is required"},
		{name: "no topic", args: []string{dir, "--brokers", brokers, "--query-id", "q"}, wantErr: "--topic is required"},
		{name: "no query id", args: []string{dir, "--brokers", brokers, "--topic", topic}, wantErr: "--query-id is required"},
		{name: "bad batch size", args: []string{dir, "--brokers", brokers, "--topic", topic, "--query-id", "q", "--batch-records", "0"}, wantErr: "--batch-records"},
		// Two batches of at most 4 records, then stop.
		{name: "two batches", args: []string{"-o", "json", dir, "--brokers", brokers, "--topic", topic, "--query-id", "q", "--batch-records", "4", "--max-batches", "2"},
			wantJSON: true, check: func(t *testing.T, v *IngestView) {
				if v.Committed != 2 || !v.Stopped || v.Rows == 0 || v.Rows > 8 || v.Format != "kafka" || v.QueryID != "q" || v.Resumed != 0 {
					t.Errorf("first run: %+v, want 2 committed epochs of at most 4 rows, stopped", *v)
				}
			}},
		// The rest, until idle (1.5 s: a loaded machine's real broker may take
		// longer than a fake one to answer the first fetch); text output.
		{name: "resume until idle", args: []string{dir, "--brokers", brokers, "--topic", topic, "--query-id", "q", "--idle-timeout", "1500ms"},
			wantInOut: "2 skipped on resume"},
		{name: "member without group", args: []string{dir, "--brokers", brokers, "--topic", topic, "--query-id", "q", "--member", "m1"}, wantErr: "--member needs --group"},
		{name: "bad sasl", args: []string{dir, "--brokers", brokers, "--topic", topic, "--query-id", "q", "--sasl-mechanism", "X", "--sasl-user", "u", "--sasl-password", "p"},
			wantErr: "--sasl-mechanism"},
		// A consumer group member of the same query resumes at the
		// offsets the table holds and commits its own epochs. The idle
		// timeout counts from the start, joining the group included: a
		// real broker's join and assignment took over 1.5 s on a loaded
		// CI machine (0 rows read), so the member gets 6 s.
		{name: "group member", before: func() { produce(20, 5, true) },
			args:     []string{"-o", "json", dir, "--brokers", brokers, "--topic", topic, "--query-id", "q", "--group", "g", "--member", "m1", "--idle-timeout", "6s"},
			wantJSON: true, check: func(t *testing.T, v *IngestView) {
				if v.Committed == 0 || v.Rows != 5 || v.QueryID != "q/member/m1" || v.Resumed != 0 {
					t.Errorf("group member run: %+v, want the 5 new rows in epochs of query q/member/m1 from epoch 0", *v)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			out, errs, err := runKafkaCLI(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isUsageError(err) {
					t.Fatalf("err %v, want a usage error mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errs)
			}
			if tc.wantJSON {
				var v IngestView
				if err := json.Unmarshal([]byte(out), &v); err != nil {
					t.Fatalf("output is not one JSON document: %v\n%s", err, out)
				}
				tc.check(t, &v)
			}
			t.Logf("output:\n%s", out)
			if !strings.Contains(out, tc.wantInOut) {
				t.Fatalf("output lacks %q:\n%s", tc.wantInOut, out)
			}
		})
	}

	tbl, err := table.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for row, err := range tbl.Scan(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row[0].(int64))
	}
	slices.Sort(ids)
	want := make([]int64, 25)
	for i := range want {
		want[i] = int64(i)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("table ids %v, want 0..24 once each (no aborted record)", ids)
	}
	rep, err := table.VerifyExactlyOnce(ctx, tbl.Store())
	if err != nil || !rep.OK() {
		t.Fatalf("VerifyExactlyOnce: %+v, %v", rep, err)
	}
}

// ingest kafka --merge-on: keyed records updated over transactions (one
// aborted), consumed in batches of 4: the table keeps the latest committed
// record per id; an unknown key is refused before anything is consumed.
func TestIngestKafkaMergeOn(t *testing.T) {
	t.Run("kfake", func(t *testing.T) {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "events"))
		if err != nil {
			t.Fatal(err)
		}
		defer cluster.Close()
		testIngestKafkaMergeOn(t, cluster.ListenAddrs(), "events")
	})
	t.Run("kafka", func(t *testing.T) {
		k, topic := sharedKafka(t, 2)
		testIngestKafkaMergeOn(t, k.Brokers(), topic)
	})
}

func testIngestKafkaMergeOn(t *testing.T, seeds []string, topic string) {
	ctx := t.Context()
	brokers := strings.Join(seeds, ",")
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID("cli-upsert"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	want := map[int64]string{} // the reference: latest committed msg per id
	produce := func(round int, commit bool) {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for id := range int64(6) {
			msg := fmt.Sprintf("r%d-%d", round, id)
			rec := &kgo.Record{Key: fmt.Appendf(nil, "%d", id), Partition: int32(id % 2), Value: fmt.Appendf(nil, `{"id": %d, "msg": %q}`, id, msg)}
			if err := prod.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if commit {
				want[id] = msg
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, true)
	produce(1, false)
	produce(2, true)
	dir := filepath.Join(t.TempDir(), "events")
	mustRun(t, "create", dir, "--schema", "id long not null, msg string")
	// An unknown key: a usage error, nothing consumed or committed.
	if _, _, err := runKafkaCLI(t, dir, "--brokers", brokers, "--topic", topic, "--query-id", "q", "--merge-on", "nope"); err == nil || !isUsageError(err) || !strings.Contains(err.Error(), "--merge-on nope") {
		t.Fatalf("unknown key: %v, want a usage error naming --merge-on nope", err)
	}
	ingest := func() *IngestView {
		out, errs, err := runKafkaCLI(t, "-o", "json", dir, "--brokers", brokers, "--topic", topic, "--query-id", "q",
			"--merge-on", "id", "--batch-records", "4", "--idle-timeout", "1500ms")
		if err != nil {
			t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errs)
		}
		var v IngestView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return &v
	}
	check := func() {
		t.Helper()
		tbl, err := table.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for row, err := range tbl.Scan(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if _, dup := got[row[0].(int64)]; dup {
				t.Fatalf("id %d twice", row[0])
			}
			got[row[0].(int64)] = row[1].(string)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("table %v, want %v", got, want)
		}
		if out := mustRun(t, "verify", "--exactly-once", dir); !strings.Contains(out, "query q: exactly once") {
			t.Fatalf("verify --exactly-once:\n%s", out)
		}
	}
	// Updates within one batch are deduplicated before its MERGE: how many
	// MERGE updates depends on the batching.
	if v := ingest(); v.Committed < 3 || v.Rows != 12 || v.InsertedRows != 6 || v.UpdatedRows > 6 || !slices.Equal(v.MergeOn, []string{"id"}) {
		t.Errorf("first run: %+v, want 12 records in at least 3 batches: 6 inserted, at most 6 updated", *v)
	}
	check()
	produce(3, true)
	if v := ingest(); v.Committed == 0 || v.InsertedRows != 0 || v.UpdatedRows != 6 {
		t.Errorf("second run: %+v, want the 6 new records as updates", *v)
	}
	check()
}
