package bench

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
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/deltakit/deltakit/objectstore"
)

// MinIOBinEnv names the environment variable that points at the MinIO server
// binary (or the directory holding "minio"), as in package testenv.
const MinIOBinEnv = "DELTAKIT_MINIO_BIN"

// S3Server is an S3-compatible server with one bucket that the benchmarks
// make their stores on. Tests fill it from a testenv.MinIO; the deltabench
// command from StartMinIO.
type S3Server struct {
	Endpoint  string // "http://127.0.0.1:port"
	AccessKey string
	SecretKey string
	Bucket    string
	Region    string
}

// NewStore returns a new client (its own HTTP connections) on the objects
// under prefix. Two calls with one prefix are two clients of one table.
func (s *S3Server) NewStore(ctx context.Context, prefix string) (objectstore.Store, error) {
	return objectstore.NewS3(ctx, s.Bucket, prefix,
		objectstore.WithEndpoint(s.Endpoint),
		objectstore.WithPathStyle(true),
		objectstore.WithRegion(s.Region),
		objectstore.WithCredentials(s.AccessKey, s.SecretKey))
}

// MinIO is a MinIO server process started by StartMinIO.
type MinIO struct {
	S3Server
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *syncBuffer
}

// StartMinIO starts a MinIO server on 127.0.0.1 with a fresh data directory
// under tmpDir and an empty bucket, the way testenv.StartMinIO does for
// tests, without a testing.TB. The binary is $DELTAKIT_MINIO_BIN, else
// $HOME/.cache/deltakit/minio/bin/minio, else "minio" on PATH
// (scripts/install-minio.sh installs it). The caller must Close the server.
// Errors say why the server could not start, with its output.
func StartMinIO(ctx context.Context, tmpDir string) (*MinIO, error) {
	bin, err := minioBinary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for range 3 { // a free port can be taken between finding and binding it
		m, err := startMinIO(ctx, bin, tmpDir)
		if err == nil {
			return m, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func startMinIO(ctx context.Context, bin, tmpDir string) (*MinIO, error) {
	dir, err := os.MkdirTemp(tmpDir, "minio-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	m := &MinIO{
		S3Server: S3Server{Endpoint: "http://" + addr, AccessKey: "deltakit", SecretKey: "deltakit-secret-key",
			Bucket: "deltabench", Region: "us-east-1"},
		dir:    dir,
		exited: make(chan struct{}),
		log:    &syncBuffer{},
	}
	m.cmd = exec.Command(bin, "server",
		"--address", addr,
		"--console-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--certs-dir", filepath.Join(dir, "certs"),
		"--quiet",
		filepath.Join(dir, "data"))
	m.cmd.Env = append(os.Environ(),
		"HOME="+dir,
		"MINIO_ROOT_USER="+m.AccessKey,
		"MINIO_ROOT_PASSWORD="+m.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("bench: start MinIO %s: %w", bin, err)
	}
	var waitErr error
	go func() {
		waitErr = m.cmd.Wait()
		close(m.exited)
	}()
	if err := m.waitReady(ctx, &waitErr); err != nil {
		m.Close()
		return nil, fmt.Errorf("bench: MinIO %s: %w\n%s", bin, err, m.log)
	}
	if err := m.makeBucket(ctx); err != nil {
		m.Close()
		return nil, fmt.Errorf("bench: create bucket on MinIO: %w\n%s", err, m.log)
	}
	return m, nil
}

// Close stops the server and removes its data directory.
func (m *MinIO) Close() error {
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.exited:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
	return os.RemoveAll(m.dir)
}

// waitReady polls the readiness probe until it answers 200, the server exits
// or 30 s pass.
func (m *MinIO) waitReady(ctx context.Context, waitErr *error) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Endpoint+"/minio/health/ready", nil)
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
		case <-m.exited:
			return fmt.Errorf("server exited: %v", *waitErr)
		case <-ctx.Done():
			return errors.New("not ready after 30s")
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

// minioBinary finds the MinIO server binary as testenv does.
func minioBinary() (string, error) {
	if p := os.Getenv(MinIOBinEnv); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			p = filepath.Join(p, "minio")
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("bench: MinIO server not found: %s=%s: %v", MinIOBinEnv, os.Getenv(MinIOBinEnv), err)
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
	return "", errors.New("bench: MinIO server not found in $" + MinIOBinEnv + ", ~/.cache/deltakit/minio/bin or PATH; run scripts/install-minio.sh")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
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

// syncBuffer collects the server's output, written from another goroutine.
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
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
