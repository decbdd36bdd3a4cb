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
//   - "file:///abs/path" or a plain path ("/data/t1", "./t1", "t1"): Local;
//   - "s3://bucket/prefix": S3, configured from the standard AWS chain
//     (environment, shared config and credentials files) plus WithS3Options;
//   - "mem://name": Mem (see WithMemRegistry).
//
// Returns an error naming the URI for unknown schemes or malformed URIs.
func Open(ctx context.Context, uri string, opts ...OpenOption) (Store, error) {
	var cfg openConfig
	for _, o := range opts {
		o(&cfg)
	}
	scheme, rest, hasScheme := strings.Cut(uri, "://")
	if !hasScheme {
		return NewLocal(uri)
	}
	switch strings.ToLower(scheme) {
	case "file":
		u, err := url.Parse(uri)
		if err != nil {
			return nil, fmt.Errorf("objectstore: open %q: %w", uri, err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("objectstore: open %q: file URI with host %q is not supported", uri, u.Host)
		}
		return NewLocal(filepath.FromSlash(u.Path))
	case "mem":
		if rest == "" {
			return nil, fmt.Errorf("objectstore: open %q: mem URI needs a name", uri)
		}
		if cfg.memReg != nil {
			return cfg.memReg.Get(rest), nil
		}
		return NewMem(rest), nil
	case "s3", "s3a":
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, fmt.Errorf("objectstore: open %q: s3 URI needs a bucket", uri)
		}
		return NewS3(ctx, bucket, strings.Trim(prefix, "/"), cfg.s3...)
	default:
		return nil, fmt.Errorf("objectstore: open %q: unsupported scheme %q (want file, s3 or mem)", uri, scheme)
	}
}
