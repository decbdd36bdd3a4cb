package objectstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/testenv"
)

// isolateAWSEnv clears the AWS environment NewS3 and the SDK read, and
// points the shared config files at nothing, so a test sets exactly what
// it means to.
func isolateAWSEnv(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT", "AWS_ALLOW_HTTP",
		"AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
		"AWS_S3_US_EAST_1_REGIONAL_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_USE_FIPS_ENDPOINT", "AWS_CA_BUNDLE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// recordingTransport answers every request with 200 "ok" and records it.
type recordingTransport struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.reqs = append(rt.reqs, r)
	rt.mu.Unlock()
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Length": {"2"}}, ContentLength: 2,
		Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
}

// TestS3EnvironmentConfig checks the endpoint, addressing style and region
// NewS3 takes from the environment and options, by the URL and the signing
// region of the request a Get sends.
func TestS3EnvironmentConfig(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		opts     []objectstore.S3Option
		wantHost string // host of the request URL
		wantPath string
		region   string // signing region
	}{
		{"localhost endpoint gets path style", map[string]string{"AWS_ENDPOINT_URL": "http://localhost:9000"}, nil,
			"localhost:9000", "/bucket/t/k", "us-east-1"},
		{"AWS_ENDPOINT_URL_S3 wins, IPv4 gets path style",
			map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000", "AWS_ENDPOINT_URL": "http://other:1"}, nil,
			"127.0.0.1:9000", "/bucket/t/k", "us-east-1"},
		{"IPv6 endpoint gets path style", map[string]string{"AWS_ENDPOINT_URL": "http://[::1]:9000"}, nil,
			"[::1]:9000", "/bucket/t/k", "us-east-1"},
		{"AWS_ENDPOINT (object_store's alias)", map[string]string{"AWS_ENDPOINT": "http://localhost:7"}, nil,
			"localhost:7", "/bucket/t/k", "us-east-1"},
		{"named endpoint gets virtual-hosted style", map[string]string{"AWS_ENDPOINT_URL": "https://s3.example.com"}, nil,
			"bucket.s3.example.com", "/t/k", "us-east-1"},
		{"AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true on localhost",
			map[string]string{"AWS_ENDPOINT_URL": "http://localhost:9000", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"}, nil,
			"bucket.localhost:9000", "/t/k", "us-east-1"},
		{"AWS_VIRTUAL_HOSTED_STYLE_REQUEST=false on a named endpoint",
			map[string]string{"AWS_ENDPOINT_URL": "https://s3.example.com", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false"}, nil,
			"s3.example.com", "/bucket/t/k", "us-east-1"},
		{"AWS_ALLOW_HTTP=true allows http", map[string]string{"AWS_ENDPOINT_URL": "http://localhost:9000", "AWS_ALLOW_HTTP": "true"}, nil,
			"localhost:9000", "/bucket/t/k", "us-east-1"},
		{"AWS_ALLOW_HTTP=false allows https", map[string]string{"AWS_ENDPOINT_URL": "https://localhost:9000", "AWS_ALLOW_HTTP": "false"}, nil,
			"localhost:9000", "/bucket/t/k", "us-east-1"},
		{"WithEndpoint wins over the environment", map[string]string{"AWS_ENDPOINT_URL": "http://other:1"},
			[]objectstore.S3Option{objectstore.WithEndpoint("http://localhost:2")}, "localhost:2", "/bucket/t/k", "us-east-1"},
		{"WithPathStyle(false) wins over the inference", map[string]string{"AWS_ENDPOINT_URL": "http://localhost:9000"},
			[]objectstore.S3Option{objectstore.WithPathStyle(false)}, "bucket.localhost:9000", "/t/k", "us-east-1"},
		{"WithPathStyle(true) wins over AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
			map[string]string{"AWS_ENDPOINT_URL": "https://s3.example.com", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "true"},
			[]objectstore.S3Option{objectstore.WithPathStyle(true)}, "s3.example.com", "/bucket/t/k", "us-east-1"},
		{"AWS without a region: us-east-1", nil, nil, "bucket.s3.us-east-1.amazonaws.com", "/t/k", "us-east-1"},
		{"AWS_DEFAULT_REGION", map[string]string{"AWS_DEFAULT_REGION": "eu-west-2"}, nil,
			"bucket.s3.eu-west-2.amazonaws.com", "/t/k", "eu-west-2"},
		{"AWS_REGION wins over AWS_DEFAULT_REGION", map[string]string{"AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "eu-west-2"}, nil,
			"bucket.s3.ap-south-1.amazonaws.com", "/t/k", "ap-south-1"},
		{"WithRegion wins", map[string]string{"AWS_REGION": "ap-south-1"}, []objectstore.S3Option{objectstore.WithRegion("sa-east-1")},
			"bucket.s3.sa-east-1.amazonaws.com", "/t/k", "sa-east-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			isolateAWSEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			rt := &recordingTransport{}
			opts := append([]objectstore.S3Option{objectstore.WithHTTPClient(&http.Client{Transport: rt}),
				objectstore.WithCredentials("key", "secret")}, tc.opts...)
			s, err := objectstore.Open(context.Background(), "s3://bucket/t", objectstore.WithS3Options(opts...))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(context.Background(), "k", objectstore.FullObject); err != nil {
				t.Fatal(err)
			}
			if len(rt.reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(rt.reqs))
			}
			r := rt.reqs[0]
			if r.URL.Host != tc.wantHost || r.URL.Path != tc.wantPath {
				t.Errorf("request to %s%s, want %s%s", r.URL.Host, r.URL.Path, tc.wantHost, tc.wantPath)
			}
			if auth := r.Header.Get("Authorization"); !strings.Contains(auth, "/"+tc.region+"/s3/") {
				t.Errorf("signed as %q, want region %s", auth, tc.region)
			}
		})
	}
}

// Bad S3 settings in the environment are ErrInvalidArgument naming the
// variable or the endpoint.
func TestS3EnvironmentErrors(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AWS_ENDPOINT_URL": "http://localhost:9000", "AWS_ALLOW_HTTP": "false"}, "AWS_ALLOW_HTTP is false"},
		{map[string]string{"AWS_ENDPOINT_URL": "http://localhost:9000", "AWS_ALLOW_HTTP": "maybe"}, `AWS_ALLOW_HTTP="maybe"`},
		{map[string]string{"AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "yes please"}, "AWS_VIRTUAL_HOSTED_STYLE_REQUEST"},
		{map[string]string{"AWS_ENDPOINT_URL": "localhost:9000"}, `endpoint "localhost:9000" is not an http:// or https:// URL`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			isolateAWSEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := objectstore.Open(context.Background(), "s3://bucket/t", objectstore.WithS3Options(objectstore.WithCredentials("k", "s")))
			if !errors.Is(err, objectstore.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want ErrInvalidArgument saying %q", err, tc.want)
			}
		})
	}
}

// TestS3EnvironmentOnlyOnMinIO reaches a real MinIO server with nothing but
// the environment an object_store/deltalake user sets: a localhost
// endpoint (path style inferred), AWS_ALLOW_HTTP, keys, and no region
// (the default us-east-1 is MinIO's).
func TestS3EnvironmentOnlyOnMinIO(t *testing.T) {
	m := testenv.StartMinIO(t)
	isolateAWSEnv(t)
	setMinIOEnv(t, m)
	ctx := context.Background()
	s, err := objectstore.Open(ctx, m.URI("envonly"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "_delta_log/00000000000000000000.json"
	if err := s.PutIfAbsent(ctx, key, []byte("v0")); err != nil {
		t.Fatalf("PutIfAbsent: %v", err)
	}
	if err := s.PutIfAbsent(ctx, key, []byte("again")); !errors.Is(err, objectstore.ErrAlreadyExists) {
		t.Fatalf("second PutIfAbsent: %v, want ErrAlreadyExists", err)
	}
	got, err := s.Get(ctx, key, objectstore.FullObject)
	if err != nil || string(got) != "v0" {
		t.Fatalf("Get: %q, %v", got, err)
	}
	// The object is where a store configured with options finds it.
	direct, err := m.StoreAt(ctx, "envonly")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for info, err := range direct.List(ctx, "_delta_log/", "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	if len(keys) != 1 || keys[0] != key {
		t.Fatalf("listed %v, want [%s]", keys, key)
	}
}

// setMinIOEnv sets the environment that reaches m: AWS_ENDPOINT_URL with
// "localhost" (not 127.0.0.1), AWS_ALLOW_HTTP and the keys; no region.
func setMinIOEnv(t *testing.T, m *testenv.MinIO) {
	t.Helper()
	u, err := url.Parse(m.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://localhost:"+u.Port())
	t.Setenv("AWS_ALLOW_HTTP", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", m.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", m.SecretKey)
}

// MinIO's refusal of a conditional PUT signed with a wrong secret is a
// definite failure: ErrNotStored, and nothing is created.
func TestS3RefusedPutOnMinIO(t *testing.T) {
	m := testenv.StartMinIO(t)
	ctx := context.Background()
	bad := m.NewStore(t, objectstore.WithCredentials(m.AccessKey, "wrong-secret"))
	err := bad.PutIfAbsent(ctx, "k", []byte("x"))
	if !errors.Is(err, objectstore.ErrNotStored) {
		t.Fatalf("PutIfAbsent with a wrong secret: %v, want ErrNotStored", err)
	}
	good, err := m.StoreAt(ctx, strings.TrimPrefix(bad.URI(), "s3://"+m.Bucket+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Stat(ctx, "k"); !errors.Is(err, objectstore.ErrNotExist) {
		t.Fatalf("refused put created the object: %v", err)
	}
}
