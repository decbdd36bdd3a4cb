package table

import (
	"context"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/rowtrack"
	"github.com/deltakit/deltakit/value"
)

// Row tracking (spec "Row Tracking") in the table layer. txlog assigns
// fresh row ids (baseRowId, defaultRowCommitVersion and the delta.rowTracking
// high-water mark) to every add at commit time, so appends, overwrites and
// deletes by deletion vector keep every surviving row's id: a recommitted add
// keeps its baseRowId, and positions within a file do not change.
//
// When row tracking is enabled (delta.enableRowTracking=true), rows that an
// operation writes again into new files keep their stable row ids, as
// Spark's RowTracking.preserveRowTrackingColumns does: the new files carry
// the hidden columns named by delta.rowTracking.materializedRowIdColumnName
// and delta.rowTracking.materializedRowCommitVersionColumnName (nullable
// longs, not in the table schema, no stats), holding each row's stable row
// id (the source file's materialized value when present and not null, else
// its baseRowId + the row's physical index in it) and stable row commit
// version (materialized, else the file's defaultRowCommitVersion). Copied
// rows (copy-on-write DELETE and UPDATE, OPTIMIZE) keep both; updated rows
// keep their id and get a null commit version, so that they take the new
// commit's defaultRowCommitVersion; inserted rows have both null (fresh
// ids from the new file's baseRowId). Commits on such tables carry the
// commitInfo tag delta.rowTracking.preserved=true, as Spark's do.
//
// The shared pieces of a DML rewrite: dmlScan fills dmlTarget.matchedTracks
// and keptTracks, remover.addRows queues rows with their tracks, and
// writeRewritten writes them with the hidden columns (OPTIMIZE calls it
// directly). A table that only supports the feature (without the property)
// needs fresh ids only: nothing is materialized there.

// preservedRowTrackingTag is the commitInfo tag a commit on a table with
// row tracking enabled carries, "true" when every updated or copied row kept
// its stable row id and every copied row its stable row commit version
// (spec "Writer Requirements for Row Tracking").
const preservedRowTrackingTag = "delta.rowTracking.preserved"

// rowTrackingEnabled reports whether the table requires stable row ids.
func (t *Table) rowTrackingEnabled() bool { return rowtrack.Enabled(t.snap) }

// rowTracker returns the table's materialized column names, nil when row
// tracking is not enabled (rowTrackerOf).
func (t *Table) rowTracker() (*rowtrack.Tracker, error) { return rowtrack.TrackerOf(t.snap) }

// writeRewritten writes rows (table schema order; validated by the caller
// with checkWrite) into new data files, as the rewrite of a DML operation or
// OPTIMIZE. When row tracking is enabled, tracks holds each row's
// rowTrack (len(tracks) == len(rows); freshTrack for inserted rows) and
// the files get the materialized row id and row commit version columns;
// otherwise tracks is ignored. On error, files written are deleted.
func (t *Table) writeRewritten(ctx context.Context, sch *schema.StructType, rows []value.Row, tracks []rowtrack.Track, cfg writeConfig) (*writeResult, error) {
	rt, err := t.rowTracker()
	if err != nil {
		return nil, err
	}
	if sch == nil {
		sch = t.Schema()
	}
	if rt == nil {
		return t.writeDataFiles(ctx, &prepared{schema: sch, rows: rows}, cfg, nil)
	}
	ext, out, err := rt.Materialize(ctx, sch, rows, tracks)
	if err != nil {
		return nil, err
	}
	res, err := t.writeDataFiles(ctx, &prepared{schema: ext, rows: out}, cfg, nil)
	if err != nil {
		return nil, err
	}
	for _, a := range res.adds {
		a.Stats = rowtrack.WithoutStatsOf(a.Stats, rt.IDCol, rt.VersionCol)
	}
	return res, nil
}
