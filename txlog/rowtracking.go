package txlog

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// This file is where row ids are assigned (spec "Row Tracking"): the
// materialized column names a commit enabling row tracking gets, the refusal
// to enable it on a table whose files lack ids, and baseRowId and
// defaultRowCommitVersion on every new add with the delta.rowTracking
// high-water mark, computed at each commit attempt (commit_attempt.go).

// Row tracking names (spec "Row Tracking").
const (
	// domainRowTracking is the domain holding the row id high-water mark.
	domainRowTracking = "delta.rowTracking"
	// PropMaterializedRowIDColumn names the hidden data file column of
	// materialized (preserved) row ids.
	PropMaterializedRowIDColumn = "delta.rowTracking.materializedRowIdColumnName"
	// PropMaterializedRowCommitVersionColumn names the hidden column of
	// materialized row commit versions.
	PropMaterializedRowCommitVersionColumn = "delta.rowTracking.materializedRowCommitVersionColumnName"
)

// rowIDHighWaterMark parses the delta.rowTracking domain configuration
// ({"rowIdHighWaterMark":N,...}; Spark's key, the spec calls it the high
// water mark).
func rowIDHighWaterMark(conf string) (int64, bool) {
	var c struct {
		HWM *int64 `json:"rowIdHighWaterMark"`
	}
	if err := json.Unmarshal([]byte(conf), &c); err != nil || c.HWM == nil {
		return 0, false
	}
	return *c.HWM, true
}

// rowTrackingSupported reports whether the commit must assign row ids: the
// protocol it leaves supports rowTracking (spec "Writer Requirements for
// Row Tracking": writers assign them whenever the feature is supported).
func (t *Transaction) rowTrackingSupported() bool {
	p, _ := t.resulting()
	return p.HasWriterFeature(FeatureRowTracking)
}

// prepareRowTrackingMetadata fills in, when the metadata the commit writes
// enables row tracking, the materialized column names the spec requires to
// be assigned (Spark's "_row-id-col-<uuid>" and
// "_row-commit-version-col-<uuid>"), and refuses to enable row tracking on
// an existing table whose live files have no baseRowId (the spec requires a
// backfill, which deltakit does not do).
func (t *Transaction) prepareRowTrackingMetadata() error {
	m := t.metadata
	if m == nil || !strings.EqualFold(m.Configuration[PropEnableRowTracking], "true") {
		return nil
	}
	if m.Configuration[PropMaterializedRowIDColumn] == "" || m.Configuration[PropMaterializedRowCommitVersionColumn] == "" {
		m = m.Clone()
		if m.Configuration[PropMaterializedRowIDColumn] == "" {
			m.Configuration[PropMaterializedRowIDColumn] = "_row-id-col-" + uuid.NewString()
		}
		if m.Configuration[PropMaterializedRowCommitVersionColumn] == "" {
			m.Configuration[PropMaterializedRowCommitVersionColumn] = "_row-commit-version-col-" + uuid.NewString()
		}
		t.metadata = m
	}
	if t.snap == nil || strings.EqualFold(t.snap.metadata.Configuration[PropEnableRowTracking], "true") {
		return nil
	}
	for _, f := range t.snap.Files() {
		if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
			return fmt.Errorf("txlog: %s enables row tracking, but live file %s has no baseRowId (a backfill is needed, spec \"Row Tracking\"): %w",
				t.operation, f.Path, &UnsupportedFeatureError{Features: []string{FeatureRowTracking}})
		}
	}
	return nil
}

// assignRowIDs returns out (a copy of the commit's actions) with baseRowId
// (from the high-water mark + 1, advanced by numRecords) and
// defaultRowCommitVersion (version) on every add that has none, and the
// delta.rowTracking domainMetadata with the new high-water mark (spec "Row
// Tracking"). Adds already carrying ids (an add recommitted with a deletion
// vector) keep them. An add without numRecords in its stats cannot be given
// ids: an error.
func (t *Transaction) assignRowIDs(out []Action, version int64, prev prevCommit) ([]Action, error) {
	hwm := prev.hwm
	assigned := false
	for i := range out {
		a := out[i].Add
		if a == nil || (a.BaseRowID != nil && a.DefaultRowCommitVersion != nil) {
			continue
		}
		n := *a
		if n.BaseRowID == nil {
			recs, ok := a.NumRecords()
			if !ok {
				return nil, fmt.Errorf("txlog: %s adds %s without numRecords in its stats: row ids cannot be assigned (rowTracking)", t.operation, a.Path)
			}
			base := hwm + 1
			n.BaseRowID = &base
			hwm += recs
			assigned = true
		}
		if n.DefaultRowCommitVersion == nil {
			v := version
			n.DefaultRowCommitVersion = &v
		}
		out[i].Add = &n
	}
	if assigned && hwm > prev.hwm {
		conf := fmt.Sprintf(`{"rowIdHighWaterMark":%d,"domainName":%q}`, hwm, domainRowTracking)
		d := &DomainMetadata{Domain: domainRowTracking, Configuration: conf}
		replaced := false
		for i := range out {
			if x := out[i].DomainMetadata; x != nil && x.Domain == domainRowTracking {
				out[i].DomainMetadata, replaced = d, true
			}
		}
		if !replaced {
			out = append(out, Action{DomainMetadata: d})
		}
	}
	return out, nil
}
