package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// kafkaConnFlags are the connection flags of "ingest kafka": client id,
// SASL and TLS.
type kafkaConnFlags struct {
	clientID      string
	saslMechanism string
	saslUser      string
	saslPassword  string
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsInsecure   bool
	// sessionTimeout is the consumer-group session timeout: how long a
	// member that died holds its partitions (franz-go's default 45s).
	sessionTimeout time.Duration
}

// kafkaPasswordEnv is read for the SASL password when --sasl-password is
// not given, so that it stays out of the process list and shell history.
const kafkaPasswordEnv = "DELTACTL_KAFKA_PASSWORD"

func (f *kafkaConnFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.clientID, "client-id", "deltactl", "Kafka client id")
	fl.StringVar(&f.saslMechanism, "sasl-mechanism", "", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default: no SASL)")
	fl.StringVar(&f.saslUser, "sasl-user", "", "SASL user name")
	fl.StringVar(&f.saslPassword, "sasl-password", "", "SASL password (default: $"+kafkaPasswordEnv+")")
	fl.BoolVar(&f.tls, "tls", false, "connect with TLS (implied by the other --tls-* flags)")
	fl.StringVar(&f.tlsCA, "tls-ca", "", "PEM file of the CA certificates to verify the brokers with (default: the system's)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "PEM file of the client certificate (with --tls-key)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "PEM file of the client certificate's private key (with --tls-cert)")
	fl.BoolVar(&f.tlsInsecure, "tls-insecure-skip-verify", false, "do not verify the brokers' certificates (testing only)")
	fl.DurationVar(&f.sessionTimeout, "session-timeout", 0, "with --group: how long a member that stopped answering keeps its partitions before the group moves them (default 45s; the broker bounds it; heartbeats every third of it, at most 3s)")
}

// clientOpts builds the kgo options of the flags; getenv reads
// kafkaPasswordEnv. Errors are usage errors naming the flag.
func (f *kafkaConnFlags) clientOpts(getenv func(string) string) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.ClientID(f.clientID)}
	if f.sessionTimeout < 0 {
		return nil, usagef("--session-timeout must not be negative")
	} else if f.sessionTimeout > 0 {
		// Heartbeat at least three times a session (franz-go refuses a
		// heartbeat interval, 3s by default, longer than the session).
		opts = append(opts, kgo.SessionTimeout(f.sessionTimeout), kgo.HeartbeatInterval(min(3*time.Second, f.sessionTimeout/3)))
	}
	if f.saslMechanism != "" || f.saslUser != "" || f.saslPassword != "" {
		pass := f.saslPassword
		if pass == "" && getenv != nil {
			pass = getenv(kafkaPasswordEnv)
		}
		switch strings.ToUpper(f.saslMechanism) {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "":
		default:
			return nil, usagef("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", f.saslMechanism)
		}
		if f.saslUser == "" || pass == "" {
			return nil, usagef("--sasl-mechanism needs --sasl-user and --sasl-password (or $%s)", kafkaPasswordEnv)
		}
		switch strings.ToUpper(f.saslMechanism) {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: f.saslUser, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: f.saslUser, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: f.saslUser, Pass: pass}.AsSha512Mechanism()))
		case "":
			return nil, usagef("--sasl-user needs --sasl-mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		default:
			return nil, usagef("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", f.saslMechanism)
		}
	}
	if f.tls || f.tlsCA != "" || f.tlsCert != "" || f.tlsKey != "" || f.tlsInsecure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: f.tlsInsecure} //nolint:gosec // an explicit flag
		if f.tlsCA != "" {
			pem, err := os.ReadFile(f.tlsCA)
			if err != nil {
				return nil, usagef("--tls-ca: %v", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, usagef("--tls-ca %s: no PEM certificate in it", f.tlsCA)
			}
			cfg.RootCAs = pool
		}
		switch {
		case (f.tlsCert == "") != (f.tlsKey == ""):
			return nil, usagef("--tls-cert and --tls-key go together")
		case f.tlsCert != "":
			cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
			if err != nil {
				return nil, usagef("--tls-cert %s / --tls-key %s: %v", f.tlsCert, f.tlsKey, err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	return opts, nil
}

// lagString formats per-partition lag as "p0:12 p1:0", or "" for none.
func lagString(lag map[string]int64, order []string) string {
	var b strings.Builder
	for _, k := range order {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d", k, lag[k])
	}
	return b.String()
}
