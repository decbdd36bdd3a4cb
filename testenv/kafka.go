package testenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaHomeEnv names the environment variable that points at the Kafka
// install (the folder holding lib/ with the broker jars).
// scripts/install-kafka.sh honours it too.
const KafkaHomeEnv = "DELTAKIT_KAFKA_HOME"

// kafkaStartTimeout bounds how long StartKafkaBroker waits for the broker
// to answer a metadata request. A JVM broker is ready in 2-5 s on an idle
// 2-core machine and has taken 30-50 s on a loaded one.
const kafkaStartTimeout = 120 * time.Second

// kafkaJVMFlags keep the broker small and quick to start: a small heap, the
// serial collector and only the C1 compiler (a test broker moves little
// data; C2's warm-up would cost more CPU than it saves).
var kafkaJVMFlags = []string{
	"-Xms64m", "-Xmx512m",
	"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
	"-Djava.awt.headless=true",
}

// Kafka is a running single-node Apache Kafka broker (KRaft, the node is
// its own controller), started by StartKafkaBroker (or StartKafka for a
// test). Exported fields are read-only.
//
// Topics are not created automatically: CreateTopic makes them. The
// offsets and transaction state topics have replication factor 1 and one
// partition, so transactions and consumer groups work on the one node.
//
// Besides the PLAINTEXT listener (Addr) the broker has two secured ones
// on the same node and data: SASLAddr (SASL_PLAINTEXT with the mechanisms
// SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN, for the one user SASLUser) and
// TLSAddr (SSL, the broker's certificate signed by CACert; clients must
// present a certificate signed by it, as ClientTLS does). The
// certificates and the password are new for every start. There is no
// authorizer: an authenticated client may do anything. Consumer group
// members may have session timeouts from 1 s (group.min.session.timeout.ms),
// so that tests of a member that dies need not wait long.
type Kafka struct {
	Addr string // the PLAINTEXT listener, "127.0.0.1:port"

	// SASLAddr is the SASL_PLAINTEXT listener. SASLUser with SASLPassword
	// authenticates with SCRAM-SHA-256, SCRAM-SHA-512 (credentials created
	// when the storage is formatted) or PLAIN.
	SASLAddr               string
	SASLUser, SASLPassword string

	// TLSAddr is the SSL listener (TLS 1.2 or later, client certificates
	// required). CACert is the PEM certificate of the CA that signed the
	// broker's certificate (for 127.0.0.1 and localhost) and ClientCert
	// (with ClientKey, PKCS #8), a certificate the listener accepts.
	TLSAddr                       string
	CACert, ClientCert, ClientKey []byte

	// StartTime is how long the broker took from the JVM's start to its
	// first metadata answer (formatting the storage not included).
	StartTime time.Duration

	process
}

// StartKafka starts a broker as StartKafkaBroker does, under t's temporary
// directory, and stops it when t ends.
//
// When there is no install (scripts/install-kafka.sh), no java, or the
// broker does not start, StartKafka skips t with a hint; with CI=true it
// fails t instead, so a missing install step cannot hide as a skipped test.
func StartKafka(t testing.TB) *Kafka {
	t.Helper()
	k, err := StartKafkaBroker(t.Context(), t.TempDir())
	if err != nil {
		KafkaUnavailable(t, err)
	}
	kafkaKind.closeAtEnd(t, k)
	return k
}

// KafkaUnavailable ends t because err (from StartKafkaBroker) says no
// broker could run: a failure with CI=true, a skip with a hint to run
// scripts/install-kafka.sh otherwise. Other errors fail t. Tests that share
// one broker between tests (started in TestMain) call it when the start
// failed.
func KafkaUnavailable(t testing.TB, err error) {
	t.Helper()
	se := unavailableError(err)
	if se == nil {
		t.Fatal(err)
	}
	kafkaKind.skipUnavailable(t, se.msg, se.output)
}

// StartKafkaBroker formats a fresh KRaft log directory under tmpDir (which
// must exist) and starts a single-node broker on free ports of 127.0.0.1
// with the machine's java ($JAVA_HOME/bin/java, else java on PATH). It
// returns once the broker answers a metadata request. The caller must Close
// it, which also removes the log directory.
//
// The jars are those under $DELTAKIT_KAFKA_HOME/lib, default
// ~/.cache/deltakit/kafka/lib (scripts/install-kafka.sh). ctx bounds only
// the start. Errors say why the broker could not start, with its output.
func StartKafkaBroker(ctx context.Context, tmpDir string) (*Kafka, error) {
	lib, err := kafkaLib()
	if err != nil {
		return nil, &startError{unavailable: true, msg: err.Error()}
	}
	java, err := javaBinary()
	if err != nil {
		return nil, &startError{unavailable: true, msg: err.Error()}
	}
	return startRetried(ctx, fmt.Sprintf("Kafka broker (%s)", lib), func() (*Kafka, error) {
		return startKafka(ctx, java, lib, tmpDir)
	})
}

// Brokers returns the seed brokers for a Kafka client: the one listener.
func (k *Kafka) Brokers() []string { return []string{k.Addr} }

// Close stops the broker (SIGTERM, then SIGKILL after 20 s) and removes its
// log directory. Calls after the first return the first call's result.
func (k *Kafka) Close() error {
	return k.close(20 * time.Second)
}

// CreateTopic creates topic with the given number of partitions
// (replication factor 1) and waits until the broker's metadata lists all
// of them with a leader. An existing topic is an error.
func (k *Kafka) CreateTopic(ctx context.Context, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("testenv: create Kafka topic %q: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("testenv: create Kafka topic %q: %w", topic, err)
		}
	}
	for {
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		mreq.Topics = append(mreq.Topics, mt)
		if mresp, err := mreq.RequestWith(ctx, cl); err == nil && len(mresp.Topics) == 1 &&
			mresp.Topics[0].ErrorCode == 0 && len(mresp.Topics[0].Partitions) == int(partitions) && allLed(mresp.Topics[0].Partitions) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: Kafka topic %q: no leader for all %d partitions: %w", topic, partitions, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func allLed(ps []kmsg.MetadataResponseTopicPartition) bool {
	for _, p := range ps {
		if p.ErrorCode != 0 || p.Leader < 0 {
			return false
		}
	}
	return true
}

// kafkaLib finds the folder of the broker jars.
func kafkaLib() (string, error) {
	home := os.Getenv(KafkaHomeEnv)
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("Kafka install not found: no $%s and no home directory: %v", KafkaHomeEnv, err)
		}
		home = filepath.Join(h, ".cache", "deltakit", "kafka")
	}
	lib := filepath.Join(home, "lib")
	jars, _ := filepath.Glob(filepath.Join(lib, "kafka_2.13-*.jar"))
	if len(jars) == 0 {
		return "", fmt.Errorf("Kafka broker jars not found in %s (set $%s or install them)", lib, KafkaHomeEnv)
	}
	return lib, nil
}

// javaBinary finds java: $JAVA_HOME/bin/java, else java on PATH.
func javaBinary() (string, error) {
	if jh := os.Getenv("JAVA_HOME"); jh != "" {
		p := filepath.Join(jh, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("java")
	if err != nil {
		return "", errors.New("java not found in $JAVA_HOME/bin or PATH (the Kafka broker needs Java 17 or later)")
	}
	return p, nil
}

// clusterID returns a random Kafka cluster id: 16 random bytes in
// unpadded URL-safe base64, as StorageTool random-uuid prints (never
// starting with '-', which the tool's command line would take as a flag).
func clusterID() string {
	for {
		var b [16]byte
		_, _ = rand.Read(b[:])
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

// startKafka formats and starts one broker on new free ports and waits for
// it. On failure the broker is stopped and its directory removed; the
// returned *Kafka (nil if the broker never ran) still holds its output.
func startKafka(ctx context.Context, java, lib, tmpDir string) (*Kafka, error) {
	certs, err := newTestCerts()
	if err != nil {
		return nil, err
	}
	k := &Kafka{SASLUser: "deltakit", SASLPassword: "pw-" + clusterID(),
		CACert: certs.caCert, ClientCert: certs.clientCert, ClientKey: certs.clientKey}
	ports, err := k.init(tmpDir, "kafka-", 4)
	if err != nil {
		return nil, err
	}
	dir := k.dir
	k.Addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	controller := fmt.Sprintf("127.0.0.1:%d", ports[1])
	k.SASLAddr = fmt.Sprintf("127.0.0.1:%d", ports[2])
	k.TLSAddr = fmt.Sprintf("127.0.0.1:%d", ports[3])
	scram := "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	props := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.voters=1@" + controller,
		"listeners=PLAINTEXT://" + k.Addr + ",CONTROLLER://" + controller + ",SASL_PLAINTEXT://" + k.SASLAddr + ",SSL://" + k.TLSAddr,
		"advertised.listeners=PLAINTEXT://" + k.Addr + ",SASL_PLAINTEXT://" + k.SASLAddr + ",SSL://" + k.TLSAddr,
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
		// SASL: SCRAM users live in the cluster metadata (added by
		// StorageTool format below); PLAIN users in the JAAS line.
		"sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=" + scram,
		"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=" + scram,
		"listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required " +
			fmt.Sprintf("user_%s=%q;", k.SASLUser, k.SASLPassword),
		// TLS: PEM key and trust stores given inline (unencrypted
		// PKCS #8 key, no password), client certificates required.
		"listener.name.ssl.ssl.keystore.type=PEM",
		"listener.name.ssl.ssl.keystore.certificate.chain=" + propertyPEM(certs.serverCert),
		"listener.name.ssl.ssl.keystore.key=" + propertyPEM(certs.serverKey),
		"listener.name.ssl.ssl.truststore.type=PEM",
		"listener.name.ssl.ssl.truststore.certificates=" + propertyPEM(certs.caCert),
		"listener.name.ssl.ssl.client.auth=required",
		"log.dirs=" + filepath.Join(dir, "logs"),
		"auto.create.topics.enable=false",
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"transaction.state.log.num.partitions=1",
		"group.initial.rebalance.delay.ms=0",
		// Tests of members that die use short sessions (the default
		// minimum is 6 s).
		"group.min.session.timeout.ms=1000",
		"num.network.threads=2",
		"num.io.threads=2",
		"background.threads=2",
		"log.flush.interval.messages=9223372036854775807",
		"",
	}, "\n")
	conf := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(conf, []byte(props), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cp := filepath.Join(lib, "*")
	format := exec.CommandContext(ctx, java, append(slicesClone(kafkaJVMFlags), "-cp", cp,
		"kafka.tools.StorageTool", "format", "-t", clusterID(), "-c", conf,
		"--add-scram", fmt.Sprintf("SCRAM-SHA-256=[name=%s,password=%s]", k.SASLUser, k.SASLPassword),
		"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", k.SASLUser, k.SASLPassword))...)
	format.Dir = dir
	if out, err := format.CombinedOutput(); err != nil {
		k.log.Write(out)
		os.RemoveAll(dir)
		return k, fmt.Errorf("format the log directory: %v", err)
	}
	cmd := exec.Command(java, append(slicesClone(kafkaJVMFlags), "-cp", cp, "kafka.Kafka", conf)...)
	cmd.Dir = dir
	setDeathSignal(cmd)
	began := time.Now()
	if err := k.run(cmd); err != nil {
		return k, err
	}
	if err := k.waitReady(ctx); err != nil {
		k.Close()
		return k, err
	}
	k.StartTime = time.Since(began)
	return k, nil
}

// waitReady waits for the listener to accept connections and then for a
// metadata request that lists the broker.
func (k *Kafka) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, kafkaStartTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for {
		if cl == nil {
			if c, err := net.DialTimeout("tcp", k.Addr, time.Second); err == nil {
				c.Close()
				cl, err = kgo.NewClient(kgo.SeedBrokers(k.Addr))
				if err != nil {
					return err
				}
			}
		}
		if cl != nil {
			rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
			rcancel()
			if err == nil && len(resp.Brokers) > 0 && resp.ControllerID >= 0 {
				return nil
			}
		}
		select {
		case <-k.exited:
			return fmt.Errorf("broker exited: %v", k.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", kafkaStartTimeout, ctx.Err())
		case <-tick.C:
		}
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// propertyPEM returns PEM text as one line of a Java properties file: its
// line breaks escaped as \n, which Properties.load turns back into line
// breaks.
func propertyPEM(b []byte) string {
	return strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", `\n`)
}
