package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// runKafkaCLIEnv is runKafkaCLI with an environment.
func runKafkaCLIEnv(t *testing.T, environ map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{env: env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return environ[k] }}}
	root := newRootCmd(a)
	root.SetArgs(append([]string{"ingest", "kafka"}, args...))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

// produceJSON produces values to topic through the PLAINTEXT listener,
// keyed by their index and stamped ts (zero: now).
func produceJSON(t *testing.T, seeds []string, topic string, ts time.Time, values ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, v := range values {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v), Timestamp: ts}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// ingest kafka over the broker's SASL_PLAINTEXT listener with each SASL
// mechanism (the password by flag or from $DELTACTL_KAFKA_PASSWORD) and
// over its TLS listener with the CA and a client certificate: each run
// ingests the topic's records into a table of its own; a wrong password
// fails the run (exit 1, not a usage error) naming the SASL failure.
func TestIngestKafkaSecured(t *testing.T) {
	k, topic := sharedKafka(t, 2)
	var values []string
	var want []int64
	for i := range 6 {
		values = append(values, fmt.Sprintf(`{"id": %d, "msg": "m%d"}`, i, i))
		want = append(want, int64(i))
	}
	produceJSON(t, k.Brokers(), topic, time.Time{}, values...)
	pems := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(pems, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca, cert, key := write("ca.pem", k.CACert), write("client.pem", k.ClientCert), write("client-key.pem", k.ClientKey)
	sasl := func(mech string) []string {
		return []string{"--brokers", k.SASLAddr, "--sasl-mechanism", mech, "--sasl-user", k.SASLUser}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string // "" for a run that ingests every record
	}{
		{"scram-sha-256", append(sasl("SCRAM-SHA-256"), "--sasl-password", k.SASLPassword), nil, ""},
		{"scram-sha-512 password from env", sasl("SCRAM-SHA-512"), map[string]string{kafkaPasswordEnv: k.SASLPassword}, ""},
		{"plain", append(sasl("PLAIN"), "--sasl-password", k.SASLPassword), nil, ""},
		{"tls with client certificate", []string{"--brokers", k.TLSAddr, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key}, nil, ""},
		{"scram wrong password", append(sasl("SCRAM-SHA-512"), "--sasl-password", "wrong"), nil, "SASL_AUTHENTICATION_FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "events")
			mustRun(t, "create", dir, "--schema", "id long not null, msg string")
			args := append([]string{"-o", "json", dir, "--topic", topic, "--query-id", "q", "--idle-timeout", "1500ms"}, tc.args...)
			out, errs, err := runKafkaCLIEnv(t, tc.env, args...)
			if tc.wantErr != "" {
				if err == nil || isUsageError(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want a run error naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errs)
			}
			var v IngestView
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got := tableIDs(t, dir); v.Rows != 6 || !slices.Equal(got, want) {
				t.Fatalf("view %+v, table ids %v; want ids %v", v, got, want)
			}
		})
	}
}
