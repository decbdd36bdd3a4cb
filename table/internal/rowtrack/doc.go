// Package rowtrack carries rows' stable row ids and row commit versions
// through a rewrite (spec "Row Tracking"): it reads them from a data file
// (Tracker.TracksOf, StableTrack) and writes them into the materialized
// hidden columns of the new files (Tracker.Materialize, WithoutStatsOf).
//
// Fresh row ids (baseRowId, defaultRowCommitVersion and the high-water
// mark) are not assigned here: txlog assigns them to every add when the
// transaction commits. Enabled and TrackerOf read a snapshot's
// configuration; table's DML, MERGE and OPTIMIZE rewrites call the rest.
package rowtrack
