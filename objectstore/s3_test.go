package objectstore_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
)

// fakeS3 answers requests from a script and records what it received.
type fakeS3 struct {
	t       *testing.T
	mu      sync.Mutex
	reqs    []fakeReq
	respond func(n int, r *http.Request) (status int, code string)
}

type fakeReq struct {
	method, path, rawQuery string
	header                 http.Header
	body                   string
}

// newFakeS3 starts a server that calls respond with the 0-based number of
// the request. A code adds an S3 XML error body; status 200 answers a list
// request with an empty listing and another GET with "ok".
func newFakeS3(t *testing.T, respond func(n int, r *http.Request) (int, string)) (*fakeS3, *objectstore.S3) {
	f := &fakeS3{t: t, respond: respond}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	s, err := objectstore.NewS3(t.Context(), "bucket", "table",
		objectstore.WithEndpoint(srv.URL),
		objectstore.WithPathStyle(true),
		objectstore.WithRegion("us-east-1"),
		objectstore.WithCredentials("key", "secret"),
		objectstore.WithRetry(4, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return f, s
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake S3: read body: %v", err)
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, fakeReq{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(body)})
	f.mu.Unlock()

	status, code := f.respond(n, r)
	if code != "" && r.Method != http.MethodHead {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+
			`<Error><Code>%s</Code><Message>scripted</Message><RequestId>req-%d</RequestId></Error>`, code, n)
		return
	}
	if status == http.StatusOK && r.URL.Query().Has("list-type") {
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, `<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>`)
		return
	}
	if status == http.StatusOK && r.Method == http.MethodGet {
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(status)
		io.WriteString(w, "ok")
		return
	}
	w.WriteHeader(status)
}

func (f *fakeS3) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestS3PutIfAbsentRetriesConflict(t *testing.T) {
	const conflicts = 3
	f, s := newFakeS3(t, func(n int, r *http.Request) (int, string) {
		if n < conflicts {
			return http.StatusConflict, "ConditionalRequestConflict"
		}
		return http.StatusOK, ""
	})
	if err := s.PutIfAbsent(t.Context(), "_delta_log/00000000000000000003.json", []byte("commit")); err != nil {
		t.Fatalf("PutIfAbsent after %d conflicts: %v", conflicts, err)
	}
	reqs := f.requests()
	if len(reqs) != conflicts+1 {
		t.Fatalf("server got %d requests, want %d", len(reqs), conflicts+1)
	}
	for i, r := range reqs {
		if r.method != http.MethodPut || r.path != "/bucket/table/_delta_log/00000000000000000003.json" {
			t.Errorf("request %d: %s %s, want PUT of the key under the prefix", i, r.method, r.path)
		}
		if got := r.header.Get("If-None-Match"); got != "*" {
			t.Errorf("request %d: If-None-Match = %q, want *", i, got)
		}
		if !strings.Contains(r.body, "commit") {
			t.Errorf("request %d: body %q does not carry the data", i, r.body)
		}
	}
}

func TestS3PutIfAbsentConflictGivesUp(t *testing.T) {
	f, s := newFakeS3(t, func(int, *http.Request) (int, string) {
		return http.StatusConflict, "ConditionalRequestConflict"
	})
	const key = "_delta_log/00000000000000000003.json"
	err := s.PutIfAbsent(t.Context(), key, []byte("commit"))
	if err == nil {
		t.Fatal("PutIfAbsent succeeded against a server that always answers 409")
	}
	if errors.Is(err, objectstore.ErrAlreadyExists) {
		t.Errorf("409 reported as ErrAlreadyExists: %v", err)
	}
	if code := apiCode(err); code != "ConditionalRequestConflict" {
		t.Errorf("error code = %q, want ConditionalRequestConflict (err: %v)", code, err)
	}
	var ke *objectstore.KeyError
	if !errors.As(err, &ke) || ke.Key != key || ke.Op != "put-if-absent" {
		t.Errorf("error %v does not name op and key", err)
	}
	if n := len(f.requests()); n != 4 {
		t.Errorf("server got %d requests, want 4 (WithRetry attempts)", n)
	}
}

// TestS3Errors checks how S3 replies map to the package's sentinels, that
// the S3 code survives for errors.As, and which replies are tried again.
func TestS3Errors(t *testing.T) {
	tests := []struct {
		name     string
		op       string // "get", "stat", "put", "put-if-absent", "delete"
		status   int
		code     string
		wantIs   error // nil: must be none of ErrNotExist, ErrAlreadyExists, ErrNotStored
		wantCode string
		wantReqs int // requests the server sees, with WithRetry(4, ...)
	}{
		{"412 exists", "put-if-absent", 412, "PreconditionFailed", objectstore.ErrAlreadyExists, "PreconditionFailed", 1},
		{"MinIO 304 exists", "put-if-absent", 304, "", objectstore.ErrAlreadyExists, "NotModified", 1},
		{"403 keeps code, nothing stored", "put-if-absent", 403, "AccessDenied", objectstore.ErrNotStored, "AccessDenied", 1},
		// The object may exist after a 500: no retry, the caller reads back.
		{"500 not retried", "put-if-absent", 500, "InternalError", nil, "InternalError", 1},
		{"503 SlowDown retried", "put-if-absent", 503, "SlowDown", nil, "SlowDown", 4},
		{"put-if-absent missing bucket", "put-if-absent", 404, "NoSuchBucket", objectstore.ErrNotStored, "NoSuchBucket", 1},
		// Nothing was created, but the conflict may clear: not ErrNotStored.
		{"409 conflict gives up", "put-if-absent", 409, "ConditionalRequestConflict", nil, "ConditionalRequestConflict", 4},
		{"put 500 retried", "put", 500, "InternalError", nil, "InternalError", 4},
		{"put 403", "put", 403, "AccessDenied", nil, "AccessDenied", 1},
		{"get NoSuchKey", "get", 404, "NoSuchKey", objectstore.ErrNotExist, "NoSuchKey", 1},
		{"get missing bucket", "get", 404, "NoSuchBucket", nil, "NoSuchBucket", 1},
		{"get 403", "get", 403, "AccessDenied", nil, "AccessDenied", 1},
		{"stat 404", "stat", 404, "", objectstore.ErrNotExist, "NotFound", 1},
		{"stat 403", "stat", 403, "", nil, "Forbidden", 1},
		{"delete 403", "delete", 403, "AccessDenied", nil, "AccessDenied", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, s := newFakeS3(t, func(int, *http.Request) (int, string) { return tc.status, tc.code })
			const key = "dir/k=v/file.json"
			var err error
			ctx := t.Context()
			switch tc.op {
			case "get":
				_, err = s.Get(ctx, key, objectstore.FullObject)
			case "stat":
				_, err = s.Stat(ctx, key)
			case "put":
				err = s.Put(ctx, key, []byte("x"))
			case "put-if-absent":
				err = s.PutIfAbsent(ctx, key, []byte("x"))
			case "delete":
				err = s.Delete(ctx, key)
			}
			if err == nil {
				t.Fatalf("%s succeeded on a %d reply", tc.op, tc.status)
			}
			for _, sentinel := range []error{objectstore.ErrNotExist, objectstore.ErrAlreadyExists, objectstore.ErrNotStored} {
				if got, want := errors.Is(err, sentinel), sentinel == tc.wantIs; got != want {
					t.Errorf("errors.Is(err, %v) = %v, want %v; err: %v", sentinel, got, want, err)
				}
			}
			if code := apiCode(err); code != tc.wantCode {
				t.Errorf("S3 code = %q, want %q; err: %v", code, tc.wantCode, err)
			}
			var ke *objectstore.KeyError
			if !errors.As(err, &ke) || ke.Op != tc.op || ke.Key != key || ke.Store != "s3://bucket/table" {
				t.Errorf("error does not name op %q, store and key: %v", tc.op, err)
			}
			if n := len(f.requests()); n != tc.wantReqs {
				t.Errorf("server got %d requests, want %d", n, tc.wantReqs)
			}
		})
	}
}

func TestS3GetRangeHeader(t *testing.T) {
	tests := []struct {
		r    objectstore.Range
		want string // Range header; "" for none
	}{
		{objectstore.FullObject, ""},
		{objectstore.Range{Offset: 0, Length: 1}, "bytes=0-0"},
		{objectstore.Range{Offset: 3, Length: 4}, "bytes=3-6"},
		{objectstore.Range{Offset: 5, Length: -1}, "bytes=5-"},
	}
	for _, tc := range tests {
		f, s := newFakeS3(t, func(int, *http.Request) (int, string) { return http.StatusOK, "" })
		got, err := s.Get(t.Context(), "k", tc.r)
		if err != nil || string(got) != "ok" {
			t.Fatalf("Get(%+v) = %q, %v", tc.r, got, err)
		}
		reqs := f.requests()
		if len(reqs) != 1 || reqs[0].method != http.MethodGet {
			t.Fatalf("Get(%+v) sent %d requests", tc.r, len(reqs))
		}
		if h := reqs[0].header.Get("Range"); h != tc.want {
			t.Errorf("Get(%+v) sent Range %q, want %q", tc.r, h, tc.want)
		}
	}

	// 416: the range starts past the end of an existing object.
	_, s := newFakeS3(t, func(int, *http.Request) (int, string) { return 416, "InvalidRange" })
	got, err := s.Get(t.Context(), "k", objectstore.Range{Offset: 100, Length: -1})
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("Get past the end = %q (nil=%v), %v; want empty, no error", got, got == nil, err)
	}
}

func TestS3ListRequest(t *testing.T) {
	tests := []struct {
		prefix, startAfter string
		wantPrefix         string
		wantStartAfter     string // "" for none
	}{
		{"", "", "table/", ""},
		{"_delta_log/", "", "table/_delta_log/", ""},
		{"_delta_log/", "_delta_log/00000000000000000005.json", "table/_delta_log/", "table/_delta_log/00000000000000000005.json"},
		{"_delta_log/", "_", "table/_delta_log/", ""},
		{"_delta_log/", "_delta_log/", "table/_delta_log/", "table/_delta_log/"},
	}
	for _, tc := range tests {
		f, s := newFakeS3(t, func(_ int, r *http.Request) (int, string) { return http.StatusOK, "" })
		for _, err := range s.List(t.Context(), tc.prefix, tc.startAfter) {
			if err != nil {
				t.Fatalf("List(%q, %q): %v", tc.prefix, tc.startAfter, err)
			}
		}
		reqs := f.requests()
		if len(reqs) != 1 {
			t.Fatalf("List sent %d requests", len(reqs))
		}
		q, err := url.ParseQuery(reqs[0].rawQuery)
		if err != nil {
			t.Fatal(err)
		}
		if q.Get("list-type") != "2" || q.Get("prefix") != tc.wantPrefix || q.Get("start-after") != tc.wantStartAfter {
			t.Errorf("List(%q, %q) sent %s, want prefix %q start-after %q", tc.prefix, tc.startAfter, reqs[0].rawQuery, tc.wantPrefix, tc.wantStartAfter)
		}
	}
}

func TestNewS3(t *testing.T) {
	tests := []struct {
		bucket, prefix string
		wantURI        string
		wantErr        bool
	}{
		{"b", "", "s3://b", false},
		{"b", "t1", "s3://b/t1", false},
		{"b", "/tables/t1/", "s3://b/tables/t1", false},
		{"", "t1", "", true},
		{"b", "a/../b", "", true},
		{"b", "a//b", "", true},
	}
	for _, tc := range tests {
		s, err := objectstore.NewS3(t.Context(), tc.bucket, tc.prefix,
			objectstore.WithRegion("eu-west-1"), objectstore.WithCredentials("k", "s"))
		if tc.wantErr {
			if err == nil {
				t.Errorf("NewS3(%q, %q) succeeded, want an error", tc.bucket, tc.prefix)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewS3(%q, %q): %v", tc.bucket, tc.prefix, err)
			continue
		}
		if s.URI() != tc.wantURI {
			t.Errorf("NewS3(%q, %q).URI() = %q, want %q", tc.bucket, tc.prefix, s.URI(), tc.wantURI)
		}
	}
}

// TestS3ConflictRetryOnMinIO puts a proxy in front of a real MinIO server
// that answers 409 to the first PUTs: the retried request must create the
// object on MinIO, and a later PutIfAbsent must get MinIO's own 412.
func TestS3ConflictRetryOnMinIO(t *testing.T) {
	m := testenv.StartMinIO(t)
	target, err := url.Parse(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	conflicts := 2
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // the request is signed for the proxy's host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conflict := r.Method == http.MethodPut && conflicts > 0
		if conflict {
			conflicts--
		}
		mu.Unlock()
		if conflict {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `<Error><Code>ConditionalRequestConflict</Code><Message>in flight</Message></Error>`)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	s := m.NewStore(t, objectstore.WithEndpoint(srv.URL), objectstore.WithRetry(5, 10*time.Millisecond))
	const key = "_delta_log/00000000000000000000.json"
	if err := s.PutIfAbsent(t.Context(), key, []byte("mine")); err != nil {
		t.Fatalf("PutIfAbsent through two 409s: %v", err)
	}
	if conflicts != 0 {
		t.Fatalf("%d scripted conflicts left unused", conflicts)
	}
	direct, err := objectstore.NewS3(t.Context(), m.Bucket, strings.TrimPrefix(s.URI(), "s3://"+m.Bucket+"/"), m.S3Options()...)
	if err != nil {
		t.Fatal(err)
	}
	got, err := direct.Get(t.Context(), key, objectstore.FullObject)
	if err != nil || string(got) != "mine" {
		t.Fatalf("MinIO holds %q, %v; want %q", got, err, "mine")
	}
	err = s.PutIfAbsent(t.Context(), key, []byte("theirs"))
	if !errors.Is(err, objectstore.ErrAlreadyExists) || apiCode(err) != "PreconditionFailed" {
		t.Errorf("second PutIfAbsent = %v (code %q), want ErrAlreadyExists from MinIO's 412", err, apiCode(err))
	}
}
