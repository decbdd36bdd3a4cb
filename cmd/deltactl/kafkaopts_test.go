package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// writeCert writes a self-signed certificate and its key as PEM files.
func writeCert(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "deltactl-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// The SASL and TLS flags become the options of the kgo client: the
// mechanism (by its name) and a TLS config with the CA pool, the client
// certificate and the verification setting; bad combinations are usage
// errors naming the flag.
func TestKafkaConnFlags(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{kafkaPasswordEnv: "from-env"}
	for _, tc := range []struct {
		name     string
		args     []string
		wantErr  string // a substring of a usage error
		mech     string // the SASL mechanism's name, "" for none
		tls      bool
		ca       bool
		certs    int
		insecure bool
		session  time.Duration // the kgo session timeout, 0 for the default
	}{
		{name: "none"},
		{name: "plain", args: []string{"--sasl-mechanism", "PLAIN", "--sasl-user", "u", "--sasl-password", "p"}, mech: "PLAIN"},
		{name: "scram-256 password from env", args: []string{"--sasl-mechanism", "scram-sha-256", "--sasl-user", "u"}, mech: "SCRAM-SHA-256"},
		{name: "scram-512 with tls", args: []string{"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "u", "--tls"}, mech: "SCRAM-SHA-512", tls: true},
		{name: "tls ca and client cert", args: []string{"--tls-ca", cert, "--tls-cert", cert, "--tls-key", key}, tls: true, ca: true, certs: 1},
		{name: "tls insecure", args: []string{"--tls-insecure-skip-verify"}, tls: true, insecure: true},
		{name: "unknown mechanism", args: []string{"--sasl-mechanism", "GSSAPI", "--sasl-user", "u"}, wantErr: `--sasl-mechanism "GSSAPI"`},
		{name: "user without mechanism", args: []string{"--sasl-user", "u"}, wantErr: "--sasl-user needs --sasl-mechanism"},
		{name: "mechanism without user", args: []string{"--sasl-mechanism", "PLAIN"}, wantErr: "needs --sasl-user"},
		{name: "cert without key", args: []string{"--tls-cert", cert}, wantErr: "--tls-cert and --tls-key go together"},
		{name: "missing ca", args: []string{"--tls-ca", filepath.Join(dir, "nope.pem")}, wantErr: "--tls-ca"},
		{name: "ca not pem", args: []string{"--tls-ca", notPEM}, wantErr: "no PEM certificate"},
		{name: "key not matching", args: []string{"--tls-cert", cert, "--tls-key", notPEM}, wantErr: "--tls-cert"},
		{name: "unknown mechanism without user", args: []string{"--sasl-mechanism", "FOO"}, wantErr: `--sasl-mechanism "FOO"`},
		{name: "negative session timeout", args: []string{"--session-timeout", "-1s"}, wantErr: "--session-timeout"},
		{name: "session timeout", args: []string{"--session-timeout", "7s"}, session: 7 * time.Second},
		// Shorter than franz-go's default heartbeat interval (3s), which must
		// be shorter than the session.
		{name: "short session timeout", args: []string{"--session-timeout", "1500ms"}, session: 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f kafkaConnFlags
			cmd := &cobra.Command{Use: "x"}
			f.register(cmd)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			opts, err := f.clientOpts(func(k string) string { return env[k] })
			if tc.wantErr != "" {
				var ue *usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("clientOpts = %v; want a usage error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers("127.0.0.1:1"))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if id, _ := cl.OptValue(kgo.ClientID).(string); id != "deltactl" {
				t.Errorf("client id %q, want deltactl", id)
			}
			mechs, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
			switch {
			case tc.mech == "" && len(mechs) != 0:
				t.Errorf("SASL %v, want none", mechs)
			case tc.mech != "" && (len(mechs) != 1 || mechs[0].Name() != tc.mech):
				t.Errorf("SASL %v, want %s", mechs, tc.mech)
			}
			if d, _ := cl.OptValue(kgo.SessionTimeout).(time.Duration); tc.session != 0 && d != tc.session {
				t.Errorf("session timeout %s, want %s", d, tc.session)
			}
			if hb, _ := cl.OptValue(kgo.HeartbeatInterval).(time.Duration); tc.session != 0 && (hb > tc.session/3 || hb <= 0) {
				t.Errorf("heartbeat interval %s with session timeout %s, want at most a third of it", hb, tc.session)
			}
			cfg, _ := cl.OptValue(kgo.DialTLSConfig).(*tls.Config)
			if (cfg != nil) != tc.tls {
				t.Fatalf("TLS config %v, want TLS %v", cfg, tc.tls)
			}
			if cfg != nil && ((cfg.RootCAs != nil) != tc.ca || len(cfg.Certificates) != tc.certs || cfg.InsecureSkipVerify != tc.insecure) {
				t.Errorf("TLS config: CA pool %v, %d certificates, insecure %v; want %v, %d, %v",
					cfg.RootCAs != nil, len(cfg.Certificates), cfg.InsecureSkipVerify, tc.ca, tc.certs, tc.insecure)
			}
		})
	}
}
