package table

import (
	"fmt"

	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
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

// newLocator returns the locator of t's data files.
func newLocator(t *Table) (*scan.Locator, error) {
	res, err := t.resolver()
	if err != nil {
		return nil, err
	}
	return scan.NewLocator(t.store, res, t.cfg.openOpts), nil
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
