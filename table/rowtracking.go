package table

import (
	"fmt"
	"strings"

	"github.com/deltakit/deltakit/txlog"
)

// Row tracking (spec "Row Tracking") in the table layer. txlog assigns
// fresh row ids (baseRowId, defaultRowCommitVersion and the delta.rowTracking
// high-water mark) to every add at commit time, so appends, overwrites and
// deletes by deletion vector keep every surviving row's id: a recommitted add
// keeps its baseRowId, and positions within a file do not change.
//
// When row tracking is enabled (delta.enableRowTracking=true), the spec
// requires stable row ids: a row that is updated or copied into a new file
// keeps its id through the materialized row id column
// (delta.rowTracking.materializedRowIdColumnName) of the new file. deltakit
// does not write that column yet, so it refuses, before any file is
// written, the writes that would move existing rows to new files: UPDATE,
// copy-on-write DELETE (a table without deletion vectors) of part of a
// file, and OPTIMIZE. A table that only supports the feature (without the
// property) needs fresh ids only: those writes are allowed there.

// rowTrackingEnabled reports whether the table requires stable row ids.
func (t *Table) rowTrackingEnabled() bool {
	return strings.EqualFold(t.snap.Metadata().Configuration[txlog.PropEnableRowTracking], "true") &&
		t.snap.Protocol().HasWriterFeature(txlog.FeatureRowTracking)
}

// refuseRowMove returns an error wrapping txlog.ErrUnsupportedFeature
// (naming rowTracking) when the table requires stable row ids and an
// operation would write rows of existing files into new files, which would
// change their row ids; what says which rows. Callers wrap it with the
// operation and the table.
func (t *Table) refuseRowMove(what string) error {
	if !t.rowTrackingEnabled() {
		return nil
	}
	return fmt.Errorf("%s would get new row ids (deltakit does not write materialized row ids; "+
		"delta.enableRowTracking=true requires stable ones): %w", what,
		&txlog.UnsupportedFeatureError{Features: []string{txlog.FeatureRowTracking}})
}
