package txlog

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// DefaultLogRetention is Spark's default delta.logRetentionDuration (30 days).
const DefaultLogRetention = 30 * 24 * time.Hour

// CleanupResult lists what CleanupLog deleted.
type CleanupResult struct {
	// KeepFrom is the oldest version still reconstructable after the
	// cleanup: a checkpoint version, or 0 when nothing was deleted.
	KeepFrom int64
	// Deleted are the store keys removed, in ascending order.
	Deleted []string
}

// CleanupLog deletes expired log files of the table in snap's store: commits,
// checkpoints (all kinds) and .crc files whose version is below the newest
// complete checkpoint C (not one of snap.SkippedCheckpoints) such that C and every log file before it were last
// modified at or before now − delta.logRetentionDuration (default 30 days;
// spec "Metadata Cleanup"). Every version from C on stays reconstructable,
// because C and all later commits are kept, and nothing is deleted unless
// everything below C is expired. The latest snapshot's version is never
// affected. With dryRun it only reports what it would delete.
//
// Errors are listing or delete errors of the store, wrapped with the key.
func CleanupLog(ctx context.Context, snap *Snapshot, now time.Time, dryRun bool) (*CleanupResult, error) {
	retention := snap.durationProp(PropLogRetentionDuration, DefaultLogRetention)
	cutoff := now.Add(-retention)
	store := snap.store

	type entry struct {
		key     string
		version int64
		modTime time.Time
	}
	var files []entry
	l := &listing{checkpoints: map[int64][]logFile{}}
	for info, err := range store.List(ctx, LogPrefix, "") {
		if err != nil {
			return nil, fmt.Errorf("txlog: cleanup: listing %s: %w", LogPrefix, err)
		}
		if f, ok := parseLogKey(info.Key); ok {
			f.size, f.modTime = info.Size, info.ModTime
			if f.kind != kindCommit {
				l.checkpoints[f.version] = append(l.checkpoints[f.version], f)
			}
			files = append(files, entry{info.Key, f.version, info.ModTime})
			continue
		}
		if v, ok := crcVersion(info.Key); ok {
			files = append(files, entry{info.Key, v, info.ModTime})
		}
	}
	// A checkpoint that Load could not read must not become the oldest
	// kept one: the commits before it are the only way to its state.
	for i := range snap.skipped {
		l.markBad(checkpointRefOfKeys(snap.skipped[i]), snap.skipped[i].Err)
	}
	// Walk versions upward: C is a candidate while every file before it and
	// the checkpoint itself are expired.
	res := &CleanupResult{}
	// Stable: the files of one version stay in key order.
	slices.SortStableFunc(files, func(a, b entry) int { return cmpInt64(a.version, b.version) })
	i := 0
	for _, cv := range slices.Sorted(maps.Keys(l.checkpoints)) {
		if cv > snap.version {
			break
		}
		expiredBefore := true
		for ; i < len(files) && files[i].version < cv; i++ {
			if files[i].modTime.After(cutoff) {
				expiredBefore = false
				break
			}
		}
		if !expiredBefore {
			break
		}
		cp, ok := l.completeCheckpoint(cv)
		if !ok {
			continue
		}
		fresh := false
		for _, f := range cp.files {
			if f.modTime.After(cutoff) {
				fresh = true
			}
		}
		if fresh {
			break
		}
		res.KeepFrom = cv
	}
	if res.KeepFrom == 0 {
		return res, nil
	}
	for _, f := range files {
		if f.version >= res.KeepFrom {
			break
		}
		res.Deleted = append(res.Deleted, f.key)
	}
	if dryRun {
		return res, nil
	}
	for _, k := range res.Deleted {
		if err := store.Delete(ctx, k); err != nil {
			return res, fmt.Errorf("txlog: cleanup: %w", err)
		}
	}
	return res, nil
}

// checkpointRefOfKeys returns the checkpoint reference of sk's files.
func checkpointRefOfKeys(sk SkippedCheckpoint) checkpointRef {
	cp := checkpointRef{version: sk.Version}
	for _, k := range sk.Files {
		cp.files = append(cp.files, logFile{key: k, version: sk.Version})
	}
	return cp
}

// crcVersion recognises "_delta_log/%020d.crc" version checksum files.
func crcVersion(key string) (int64, bool) {
	name, ok := strings.CutPrefix(key, LogPrefix)
	if !ok || len(name) != 24 || !strings.HasSuffix(name, ".crc") {
		return 0, false
	}
	return parseDigits(name[:20])
}
