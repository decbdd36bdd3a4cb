package table

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// ErrNoChangeData is returned by Changes for a version range in which the
// table did not record its changes: the change data feed
// (delta.enableChangeDataFeed) was off at the start version, or turned off
// by a later version of the range (Spark's DELTA_MISSING_CHANGE_DATA).
var ErrNoChangeData = errors.New("change data not recorded")

// ChangeFeed is the change data feed of a table over a range of versions
// (Changes): which versions it covers, the schema of its rows, and the
// rows (Rows).
type ChangeFeed struct {
	// From and To are the first and last versions of the range.
	From, To int64

	t        *Table // the table at To
	plan     *scan.Plan
	cdcPlan  *scan.Plan // plan with _change_type read from change data files
	sch      *schema.StructType
	versions []changeVersion
	limit    int64
}

// changeVersion is one commit of the range: its time and the actions that
// carry its changes.
type changeVersion struct {
	version int64
	ts      time.Time
	cdcs    []*txlog.AddCDCFile
	adds    []*txlog.Add    // dataChange true
	removes []*txlog.Remove // dataChange true
}

// Changes returns the change data feed of t (spec "Change Data Files") for
// the versions fromVersion to toVersion, both included, as Spark's
// table_changes(table, from, to) reads it. toVersion < 0, or past the
// latest version in the log, means the latest version.
// Each row holds the table's columns (schema of the table at the end of
// the range; WithColumns picks some), then _change_type (string: insert,
// delete, update_preimage, update_postimage), _commit_version (long) and
// _commit_timestamp (timestamp: the commit's time as History shows it,
// the in-commit timestamp or the log file's modification time).
//
// A version with cdc actions contributes the rows of its change data files
// alone; another version its add actions with dataChange true as inserts
// and its remove actions with dataChange true as deletes (a file re-added
// with a grown deletion vector: the rows the new vector deletes); versions
// that change no data (OPTIMIZE, metadata changes) contribute nothing.
//
// opts: WithFilter (on the table's columns) keeps the rows where it is
// true, WithColumns projects the table's columns (the three change
// columns always follow), WithLimit stops after n rows; other scan
// options are ignored.
//
// Errors, before any row is read: ErrInvalidArgument for a negative
// fromVersion or fromVersion after toVersion, a *txlog.VersionNotFoundError
// for a fromVersion past the latest version or a commit no longer in the
// log (log cleanup), ErrNoChangeData when the change data feed was off at
// fromVersion or a later version of the range turned it off, and the
// errors of reading the log and resolving the options.
func (t *Table) Changes(ctx context.Context, fromVersion, toVersion int64, opts ...ScanOption) (*ChangeFeed, error) {
	if t == nil {
		return nil, nilTableError("changes")
	}
	fail := func(err error) (*ChangeFeed, error) {
		return nil, fmt.Errorf("table: changes of %s from version %d: %w", t.URI(), fromVersion, err)
	}
	if fromVersion < 0 {
		return fail(fmt.Errorf("%w: start version %d is negative", ErrInvalidArgument, fromVersion))
	}
	if toVersion >= 0 && fromVersion > toVersion {
		return fail(fmt.Errorf("%w: end version %d is before start version %d", ErrInvalidArgument, toVersion, fromVersion))
	}
	ls, err := scanLog(ctx, t.store)
	if err != nil {
		return fail(err)
	}
	latest := int64(-1)
	if n := len(ls.commits); n > 0 {
		latest = ls.commits[n-1]
	}
	if fromVersion > latest {
		return fail(&txlog.VersionNotFoundError{Version: fromVersion, Earliest: -1, Latest: latest})
	}
	if toVersion < 0 || toVersion > latest {
		toVersion = latest
	}
	end, err := t.atVersion(ctx, toVersion)
	if err != nil {
		return fail(err)
	}
	start, err := t.atVersion(ctx, fromVersion)
	if err != nil {
		return fail(err)
	}
	if !changeDataFeedEnabled(start.snap.Metadata()) {
		return fail(fmt.Errorf("%w: the change data feed (%s) is not enabled at version %d",
			ErrNoChangeData, txlog.PropEnableChangeDataFeed, fromVersion))
	}
	cfg := newScanConfig(opts)
	plan, err := scan.NewPlan(end.scanSource(), scan.Config{Filters: cfg.Filters, Columns: cfg.Columns, ColumnsSet: cfg.ColumnsSet})
	if err != nil {
		return fail(err)
	}
	if plan.Locs, err = newLocator(end); err != nil {
		return fail(err)
	}
	plan.FileErrors = true // Rows names the version of each file
	c := &ChangeFeed{From: fromVersion, To: toVersion, t: end, plan: plan, cdcPlan: changeDataPlan(plan), limit: cfg.Limit}
	c.sch = &schema.StructType{Fields: slices.Concat(plan.OutSch.Fields, []*schema.StructField{
		schema.NewField(ChangeTypeColumn, schema.Primitive(schema.String), true),
		schema.NewField(CommitVersionColumn, schema.Primitive(schema.Long), true),
		schema.NewField(CommitTimestampColumn, schema.Primitive(schema.Timestamp), true),
	})}
	times := commitTimes(ls)
	for cm, err := range txlog.Commits(ctx, t.store, fromVersion, toVersion) {
		if err != nil {
			return fail(err)
		}
		cv := changeVersion{version: cm.Version, ts: times[cm.Version]}
		if ci := cm.CommitInfo(); ci != nil && ci.InCommitTimestamp != nil {
			cv.ts = time.UnixMilli(*ci.InCommitTimestamp).UTC()
		}
		if cv.ts.IsZero() {
			cv.ts = cm.ModTime.UTC()
		}
		for _, a := range cm.Actions {
			switch {
			case a.Metadata != nil && cm.Version > fromVersion && !changeDataFeedEnabled(a.Metadata):
				return fail(fmt.Errorf("%w: version %d turned the change data feed (%s) off, within the range to version %d",
					ErrNoChangeData, cm.Version, txlog.PropEnableChangeDataFeed, toVersion))
			case a.CDC != nil:
				cv.cdcs = append(cv.cdcs, a.CDC)
			case a.Add != nil && a.Add.DataChange:
				cv.adds = append(cv.adds, a.Add)
			case a.Remove != nil && a.Remove.DataChange:
				cv.removes = append(cv.removes, a.Remove)
			}
		}
		c.versions = append(c.versions, cv)
	}
	return c, nil
}

// atVersion returns t at version v: t itself, or the table opened at v
// with t's store and configuration.
func (t *Table) atVersion(ctx context.Context, v int64) (*Table, error) {
	if v == t.Version() {
		return t, nil
	}
	snap, err := txlog.Load(ctx, t.store, txlog.AtVersion(v), txlog.WithLoadLogger(t.cfg.logger))
	if err != nil {
		return nil, err
	}
	return t.with(snap), nil
}

// changeDataPlan returns p reading _change_type too, as an extra column
// after the table's (index p.width), output after p's columns.
func changeDataPlan(p *scan.Plan) *scan.Plan {
	cp := *p
	w := p.Width
	cp.Width = w + 1
	cp.Read = &schema.StructType{Fields: append(slices.Clone(p.Read.Fields),
		schema.NewField(ChangeTypeColumn, schema.Primitive(schema.String), true))}
	cp.ReadTop = append(slices.Clone(p.ReadTop), w)
	cp.IsPart = append(slices.Clone(p.IsPart), false)
	cp.PartSlot = append(slices.Clone(p.PartSlot), -1)
	cp.Out = append(slices.Clone(p.Out), w)
	cp.FullOut = false
	cp.Direct = cp.Pred == nil && len(cp.Parts) == 0 && slices.Equal(cp.Out, cp.ReadTop)
	return &cp
}

// Schema returns the schema of the feed's rows: the table's columns (or
// the WithColumns ones), then _change_type, _commit_version and
// _commit_timestamp.
func (c *ChangeFeed) Schema() *schema.StructType {
	if c == nil {
		return nil
	}
	return c.sch
}

// Versions returns the versions of the range that changed data, in order.
func (c *ChangeFeed) Versions() []int64 {
	if c == nil {
		return nil
	}
	var out []int64
	for _, v := range c.versions {
		if len(v.cdcs)+len(v.adds)+len(v.removes) > 0 {
			out = append(out, v.version)
		}
	}
	return out
}

// Rows yields the change rows: versions in order; within a version, the
// change data files in commit order, or the removed files' rows (deletes)
// then the added files' (inserts). Files are read one at a time. Errors
// (reading a file, named with its version) are yielded once, as (nil,
// err), and end the iteration.
func (c *ChangeFeed) Rows(ctx context.Context) iter.Seq2[Row, error] {
	if c == nil {
		err := fmt.Errorf("table: changes: %w: nil *table.ChangeFeed (the feed returned with an earlier call's error?)", ErrInvalidArgument)
		return func(yield func(value.Row, error) bool) { yield(nil, err) }
	}
	return func(yield func(value.Row, error) bool) {
		var n int64
		for _, v := range c.versions {
			ok, err := c.versionRows(ctx, v, func(r value.Row) bool {
				n++
				return yield(r, nil) && (c.limit <= 0 || n < c.limit)
			})
			if err != nil {
				if errors.Is(err, objectstore.ErrNotExist) {
					// Spark's DELTA_CHANGE_DATA_FILE_NOT_FOUND says the same.
					err = fmt.Errorf("a file this version added, removed or wrote as change data is gone: "+
						"VACUUM deletes them once they are older than the retention (delta.deletedFileRetentionDuration), "+
						"so the change data feed reads only versions whose files are retained: %w", err)
				}
				yield(nil, fmt.Errorf("table: changes of %s version %d: %w", c.t.URI(), v.version, err))
				return
			}
			if !ok {
				return
			}
		}
	}
}

// versionRows emits the change rows of one version; false when emit
// stopped.
func (c *ChangeFeed) versionRows(ctx context.Context, v changeVersion, emit func(value.Row) bool) (bool, error) {
	tail := func(row value.Row, typ any) value.Row {
		out := make(value.Row, 0, len(c.plan.Out)+3)
		out = append(out, row[:len(c.plan.Out)]...)
		return append(out, typ, v.version, v.ts)
	}
	if len(v.cdcs) > 0 {
		for _, cf := range v.cdcs {
			f, err := c.file(ctx, cf.Path, cf.PartitionValues, nil)
			if err != nil {
				return false, err
			}
			if f == nil {
				continue
			}
			stopped := false
			_, err = c.cdcPlan.ReadFile(ctx, f, func(_ int64, row value.Row) bool {
				stopped = !emit(tail(row, row[len(c.plan.Out)]))
				return !stopped
			})
			if err != nil || stopped {
				return !stopped, err
			}
		}
		return true, nil
	}
	// A file both removed and added in the version (the same path) got a
	// new deletion vector: its change is the rows the vectors differ in.
	added := map[string]*txlog.Add{}
	for _, a := range v.adds {
		added[a.Path] = a
	}
	paired := map[string]bool{}
	for _, r := range v.removes {
		var only *roaring64.Bitmap // rows to emit; nil: the live rows
		dv := r.DeletionVector
		typ := ChangeDelete
		if a, ok := added[r.Path]; ok {
			paired[r.Path] = true
			oldDV, err := c.loadDV(ctx, r.DeletionVector)
			if err != nil {
				return false, err
			}
			newDV, err := c.loadDV(ctx, a.DeletionVector)
			if err != nil {
				return false, err
			}
			// Rows deleted by the new vector only (the new one normally
			// holds the old one).
			only, dv = roaring64.AndNot(newDV, oldDV), nil
			if ok, err := c.emitFile(ctx, r.Path, r.PartitionValues, dv, only, ChangeDelete, tail, emit); !ok || err != nil {
				return ok, err
			}
			// Rows the new vector no longer deletes (not written by Spark
			// or deltakit; read as inserts).
			only, typ = roaring64.AndNot(oldDV, newDV), ChangeInsert
			if only.IsEmpty() {
				continue
			}
		}
		if ok, err := c.emitFile(ctx, r.Path, r.PartitionValues, dv, only, typ, tail, emit); !ok || err != nil {
			return ok, err
		}
	}
	for _, a := range v.adds {
		if paired[a.Path] {
			continue
		}
		if ok, err := c.emitFile(ctx, a.Path, a.PartitionValues, a.DeletionVector, nil, ChangeInsert, tail, emit); !ok || err != nil {
			return ok, err
		}
	}
	return true, nil
}

// emitFile reads the data file at path (with deletion vector dv; when only
// is set, just the rows whose indexes it holds) and emits its rows as
// changes of type typ.
func (c *ChangeFeed) emitFile(ctx context.Context, path string, pv map[string]string, dv *txlog.DeletionVectorDescriptor,
	only *roaring64.Bitmap, typ string, tail func(value.Row, any) value.Row, emit func(value.Row) bool) (bool, error) {
	if only != nil && only.IsEmpty() {
		return true, nil
	}
	f, err := c.file(ctx, path, pv, dv)
	if err != nil {
		return false, err
	}
	if f == nil {
		return true, nil
	}
	stopped := false
	_, err = c.plan.ReadFile(ctx, f, func(i int64, row value.Row) bool {
		if only != nil && (i < 0 || !only.Contains(uint64(i))) {
			return true
		}
		stopped = !emit(tail(row, typ))
		return !stopped
	})
	return !stopped, err
}

// file locates the file at an action's path for reading with the feed's
// plan; nil (and no error) when the filter's partition predicate cannot
// match its partition values.
func (c *ChangeFeed) file(ctx context.Context, path string, pv map[string]string, dv *txlog.DeletionVectorDescriptor) (*scan.File, error) {
	p := c.plan
	dec := txlog.DecodePath(path)
	a := &txlog.Add{Path: path, PartitionValues: pv, DeletionVector: dv}
	f, err := p.NewScanFile(a, dec)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", dec, err)
	}
	if p.Pred != nil && !p.Pred.MayMatch(func(bc *bind.BoundCol) any { return f.Part[p.PartSlot[bc.Top]] }, nil) {
		return nil, nil
	}
	store, key, err := p.Locs.Locate(ctx, dec)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", dec, err)
	}
	f.Store, f.Key = store, key
	return f, nil
}

// loadDV loads a deletion vector; nil loads as the empty bitmap.
func (c *ChangeFeed) loadDV(ctx context.Context, dv *txlog.DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if dv == nil {
		return roaring64.New(), nil
	}
	bm, err := c.plan.Locs.LoadDV(ctx, dv)
	if err != nil {
		return nil, fmt.Errorf("deletion vector: %w", err)
	}
	return bm, nil
}
