package table

import (
	"context"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/txlog/dvcodec"
)

// ErrPathOutsideTable is matched (errors.Is) by the error of a read that
// meets a path in the log (add.path, remove.path, a deletion vector's path)
// outside the table root and outside every WithAllowedRoots root. It is
// txlog.ErrPathOutsideTable; the error is a *txlog.PathError naming the path
// and the reason, wrapped with the operation, the table version and the
// file.
var ErrPathOutsideTable = txlog.ErrPathOutsideTable

// WithAllowedRoots lets reads follow absolute paths of the log that lie
// under one of these root URIs (e.g. "s3://bucket/source-table" for a
// shallow clone whose log names the source table's files). Each root is
// opened as a store, with the table's WithStoreOptions, the first time a
// file under it is read. Without it (the default) every path must lie under
// the table root: reads, Optimize, Vacuum and Verify refuse the others with
// ErrPathOutsideTable before opening anything for them.
func WithAllowedRoots(uris ...string) Option {
	return func(c *config) { c.allowedRoots = append(c.allowedRoots, uris...) }
}

// resolver returns the path resolver of t's table root and allowed roots.
func (t *Table) resolver() (*txlog.PathResolver, error) {
	r, err := txlog.NewPathResolver(t.store.URI(), t.cfg.allowedRoots...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidArgument, err)
	}
	return r, nil
}

// locator maps the paths of t's log to a store and a key: paths under the
// table root to t's store, paths under an allowed root to a store opened
// for that root (once, with the table's store options). It is safe for
// concurrent use.
type locator struct {
	t   *Table
	res *txlog.PathResolver

	mu     sync.Mutex
	stores map[string]objectstore.Store // by allowed root URI
}

func newLocator(t *Table) (*locator, error) {
	res, err := t.resolver()
	if err != nil {
		return nil, err
	}
	return &locator{t: t, res: res, stores: map[string]objectstore.Store{}}, nil
}

// store returns the store of loc's root.
func (l *locator) store(ctx context.Context, loc txlog.Location) (objectstore.Store, error) {
	if loc.InTable {
		return l.t.store, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.stores[loc.Root]; ok {
		return s, nil
	}
	s, err := objectstore.Open(ctx, loc.Root, l.t.cfg.openOpts...)
	if err != nil {
		return nil, fmt.Errorf("opening allowed root %s: %w", loc.Root, err)
	}
	l.stores[loc.Root] = s
	return s, nil
}

// locate maps a decoded data file path to its store and key.
func (l *locator) locate(ctx context.Context, p string) (objectstore.Store, string, error) {
	loc, err := l.res.Resolve(p)
	if err != nil {
		return nil, "", err
	}
	s, err := l.store(ctx, loc)
	if err != nil {
		return nil, "", err
	}
	return s, loc.Key, nil
}

// loadDV loads a deletion vector, its file located as data files are.
func (l *locator) loadDV(ctx context.Context, dv *txlog.DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if dv == nil || dv.StorageType == "i" {
		return dvcodec.LoadAt(ctx, l.t.store, "", dv)
	}
	loc, err := dv.Locate(l.res)
	if err != nil {
		return nil, err
	}
	s, err := l.store(ctx, loc)
	if err != nil {
		return nil, err
	}
	return dvcodec.LoadAt(ctx, s, loc.Key, dv)
}

// tableKeys returns a function that maps decoded log paths to store keys
// of the table at uri, false for paths outside it.
func tableKeys(uri string) func(p string) (string, bool) {
	res, err := txlog.NewPathResolver(uri)
	if err != nil {
		return func(string) (string, bool) { return "", false }
	}
	return res.InTable
}

// storeKey turns a decoded path of the log into a key of the store rooted
// at uri; ok is false for a path outside it (txlog.PathResolver decides,
// as for scans, so vacuum keeps every file a scan reads).
func storeKey(uri, p string) (string, bool) { return tableKeys(uri)(p) }
