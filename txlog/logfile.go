package txlog

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// LogFile describes a commit or checkpoint file of "_delta_log/" as its
// name says (spec "Delta Log Entries", "Checkpoints").
type LogFile struct {
	// Key is the store key, "_delta_log/...".
	Key string
	// Version is the table version the file belongs to.
	Version int64
	// Commit is true for a commit file ("%020d.json"), false for a
	// checkpoint file (classic, multi-part or UUID-named v2).
	Commit bool
	// Part and Parts are the 1-based part number and the number of parts
	// of a multi-part checkpoint file; 0 for every other file.
	Part, Parts int
	// Size (bytes) and ModTime are the store's, as listed; zero when the
	// LogFile comes from ParseLogKey.
	Size    int64
	ModTime time.Time
}

// ParseLogKey recognises a commit or checkpoint file directly under
// "_delta_log/" by its key, as Load does; ok is false for every other key
// (.crc files, _last_checkpoint, _sidecars/, compacted files, ...).
func ParseLogKey(key string) (f LogFile, ok bool) {
	lf, ok := parseLogKey(key)
	if !ok {
		return LogFile{}, false
	}
	return lf.exported(), true
}

// ListLogFiles lists the commit and checkpoint files of "_delta_log/"
// (spec "Delta Log Entries", "Checkpoints") in key order (ascending
// version), as Load lists them: when the commits listed are not contiguous
// it lists again, because a listing is not a snapshot of the directory
// (see listLog), so a gap that remains is the log's. Tools that check or
// show the whole log (table's Verify, History and Changes, through maint)
// use it so that the relist rule lives in txlog only. Errors are the
// store's, wrapped.
func ListLogFiles(ctx context.Context, store objectstore.Store) ([]LogFile, error) {
	l, err := listLog(ctx, store, "", -1)
	if err != nil {
		return nil, err
	}
	out := make([]LogFile, 0, len(l.commits)+len(l.checkpoints))
	for _, f := range l.commits {
		out = append(out, f.exported())
	}
	for _, files := range l.checkpoints {
		for _, f := range files {
			out = append(out, f.exported())
		}
	}
	slices.SortFunc(out, func(a, b LogFile) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// exported is f as a LogFile.
func (f logFile) exported() LogFile {
	return LogFile{Key: f.key, Version: f.version, Commit: f.kind == kindCommit, Part: f.part, Parts: f.parts, Size: f.size, ModTime: f.modTime}
}
