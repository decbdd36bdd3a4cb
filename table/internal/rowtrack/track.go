package rowtrack

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

// cancelCheckRowsTrack is how many rows materialize handles between checks of
// its context.
const cancelCheckRows = 4096 // as the write path's cancelCheckRows

// noTrack marks a rowTrack value as null: not materialized, the new file's
// fresh value (baseRowId + index, defaultRowCommitVersion) applies.
const noTrack int64 = -1

// Track is the stable row id and row commit version that a rewrite
// writes for one row into the materialized columns; noTrack is null. Row
// ids and commit versions are never negative.
type Track struct{ ID, Version int64 }

// Fresh is the Track of an inserted row: both null.
var Fresh = Track{ID: noTrack, Version: noTrack}

// Updated returns the rowTrack of the row after an UPDATE (or a MERGE
// update) changed it: the same id, a null commit version (the commit's
// defaultRowCommitVersion applies), as Spark's UpdateCommand writes it.
func (r Track) Updated() Track { return Track{ID: r.ID, Version: noTrack} }

// Tracker names the materialized row tracking columns of a table with
// row tracking enabled.
type Tracker struct {
	IDCol, VersionCol string
}

// Enabled reports whether the table of snap requires stable row ids.
func Enabled(snap *txlog.Snapshot) bool {
	return strings.EqualFold(snap.Metadata().Configuration[txlog.PropEnableRowTracking], "true") &&
		snap.Protocol().HasWriterFeature(txlog.FeatureRowTracking)
}

// TrackerOf returns the materialized column names, nil when row
// tracking is not enabled (nothing to materialize). A table that enables
// row tracking without naming both columns is an error (txlog.ErrCorruptLog:
// the spec requires them).
func TrackerOf(snap *txlog.Snapshot) (*Tracker, error) {
	if !Enabled(snap) {
		return nil, nil
	}
	conf := snap.Metadata().Configuration
	rt := &Tracker{IDCol: conf[txlog.PropMaterializedRowIDColumn], VersionCol: conf[txlog.PropMaterializedRowCommitVersionColumn]}
	if rt.IDCol == "" || rt.VersionCol == "" {
		return nil, fmt.Errorf("version %d enables row tracking without %s and %s: %w", snap.Version(),
			txlog.PropMaterializedRowIDColumn, txlog.PropMaterializedRowCommitVersionColumn, txlog.ErrCorruptLog)
	}
	return rt, nil
}

// Fields returns the hidden columns as nullable long fields (their names
// are physical names under column mapping too).
func (rt *Tracker) Fields() []*schema.StructField {
	long := schema.Primitive("long")
	return []*schema.StructField{
		{Name: rt.IDCol, Type: long, Nullable: true},
		{Name: rt.VersionCol, Type: long, Nullable: true},
	}
}

// StableTrack returns the stable row id and row commit version of the row
// at physical index idx of the file of a, given its materialized values
// (int64, or nil when null or the column is absent): spec "Reader
// Requirements for Row Tracking".
func StableTrack(a *txlog.Add, idx int64, matID, matVersion any) (Track, error) {
	tr := Fresh
	if v, ok := matID.(int64); ok {
		tr.ID = v
	} else if a.BaseRowID != nil {
		tr.ID = *a.BaseRowID + idx
	} else {
		return tr, fmt.Errorf("data file %s has no baseRowId (row tracking enabled): %w", a.Path, txlog.ErrCorruptLog)
	}
	if v, ok := matVersion.(int64); ok {
		tr.Version = v
	} else if a.DefaultRowCommitVersion != nil {
		tr.Version = *a.DefaultRowCommitVersion
	} else {
		return tr, fmt.Errorf("data file %s has no defaultRowCommitVersion (row tracking enabled): %w", a.Path, txlog.ErrCorruptLog)
	}
	return tr, nil
}

// TracksOf returns the stable row ids and row commit versions of the rows
// at physical indexes idx (ascending) of the data file of a (at key in
// store, read under column mapping mode), reading only its materialized
// columns.
func (rt *Tracker) TracksOf(ctx context.Context, store objectstore.Store, key, mode string, a *txlog.Add, idx []int64) ([]Track, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	pf, err := parquetio.Open(ctx, store, key, &schema.StructType{Fields: rt.Fields()}, parquetio.WithColumnMapping(mode))
	if err != nil {
		return nil, err
	}
	out := make([]Track, 0, len(idx))
	next := 0
	for ir, err := range pf.IndexedRows(ctx) {
		if err != nil {
			return nil, err
		}
		if ir.Index != idx[next] {
			continue
		}
		tr, err := StableTrack(a, ir.Index, ir.Row[0], ir.Row[1])
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

// Materialize returns rows (of schema sch) extended by the hidden columns
// holding tracks (len(tracks) == len(rows); noTrack values are null), with
// the extended schema. Fewer or more tracks than rows is an error: stable
// row ids would be lost.
func (rt *Tracker) Materialize(ctx context.Context, sch *schema.StructType, rows []value.Row, tracks []Track) (*schema.StructType, []value.Row, error) {
	if len(tracks) != len(rows) {
		return nil, nil, fmt.Errorf("%d rows to rewrite have %d row tracking values (stable row ids would be lost): %w",
			len(rows), len(tracks), &txlog.UnsupportedFeatureError{Features: []string{txlog.FeatureRowTracking}})
	}
	ext := &schema.StructType{Fields: append(append(make([]*schema.StructField, 0, len(sch.Fields)+2), sch.Fields...), rt.Fields()...)}
	out := make([]value.Row, len(rows))
	w := len(sch.Fields)
	for i, r := range rows {
		if i%cancelCheckRows == 0 && ctx.Err() != nil {
			return nil, nil, context.Cause(ctx)
		}
		n := make(value.Row, w+2)
		copy(n, r)
		if tr := tracks[i]; tr.ID >= 0 {
			n[w] = tr.ID
		}
		if tr := tracks[i]; tr.Version >= 0 {
			n[w+1] = tr.Version
		}
		out[i] = n
	}
	return ext, out, nil
}

// WithoutStatsOf removes columns cols from the minValues, maxValues and
// nullCount of a stats JSON object (the hidden columns are not table
// columns; Spark keeps no stats on them). Stats that do not parse are
// returned as they are.
func WithoutStatsOf(stats string, cols ...string) string {
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
