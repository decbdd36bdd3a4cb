// Package testenv starts the external services deltakit's tests need. For now
// that is one: a MinIO server, so S3 code runs against a real S3 API.
//
// Only tests import testenv. It runs the MinIO server as a separate program
// (AGPL) and talks to it over HTTP with minio-go (Apache-2.0); it never links
// MinIO's server code.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/deltakit/deltakit/objectstore"
)

// MinIOBinEnv names the environment variable that points at the MinIO server
// binary (or the directory holding "minio"). scripts/install-minio.sh honours
// it too.
const MinIOBinEnv = "DELTAKIT_MINIO_BIN"

// startTimeout bounds how long StartMinIO waits for the server to answer.
const startTimeout = 30 * time.Second

// MinIO is a running MinIO server with one empty bucket, owned by one test.
// All fields are read-only.
//
// Every StartMinIO call starts its own server: it is ready in well under a
// second, and a server per test needs no state shared between tests. Tests
// that need several stores share one server through NewStore, which gives
// each store its own prefix.
type MinIO struct {
	Endpoint  string // "http://127.0.0.1:port"
	AccessKey string
	SecretKey string
	Bucket    string
	Region    string

	stores atomic.Int64 // prefixes handed out by NewStore
}

// StartMinIO starts a MinIO server on 127.0.0.1 with a fresh data directory
// and an empty bucket, and stops it when t ends.
//
// The server binary is $DELTAKIT_MINIO_BIN, else
// $HOME/.cache/deltakit/minio/bin/minio, else "minio" on PATH. When there is
// none, or it does not start, StartMinIO skips t with a hint to run
// scripts/install-minio.sh; with CI=true it fails t instead, so a missing
// install step cannot hide as a skipped test.
func StartMinIO(t testing.TB) *MinIO {
	t.Helper()
	bin, err := minioBinary()
	if err != nil {
		unavailable(t, err.Error(), "")
	}
	m := &MinIO{
		AccessKey: "deltakit",
		SecretKey: "deltakit-secret-key",
		Bucket:    "deltakit-test",
		Region:    "us-east-1",
	}
	// A free port can be taken between finding and binding it; try again then.
	var log *syncBuffer
	for range 3 {
		log, err = m.start(t, bin)
		if err == nil {
			break
		}
	}
	if err != nil {
		unavailable(t, fmt.Sprintf("MinIO server %s did not start: %v", bin, err), log.String())
	}
	if err := m.makeBucket(t); err != nil {
		t.Fatalf("testenv: create bucket %q on MinIO at %s: %v\n%s", m.Bucket, m.Endpoint, err, log)
	}
	return m
}

// unavailable ends t because MinIO cannot run: a failure in CI, a skip
// elsewhere. output is the server's, if it ran.
func unavailable(t testing.TB, why, output string) {
	t.Helper()
	if output != "" {
		output = "\nserver output:\n" + output
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("testenv: %s (CI=true, so this fails instead of skipping; scripts/test.sh runs scripts/install-minio.sh)%s", why, output)
	}
	t.Skipf("testenv: %s; run scripts/install-minio.sh to enable the S3 tests%s", why, output)
}

// minioBinary finds the MinIO server binary.
func minioBinary() (string, error) {
	if p := os.Getenv(MinIOBinEnv); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			p = filepath.Join(p, "minio")
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("MinIO server not found: %s=%s: %v", MinIOBinEnv, os.Getenv(MinIOBinEnv), err)
		}
		return p, nil
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "deltakit", "minio", "bin", "minio")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	return "", errors.New("MinIO server not found in $" + MinIOBinEnv + ", ~/.cache/deltakit/minio/bin or PATH")
}

// start runs the server on free ports and waits until it is ready. On
// failure the server is stopped and its output returned for the message.
func (m *MinIO) start(t testing.TB, bin string) (*syncBuffer, error) {
	dir := t.TempDir() // removed after the server stops: cleanups run last-in first-out
	apiPort, err := freePort()
	if err != nil {
		return nil, err
	}
	consolePort, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", apiPort)
	log := &syncBuffer{}
	cmd := exec.Command(bin, "server",
		"--address", addr,
		"--console-address", fmt.Sprintf("127.0.0.1:%d", consolePort),
		"--certs-dir", filepath.Join(dir, "certs"),
		"--quiet",
		filepath.Join(dir, "data"))
	cmd.Env = append(os.Environ(),
		"HOME="+dir, // keep MinIO's ~/.minio out of the real home
		"MINIO_ROOT_USER="+m.AccessKey,
		"MINIO_ROOT_PASSWORD="+m.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return log, err
	}
	exited := make(chan struct{})
	var waitErr error // set before exited is closed
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}

	m.Endpoint = "http://" + addr
	if err := waitReady(t.Context(), m.Endpoint, exited, &waitErr); err != nil {
		stop()
		return log, err
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("testenv: MinIO server output:\n%s", log)
		}
	})
	return log, nil
}

// waitReady polls MinIO's readiness probe until it answers 200, the server
// exits (exited is closed, *waitErr holds why), or startTimeout passes.
func waitReady(ctx context.Context, endpoint string, exited <-chan struct{}, waitErr *error) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/minio/health/ready", nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("server exited: %v", *waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v", startTimeout)
		case <-tick.C:
		}
	}
}

func (m *MinIO) makeBucket(t testing.TB) error {
	client, err := minio.New(strings.TrimPrefix(m.Endpoint, "http://"), &minio.Options{
		Creds:  credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""),
		Region: m.Region,
	})
	if err != nil {
		return err
	}
	return client.MakeBucket(t.Context(), m.Bucket, minio.MakeBucketOptions{Region: m.Region})
}

// S3Options returns the options that point objectstore.NewS3 (or
// objectstore.Open with WithS3Options) at this server.
func (m *MinIO) S3Options() []objectstore.S3Option {
	return []objectstore.S3Option{
		objectstore.WithEndpoint(m.Endpoint),
		objectstore.WithPathStyle(true),
		objectstore.WithRegion(m.Region),
		objectstore.WithCredentials(m.AccessKey, m.SecretKey),
	}
}

// URI returns "s3://bucket/prefix" for a store on this server; open it with
// objectstore.Open and WithS3Options(m.S3Options()...).
func (m *MinIO) URI(prefix string) string {
	return "s3://" + m.Bucket + "/" + strings.Trim(prefix, "/")
}

// NewStore returns an S3 store on this server under a prefix no other
// NewStore call of m returns, so every store starts empty. opts are applied
// after S3Options.
func (m *MinIO) NewStore(t testing.TB, opts ...objectstore.S3Option) *objectstore.S3 {
	t.Helper()
	prefix := fmt.Sprintf("store-%d", m.stores.Add(1))
	s, err := objectstore.NewS3(t.Context(), m.Bucket, prefix, append(m.S3Options(), opts...)...)
	if err != nil {
		t.Fatalf("testenv: NewS3 on MinIO: %v", err)
	}
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects the server's output; the process writes it from
// another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
