package objectstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/cenkalti/backoff/v5"
)

// S3 is a Store on Amazon S3 or an S3-compatible server such as MinIO. Keys
// are relative to a prefix inside one bucket. PutIfAbsent relies on
// conditional writes (PutObject with If-None-Match: *), which AWS S3 supports
// since August 2024; so does MinIO (tested against a 2026-02 build).
//
// Errors from S3 keep the service's error: errors.As(err, &apiErr) with a
// smithy.APIError yields the S3 code (e.g. "AccessDenied").
type S3 struct {
	client      *s3.Client
	bucket      string
	root        string // prefix with a trailing slash, or ""
	uri         string
	maxAttempts int
	maxDelay    time.Duration
	partSize    int64 // bytes per part of a streaming upload
	inFlight    int   // parts of one upload sent at once
}

// S3Option configures NewS3.
type S3Option func(*s3Config)

type s3Config struct {
	endpoint    string
	pathStyle   *bool // nil: from the environment, or inferred from the endpoint
	region      string
	accessKey   string
	secretKey   string
	httpClient  *http.Client
	maxAttempts int
	maxDelay    time.Duration
	partSize    int64
	inFlight    int
}

// DefaultS3Region is the region NewS3 uses when no option, environment
// variable or shared config file names one (as the AWS CLI and most
// S3-compatible servers expect).
const DefaultS3Region = "us-east-1"

// Retry defaults of NewS3; see WithRetry.
const (
	defaultS3MaxAttempts = 6
	defaultS3MaxDelay    = 5 * time.Second
	conflictFirstDelay   = 100 * time.Millisecond
)

// WithEndpoint sends requests to url (e.g. "http://localhost:9000") instead
// of the AWS endpoint of the region, overriding AWS_ENDPOINT_URL_S3 and
// AWS_ENDPOINT_URL. Use it for MinIO and other S3-compatible servers. An
// endpoint whose host is "localhost" or an IP address is addressed in path
// style unless WithPathStyle(false) or AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true
// say otherwise.
func WithEndpoint(url string) S3Option {
	return func(c *s3Config) { c.endpoint = url }
}

// WithPathStyle addresses the bucket in the URL path ("host/bucket/key",
// true) or in the host name ("bucket.host/key", false), overriding
// AWS_VIRTUAL_HOSTED_STYLE_REQUEST and the inference from the endpoint.
// MinIO needs path style.
func WithPathStyle(on bool) S3Option {
	return func(c *s3Config) { c.pathStyle = &on }
}

// WithRegion sets the AWS region, overriding AWS_REGION, AWS_DEFAULT_REGION
// and the shared config files. With no region from anywhere, NewS3 uses
// DefaultS3Region.
func WithRegion(region string) S3Option {
	return func(c *s3Config) { c.region = region }
}

// WithCredentials uses a static access key pair instead of the standard AWS
// credential chain (environment, shared files, web identity, instance role).
func WithCredentials(accessKey, secretKey string) S3Option {
	return func(c *s3Config) { c.accessKey, c.secretKey = accessKey, secretKey }
}

// WithHTTPClient sends requests through client, for example one with custom
// timeouts or TLS settings.
func WithHTTPClient(client *http.Client) S3Option {
	return func(c *s3Config) { c.httpClient = client }
}

// WithRetry bounds retries: every request is tried at most maxAttempts times
// (at least once), and no wait between tries exceeds maxDelay. It applies to
// the SDK's retries of transient errors (throttling, 5xx, connection errors)
// and to PutIfAbsent's retries of 409 ConditionalRequestConflict, which wait
// with exponential backoff and jitter starting at min(100ms, maxDelay).
// Defaults: 6 attempts, 5s.
func WithRetry(maxAttempts int, maxDelay time.Duration) S3Option {
	return func(c *s3Config) { c.maxAttempts, c.maxDelay = max(maxAttempts, 1), max(maxDelay, 0) }
}

// NewS3 returns a Store for the objects under prefix in bucket. Region and
// credentials come from the standard AWS chain (environment, shared config
// files, instance role) unless options set them. NewS3 does no network I/O
// beyond what the credential chain needs: a missing bucket shows in the first
// operation.
//
// Options win over the environment, which NewS3 reads as the AWS SDKs and
// the object_store crate (deltalake, delta-rs) do:
//
//   - AWS_ENDPOINT_URL_S3, then AWS_ENDPOINT_URL (or endpoint_url in the
//     shared config file), then AWS_ENDPOINT: the endpoint (WithEndpoint);
//   - AWS_VIRTUAL_HOSTED_STYLE_REQUEST: "true" for virtual-hosted style,
//     "false" for path style (WithPathStyle); when unset, an endpoint whose
//     host is "localhost" or an IP address gets path style, others
//     virtual-hosted style;
//   - AWS_ALLOW_HTTP: "false" refuses an http:// endpoint (unset or "true"
//     allows it);
//   - AWS_REGION, then AWS_DEFAULT_REGION, then the shared config file, then
//     DefaultS3Region (WithRegion).
//
// Returns an error wrapping ErrInvalidArgument for an empty bucket, a bad
// prefix, an endpoint that is not an http(s) URL, and a variable above
// whose value is not a boolean.
//
// A prefix "tables/t1" and a key "_delta_log/x.json" address the object
// "tables/t1/_delta_log/x.json"; an empty prefix stores keys at the bucket
// root.
func NewS3(ctx context.Context, bucket, prefix string, opts ...S3Option) (*S3, error) {
	if bucket == "" {
		return nil, fmt.Errorf("objectstore: NewS3: %w: empty bucket name", ErrInvalidArgument)
	}
	cfg := s3Config{maxAttempts: defaultS3MaxAttempts, maxDelay: defaultS3MaxDelay,
		partSize: DefaultS3PartSize, inFlight: DefaultS3InFlight}
	for _, opt := range opts {
		opt(&cfg)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return nil, fmt.Errorf("objectstore: NewS3: %w: prefix %q: %w", ErrInvalidArgument, prefix, err)
		}
	}

	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.maxAttempts
				o.MaxBackoff = cfg.maxDelay
			})
		}),
	}
	if cfg.region == "" && os.Getenv("AWS_REGION") == "" {
		cfg.region = os.Getenv("AWS_DEFAULT_REGION") // read by the AWS CLI and object_store, not the Go SDK
	}
	if cfg.region != "" {
		loadOpts = append(loadOpts, config.WithRegion(cfg.region))
	}
	if cfg.accessKey != "" || cfg.secretKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.accessKey, cfg.secretKey, "")))
	}
	if cfg.httpClient != nil {
		loadOpts = append(loadOpts, config.WithHTTPClient(cfg.httpClient))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("objectstore: NewS3: load AWS config: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = DefaultS3Region
	}
	endpoint := firstNonEmpty(cfg.endpoint, os.Getenv("AWS_ENDPOINT_URL_S3"), aws.ToString(awsCfg.BaseEndpoint), os.Getenv("AWS_ENDPOINT"))
	pathStyle, err := s3PathStyle(cfg.pathStyle, endpoint)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.UsePathStyle = pathStyle
		// Ranged reads and many S3-compatible servers send no checksum;
		// the SDK would log each such reply.
		o.DisableLogOutputChecksumValidationSkipped = true
	})

	s := &S3{
		client:      client,
		bucket:      bucket,
		uri:         "s3://" + bucket,
		maxAttempts: cfg.maxAttempts,
		maxDelay:    cfg.maxDelay,
		partSize:    cfg.partSize,
		inFlight:    cfg.inFlight,
	}
	if prefix != "" {
		s.root = prefix + "/"
		s.uri += "/" + prefix
	}
	return s, nil
}

// s3PathStyle checks endpoint ("" for AWS) and decides the addressing
// style: explicit (the option), else AWS_VIRTUAL_HOSTED_STYLE_REQUEST, else
// path style for a localhost or IP-address endpoint.
func s3PathStyle(explicit *bool, endpoint string) (bool, error) {
	allowHTTP, allowSet, err := envBool("AWS_ALLOW_HTTP")
	if err != nil {
		return false, err
	}
	virtual, virtualSet, err := envBool("AWS_VIRTUAL_HOSTED_STYLE_REQUEST")
	if err != nil {
		return false, err
	}
	host := ""
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false, fmt.Errorf("objectstore: NewS3: %w: endpoint %q is not an http:// or https:// URL (e.g. http://localhost:9000)",
				ErrInvalidArgument, endpoint)
		}
		if u.Scheme == "http" && allowSet && !allowHTTP {
			return false, fmt.Errorf("objectstore: NewS3: %w: endpoint %q uses http but AWS_ALLOW_HTTP is false", ErrInvalidArgument, endpoint)
		}
		host = u.Hostname()
	}
	switch {
	case explicit != nil:
		return *explicit, nil
	case virtualSet:
		return !virtual, nil
	}
	return host == "localhost" || net.ParseIP(host) != nil, nil
}

// envBool reads a boolean environment variable: ok is false when it is
// unset or empty.
func envBool(name string) (v, ok bool, err error) {
	s := strings.TrimSpace(os.Getenv(name))
	if s == "" {
		return false, false, nil
	}
	v, err = strconv.ParseBool(s)
	if err != nil {
		return false, false, fmt.Errorf("objectstore: NewS3: %w: %s=%q is not true or false", ErrInvalidArgument, name, s)
	}
	return v, true, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// URI implements Store: "s3://bucket/prefix", or "s3://bucket" without a
// prefix.
func (s *S3) URI() string { return s.uri }

func (s *S3) err(op, key string, err error) error {
	return &KeyError{Op: op, Store: s.uri, Key: key, Err: err}
}

// Get implements Store with a ranged GetObject. NoSuchKey becomes
// ErrNotExist; a range that starts at or beyond the end yields no bytes.
func (s *S3) Get(ctx context.Context, key string, r Range) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, s.err("get", key, err)
	}
	if r.Offset < 0 {
		return nil, s.err("get", key, ErrInvalidRange)
	}
	if r.Length == 0 {
		// HTTP cannot ask for zero bytes; still report a missing key.
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.root + key)})
		if err != nil {
			return nil, s.err("get", key, mapNotExist(err))
		}
		return []byte{}, nil
	}
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.root + key)}
	switch {
	case r.Length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", r.Offset, r.Offset+r.Length-1))
	case r.Offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", r.Offset))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			return []byte{}, nil // the object exists but ends before r.Offset
		}
		return nil, s.err("get", key, mapNotExist(err))
	}
	defer out.Body.Close()
	if out.ContentLength == nil || *out.ContentLength < 0 {
		b, err := io.ReadAll(out.Body)
		if err != nil {
			return nil, s.err("get", key, err)
		}
		return b, nil
	}
	// Exactly the announced bytes, in a buffer of that size (a
	// bytes.Buffer filled by io.Copy doubles its capacity at the last read).
	buf := make([]byte, *out.ContentLength)
	if _, err := io.ReadFull(out.Body, buf); err != nil {
		return nil, s.err("get", key, err)
	}
	return buf, nil
}

// ReadAt implements RangeReader with a ranged GetObject whose body is read
// straight into p.
func (s *S3) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := checkKey(key); err != nil {
		return 0, s.err("get", key, err)
	}
	if off < 0 {
		return 0, s.err("get", key, ErrInvalidRange)
	}
	if len(p) == 0 {
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.root + key)})
		if err != nil {
			return 0, s.err("get", key, mapNotExist(err))
		}
		return 0, nil
	}
	in := &s3.GetObjectInput{
		Bucket: &s.bucket,
		Key:    aws.String(s.root + key),
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)),
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			return 0, io.EOF // the object exists but ends at or before off
		}
		return 0, s.err("get", key, mapNotExist(err))
	}
	defer out.Body.Close()
	want := len(p)
	if out.ContentLength != nil && *out.ContentLength >= 0 && *out.ContentLength < int64(want) {
		want = int(*out.ContentLength) // the object ends inside the range
	}
	n, err := io.ReadFull(out.Body, p[:want])
	if err != nil {
		return n, s.err("get", key, err)
	}
	return fillResult(n, len(p))
}

// Put implements Store with PutObject. S3 makes a new object visible
// atomically.
func (s *S3) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return s.err("put", key, err)
	}
	_, err := s.client.PutObject(ctx, s.putInput(key, data))
	if err != nil {
		return s.err("put", key, err)
	}
	return nil
}

func (s *S3) putInput(key string, data []byte) *s3.PutObjectInput {
	return &s3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           aws.String(s.root + key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	}
}

// PutIfAbsent implements Store with PutObject and If-None-Match: *.
//
// 412 PreconditionFailed (and 304, which some MinIO releases send) becomes
// ErrAlreadyExists. 409 ConditionalRequestConflict means a conflicting write
// is in flight and nothing is decided: the same request is tried again after
// a backoff, up to the WithRetry bounds, and never reported as
// ErrAlreadyExists. 503 SlowDown is tried again the same way.
//
// 403 (AccessDenied, a bad key or signature) and a missing or invalid
// bucket wrap ErrNotStored: S3 refused the request and created nothing.
//
// Transport errors and other 5xx replies are not retried: the object may have
// been created by that very request, and a retry would then report our own
// object as ErrAlreadyExists. Such an error leaves the outcome open; the
// caller resolves it by reading the key back.
func (s *S3) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	const op = "put-if-absent"
	if err := checkKey(key); err != nil {
		return s.err(op, key, err)
	}
	attempts := 0
	try := func() (struct{}, error) {
		attempts++
		in := s.putInput(key, data)
		in.IfNoneMatch = aws.String("*")
		_, err := s.client.PutObject(ctx, in, func(o *s3.Options) {
			o.Retryer = aws.NopRetryer{}
		})
		switch {
		case err == nil:
		case isConditionConflict(err):
			// Retryable: a concurrent conditional write is in flight.
		case isPreconditionFailed(err):
			err = backoff.Permanent(fmt.Errorf("%w: %w", ErrAlreadyExists, err))
		case isRefused(err):
			err = backoff.Permanent(fmt.Errorf("%w: %w", ErrNotStored, err))
		default:
			err = backoff.Permanent(err)
		}
		return struct{}{}, err
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = min(conflictFirstDelay, s.maxDelay)
	b.MaxInterval = s.maxDelay
	b.Multiplier = 2
	_, err := backoff.Retry(ctx, try,
		backoff.WithBackOff(b),
		backoff.WithMaxTries(uint(s.maxAttempts)),
		backoff.WithMaxElapsedTime(0))
	if err == nil {
		return nil
	}
	if isConditionConflict(err) {
		err = fmt.Errorf("gave up after %d attempts: %w", attempts, err)
	}
	return s.err(op, key, err)
}

// List implements Store with ListObjectsV2, following continuation tokens.
// S3 lists keys in UTF-8 binary order, which is Go's string order.
func (s *S3) List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		in := &s3.ListObjectsV2Input{
			Bucket: &s.bucket,
			Prefix: aws.String(s.root + prefix),
		}
		// Keys before prefix are filtered out anyway; only a startAfter at or
		// past the prefix narrows the listing.
		if startAfter != "" && startAfter >= prefix {
			in.StartAfter = aws.String(s.root + startAfter)
		}
		pages := s3.NewListObjectsV2Paginator(s.client, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(ObjectInfo{}, s.err("list", prefix, err))
				return
			}
			for _, obj := range page.Contents {
				info := ObjectInfo{
					Key:     strings.TrimPrefix(aws.ToString(obj.Key), s.root),
					Size:    aws.ToInt64(obj.Size),
					ModTime: aws.ToTime(obj.LastModified),
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

// Stat implements Store with HeadObject.
func (s *S3) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key); err != nil {
		return ObjectInfo{}, s.err("stat", key, err)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.root + key)})
	if err != nil {
		return ObjectInfo{}, s.err("stat", key, mapNotExist(err))
	}
	return ObjectInfo{
		Key:     key,
		Size:    aws.ToInt64(out.ContentLength),
		ModTime: aws.ToTime(out.LastModified),
	}, nil
}

// Delete implements Store with DeleteObject, which succeeds for absent keys.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return s.err("delete", key, err)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.root + key)})
	if err != nil {
		return s.err("delete", key, err)
	}
	return nil
}

// mapNotExist adds ErrNotExist to a 404 reply other than NoSuchBucket,
// keeping the S3 error for errors.As. HEAD replies have no body, so their
// code is just "NotFound" and a missing bucket reads as ErrNotExist there.
func mapNotExist(err error) error {
	if httpStatus(err) == http.StatusNotFound && apiCode(err) != "NoSuchBucket" {
		return fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	return err
}

// isPreconditionFailed reports whether a conditional PUT lost because the key
// exists: 412, or 304 from some MinIO releases.
func isPreconditionFailed(err error) bool {
	switch httpStatus(err) {
	case http.StatusPreconditionFailed, http.StatusNotModified:
		return true
	}
	return apiCode(err) == "PreconditionFailed"
}

// isRefused reports whether S3 refused a request without acting on it for a
// reason a retry does not cure: 403, or a bucket that does not exist or
// cannot be named so.
func isRefused(err error) bool {
	if httpStatus(err) == http.StatusForbidden {
		return true
	}
	switch apiCode(err) {
	case "NoSuchBucket", "InvalidBucketName", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
		return true
	}
	return false
}

// isConditionConflict reports whether S3 refused a conditional PUT because a
// conflicting write was in flight (409), or throttled it (503 SlowDown).
// Neither created the object.
func isConditionConflict(err error) bool {
	switch apiCode(err) {
	case "ConditionalRequestConflict", "SlowDown":
		return true
	}
	return false
}

func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
