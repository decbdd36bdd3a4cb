package txlog

// This file holds what a commit must compute from the commit before it, so
// at each attempt of Transaction.Commit (a lost race changes the previous
// commit): the in-commit timestamp (incommit_timestamps.go) and fresh row
// ids with their high-water mark (rowtracking.go, where row ids are
// assigned).

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
	if d, ok := t.snap.DomainMetadata(domainRowTracking); ok && !d.Removed {
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
		if d := a.DomainMetadata; d != nil && d.Domain == domainRowTracking && !d.Removed {
			if v, ok := rowIDHighWaterMark(d.Configuration); ok {
				p.hwm = max(p.hwm, v)
			}
		}
	}
	return p
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

// perAttempt reports whether the commit's bytes depend on the commit before
// it, so that each attempt encodes them anew.
func (t *Transaction) perAttempt() bool { return t.ictEnabled() || t.rowTrackingSupported() }

// stamp returns the actions of an attempt at version on top of prev: a
// copy of actions (commitInfo first) with, on ICT tables, the in-commit
// timestamp (stampInCommitTimestamp) and, on tables supporting row
// tracking, row ids for the adds that have none and the new high-water mark
// (assignRowIDs; an add without numRecords is an error).
func (t *Transaction) stamp(actions []Action, version int64, prev prevCommit, now int64) ([]Action, error) {
	out := make([]Action, len(actions), len(actions)+1)
	copy(out, actions)
	if t.ictEnabled() {
		t.stampInCommitTimestamp(out, version, prev, now)
	}
	if t.rowTrackingSupported() {
		var err error
		if out, err = t.assignRowIDs(out, version, prev); err != nil {
			return nil, err
		}
	}
	return out, nil
}
