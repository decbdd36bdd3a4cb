package table

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
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

// noTrack marks a rowTrack value as null: not materialized, the new file's
// fresh value (baseRowId + index, defaultRowCommitVersion) applies.
const noTrack int64 = -1

// rowTrack is the stable row id and row commit version that a rewrite
// writes for one row into the materialized columns; noTrack is null. Row
// ids and commit versions are never negative.
type rowTrack struct{ id, version int64 }

// freshTrack is the rowTrack of an inserted row: both null.
var freshTrack = rowTrack{id: noTrack, version: noTrack}

// updated returns the rowTrack of the row after an UPDATE (or a MERGE
// update) changed it: the same id, a null commit version (the commit's
// defaultRowCommitVersion applies), as Spark's UpdateCommand writes it.
func (r rowTrack) updated() rowTrack { return rowTrack{id: r.id, version: noTrack} }

// rowTracker names the materialized row tracking columns of a table with
// row tracking enabled.
type rowTracker struct {
	idCol, versionCol string
}

// rowTrackingEnabled reports whether the table requires stable row ids.
func (t *Table) rowTrackingEnabled() bool {
	return strings.EqualFold(t.snap.Metadata().Configuration[txlog.PropEnableRowTracking], "true") &&
		t.snap.Protocol().HasWriterFeature(txlog.FeatureRowTracking)
}

// rowTracker returns the table's materialized column names, nil when row
// tracking is not enabled (nothing to materialize). A table that enables
// row tracking without naming both columns is an error (txlog.ErrCorruptLog:
// the spec requires them).
func (t *Table) rowTracker() (*rowTracker, error) {
	if !t.rowTrackingEnabled() {
		return nil, nil
	}
	conf := t.snap.Metadata().Configuration
	rt := &rowTracker{idCol: conf[txlog.PropMaterializedRowIDColumn], versionCol: conf[txlog.PropMaterializedRowCommitVersionColumn]}
	if rt.idCol == "" || rt.versionCol == "" {
		return nil, fmt.Errorf("version %d enables row tracking without %s and %s: %w", t.Version(),
			txlog.PropMaterializedRowIDColumn, txlog.PropMaterializedRowCommitVersionColumn, txlog.ErrCorruptLog)
	}
	return rt, nil
}

// fields returns the hidden columns as nullable long fields (their names
// are physical names under column mapping too).
func (rt *rowTracker) fields() []*schema.StructField {
	long := schema.Primitive("long")
	return []*schema.StructField{
		{Name: rt.idCol, Type: long, Nullable: true},
		{Name: rt.versionCol, Type: long, Nullable: true},
	}
}

// stableTrack returns the stable row id and row commit version of the row
// at physical index idx of the file of a, given its materialized values
// (int64, or nil when null or the column is absent): spec "Reader
// Requirements for Row Tracking".
func stableTrack(a *txlog.Add, idx int64, matID, matVersion any) (rowTrack, error) {
	tr := freshTrack
	if v, ok := matID.(int64); ok {
		tr.id = v
	} else if a.BaseRowID != nil {
		tr.id = *a.BaseRowID + idx
	} else {
		return tr, fmt.Errorf("data file %s has no baseRowId (row tracking enabled): %w", a.Path, txlog.ErrCorruptLog)
	}
	if v, ok := matVersion.(int64); ok {
		tr.version = v
	} else if a.DefaultRowCommitVersion != nil {
		tr.version = *a.DefaultRowCommitVersion
	} else {
		return tr, fmt.Errorf("data file %s has no defaultRowCommitVersion (row tracking enabled): %w", a.Path, txlog.ErrCorruptLog)
	}
	return tr, nil
}

// tracksOf returns the stable row ids and row commit versions of the rows
// at physical indexes idx (ascending) of the data file of a (at key in
// store, read under column mapping mode), reading only its materialized
// columns.
func (rt *rowTracker) tracksOf(ctx context.Context, store objectstore.Store, key, mode string, a *txlog.Add, idx []int64) ([]rowTrack, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	pf, err := parquetio.Open(ctx, store, key, &schema.StructType{Fields: rt.fields()}, parquetio.WithColumnMapping(mode))
	if err != nil {
		return nil, err
	}
	out := make([]rowTrack, 0, len(idx))
	next := 0
	for ir, err := range pf.IndexedRows(ctx) {
		if err != nil {
			return nil, err
		}
		if ir.Index != idx[next] {
			continue
		}
		tr, err := stableTrack(a, ir.Index, ir.Row[0], ir.Row[1])
		if err != nil {
			return nil, err
		}
		out = append(out, tr)
		if next++; next == len(idx) {
			return out, nil
		}
	}
	return nil, fmt.Errorf("data file %s: row %d is past its %d rows: %w", a.Path, idx[next], pf.NumRows(), txlog.ErrCorruptLog)
}

// writeRewritten writes rows (table schema order; validated by the caller
// with checkWrite) into new data files, as the rewrite of a DML operation or
// OPTIMIZE. When row tracking is enabled, tracks holds each row's
// rowTrack (len(tracks) == len(rows); freshTrack for inserted rows) and
// the files get the materialized row id and row commit version columns;
// otherwise tracks is ignored. On error, files written are deleted.
func (t *Table) writeRewritten(ctx context.Context, sch *schema.StructType, rows []value.Row, tracks []rowTrack, cfg writeConfig) (*writeResult, error) {
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
	if len(tracks) != len(rows) {
		return nil, fmt.Errorf("%d rows to rewrite have %d row tracking values (stable row ids would be lost): %w",
			len(rows), len(tracks), &txlog.UnsupportedFeatureError{Features: []string{txlog.FeatureRowTracking}})
	}
	ext := &schema.StructType{Fields: append(append(make([]*schema.StructField, 0, len(sch.Fields)+2), sch.Fields...), rt.fields()...)}
	out := make([]value.Row, len(rows))
	w := len(sch.Fields)
	for i, r := range rows {
		if i%cancelCheckRows == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		n := make(value.Row, w+2)
		copy(n, r)
		if tr := tracks[i]; tr.id >= 0 {
			n[w] = tr.id
		}
		if tr := tracks[i]; tr.version >= 0 {
			n[w+1] = tr.version
		}
		out[i] = n
	}
	res, err := t.writeDataFiles(ctx, &prepared{schema: ext, rows: out}, cfg, nil)
	if err != nil {
		return nil, err
	}
	for _, a := range res.adds {
		a.Stats = withoutStatsOf(a.Stats, rt.idCol, rt.versionCol)
	}
	return res, nil
}

// withoutStatsOf removes columns cols from the minValues, maxValues and
// nullCount of a stats JSON object (the hidden columns are not table
// columns; Spark keeps no stats on them). Stats that do not parse are
// returned as they are.
func withoutStatsOf(stats string, cols ...string) string {
	var m map[string]json.RawMessage
	if stats == "" || json.Unmarshal([]byte(stats), &m) != nil || m == nil {
		return stats
	}
	for _, k := range []string{"minValues", "maxValues", "nullCount"} {
		var sub map[string]json.RawMessage
		if raw, ok := m[k]; !ok || json.Unmarshal(raw, &sub) != nil || sub == nil {
			continue
		}
		for _, c := range cols {
			delete(sub, c)
		}
		b, err := json.Marshal(sub)
		if err != nil {
			return stats
		}
		m[k] = b
	}
	b, err := json.Marshal(m)
	if err != nil {
		return stats
	}
	return string(b)
}
