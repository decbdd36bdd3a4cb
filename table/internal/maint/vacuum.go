package maint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// DefaultDeletedFileRetention is the default of the table property
// delta.deletedFileRetentionDuration ("interval 1 week"): how long a removed
// data file stays on storage for readers of older versions.
const DefaultDeletedFileRetention = 7 * 24 * time.Hour

// ErrRetentionTooShort is returned (wrapped, together with
// objectstore.ErrInvalidArgument) by Vacuum for a retention below the table's
// delta.deletedFileRetentionDuration without WithVacuumForce: deleting
// files that recent readers or writers may still need can corrupt their
// results.
var ErrRetentionTooShort = errors.New("retention is shorter than the table's delta.deletedFileRetentionDuration")

// VacuumOption configures Vacuum.
type VacuumOption func(*vacuumConfig)

type vacuumConfig struct {
	retention   time.Duration // < 0: the table's
	dryRun      bool
	force       bool
	now         func() time.Time
	concurrency int
	progress    func(done, total int)
	logger      *slog.Logger // of the tombstone load
}

// WithVacuumLogger sets the logger of the snapshot load Vacuum makes to
// read every remove action (default slog.Default()).
func WithVacuumLogger(l *slog.Logger) VacuumOption {
	return func(c *vacuumConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithVacuumRetention sets how old a removed or unreferenced file must be
// before Vacuum deletes it (default: the table's
// delta.deletedFileRetentionDuration, one week when unset).
func WithVacuumRetention(d time.Duration) VacuumOption {
	return func(c *vacuumConfig) { c.retention = d }
}

// WithVacuumDryRun makes Vacuum report what it would delete without
// deleting anything.
func WithVacuumDryRun(on bool) VacuumOption { return func(c *vacuumConfig) { c.dryRun = on } }

// WithVacuumForce allows a retention below the table's
// delta.deletedFileRetentionDuration.
func WithVacuumForce(on bool) VacuumOption { return func(c *vacuumConfig) { c.force = on } }

// WithVacuumClock sets the clock that retention is measured from (default
// time.Now).
func WithVacuumClock(now func() time.Time) VacuumOption {
	return func(c *vacuumConfig) { c.now = now }
}

// WithVacuumConcurrency sets how many deletes run at once (default 16).
func WithVacuumConcurrency(n int) VacuumOption {
	return func(c *vacuumConfig) { c.concurrency = max(1, n) }
}

// WithVacuumProgress calls fn as files are deleted, with the number done
// and the total. fn is called from one goroutine at a time.
func WithVacuumProgress(fn func(done, total int)) VacuumOption {
	return func(c *vacuumConfig) { c.progress = fn }
}

// VacuumFile is one file Vacuum deleted or, in a dry run, would delete.
type VacuumFile struct {
	// Path is the store key relative to the table root.
	Path string
	Size int64
	// ModTime is the file's modification time.
	ModTime time.Time
	// Removed is when a remove action deleted the file from the table; zero
	// for a file the log (as far as the latest snapshot remembers) never
	// referenced, such as the orphan of a failed write.
	Removed time.Time
}

// VacuumResult reports what Vacuum did.
type VacuumResult struct {
	// Version is the table version whose files were kept.
	Version int64
	// Retention is the retention applied; DeleteBefore is now minus it.
	Retention    time.Duration
	DeleteBefore time.Time
	// DryRun is true when nothing was deleted.
	DryRun bool
	// Scanned counts the data files listed under the table root.
	Scanned int
	// Files are the files deleted (or to delete in a dry run), by path.
	Files []VacuumFile
	// Bytes is the total size of Files.
	Bytes int64
}

// Vacuum deletes data files that the table no longer needs, as Spark's
// VACUUM does: files under the table root that the latest version does not
// reference and that were removed (by the deletionTimestamp of their remove
// action) or, for files no remove action records, last modified longer ago
// than the retention. It never deletes a file the latest snapshot
// references (data files and deletion vector files), never anything under
// "_delta_log/" and never files in hidden directories (names starting with
// "_" or ".", unless they are partition directories "col=value").
//
// Change data files (_change_data/, spec "Change Data Files") are never
// referenced by a snapshot: as Spark's VACUUM does, Vacuum deletes those
// last modified longer ago than the retention, so that the change data
// feed of versions older than the retention may be gone afterwards (Changes
// then fails on the missing file), as for the data files of time travel.
//
// A removed file's removal time comes from the remove actions the log still
// holds (commits and the checkpoint it replays from); for a file whose
// remove action is gone (a checkpoint dropped the expired tombstone, or log
// cleanup deleted the commit), its modification time decides, as for a file
// the log never referenced.
//
// The retention defaults to the table's delta.deletedFileRetentionDuration
// (one week); a shorter one is refused with ErrRetentionTooShort unless
// WithVacuumForce. Vacuum works on the latest version, whatever version t
// shows, and reads the log again right before deleting so that files a
// concurrent commit added are kept. It writes no commit.
//
// Errors: ErrRetentionTooShort; store errors while listing or deleting
// (files deleted before the error are not reported); ctx errors.
//
// shown is the snapshot of the table as its caller shows it; Vacuum updates
// it to the latest version (Snapshot.Update) and works on its store.
func Vacuum(ctx context.Context, shown *txlog.Snapshot, opts ...VacuumOption) (*VacuumResult, error) {
	cfg := vacuumConfig{retention: -1, now: time.Now, concurrency: 16, logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	store := shown.Store()
	uri := store.URI()
	snap, err := shown.Update(ctx)
	if err != nil {
		return nil, fmt.Errorf("table: vacuum %s: %w", uri, err)
	}
	configured, err := deletedFileRetention(snap.Metadata())
	if err != nil {
		return nil, fmt.Errorf("table: vacuum %s: %w: %v", uri, objectstore.ErrInvalidArgument, err)
	}
	retention := cfg.retention
	if retention < 0 {
		retention = configured
	}
	if retention < configured && !cfg.force {
		return nil, fmt.Errorf("table: vacuum %s: retention %v: %w (%v): %w", uri, retention, ErrRetentionTooShort, configured, objectstore.ErrInvalidArgument)
	}
	now := cfg.now()
	res := &VacuumResult{Version: snap.Version(), Retention: retention, DeleteBefore: now.Add(-retention), DryRun: cfg.dryRun}
	deleteBefore := res.DeleteBefore.UnixMilli()

	// Every remove action the log still holds, whatever its age: the
	// snapshot forgets removes older than the table's retention, so load the
	// same version with a clock at the epoch, which expires none.
	tombSnap, err := txlog.Load(ctx, store, txlog.AtVersion(snap.Version()),
		txlog.WithClock(func() time.Time { return time.Unix(0, 0) }), txlog.WithLoadLogger(cfg.logger))
	if err != nil {
		return nil, fmt.Errorf("table: vacuum %s: %w", uri, err)
	}
	keep, err := liveKeys(snap)
	if err != nil {
		return nil, fmt.Errorf("table: vacuum %s: %w", uri, err)
	}
	removedAt := map[string]int64{}
	// Paths outside the table root are never candidates: only keys listed
	// under the root are deleted.
	storeKey := tableKeys(store.URI())
	for _, r := range tombSnap.Tombstones() {
		key, ok := storeKey(txlog.DecodePath(r.Path))
		if !ok || r.DeletionTimestamp == nil {
			continue
		}
		removedAt[key] = max(removedAt[key], *r.DeletionTimestamp)
		if *r.DeletionTimestamp > deleteBefore {
			keep[key] = true
			if dv := r.DeletionVector; dv != nil && dv.StorageType != "i" {
				if p, err := dv.AbsolutePath(); err == nil {
					if k, ok := storeKey(p); ok {
						keep[k] = true
					}
				}
			}
		}
	}

	var candidates []VacuumFile
	for info, err := range store.List(ctx, "", "") {
		if err != nil {
			return nil, fmt.Errorf("table: vacuum %s: listing: %w", uri, err)
		}
		if hiddenKey(info.Key) {
			continue
		}
		res.Scanned++
		if keep[info.Key] {
			continue
		}
		f := VacuumFile{Path: info.Key, Size: info.Size, ModTime: info.ModTime}
		if ts, ok := removedAt[info.Key]; ok {
			f.Removed = time.UnixMilli(ts)
		}
		if !info.ModTime.Before(res.DeleteBefore) {
			continue // written within the retention: an in-flight write's file
		}
		candidates = append(candidates, f)
	}

	// Read the log again: a commit since the listing may have added one of
	// the candidates (a file written earlier and committed late).
	if len(candidates) > 0 {
		again, err := snap.Update(ctx)
		if err != nil {
			return nil, fmt.Errorf("table: vacuum %s: %w", uri, err)
		}
		if again.Version() != snap.Version() {
			live, err := liveKeys(again)
			if err != nil {
				return nil, fmt.Errorf("table: vacuum %s: %w", uri, err)
			}
			for _, r := range again.Tombstones() {
				if k, ok := storeKey(txlog.DecodePath(r.Path)); ok && r.DeletionTimestamp != nil && *r.DeletionTimestamp > deleteBefore {
					live[k] = true
				}
			}
			candidates = slices.DeleteFunc(candidates, func(f VacuumFile) bool { return live[f.Path] })
			res.Version = again.Version()
		}
	}
	slices.SortFunc(candidates, func(a, b VacuumFile) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range candidates {
		res.Bytes += f.Size
	}
	res.Files = candidates
	if cfg.dryRun || len(candidates) == 0 {
		return res, nil
	}
	if err := deleteKeys(ctx, store, candidates, cfg); err != nil {
		return nil, fmt.Errorf("table: vacuum %s: %w", uri, err)
	}
	return res, nil
}

// deletedFileRetention returns delta.deletedFileRetentionDuration of m, or
// the default.
func deletedFileRetention(m *txlog.Metadata) (time.Duration, error) {
	if m == nil {
		return DefaultDeletedFileRetention, nil
	}
	s, ok := m.Configuration[txlog.PropDeletedFileRetentionDuration]
	if !ok || strings.TrimSpace(s) == "" {
		return DefaultDeletedFileRetention, nil
	}
	d, err := txlog.ParseInterval(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", txlog.PropDeletedFileRetentionDuration, err)
	}
	return d, nil
}

// liveKeys returns the store keys of every file the snapshot references
// under the table root.
func liveKeys(snap *txlog.Snapshot) (map[string]bool, error) {
	keep := map[string]bool{}
	res, err := txlog.NewPathResolver(snap.Store().URI())
	if err != nil {
		return nil, err
	}
	refs, _ := referencedFiles(snap, res, false)
	for _, r := range refs {
		keep[r.key] = true
	}
	return keep, nil
}

// changeDataDir is the directory of change data files under the table
// root (spec "Change Data Files"; table/cdf.go writes there).
const changeDataDir = "_change_data/"

// tableKeys returns a function that maps decoded log paths to store keys
// of the table at uri, false for paths outside it (txlog.PathResolver
// decides, as for scans, so vacuum keeps every file a scan reads).
func tableKeys(uri string) func(p string) (string, bool) {
	res, err := txlog.NewPathResolver(uri)
	if err != nil {
		return func(string) (string, bool) { return "", false }
	}
	return res.InTable
}

// hiddenKey reports whether vacuum leaves key alone: it is in a directory
// or is a file whose name starts with "_" or "." (the log, _SUCCESS, .crc
// files), except partition directories "col=value" and the change data
// directory _change_data (Spark's DeltaTableUtils.isHiddenDirectory, which
// VACUUM lists with: change data files are never live in a snapshot, so
// they go once they are older than the retention).
func hiddenKey(key string) bool {
	for seg := range strings.SplitSeq(key, "/") {
		if (strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".")) && !strings.Contains(seg, "=") &&
			!strings.HasPrefix(seg, strings.TrimSuffix(changeDataDir, "/")) {
			return true
		}
	}
	return false
}

// deleteKeys deletes files, up to cfg.concurrency at once; a failed delete
// does not stop the others (the first error is returned), the caller's
// cancellation does.
func deleteKeys(ctx context.Context, store objectstore.Store, files []VacuumFile, cfg vacuumConfig) error {
	return forEach(ctx, len(files), cfg.concurrency, cfg.progress, func(i int) error {
		return store.Delete(ctx, files[i].Path)
	})
}

// forEach calls fn(i) for i in [0, n), up to conc calls at once, and
// reports each finished call to progress (done and n; one call at a time;
// nil: no report). It starts no call once ctx has ended. The error is the
// first fn error, else ctx's.
func forEach(ctx context.Context, n, conc int, progress func(done, total int), fn func(i int) error) error {
	var (
		mu   sync.Mutex
		done int
	)
	var eg errgroup.Group
	eg.SetLimit(conc)
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		eg.Go(func() error {
			err := fn(i)
			if progress != nil {
				mu.Lock()
				done++
				progress(done, n)
				mu.Unlock()
			}
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}
