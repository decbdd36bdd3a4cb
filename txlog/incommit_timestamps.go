package txlog

import (
	"strconv"
	"strings"
)

// This file computes in-commit timestamps (spec "In-Commit Timestamps"): a
// commit on a table with delta.enableInCommitTimestamps=true carries
// commitInfo.inCommitTimestamp, later than the commit before it, computed
// at each commit attempt (commit_attempt.go); time travel by timestamp
// reads them back (timetravel.go).

// ictEnabled reports whether the commit writes an in-commit timestamp:
// delta.enableInCommitTimestamps=true in the metadata it leaves.
func (t *Transaction) ictEnabled() bool {
	_, m := t.resulting()
	return m != nil && strings.EqualFold(m.Configuration[PropEnableInCommitTimestamps], "true")
}

// stampInCommitTimestamp sets, in place, commitInfo.inCommitTimestamp =
// max(now, prev + 1 ms) on the commitInfo of out (a copy of the commit's
// actions) and, when this commit turns in-commit timestamps on for an
// existing table, the enablement version and timestamp in its metadata
// (spec "In-Commit Timestamps", "Enablement").
func (t *Transaction) stampInCommitTimestamp(out []Action, version int64, prev prevCommit, now int64) {
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
