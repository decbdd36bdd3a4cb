package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// testCerts are the certificates of a broker's TLS listener, made for one
// broker start: a CA, the broker's certificate for 127.0.0.1 and
// localhost, and a client certificate, each signed by the CA. All are PEM.
type testCerts struct {
	caCert                []byte
	serverCert, serverKey []byte
	clientCert, clientKey []byte
}

// newTestCerts generates a fresh CA and the broker's and a client's
// certificates (ECDSA P-256, valid from an hour ago for a day).
func newTestCerts() (*testCerts, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "deltakit test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("testenv: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, server bool) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		}
		if server {
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
			tmpl.DNSNames = []string{"localhost"}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("testenv: %s certificate: %w", cn, err)
		}
		// PKCS #8, unencrypted: the form Kafka's PEM key store reads
		// without a key password.
		kder, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
	}
	c := &testCerts{caCert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	if c.serverCert, c.serverKey, err = leaf(2, "kafka broker", x509.ExtKeyUsageServerAuth, true); err != nil {
		return nil, err
	}
	if c.clientCert, c.clientKey, err = leaf(3, "deltakit client", x509.ExtKeyUsageClientAuth, false); err != nil {
		return nil, err
	}
	return c, nil
}

// ClientTLS returns a TLS configuration for the broker's TLS listener
// (TLSAddr): it trusts the broker's CA and presents the client
// certificate the listener requires. Each call returns a new config.
func (k *Kafka) ClientTLS() (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(k.CACert) {
		return nil, fmt.Errorf("testenv: the broker's CA certificate is not PEM")
	}
	cert, err := tls.X509KeyPair(k.ClientCert, k.ClientKey)
	if err != nil {
		return nil, fmt.Errorf("testenv: client certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{cert}}, nil
}
