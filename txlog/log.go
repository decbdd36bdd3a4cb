package txlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// LogPrefix is the store key prefix of the transaction log.
const LogPrefix = "_delta_log/"

// LastCheckpointKey is the store key of the _last_checkpoint hint file.
const LastCheckpointKey = LogPrefix + "_last_checkpoint"

// CommitKey returns the store key of commit version v:
// "_delta_log/%020d.json" (spec "Delta Log Entries").
func CommitKey(v int64) string { return fmt.Sprintf("%s%020d.json", LogPrefix, v) }

// CheckpointKey returns the store key of the classic single-file checkpoint
// of version v: "_delta_log/%020d.checkpoint.parquet".
func CheckpointKey(v int64) string { return fmt.Sprintf("%s%020d.checkpoint.parquet", LogPrefix, v) }

// versionPrefix returns "_delta_log/%020d": every file of version v sorts
// after it.
func versionPrefix(v int64) string { return fmt.Sprintf("%s%020d", LogPrefix, v) }

type fileKind uint8

const (
	kindCommit fileKind = iota + 1
	kindClassicCheckpoint
	kindMultiPartCheckpoint
	kindV2Checkpoint // UUID-named, JSON or Parquet
)

// logFile is one recognised file of "_delta_log/".
type logFile struct {
	key     string
	version int64
	kind    fileKind
	part    int // multi-part: 1-based part number
	parts   int // multi-part: number of parts
	json    bool
	size    int64 // bytes
	modTime time.Time
}

// parseLogKey recognises commit and checkpoint files directly under
// "_delta_log/"; everything else (.crc, .tmp/, _commits/, _sidecars/,
// compacted files, _last_checkpoint) is not a log file here.
func parseLogKey(key string) (logFile, bool) {
	name, ok := strings.CutPrefix(key, LogPrefix)
	if !ok || strings.IndexByte(name, '/') >= 0 || len(name) < 21 || name[20] != '.' {
		return logFile{}, false
	}
	v, ok := parseDigits(name[:20])
	if !ok {
		return logFile{}, false
	}
	f := logFile{key: key, version: v}
	rest := name[21:]
	switch {
	case rest == "json":
		f.kind = kindCommit
		return f, true
	case rest == "checkpoint.parquet":
		f.kind = kindClassicCheckpoint
		return f, true
	}
	rest, ok = strings.CutPrefix(rest, "checkpoint.")
	if !ok {
		return logFile{}, false
	}
	// multi-part: %010d.%010d.parquet
	if len(rest) == 10+1+10+len(".parquet") && rest[10] == '.' && strings.HasSuffix(rest, ".parquet") {
		p, ok1 := parseDigits(rest[:10])
		n, ok2 := parseDigits(rest[11:21])
		if ok1 && ok2 && p >= 1 && n >= 1 && p <= n && n < 1<<31 {
			f.kind, f.part, f.parts = kindMultiPartCheckpoint, int(p), int(n)
			return f, true
		}
		return logFile{}, false
	}
	// UUID-named v2: <uuid>.json|parquet
	var uuid string
	switch {
	case strings.HasSuffix(rest, ".json"):
		uuid, f.json = strings.TrimSuffix(rest, ".json"), true
	case strings.HasSuffix(rest, ".parquet"):
		uuid = strings.TrimSuffix(rest, ".parquet")
	default:
		return logFile{}, false
	}
	if !isUUID(uuid) {
		return logFile{}, false
	}
	f.kind = kindV2Checkpoint
	return f, true
}

func parseDigits(s string) (int64, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// listing is the result of one listing of "_delta_log/".
type listing struct {
	startAfter  string              // where the listing started ("" = beginning)
	commits     []logFile           // ascending version
	checkpoints map[int64][]logFile // all checkpoint files per version
	// bad are the checkpoints found unreadable during this load, by file
	// key of each of their files; completeCheckpoint passes over them.
	bad map[string]*SkippedCheckpoint
}

// SkippedCheckpoint is a checkpoint that Load found unreadable (not Parquet,
// truncated, damaged, of the wrong schema, a part or sidecar missing) and
// treated as absent: replay started from an older checkpoint or from the
// commits instead (spec "Checkpoints": a checkpoint stands for the commits
// up to its version, which remain the source of truth while they exist).
type SkippedCheckpoint struct {
	// Version is the checkpoint's table version.
	Version int64
	// Files are the store keys of its files ("_delta_log/..."): one, or
	// every part of a multi-part checkpoint.
	Files []string
	// Err is why it could not be read: a *CorruptLogError naming the file.
	Err error
}

// File returns the key of the file that could not be read: the one the
// read error names (a part, a sidecar), else the checkpoint's first file.
func (sk *SkippedCheckpoint) File() string {
	var ce *CorruptLogError
	if errors.As(sk.Err, &ce) && ce.File != "" {
		return ce.File
	}
	return sk.Files[0]
}

// markBad records checkpoint cp as unreadable because of err.
func (l *listing) markBad(cp checkpointRef, err error) *SkippedCheckpoint {
	sk := &SkippedCheckpoint{Version: cp.version, Err: err}
	for _, f := range cp.files {
		sk.Files = append(sk.Files, f.key)
	}
	if l.bad == nil {
		l.bad = map[string]*SkippedCheckpoint{}
	}
	for _, k := range sk.Files {
		l.bad[k] = sk
	}
	return sk
}

// skipped returns the unreadable checkpoints at or before version v, by
// ascending version.
func (l *listing) skipped(v int64) []SkippedCheckpoint {
	var out []SkippedCheckpoint
	seen := map[*SkippedCheckpoint]bool{}
	for _, sk := range l.bad {
		if sk.Version <= v && !seen[sk] {
			seen[sk] = true
			out = append(out, *sk)
		}
	}
	slices.SortFunc(out, func(a, b SkippedCheckpoint) int {
		if c := cmpInt64(a.Version, b.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Files[0], b.Files[0])
	})
	return out
}

// newestBad returns the newest unreadable checkpoint with a version in
// (after, v], if any.
func (l *listing) newestBad(after, v int64) (*SkippedCheckpoint, bool) {
	var best *SkippedCheckpoint
	for _, sk := range l.bad {
		if sk.Version > after && sk.Version <= v && (best == nil || sk.Version > best.Version) {
			best = sk
		}
	}
	return best, best != nil
}

// unreadableError reports that replay of version target cannot go around
// unreadable checkpoint sk: commits from..next-1 (next < 0: up to target)
// are not in the log. It matches ErrCorruptLog and ErrLogGap and unwraps to
// the checkpoint's read error.
func (sk *SkippedCheckpoint) unreadableError(target, from, next int64) *CorruptLogError {
	to := target
	if next >= 0 {
		to = min(next-1, target)
	}
	missing := fmt.Sprintf("commit %d is", from)
	if to > from {
		missing = fmt.Sprintf("commits %d to %d are", from, to)
	}
	e := corrupt(sk.File(), sk.Version, sk.Err,
		"checkpoint %d cannot be read and replay of version %d cannot go around it: %s not in the log (cleaned up or lost)",
		sk.Version, target, missing)
	e.gap = true
	return e
}

// maxGapRelists bounds how many times listLog lists again when a listing
// has a gap between two listed commits.
const maxGapRelists = 3

// listLog lists "_delta_log/" from startAfter, stopping after maxVersion
// when maxVersion >= 0.
//
// A listing is not a snapshot of the directory: a local directory read
// while writers create commits can return version v+1 and miss v, created
// just before it (readdir order is hash order, not name order). Because a
// writer creates v+1 only after v exists, a listing started after one that
// saw v+1 sees v. So when the commits listed are not contiguous, listLog
// lists again, up to maxGapRelists times, until the commits are contiguous
// or the first gap is where it was (a gap that stays is the log's, and
// replay reports it as ErrLogGap). When the new listing's first gap is
// above every commit of the listing before it, the commits from the gap on
// were created during the new listing and it is cut there.
func listLog(ctx context.Context, store objectstore.Store, startAfter string, maxVersion int64) (*listing, error) {
	l, err := listLogOnce(ctx, store, startAfter, maxVersion)
	for i := 0; err == nil && i < maxGapRelists; i++ {
		gap := l.firstGap()
		if gap < 0 {
			break
		}
		var again *listing
		if again, err = listLogOnce(ctx, store, startAfter, maxVersion); err == nil {
			prevLast := l.commits[len(l.commits)-1].version
			l = again
			if g := l.firstGap(); g == gap {
				break
			} else if g > prevLast {
				// Every commit above the previous listing's last one was
				// created while this listing ran: the log up to the gap is
				// a consistent (if not the newest) view.
				l.truncate(g)
				break
			}
		}
	}
	return l, err
}

// truncate drops the commits and checkpoints of version v and later.
func (l *listing) truncate(v int64) {
	i, _ := slices.BinarySearchFunc(l.commits, v, func(f logFile, v int64) int { return cmpInt64(f.version, v) })
	l.commits = l.commits[:i]
	for cv := range l.checkpoints {
		if cv >= v {
			delete(l.checkpoints, cv)
		}
	}
}

// listAfter lists the log after commit version after (from the beginning
// when after < 0), stopping after maxVersion when maxVersion >= 0. When the
// first commit listed is not after+1 it lists once more: that commit was
// cleaned up, or was created while a listing that is not a snapshot ran
// (see listLog).
func listAfter(ctx context.Context, store objectstore.Store, after, maxVersion int64) (*listing, error) {
	startAfter := ""
	if after >= 0 {
		startAfter = CommitKey(after)
	}
	l, err := listLog(ctx, store, startAfter, maxVersion)
	if err == nil && after >= 0 && len(l.commits) > 0 && l.commits[0].version > after+1 {
		l, err = listLog(ctx, store, startAfter, maxVersion)
	}
	return l, err
}

// firstGap returns the first missing version between the listed commits, or
// -1 when they are contiguous.
func (l *listing) firstGap() int64 {
	for i := 1; i < len(l.commits); i++ {
		if want := l.commits[i-1].version + 1; l.commits[i].version != want {
			return want
		}
	}
	return -1
}

// listLogOnce lists "_delta_log/" once, from startAfter, stopping after
// maxVersion when maxVersion >= 0.
func listLogOnce(ctx context.Context, store objectstore.Store, startAfter string, maxVersion int64) (*listing, error) {
	l := &listing{startAfter: startAfter, checkpoints: map[int64][]logFile{}}
	for info, err := range store.List(ctx, LogPrefix, startAfter) {
		if err != nil {
			return nil, fmt.Errorf("txlog: listing %s: %w", LogPrefix, err)
		}
		if name := strings.TrimPrefix(info.Key, LogPrefix); name != "" && name[0] > '9' {
			break // past the digit-named files: _commits/, _last_checkpoint, _sidecars/, ...
		}
		f, ok := parseLogKey(info.Key)
		if !ok {
			continue
		}
		if maxVersion >= 0 && f.version > maxVersion {
			break // keys are sorted: every later log file has a higher version
		}
		f.size, f.modTime = info.Size, info.ModTime
		if f.kind == kindCommit {
			l.commits = append(l.commits, f)
		} else {
			l.checkpoints[f.version] = append(l.checkpoints[f.version], f)
		}
	}
	return l, nil
}

// latest returns the newest version with a commit or a checkpoint, or -1.
func (l *listing) latest() int64 {
	v := int64(-1)
	if n := len(l.commits); n > 0 {
		v = l.commits[n-1].version
	}
	for cv := range l.checkpoints {
		v = max(v, cv)
	}
	return v
}

// checkpointRef is one complete checkpoint chosen for replay.
type checkpointRef struct {
	version int64
	files   []logFile // one file, or every part of a multi-part checkpoint in part order
}

// completeCheckpoint returns a complete checkpoint of version v from the
// listed files, preferring a classic file, then a UUID-named v2 one, then a
// complete multi-part set; ok is false when none is complete.
func (l *listing) completeCheckpoint(v int64) (checkpointRef, bool) {
	files := l.checkpoints[v]
	if len(l.bad) > 0 {
		files = slices.DeleteFunc(slices.Clone(files), func(f logFile) bool { return l.bad[f.key] != nil })
	}
	for _, want := range []fileKind{kindClassicCheckpoint, kindV2Checkpoint} {
		for _, f := range files {
			if f.kind == want {
				return checkpointRef{version: v, files: []logFile{f}}, true
			}
		}
	}
	// multi-part: group by number of parts; a set is usable when all parts exist
	byParts := map[int][]logFile{}
	for _, f := range l.checkpoints[v] {
		if f.kind == kindMultiPartCheckpoint {
			byParts[f.parts] = append(byParts[f.parts], f)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(byParts)) {
		parts := byParts[n]
		if slices.ContainsFunc(parts, func(f logFile) bool { return l.bad[f.key] != nil }) {
			continue // a set with an unreadable part is unusable
		}
		slices.SortFunc(parts, func(a, b logFile) int { return a.part - b.part })
		parts = slices.CompactFunc(parts, func(a, b logFile) bool { return a.part == b.part })
		if len(parts) == n {
			return checkpointRef{version: v, files: parts}, true
		}
	}
	return checkpointRef{}, false
}

// newestCheckpoint returns the newest complete checkpoint with version <= v.
func (l *listing) newestCheckpoint(v int64) (checkpointRef, bool) {
	versions := slices.Sorted(maps.Keys(l.checkpoints))
	for i := len(versions) - 1; i >= 0; i-- {
		if versions[i] > v {
			continue
		}
		if cp, ok := l.completeCheckpoint(versions[i]); ok {
			return cp, true
		}
	}
	return checkpointRef{}, false
}

// incompleteCheckpoints describes the multi-part checkpoints at or before v
// that lack parts, e.g. "5 (1 of 2 parts)".
func (l *listing) incompleteCheckpoints(v int64) []string {
	var out []string
	for _, cv := range slices.Sorted(maps.Keys(l.checkpoints)) {
		if cv > v {
			break
		}
		if _, ok := l.completeCheckpoint(cv); ok {
			continue
		}
		n, parts := 0, 0
		for _, f := range l.checkpoints[cv] {
			if f.kind == kindMultiPartCheckpoint && l.bad[f.key] == nil {
				n, parts = n+1, f.parts
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d (%d of %d parts)", cv, n, parts))
		}
	}
	return out
}

// earliest returns the oldest reconstructable version in the listing (when
// the listing started at the beginning): 0 with commit 0, else the oldest
// complete checkpoint; -1 when none.
func (l *listing) earliest() int64 {
	if len(l.commits) > 0 && l.commits[0].version == 0 {
		return 0
	}
	for _, v := range slices.Sorted(maps.Keys(l.checkpoints)) {
		if _, ok := l.completeCheckpoint(v); ok {
			return v
		}
	}
	return -1
}

// logSegment is what replay of one version needs: an optional checkpoint and
// the contiguous commits after it up to version.
type logSegment struct {
	version    int64
	checkpoint *checkpointRef
	commits    []logFile // versions checkpoint+1 .. version, contiguous
	// versionFile is the commit file of version itself when listed (it is
	// not in commits when version is the checkpoint's version).
	versionFile *logFile
}

// errNeedFullListing asks the caller to list again from the beginning.
var errNeedFullListing = errors.New("txlog: need full listing")

// segment builds the log segment for version target (-1 = latest). It
// returns errNeedFullListing when the listing started after the beginning
// and lacks a usable checkpoint.
func (l *listing) segment(target int64) (*logSegment, error) {
	latest := l.latest()
	if latest < 0 {
		if l.startAfter != "" {
			return nil, errNeedFullListing
		}
		if target >= 0 {
			return nil, &VersionNotFoundError{Version: target, Earliest: -1, Latest: -1}
		}
		return nil, ErrTableNotFound
	}
	explicit := target >= 0
	if !explicit {
		target = latest
	}
	if target > latest {
		if l.startAfter != "" {
			return nil, errNeedFullListing // to report the earliest version
		}
		return nil, &VersionNotFoundError{Version: target, Earliest: l.earliest(), Latest: latest}
	}
	seg := &logSegment{version: target}
	start := int64(0)
	if cp, ok := l.newestCheckpoint(target); ok {
		seg.checkpoint = &cp
		start = cp.version + 1
	} else if l.startAfter != "" {
		return nil, errNeedFullListing
	}
	i, _ := slices.BinarySearchFunc(l.commits, start, func(f logFile, v int64) int { return cmpInt64(f.version, v) })
	if seg.checkpoint == nil && (i >= len(l.commits) || l.commits[i].version != 0) {
		first := int64(-1)
		if len(l.commits) > 0 {
			first = l.commits[0].version
		}
		if sk, ok := l.newestBad(-1, target); ok {
			return nil, sk.unreadableError(target, 0, first)
		}
		if explicit {
			return nil, &VersionNotFoundError{Version: target, Earliest: l.earliest(), Latest: latest}
		}
		reason := fmt.Sprintf("log starts at version %d without a usable checkpoint: commit 0 is missing", first)
		if inc := l.incompleteCheckpoints(target); len(inc) > 0 {
			reason += "; incomplete checkpoints (missing parts): " + strings.Join(inc, ", ")
		}
		return nil, corrupt(LogPrefix, -1, nil, "%s", reason)
	}
	want := start
	for ; i < len(l.commits) && l.commits[i].version <= target; i++ {
		f := l.commits[i]
		if f.version != want {
			if sk, ok := l.newestBad(start-1, target); ok {
				return nil, sk.unreadableError(target, want, f.version)
			}
			return nil, gapError(want, f.version)
		}
		seg.commits = append(seg.commits, f)
		want++
	}
	if want <= target {
		if sk, ok := l.newestBad(start-1, target); ok {
			return nil, sk.unreadableError(target, want, -1)
		}
		return nil, gapError(want, -1)
	}
	if n := len(seg.commits); n > 0 {
		seg.versionFile = &seg.commits[n-1]
	} else if j, found := slices.BinarySearchFunc(l.commits, target, func(f logFile, v int64) int { return cmpInt64(f.version, v) }); found {
		seg.versionFile = &l.commits[j]
	}
	return seg, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// LastCheckpoint is the content of "_delta_log/_last_checkpoint" (spec "Last
// Checkpoint File Schema"). Readers use it only as a hint.
type LastCheckpoint struct {
	// Version is the checkpointed table version.
	Version int64 `json:"version"`
	// Size is the number of actions in the checkpoint.
	Size int64 `json:"size"`
	// Parts is the number of parts of a multi-part checkpoint, nil otherwise.
	Parts *int64 `json:"parts,omitempty"`
	// SizeInBytes is the checkpoint's total size in bytes, nil when unknown.
	SizeInBytes *int64 `json:"sizeInBytes,omitempty"`
	// NumOfAddFiles is the number of add actions, nil when unknown.
	NumOfAddFiles *int64 `json:"numOfAddFiles,omitempty"`
	// CheckpointSchema is the checkpoint's schema (StructType JSON), if given.
	CheckpointSchema json.RawMessage   `json:"checkpointSchema,omitempty"`
	Tags             map[string]string `json:"tags,omitempty"`
	// Checksum is the MD5 of the canonicalized JSON (optional; not verified).
	Checksum string `json:"checksum,omitempty"`
}

// maxLastCheckpointBytes bounds what readLastCheckpoint reads of the hint:
// a real one is a few hundred bytes, or a few hundred KiB with the
// checkpointSchema of a very wide table; a longer file is not a hint.
const maxLastCheckpointBytes = 4 << 20

// readLastCheckpoint returns the hint, or nil when it is absent or unusable
// (decodeLastCheckpoint). Store errors other than ErrNotExist are returned.
func readLastCheckpoint(ctx context.Context, store objectstore.Store) (*LastCheckpoint, error) {
	data, err := store.Get(ctx, LastCheckpointKey, objectstore.Range{Length: maxLastCheckpointBytes + 1})
	if errors.Is(err, objectstore.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("txlog: reading %s: %w", LastCheckpointKey, err)
	}
	return decodeLastCheckpoint(data), nil
}

// decodeLastCheckpoint decodes the content of _last_checkpoint, or returns
// nil for a hint that cannot be right: longer than maxLastCheckpointBytes,
// not JSON of the spec's schema, a negative version, size, sizeInBytes or
// numOfAddFiles, or parts outside 1..2^31-1 (the multi-part names' 10
// digits). A broken hint is ignored: the listing decides (spec "Last
// Checkpoint File": readers use it only to find the latest checkpoint
// quickly). Of its counts only Version is used, as where to start listing.
func decodeLastCheckpoint(data []byte) *LastCheckpoint {
	if len(data) > maxLastCheckpointBytes {
		return nil
	}
	var lc LastCheckpoint
	if err := json.Unmarshal(data, &lc); err != nil {
		return nil
	}
	negative := func(p *int64) bool { return p != nil && *p < 0 }
	if lc.Version < 0 || lc.Size < 0 || negative(lc.SizeInBytes) || negative(lc.NumOfAddFiles) ||
		(lc.Parts != nil && (*lc.Parts < 1 || *lc.Parts >= 1<<31)) {
		return nil
	}
	return &lc
}

// ReadCommit reads and decodes commit version from store (spec "Delta Log
// Entries"). It returns an error wrapping objectstore.ErrNotExist when the
// commit does not exist, and a *CorruptLogError when it cannot be decoded.
func ReadCommit(ctx context.Context, store objectstore.Store, version int64) ([]Action, error) {
	if version < 0 {
		return nil, &VersionNotFoundError{Version: version, Earliest: -1, Latest: -1}
	}
	data, err := store.Get(ctx, CommitKey(version), objectstore.FullObject)
	if err != nil {
		return nil, fmt.Errorf("txlog: reading commit %d: %w", version, err)
	}
	return decodeCommit(version, data, true)
}

// Commit is one decoded commit file.
type Commit struct {
	Version int64
	Actions []Action
	// ModTime is the commit file's modification time from the listing.
	ModTime time.Time
}

// CommitInfo returns the commit's first commitInfo action, or nil.
func (c *Commit) CommitInfo() *CommitInfo { return firstCommitInfo(c.Actions) }

// Commits lists "_delta_log/" once and yields the commits with versions in
// [start, end], in ascending order; end < 0 means up to the latest commit.
// History, verify and the CLI use it (the commit loop reads single versions
// with ReadCommit). It yields an
// error (and stops) when a version in the range is missing (a
// *CorruptLogError for a gap, a *VersionNotFoundError when start is not
// listed), when a commit cannot be read or decoded, or when ctx ends. An
// empty range (no commit at or after start) yields nothing.
func Commits(ctx context.Context, store objectstore.Store, start, end int64) iter.Seq2[*Commit, error] {
	return func(yield func(*Commit, error) bool) {
		if start < 0 {
			yield(nil, &VersionNotFoundError{Version: start, Earliest: -1, Latest: -1})
			return
		}
		l, err := listAfter(ctx, store, start-1, end)
		if err != nil {
			yield(nil, err)
			return
		}
		want := start
		for _, f := range l.commits {
			if f.version < start {
				continue
			}
			if f.version != want {
				if want == start {
					yield(nil, &VersionNotFoundError{Version: start, Earliest: -1, Latest: l.latest()})
				} else {
					yield(nil, gapError(want, f.version))
				}
				return
			}
			actions, err := readCommitFile(ctx, store, f, true)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(&Commit{Version: f.version, Actions: actions, ModTime: f.modTime}, nil) {
				return
			}
			want++
		}
		if end >= 0 && want <= end && want > start {
			yield(nil, &VersionNotFoundError{Version: end, Earliest: -1, Latest: want - 1})
		}
	}
}

// readCommitFile reads and decodes commit file f; keepCommitInfo false drops
// its commitInfo actions (after checking their JSON).
func readCommitFile(ctx context.Context, store objectstore.Store, f logFile, keepCommitInfo bool) ([]Action, error) {
	data, err := store.Get(ctx, f.key, objectstore.FullObject)
	if err != nil {
		if errors.Is(err, objectstore.ErrNotExist) {
			return nil, corrupt(f.key, f.version, err, "listed commit file disappeared")
		}
		return nil, fmt.Errorf("txlog: reading commit %d: %w", f.version, err)
	}
	return decodeCommit(f.version, data, keepCommitInfo)
}
