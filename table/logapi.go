package table

import (
	"context"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// This file is the part of table's API that works on a table's store and
// log below the level of an opened *Table: opening a store with table's
// options, loading a snapshot of a store, reading one commit, writing a
// checkpoint and cleaning up the log. It lets the packages above table
// (deltactl, library users inspecting a log) do so without importing txlog
// or objectstore.

// Store is the object store holding a table (objectstore.Store): a local
// directory, an S3 bucket prefix or an in-memory store.
type Store = objectstore.Store

// LogCleanup reports what CleanupLog deleted (txlog.CleanupResult): the
// oldest version still reconstructable (KeepFrom) and the store keys
// removed, in ascending order (Deleted).
type LogCleanup = txlog.CleanupResult

// OpenStore opens the store rooted at uri ("file:///path", a plain path,
// "s3://bucket/prefix", "mem://name") with the store options among opts
// (WithStore, WithStoreOptions, WithS3Endpoint, WithS3PathStyle,
// WithS3Region); other options are ignored. It reads nothing: a store
// without a table opens. Errors are objectstore.Open's (a bad URI, S3
// configuration).
func OpenStore(ctx context.Context, uri string, opts ...Option) (Store, error) {
	cfg := newConfig(opts)
	return cfg.openStore(ctx, uri)
}

// LoadSnapshot loads the snapshot of the table in store at version
// (version < 0: the latest), as Open does but without a *Table and without
// wrapping the error: ErrTableNotFound, a *VersionNotFoundError
// (ErrVersionNotFound) naming the earliest and latest versions, a
// *CorruptLogError, ErrNoProtocol, ErrNoMetadata, ErrLogGap, store errors.
// deltactl's inspect command uses it on a store it has opened with
// OpenStore. Of opts only WithLogger applies (a checkpoint replayed around is logged
// at Warn).
func LoadSnapshot(ctx context.Context, store Store, version int64, opts ...Option) (*Snapshot, error) {
	lopts := []txlog.LoadOption{txlog.WithLoadLogger(newConfig(opts).logger)}
	if version >= 0 {
		lopts = append(lopts, txlog.AtVersion(version))
	}
	return txlog.Load(ctx, store, lopts...)
}

// ReadCommit reads and decodes the commit file of version v of the table in
// store (spec "Delta Log Entries"), in file order: an error wrapping
// ErrNotExist when the log no longer holds it (log cleanup) or never did, a
// *CorruptLogError when it cannot be decoded. (*Table).ReadCommit is the
// same on an opened table; deltactl's inspect command uses this one on a
// log that may not load.
func ReadCommit(ctx context.Context, store Store, v int64) ([]Action, error) {
	return txlog.ReadCommit(ctx, store, v)
}

// CommitKey returns the store key of the commit file of version v,
// "_delta_log/<v, 20 digits>.json" (spec "Delta Log Entries"); deltactl
// prints it in its commit views.
func CommitKey(v int64) string { return txlog.CommitKey(v) }

// CheckpointKey returns the store key of the classic single-file checkpoint
// of version v, "_delta_log/<v, 20 digits>.checkpoint.parquet" (spec
// "Checkpoints"), where Checkpoint writes it; deltactl checkpoint reports
// it.
func CheckpointKey(v int64) string { return txlog.CheckpointKey(v) }

// Checkpoint writes a checkpoint of t's version now, in the calling
// goroutine (spec "Checkpoints"; a classic-named V2 checkpoint when
// delta.checkpointPolicy=v2), under CheckpointKey(t.Version()), and updates
// _last_checkpoint. A checkpoint already there is replaced by an identical
// one. Errors are the store's and ctx's, wrapped.
func (t *Table) Checkpoint(ctx context.Context) error {
	if t == nil {
		return nilTableError("checkpoint")
	}
	return txlog.WriteCheckpoint(ctx, t.snap)
}

// CleanupOption configures CleanupLog.
type CleanupOption func(*cleanupConfig)

type cleanupConfig struct {
	dryRun bool
}

// WithCleanupDryRun makes CleanupLog report what it would delete without
// deleting anything.
func WithCleanupDryRun(on bool) CleanupOption { return func(c *cleanupConfig) { c.dryRun = on } }

// CleanupLog deletes the expired log files of the table (spec "Metadata
// Cleanup"): commits, checkpoints and .crc files below the newest complete
// checkpoint whose files were all last modified longer ago than
// delta.logRetentionDuration (30 days when unset) before the table's clock
// (WithClock, default time.Now), so that every version
// from that checkpoint on stays reconstructable. Data files are not touched
// (see Vacuum). Errors are the store's, wrapped (txlog.CleanupLog).
func (t *Table) CleanupLog(ctx context.Context, opts ...CleanupOption) (*LogCleanup, error) {
	if t == nil {
		return nil, nilTableError("log cleanup")
	}
	var cfg cleanupConfig
	for _, o := range opts {
		o(&cfg)
	}
	return txlog.CleanupLog(ctx, t.snap, t.cfg.now(), cfg.dryRun)
}
