package txlog

import (
	"context"
	"sort"
	"strconv"

	"github.com/deltakit/deltakit/objectstore"
)

// loadAtTimestamp implements AtTimestamp: one full listing, the latest
// snapshot for the table properties, then the version whose commit time is
// the latest at or before o.timestamp.
func loadAtTimestamp(ctx context.Context, store objectstore.Store, o loadOptions) (*Snapshot, error) {
	l, err := listLog(ctx, store, "", -1)
	if err != nil {
		return nil, err
	}
	latest, l, err := replayListing(ctx, store, o, l, -1)
	if err != nil {
		return nil, err
	}
	earliest := l.earliest()
	notFound := &VersionNotFoundError{Version: -1, Timestamp: o.timestamp, Earliest: earliest, Latest: latest.version}
	// candidate commits: reconstructable ones
	var commits []logFile
	for _, f := range l.commits {
		if f.version >= earliest {
			commits = append(commits, f)
		}
	}
	if len(commits) == 0 {
		return nil, notFound
	}
	t := o.timestamp.UnixMilli()
	if latest.metadata != nil && latest.ictActiveAt(latest.version) {
		ev, hasEV := latest.ictEnablement()
		ets, errTS := strconv.ParseInt(latest.metadata.Configuration[PropInCommitTimestampEnablementTimestamp], 10, 64)
		if !hasEV || errTS != nil || t >= ets {
			// binary search the commits with ICT (versions >= ev)
			lo := sort.Search(len(commits), func(i int) bool { return !hasEV || commits[i].version >= ev })
			ictCommits := commits[lo:]
			var searchErr error
			n := sort.Search(len(ictCommits), func(i int) bool {
				if searchErr != nil {
					return true
				}
				ts, err := commitICT(ctx, store, ictCommits[i])
				if err != nil {
					searchErr = err
					return true
				}
				return ts > t
			})
			if searchErr != nil {
				return nil, searchErr
			}
			if n > 0 {
				return loadVersionFrom(ctx, store, o, l, latest, ictCommits[n-1].version)
			}
			if !hasEV || lo == 0 {
				return nil, notFound
			}
			commits = commits[:lo] // t is before the first ICT commit: fall back to file times before ev
		} else if hasEV {
			lo := sort.Search(len(commits), func(i int) bool { return commits[i].version >= ev })
			commits = commits[:lo]
		}
	}
	// file modification times, made monotonic over versions
	best := int64(-1)
	prev := int64(-1 << 62)
	for _, f := range commits {
		ts := max(f.modTime.UnixMilli(), prev+1)
		prev = ts
		if ts <= t {
			best = f.version
		} else {
			break
		}
	}
	if best < 0 {
		return nil, notFound
	}
	return loadVersionFrom(ctx, store, o, l, latest, best)
}

func loadVersionFrom(ctx context.Context, store objectstore.Store, o loadOptions, l *listing, latest *Snapshot, v int64) (*Snapshot, error) {
	if v == latest.version {
		return latest, nil
	}
	s, _, err := replayListing(ctx, store, o, l, v)
	return s, err
}

// commitICT reads the inCommitTimestamp (ms) of a commit; a commit without one
// is a corrupt log for a table with in-commit timestamps.
func commitICT(ctx context.Context, store objectstore.Store, f logFile) (int64, error) {
	actions, err := readCommitFile(ctx, store, f, true)
	if err != nil {
		return 0, err
	}
	ci := firstCommitInfo(actions)
	if ci == nil || ci.InCommitTimestamp == nil {
		return 0, corrupt(f.key, f.version, nil, "in-commit timestamps are enabled but the commit has no commitInfo.inCommitTimestamp")
	}
	return *ci.InCommitTimestamp, nil
}
