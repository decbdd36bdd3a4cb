package txlog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// This file holds what a commit must compute from the commit before it, so
// at each attempt of Transaction.Commit (a lost race changes the previous
// commit): the in-commit timestamp (spec "In-Commit Timestamps") and fresh
// row ids with their high-water mark (spec "Row Tracking").

// Row tracking names (spec "Row Tracking").
const (
	// DomainRowTracking is the domain holding the row id high-water mark.
	DomainRowTracking = "delta.rowTracking"
	// DomainClustering is the domain holding a clustered table's
	// clustering columns (spec "Clustered Table").
	DomainClustering = "delta.clustering"
	// PropMaterializedRowIDColumn names the hidden data file column of
	// materialized (preserved) row ids.
	PropMaterializedRowIDColumn = "delta.rowTracking.materializedRowIdColumnName"
	// PropMaterializedRowCommitVersionColumn names the hidden column of
	// materialized row commit versions.
	PropMaterializedRowCommitVersionColumn = "delta.rowTracking.materializedRowCommitVersionColumnName"
)

// prevCommit is what an attempt at some version needs from the commit
// before it.
type prevCommit struct {
	// ts is the previous commit's timestamp in ms: its inCommitTimestamp,
	// else its commit time; hasTS false when there is none (a new table).
	ts    int64
	hasTS bool
	// hwm is the row id high-water mark in force, -1 when none.
	hwm int64
}

// prevFromSnapshot returns the state the first attempt builds on: the read
// snapshot's commit time (the in-commit timestamp on ICT tables) and its
// delta.rowTracking high-water mark.
func (t *Transaction) prevFromSnapshot() prevCommit {
	p := prevCommit{hwm: -1}
	if t.snap == nil {
		return p
	}
	if ct := t.snap.CommitTimestamp(); !ct.IsZero() {
		p.ts, p.hasTS = ct.UnixMilli(), true
	}
	if d, ok := t.snap.DomainMetadata(DomainRowTracking); ok && !d.Removed {
		if v, ok := rowIDHighWaterMark(d.Configuration); ok {
			p.hwm = v
		}
	}
	return p
}

// after returns the state after a winning commit: its in-commit timestamp
// (or writer timestamp) and its high-water mark when it moved it.
func (p prevCommit) after(won []Action) prevCommit {
	if ci := firstCommitInfo(won); ci != nil {
		switch {
		case ci.InCommitTimestamp != nil:
			p.ts, p.hasTS = *ci.InCommitTimestamp, true
		case ci.Timestamp != 0:
			p.ts, p.hasTS = max(ci.Timestamp, p.ts+1), true
		}
	}
	for _, a := range won {
		if d := a.DomainMetadata; d != nil && d.Domain == DomainRowTracking && !d.Removed {
			if v, ok := rowIDHighWaterMark(d.Configuration); ok {
				p.hwm = max(p.hwm, v)
			}
		}
	}
	return p
}

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

// resulting returns the protocol and metadata the commit leaves in force.
func (t *Transaction) resulting() (*Protocol, *Metadata) {
	p, m := t.protocol, t.metadata
	if t.snap != nil {
		if p == nil {
			p = t.snap.protocol
		}
		if m == nil {
			m = t.snap.metadata
		}
	}
	return p, m
}

// ictEnabled reports whether the commit writes an in-commit timestamp:
// delta.enableInCommitTimestamps=true in the metadata it leaves.
func (t *Transaction) ictEnabled() bool {
	_, m := t.resulting()
	return m != nil && strings.EqualFold(m.Configuration[PropEnableInCommitTimestamps], "true")
}

// rowTrackingSupported reports whether the commit must assign row ids: the
// protocol it leaves supports rowTracking (spec "Writer Requirements for
// Row Tracking": writers assign them whenever the feature is supported).
func (t *Transaction) rowTrackingSupported() bool {
	p, _ := t.resulting()
	return p.HasWriterFeature(FeatureRowTracking)
}

// perAttempt reports whether the commit's bytes depend on the commit before
// it, so that each attempt encodes them anew.
func (t *Transaction) perAttempt() bool { return t.ictEnabled() || t.rowTrackingSupported() }

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

// stamp returns the actions of an attempt at version on top of prev: a
// copy of actions (commitInfo first) with, on ICT tables,
// commitInfo.inCommitTimestamp = max(now, prev + 1 ms) and, when ICT is
// turned on by this commit on an existing table, the enablement version and
// timestamp in the metadata; on tables supporting row tracking, baseRowId
// (from the high-water mark + 1, advanced by numRecords) and
// defaultRowCommitVersion (version) on every add that has none, and the
// delta.rowTracking domainMetadata with the new high-water mark. Actions
// already carrying ids (an add recommitted with a deletion vector) keep
// them. An add without numRecords in its stats cannot be given ids: an
// error.
func (t *Transaction) stamp(actions []Action, version int64, prev prevCommit, now int64) ([]Action, error) {
	out := make([]Action, len(actions), len(actions)+1)
	copy(out, actions)
	if t.ictEnabled() {
		ict := now
		if prev.hasTS {
			ict = max(now, prev.ts+1)
		}
		for i := range out {
			if ci := out[i].CommitInfo; ci != nil {
				c := *ci
				c.InCommitTimestamp = &ict
				out[i].CommitInfo = &c
			}
			if m := out[i].Metadata; m != nil && t.snap != nil &&
				!strings.EqualFold(t.snap.metadata.Configuration[PropEnableInCommitTimestamps], "true") {
				// Turned on by this commit (spec "Enablement"): record where
				// in-commit timestamps start.
				m = m.Clone()
				m.Configuration[PropInCommitTimestampEnablementVersion] = strconv.FormatInt(version, 10)
				m.Configuration[PropInCommitTimestampEnablementTimestamp] = strconv.FormatInt(ict, 10)
				out[i].Metadata = m
			}
		}
	}
	if t.rowTrackingSupported() {
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
			conf := fmt.Sprintf(`{"rowIdHighWaterMark":%d,"domainName":%q}`, hwm, DomainRowTracking)
			d := &DomainMetadata{Domain: DomainRowTracking, Configuration: conf}
			replaced := false
			for i := range out {
				if x := out[i].DomainMetadata; x != nil && x.Domain == DomainRowTracking {
					out[i].DomainMetadata, replaced = d, true
				}
			}
			if !replaced {
				out = append(out, Action{DomainMetadata: d})
			}
		}
	}
	return out, nil
}
