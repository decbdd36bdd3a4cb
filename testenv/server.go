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
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/deltakit/deltakit/objectstore"
)

// MinIOBinEnv names the environment variable that points at the MinIO server
// binary (or the directory holding "minio"). scripts/install-minio.sh honours
// it too.
const MinIOBinEnv = "DELTAKIT_MINIO_BIN"

// startTimeout bounds how long StartServer waits for the server to answer.
const startTimeout = 30 * time.Second

// MinIO is a running MinIO server with one bucket, started by StartServer
// (or StartMinIO for a test). All exported fields are read-only.
//
// Every call starts its own server: it is ready in well under a second, and
// a server per test needs no state shared between tests. Users that need
// several stores share one server through NewStore or StoreAt, giving each
// store its own prefix.
type MinIO struct {
	Endpoint  string // "http://127.0.0.1:port"
	AccessKey string
	SecretKey string
	Bucket    string
	Region    string

	stores atomic.Int64 // prefixes handed out by NewStore

	process // its dir holds the server's files: HOME, certs and data
}

// StartServer starts a MinIO server on 127.0.0.1 with a fresh data directory
// under tmpDir (which must exist) and an empty bucket. The caller must Close
// the server, which also removes its data directory.
//
// The server binary is $DELTAKIT_MINIO_BIN, else
// $HOME/.cache/deltakit/minio/bin/minio, else "minio" on PATH
// (scripts/install-minio.sh installs it). ctx bounds only the start: the
// server runs until Close. Errors say why the server could not start, with
// its output.
func StartServer(ctx context.Context, tmpDir string) (*MinIO, error) {
	bin, err := minioBinary()
	if err != nil {
		return nil, &startError{unavailable: true, msg: err.Error()}
	}
	m, err := startRetried(ctx, "MinIO server "+bin, func() (*MinIO, error) { return start(ctx, bin, tmpDir) })
	if err != nil {
		return nil, err
	}
	if err := m.makeBucket(ctx); err != nil {
		m.Close()
		return nil, &startError{msg: fmt.Sprintf("create bucket %q on MinIO at %s: %v", m.Bucket, m.Endpoint, err), output: m.log.String()}
	}
	return m, nil
}

// Close stops the server and removes its data directory. Calls after the
// first return the first call's result.
func (m *MinIO) Close() error {
	return m.close(10 * time.Second)
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

// StoreAt returns a new S3 client (its own HTTP connections) on the objects
// under prefix on this server. Two calls with one prefix are two clients of
// the same objects. opts are applied after S3Options.
func (m *MinIO) StoreAt(ctx context.Context, prefix string, opts ...objectstore.S3Option) (*objectstore.S3, error) {
	return objectstore.NewS3(ctx, m.Bucket, prefix, append(m.S3Options(), opts...)...)
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

// start runs the server on free ports in a new directory under tmpDir and
// waits until it is ready. On failure the server is stopped and its
// directory removed; the returned *MinIO (nil if the server never ran)
// still holds its output for the message.
func start(ctx context.Context, bin, tmpDir string) (*MinIO, error) {
	m := &MinIO{
		AccessKey: "deltakit",
		SecretKey: "deltakit-secret-key",
		Bucket:    "deltakit-test",
		Region:    "us-east-1",
	}
	ports, err := m.init(tmpDir, "minio-", 2)
	if err != nil {
		return nil, err
	}
	dir := m.dir
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	m.Endpoint = "http://" + addr
	cmd := exec.Command(bin, "server",
		"--address", addr,
		"--console-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
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
	if err := m.run(cmd); err != nil {
		return m, err
	}
	if err := waitReady(ctx, m.Endpoint, m.exited, &m.waitErr); err != nil {
		m.Close()
		return m, err
	}
	return m, nil
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

func (m *MinIO) makeBucket(ctx context.Context) error {
	client, err := minio.New(strings.TrimPrefix(m.Endpoint, "http://"), &minio.Options{
		Creds:  credentials.NewStaticV4(m.AccessKey, m.SecretKey, ""),
		Region: m.Region,
	})
	if err != nil {
		return err
	}
	return client.MakeBucket(ctx, m.Bucket, minio.MakeBucketOptions{Region: m.Region})
}

// freePorts returns n distinct free TCP ports on 127.0.0.1: all n listeners
// are open at once, so no port is returned twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
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
