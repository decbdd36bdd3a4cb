package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
)

// failPartTransport fails the UploadPart request of part failPart with a
// connection error and passes every other request on.
type failPartTransport struct {
	failPart string
	failed   atomic.Int32
}

func (rt *failPartTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == rt.failPart {
		rt.failed.Add(1)
		return nil, errors.New("injected: connection reset")
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestS3UploadOnMinIO checks what the conformance suite cannot see: the
// multipart upload is open while parts are sent (so PendingUploads does
// see one), a failed part aborts it, and the part size is respected.
func TestS3UploadOnMinIO(t *testing.T) {
	m := testenv.StartMinIO(t)
	ctx := t.Context()
	data := bytes.Repeat([]byte("0123456789abcdef"), (12<<20)/16+5)

	t.Run("open while writing", func(t *testing.T) {
		s := m.NewStore(t, objectstore.WithUploadParts(5<<20, 2))
		u, err := s.Upload(ctx, "open")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Write(data); err != nil {
			t.Fatal(err)
		}
		pending, err := s.PendingUploads(ctx, "open")
		if err != nil || !slices.Equal(pending, []string{"open"}) {
			t.Fatalf("PendingUploads while writing = %q, %v; want [open]", pending, err)
		}
		if err := u.Abort(ctx); err != nil {
			t.Fatal(err)
		}
		if pending, err := s.PendingUploads(ctx, ""); err != nil || len(pending) != 0 {
			t.Fatalf("PendingUploads after Abort = %q, %v; want none", pending, err)
		}
	})

	t.Run("failed part", func(t *testing.T) {
		t.Setenv("AWS_CA_BUNDLE", "") // the SDK adds a CA bundle only to its own HTTP client
		for _, failPart := range []string{"1", "3"} {
			rt := &failPartTransport{failPart: failPart}
			s := m.NewStore(t, objectstore.WithUploadParts(5<<20, 2),
				objectstore.WithHTTPClient(&http.Client{Transport: rt}), objectstore.WithRetry(2, time.Millisecond))
			u, err := s.Upload(ctx, "failed")
			if err != nil {
				t.Fatal(err)
			}
			_, werr := u.Write(data)
			cerr := u.Commit(ctx)
			if werr == nil && cerr == nil {
				t.Fatalf("part %s failed, yet Write and Commit succeeded", failPart)
			}
			err = errors.Join(werr, cerr)
			if !strings.Contains(err.Error(), "upload part "+failPart) || !strings.Contains(err.Error(), "connection reset") {
				t.Errorf("error %v does not name part %s and its cause", err, failPart)
			}
			if rt.failed.Load() == 0 {
				t.Fatalf("part %s was never sent", failPart)
			}
			if _, err := s.Stat(ctx, "failed"); !errors.Is(err, objectstore.ErrNotExist) {
				t.Errorf("Stat after a failed part = %v, want ErrNotExist", err)
			}
			if pending, err := s.PendingUploads(ctx, ""); err != nil || len(pending) != 0 {
				t.Errorf("PendingUploads after a failed part = %q, %v; want none", pending, err)
			}
		}
	})
}

// partServer is a fake S3 that answers the multipart requests and counts
// how many parts are in flight at once, holding each for a moment.
type partServer struct {
	mu        sync.Mutex
	inFlight  int
	maxFlight int
	sizes     map[int]int
	aborted   int
	completed int
}

func (p *partServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		io.WriteString(w, `<InitiateMultipartUploadResult><UploadId>up-1</UploadId></InitiateMultipartUploadResult>`)
	case r.Method == http.MethodPut && q.Has("partNumber"):
		p.mu.Lock()
		p.inFlight++
		p.maxFlight = max(p.maxFlight, p.inFlight)
		p.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		time.Sleep(20 * time.Millisecond)
		var n int
		fmt.Sscan(q.Get("partNumber"), &n)
		p.mu.Lock()
		p.inFlight--
		p.sizes[n] = len(body)
		p.mu.Unlock()
		w.Header().Set("ETag", fmt.Sprintf(`"etag-%d"`, n))
	case r.Method == http.MethodPost && q.Has("uploadId"):
		p.mu.Lock()
		p.completed++
		p.mu.Unlock()
		io.WriteString(w, `<CompleteMultipartUploadResult><ETag>"x"</ETag></CompleteMultipartUploadResult>`)
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		p.mu.Lock()
		p.aborted++
		p.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// TestS3UploadBoundsParts: parts are the configured size, no more than
// inFlight are sent at once, and the whole object is sent.
func TestS3UploadBoundsParts(t *testing.T) {
	for _, inFlight := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(inFlight), func(t *testing.T) {
			p := &partServer{sizes: map[int]int{}}
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			s, err := objectstore.NewS3(t.Context(), "bucket", "t", objectstore.WithEndpoint(srv.URL),
				objectstore.WithCredentials("k", "s"), objectstore.WithUploadParts(5<<20, inFlight))
			if err != nil {
				t.Fatal(err)
			}
			u, err := s.Upload(t.Context(), "big")
			if err != nil {
				t.Fatal(err)
			}
			const size = 8*5<<20 + 123
			chunk := make([]byte, 1<<20)
			for left := size; left > 0; left -= len(chunk) {
				if _, err := u.Write(chunk[:min(left, len(chunk))]); err != nil {
					t.Fatal(err)
				}
			}
			if err := u.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.maxFlight > inFlight || p.maxFlight < 1 {
				t.Errorf("%d parts in flight at once, want 1 to %d", p.maxFlight, inFlight)
			}
			if len(p.sizes) != 9 || p.completed != 1 || p.aborted != 0 {
				t.Errorf("%d parts, %d completes, %d aborts; want 9, 1, 0", len(p.sizes), p.completed, p.aborted)
			}
			for n := 1; n <= 8; n++ {
				if p.sizes[n] != 5<<20 {
					t.Errorf("part %d has %d bytes, want %d", n, p.sizes[n], 5<<20)
				}
			}
			if p.sizes[9] != 123 {
				t.Errorf("last part has %d bytes, want 123", p.sizes[9])
			}
		})
	}
}

// TestS3UploadCancelAborts: cancelling the upload's context aborts the
// multipart upload by itself, with no further call of the caller.
func TestS3UploadCancelAborts(t *testing.T) {
	p := &partServer{sizes: map[int]int{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	s, err := objectstore.NewS3(t.Context(), "bucket", "t", objectstore.WithEndpoint(srv.URL),
		objectstore.WithCredentials("k", "s"), objectstore.WithUploadParts(5<<20, 2))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	u, err := s.Upload(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write(make([]byte, 11<<20)); err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		aborted := p.aborted
		p.mu.Unlock()
		if aborted == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d aborts 10s after the cancel, want 1", aborted)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := u.Commit(t.Context()); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit after cancel = %v, want context.Canceled", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.completed != 0 || p.aborted != 1 {
		t.Errorf("%d completes, %d aborts; want 0, 1", p.completed, p.aborted)
	}
}
