package table

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
)

// RestoreTarget names the version Restore returns a table to: ToVersion
// or ToTimestamp.
type RestoreTarget struct {
	version int64
	at      time.Time
}

// ToVersion is the table version v.
func ToVersion(v int64) RestoreTarget { return RestoreTarget{version: v} }

// ToTimestamp is the latest version committed at or before ts, as time
// travel with AtTimestamp finds it.
func ToTimestamp(ts time.Time) RestoreTarget { return RestoreTarget{version: -1, at: ts} }

// Restore returns the table's data to what it was at an earlier version,
// as Spark's RESTORE TABLE does: one commit that removes (dataChange true)
// every file live now but not then, and adds back, with their deletion
// vectors, the files live then but not now; the metaData of that version
// (schema, partitioning, properties) is restored when it differs, the
// protocol is never downgraded. The history stays: the versions after the
// target remain readable by time travel.
//
// The commit is operation "RESTORE" with parameter "version" or
// "timestamp" and Spark's metrics (numRestoredFiles, numRemovedFiles,
// restoredFilesSize, removedFilesSize, numOfFilesAfterRestore,
// tableSizeAfterRestore). It reads the whole table and is serializable:
// any concurrent data change, a blind append included, makes it fail with a
// *txlog.ConflictError (ErrConcurrentAppend for an append), as Spark's
// RESTORE fails on any concurrent commit. When the table already
// holds exactly that version's files and metadata, nothing is committed
// (Committed false). In the result, AddedFiles counts restored files.
//
// Errors, before anything is committed: a version that does not exist or
// cannot be reconstructed, or a timestamp before the first commit
// (txlog.ErrVersionNotFound), a target not before the table's version or a
// timestamp after its latest commit, as Spark refuses it (ErrInvalidArgument), a data or deletion-vector file of that version that
// is gone (vacuumed; objectstore.ErrNotExist, naming the file),
// ErrAppendOnly when files would be removed from an append-only table, a
// *ColumnMappingModeChangeError for a version before column mapping was
// enabled (its metaData would turn column mapping off; Spark refuses it
// too).
func (t *Table) Restore(ctx context.Context, to RestoreTarget, opts ...WriteOption) (*Table, *DMLResult, error) {
	if t == nil {
		return nil, nil, nilTableError("restore")
	}
	cfg := newWriteConfig(opts)
	fail := func(err error) (*Table, *DMLResult, error) {
		return nil, nil, fmt.Errorf("table: restore %s: %w", t.URI(), err)
	}
	if to.at.IsZero() && to.version < 0 {
		return fail(fmt.Errorf("%w: negative version %d", ErrInvalidArgument, to.version))
	}
	if ct := t.snap.CommitTimestamp(); !to.at.IsZero() && !ct.IsZero() && to.at.After(ct) {
		// Spark: DELTA_TIMESTAMP_GREATER_THAN_COMMIT.
		return fail(fmt.Errorf("%w: timestamp %s is after the latest commit (version %d at %s)", ErrInvalidArgument,
			to.at.UTC().Format(time.RFC3339Nano), t.Version(), ct.UTC().Format(time.RFC3339Nano)))
	}
	if to.at.IsZero() && to.version >= t.Version() {
		return fail(fmt.Errorf("%w: version %d is not before the table's version %d", ErrInvalidArgument, to.version, t.Version()))
	}
	oopts := []Option{WithStore(t.store)}
	params := map[string]string{}
	if to.at.IsZero() {
		oopts = append(oopts, AtVersion(to.version))
		params["version"] = strconv.FormatInt(to.version, 10)
	} else {
		oopts = append(oopts, AtTimestamp(to.at))
		params["timestamp"] = to.at.UTC().Format(time.RFC3339Nano)
	}
	old, err := Open(ctx, "", oopts...)
	if err != nil {
		return fail(err)
	}
	op, err := t.begin("RESTORE", false, cfg)
	if err != nil {
		return nil, nil, err
	}
	if op.skip {
		return t, &DMLResult{Version: t.Version()}, nil
	}
	// Serializable, as Spark's RESTORE (committed only at the version after
	// the one it read): a concurrent blind append would otherwise survive the
	// retry, leaving a table that is not the version restored.
	op.tx.ReadWholeTable()
	op.tx.RequireSerializable()
	then := map[txlog.FileKey]*txlog.Add{}
	for a := range old.snap.AllFiles() {
		then[a.Key()] = a
	}
	res := &DMLResult{}
	// Spark's RESTORE metrics, every key present (also when 0).
	m := map[string]int64{"removedFilesSize": 0, "restoredFilesSize": 0}
	now := t.cfg.now().UnixMilli()
	var afterFiles, afterBytes int64
	for a := range t.snap.AllFiles() {
		if _, keep := then[a.Key()]; keep {
			delete(then, a.Key())
			afterFiles++
			afterBytes += a.Size
			continue
		}
		op.removes = append(op.removes, a.RemoveAt(now))
		res.RemovedFiles++
		m["removedFilesSize"] += a.Size
	}
	loc, err := newLocator(t)
	if err != nil {
		return fail(err)
	}
	for _, k := range slices.SortedFunc(maps.Keys(then), func(a, b txlog.FileKey) int { return compareKeys(then[a], then[b]) }) {
		a := *then[k]
		if err := t.checkRestorable(ctx, loc, old.Version(), &a); err != nil {
			return fail(err)
		}
		a.DataChange = true
		op.adds = append(op.adds, &a)
		res.AddedFiles++
		m["restoredFilesSize"] += a.Size
		afterFiles++
		afterBytes += a.Size
	}
	if om := old.snap.Metadata(); !sameMetadata(om, t.snap.Metadata()) {
		op.metadata = om.Clone()
	} else if len(op.adds) == 0 && len(op.removes) == 0 {
		t.cfg.logger.Debug("table: restore changes nothing; nothing committed", "table", t.URI(), "version", t.Version(), "to", old.Version())
		return t, &DMLResult{Version: t.Version()}, nil
	}
	m["numRestoredFiles"] = int64(res.AddedFiles)
	m["numRemovedFiles"] = int64(res.RemovedFiles)
	m["numOfFilesAfterRestore"] = afterFiles
	m["tableSizeAfterRestore"] = afterBytes
	op.params = paramsWith(params, cfg)
	op.metrics = metricsOf(m)
	nt, cr, err := t.commitOperation(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	res.Committed, res.Version, res.Metrics = true, cr.Version, op.metrics
	return nt, res, nil
}

// compareKeys orders adds by path, then deletion vector, for a stable
// commit.
func compareKeys(a, b *txlog.Add) int {
	if a.Path != b.Path {
		if a.Path < b.Path {
			return -1
		}
		return 1
	}
	ua, ub := a.DeletionVector.UniqueID(), b.DeletionVector.UniqueID()
	switch {
	case ua < ub:
		return -1
	case ua > ub:
		return 1
	}
	return 0
}

// checkRestorable fails when the data file of a, or its deletion vector
// file, is no longer in the store (removed by vacuum).
func (t *Table) checkRestorable(ctx context.Context, loc *scan.Locator, version int64, a *txlog.Add) error {
	path := txlog.DecodePath(a.Path)
	store, key, err := loc.Locate(ctx, path)
	if err != nil {
		return fmt.Errorf("data file %s of version %d: %w", path, version, err)
	}
	if _, err := store.Stat(ctx, key); err != nil {
		return fmt.Errorf("data file %s of version %d is gone (vacuumed?): %w", path, version, err)
	}
	if dv := a.DeletionVector; dv != nil && dv.StorageType != "i" {
		if _, err := loc.LoadDV(ctx, dv); err != nil {
			return fmt.Errorf("deletion vector of data file %s of version %d: %w", path, version, err)
		}
	}
	return nil
}

// sameMetadata reports whether two metaData actions describe the same
// table state (schema, partitioning, properties, name, description).
func sameMetadata(a, b *txlog.Metadata) bool {
	return a.ID == b.ID && a.SchemaString == b.SchemaString && slices.Equal(a.PartitionColumns, b.PartitionColumns) &&
		maps.Equal(a.Configuration, b.Configuration) && a.Name == b.Name && a.Description == b.Description
}
