package testenv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

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
	testSecuredListeners(t, k)
}

// testSecuredListeners: the SASL listener authenticates the user with each
// mechanism and refuses a wrong password; the TLS listener serves a
// certificate signed by the CA and refuses a client without a
// certificate. Each client lists the topic "t" through its listener.
func testSecuredListeners(t *testing.T, k *testenv.Kafka) {
	tlsCfg, err := k.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	noCert := tlsCfg.Clone()
	noCert.Certificates = nil
	user, pass := k.SASLUser, k.SASLPassword
	for _, tc := range []struct {
		name   string
		addr   string
		opts   []kgo.Opt
		wantOK bool
	}{
		{"scram-sha-256", k.SASLAddr, []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())}, true},
		{"scram-sha-512", k.SASLAddr, []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())}, true},
		{"plain", k.SASLAddr, []kgo.Opt{kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}, true},
		{"scram wrong password", k.SASLAddr, []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: pass + "x"}.AsSha512Mechanism())}, false},
		{"no sasl", k.SASLAddr, nil, false},
		{"tls", k.TLSAddr, []kgo.Opt{kgo.DialTLSConfig(tlsCfg)}, true},
		{"tls without client certificate", k.TLSAddr, []kgo.Opt{kgo.DialTLSConfig(noCert)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := kgo.NewClient(append(tc.opts, kgo.SeedBrokers(tc.addr), kgo.RequestRetries(0))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("t")
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			switch {
			case tc.wantOK && err != nil:
				t.Fatalf("metadata through %s: %v", tc.addr, err)
			case tc.wantOK && (len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || len(resp.Brokers) != 1 ||
				fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != tc.addr):
				t.Fatalf("metadata through %s: %+v, want topic t with 2 partitions on the broker at %s", tc.addr, resp, tc.addr)
			case !tc.wantOK && err == nil:
				t.Fatalf("metadata through %s succeeded, want it refused", tc.addr)
			case !tc.wantOK:
				t.Logf("refused as expected: %v", err)
			}
		})
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
