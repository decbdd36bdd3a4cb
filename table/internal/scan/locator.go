package scan

import (
	"context"
	"fmt"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/txlog/dvcodec"
)

// Locator maps the paths of t's log to a store and a key: paths under the
// table root to t's store, paths under an allowed root to a store opened
// for that root (once, with the table's store options). It is safe for
// concurrent use.
type Locator struct {
	home     objectstore.Store // the table root's store
	openOpts []objectstore.OpenOption
	res      *txlog.PathResolver

	mu     sync.Mutex
	stores map[string]objectstore.Store // by allowed root URI
}

// NewLocator returns the locator of the table whose root store is home,
// opening allowed roots with openOpts.
func NewLocator(home objectstore.Store, res *txlog.PathResolver, openOpts []objectstore.OpenOption) *Locator {
	return &Locator{home: home, openOpts: openOpts, res: res, stores: map[string]objectstore.Store{}}
}

// store returns the store of loc's root.
func (l *Locator) store(ctx context.Context, loc txlog.Location) (objectstore.Store, error) {
	if loc.InTable {
		return l.home, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.stores[loc.Root]; ok {
		return s, nil
	}
	s, err := objectstore.Open(ctx, loc.Root, l.openOpts...)
	if err != nil {
		return nil, fmt.Errorf("opening allowed root %s: %w", loc.Root, err)
	}
	l.stores[loc.Root] = s
	return s, nil
}

// Locate maps a decoded data file path to its store and key.
func (l *Locator) Locate(ctx context.Context, p string) (objectstore.Store, string, error) {
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

// LoadDV loads a deletion vector, its file located as data files are.
func (l *Locator) LoadDV(ctx context.Context, dv *txlog.DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if dv == nil || dv.StorageType == "i" {
		return dvcodec.LoadAt(ctx, l.home, "", dv)
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
