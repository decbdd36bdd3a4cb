package objectstore

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
)

// OpenOption configures Open.
type OpenOption func(*openConfig)

type openConfig struct {
	s3     []S3Option
	memReg *MemRegistry
}

// WithS3Options passes options (endpoint, path-style addressing, credentials,
// region) to the S3 backend when the URI is s3://.
func WithS3Options(opts ...S3Option) OpenOption {
	return func(c *openConfig) { c.s3 = append(c.s3, opts...) }
}

// WithMemRegistry makes mem:// URIs resolve in reg, so that two Open calls
// with the same mem://name share one in-memory store. Without it every
// mem:// URI opens a new, empty store.
func WithMemRegistry(reg *MemRegistry) OpenOption {
	return func(c *openConfig) { c.memReg = reg }
}

// MemRegistry hands out one *Mem per name. The zero value is ready to use.
type MemRegistry struct {
	mu     sync.Mutex
	stores map[string]*Mem
}

// Get returns the store for name, creating it on first use.
func (r *MemRegistry) Get(name string) *Mem {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stores == nil {
		r.stores = map[string]*Mem{}
	}
	m, ok := r.stores[name]
	if !ok {
		m = NewMem(name)
		r.stores[name] = m
	}
	return m
}

// Open returns the store for a URI:
//
//   - "file:///abs/path", "file:/abs/path", "file://localhost/abs/path" or a
//     plain path ("/data/t1", "./t1", "t1"): Local;
//   - "s3://bucket/prefix" (or "s3a://..."): S3, configured from the
//     standard AWS chain (environment, shared config and credentials
//     files), the object_store environment variables NewS3 documents
//     (AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, AWS_VIRTUAL_HOSTED_STYLE_REQUEST,
//     AWS_DEFAULT_REGION) and WithS3Options;
//   - "mem://name": Mem (see WithMemRegistry).
//
// A plain path is one that does not start with a URI scheme ("name:" with a
// name of two or more letters, digits, '+', '-' or '.'); write a relative
// path with a colon in its first segment as "./a:b".
//
// Returns an error wrapping ErrInvalidArgument, naming the URI and the
// supported schemes, for an empty URI, an unknown scheme ("gs://...",
// "htp:/x") and a malformed URI of a known scheme.
func Open(ctx context.Context, uri string, opts ...OpenOption) (Store, error) {
	var cfg openConfig
	for _, o := range opts {
		o(&cfg)
	}
	if strings.TrimSpace(uri) == "" {
		return nil, fmt.Errorf("objectstore: open: %w: empty URI (want a path or a %s URI)", ErrInvalidArgument, supportedSchemes)
	}
	scheme, ok := uriScheme(uri)
	if !ok {
		return NewLocal(uri)
	}
	rest, hasSlashes := strings.CutPrefix(uri[len(scheme)+1:], "//")
	switch strings.ToLower(scheme) {
	case "file":
		u, err := url.Parse(uri)
		if err != nil {
			return nil, invalidURI(uri, err.Error())
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, invalidURI(uri, fmt.Sprintf("file URI with host %q is not supported", u.Host))
		}
		if u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
			return nil, invalidURI(uri, "file URI needs an absolute path (file:///abs/path)")
		}
		return NewLocal(filepath.FromSlash(u.Path))
	case "mem":
		if !hasSlashes || rest == "" {
			return nil, invalidURI(uri, "mem URI needs a name (mem://name)")
		}
		if cfg.memReg != nil {
			return cfg.memReg.Get(rest), nil
		}
		return NewMem(rest), nil
	case "s3", "s3a":
		bucket, prefix, _ := strings.Cut(rest, "/")
		if !hasSlashes || bucket == "" {
			return nil, invalidURI(uri, "s3 URI needs a bucket (s3://bucket/prefix)")
		}
		return NewS3(ctx, bucket, strings.Trim(prefix, "/"), cfg.s3...)
	default:
		return nil, invalidURI(uri, fmt.Sprintf("unsupported scheme %q (want a path or a %s URI)", scheme, supportedSchemes))
	}
}

// supportedSchemes lists Open's URI schemes, for error messages.
const supportedSchemes = "file://, s3:// (s3a://) or mem://"

func invalidURI(uri, why string) error {
	return fmt.Errorf("objectstore: open %q: %w: %s", uri, ErrInvalidArgument, why)
}

// uriScheme returns the scheme of uri when it starts with one (RFC 3986:
// a letter, then letters, digits, '+', '-', '.', then ':'). One-letter
// schemes are not schemes here: "C:\\data" is a Windows path.
func uriScheme(uri string) (string, bool) {
	i := strings.IndexByte(uri, ':')
	if i < 2 {
		return "", false
	}
	for j, c := range uri[:i] {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", false
		}
	}
	return uri[:i], true
}
