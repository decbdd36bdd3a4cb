package txlog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog/internal/fileset"
)

// FileKey identifies a logical file during reconciliation (spec "Action
// Reconciliation"): the data file's path, URI-decoded once so that two
// encodings of one path match, and the deletion vector's unique id ("" for
// none).
type FileKey struct {
	Path string
	DV   string
}

func newFileKey(path string, dv *DeletionVectorDescriptor) FileKey {
	return FileKey{Path: DecodePath(path), DV: dv.UniqueID()}
}

// DecodePath returns the data file path of an add/remove/cdc path field,
// which is a URI-encoded (RFC 2396) path: %XX escapes are decoded once; "+"
// stays "+". A path with an invalid escape is returned unchanged.
func DecodePath(p string) string {
	if strings.IndexByte(p, '%') < 0 {
		return p
	}
	d, err := url.PathUnescape(p)
	if err != nil {
		return p
	}
	return d
}

// LoadOption configures Load.
type LoadOption func(*loadOptions)

type loadOptions struct {
	version     int64     // -1 = latest
	timestamp   time.Time // zero = not by timestamp
	now         func() time.Time
	concurrency int
	logger      *slog.Logger
}

// WithLoadLogger sets the logger of Load and of the snapshot's Update
// (default slog.Default()). A checkpoint that cannot be read and is replayed
// around is logged at Warn, naming the file.
func WithLoadLogger(l *slog.Logger) LoadOption {
	return func(o *loadOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// AtVersion loads the snapshot of table version v (time travel by version).
// Load returns a *VersionNotFoundError when v cannot be reconstructed.
func AtVersion(v int64) LoadOption {
	return func(o *loadOptions) { o.version, o.timestamp = v, time.Time{} }
}

// AtTimestamp loads the snapshot of the latest commit whose commit time is at
// or before t (time travel by timestamp). The commit time is the commit
// file's modification time (made monotonic over versions as Spark does), or
// commitInfo.inCommitTimestamp when delta.enableInCommitTimestamps is on
// (spec "In-Commit Timestamps"). Load returns a *VersionNotFoundError when t
// is before the first reconstructable commit.
func AtTimestamp(t time.Time) LoadOption {
	return func(o *loadOptions) { o.timestamp, o.version = t, -1 }
}

// WithClock sets the clock used for tombstone and txn expiry (default
// time.Now). Tests use it; the snapshot and its updates keep it.
func WithClock(now func() time.Time) LoadOption {
	return func(o *loadOptions) { o.now = now }
}

// Snapshot is the state of a table at one version: protocol, metadata, live
// files, tombstones, transaction ids and domain metadata, reconstructed by
// log replay (spec "Action Reconciliation"). A Snapshot is immutable and safe
// for concurrent use; the values it returns (actions, maps, slices of
// pointers) must not be modified by callers.
type Snapshot struct {
	store   objectstore.Store
	opts    loadOptions
	version int64

	protocol *Protocol
	metadata *Metadata
	schema   *schema.StructType

	files      fileSet[Add]
	tombstones fileSet[Remove]
	txns       map[string]*Txn
	domains    map[string]*DomainMetadata

	checkpointVersion int64 // -1: replay started at version 0
	skipped           []SkippedCheckpoint
	commitTime        time.Time
	commitInfo        *CommitInfo // of the commit at version; nil when not read
	race              raceState   // set by Commit on its post-commit snapshot (transaction.go)

	sortOnce sync.Once
	sorted   []*Add
}

// Load reads the table in store (rooted at the table root; the log is under
// "_delta_log/") and returns its latest snapshot, or the one the options
// select. It reads "_delta_log/_last_checkpoint" as a hint, lists the log
// once from there (again from the beginning only when the hint is stale or
// wrong), reads the newest complete checkpoint at or before the version and
// the commits after it.
//
// A checkpoint that cannot be read (empty, garbage, truncated, a part or
// sidecar missing) is treated as absent: replay starts from an older
// complete checkpoint or from the commits, the file is logged at Warn
// (WithLoadLogger) and Snapshot.SkippedCheckpoints lists it. Time travel and
// Update do the same.
//
// Errors: ErrTableNotFound when there is no log; *VersionNotFoundError;
// *CorruptLogError (gaps, bad JSON, an unreadable checkpoint whose commits
// are gone, naming both); ErrNoMetadata or
// ErrNoProtocol; *UnsupportedProtocolError and *UnsupportedFeatureError from
// the protocol gate (checkReadable); store errors, wrapped; ctx errors.
func Load(ctx context.Context, store objectstore.Store, opts ...LoadOption) (*Snapshot, error) {
	o := defaultLoadOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if !o.timestamp.IsZero() {
		return loadAtTimestamp(ctx, store, o)
	}
	if o.version < -1 {
		return nil, &VersionNotFoundError{Version: o.version, Earliest: -1, Latest: -1}
	}
	hint, err := readLastCheckpoint(ctx, store)
	if err != nil {
		return nil, err
	}
	startAfter := ""
	if hint != nil && (o.version < 0 || hint.Version <= o.version) {
		startAfter = versionPrefix(hint.Version)
	}
	l, err := listLog(ctx, store, startAfter, o.version)
	if err != nil {
		return nil, err
	}
	s, _, err := replayListing(ctx, store, o, l, o.version)
	var vnf *VersionNotFoundError
	if errors.As(err, &vnf) && vnf.Earliest < 0 && o.version >= 0 {
		// The listing stopped at the requested version and saw nothing:
		// list everything once to name the versions that do exist.
		if full, lerr := listLog(ctx, store, "", -1); lerr == nil {
			vnf.Earliest, vnf.Latest = full.earliest(), full.latest()
		}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// checkpointReadError is how replay reports that the checkpoint it started
// from cannot be read (err is a *CorruptLogError); replayListing replays
// around it.
type checkpointReadError struct {
	cp  checkpointRef
	err error
}

func (e *checkpointReadError) Error() string { return e.err.Error() }
func (e *checkpointReadError) Unwrap() error { return e.err }

// replayListing builds the log segment of version target (-1 = latest) from
// l and replays it. A checkpoint that cannot be read is treated as absent:
// it is logged at Warn, recorded in the snapshot's SkippedCheckpoints, and
// the segment is built again without it, from an older complete checkpoint
// or from the commits (listing the log again from the beginning when l
// started later). When no path to target remains the error is a
// *CorruptLogError naming the unreadable checkpoint and the missing commits
// (it matches ErrCorruptLog and ErrLogGap). The listing returned is l or
// the fuller one used, with the unreadable checkpoints marked.
func replayListing(ctx context.Context, store objectstore.Store, o loadOptions, l *listing, target int64) (*Snapshot, *listing, error) {
	for {
		seg, err := l.segment(target)
		if errors.Is(err, errNeedFullListing) {
			full, lerr := listLog(ctx, store, "", target)
			if lerr != nil {
				return nil, l, lerr
			}
			full.bad, l = l.bad, full
			seg, err = l.segment(target)
		}
		if err != nil {
			return nil, l, err
		}
		s, err := replay(ctx, store, o, seg, nil)
		var cre *checkpointReadError
		if !errors.As(err, &cre) {
			if err != nil {
				return nil, l, err
			}
			s.skipped = l.skipped(s.version)
			return s, l, nil
		}
		sk := l.markBad(cre.cp, cre.err)
		o.logger.WarnContext(ctx, "txlog: checkpoint cannot be read; replaying without it",
			"file", sk.File(), "files", len(sk.Files), "version", sk.Version, "target", target, "err", cre.err)
	}
}

// defaultLoadOptions are Load's options before its LoadOptions apply.
func defaultLoadOptions() loadOptions {
	return loadOptions{version: -1, now: time.Now, concurrency: 8, logger: slog.Default()}
}

// newSnapshotFrom returns a snapshot that continues base (sharing its file
// sets under new levels), or an empty one when base is nil; its version is
// left for the caller to set.
func newSnapshotFrom(store objectstore.Store, o loadOptions, base *Snapshot) *Snapshot {
	s := &Snapshot{store: store, opts: o, checkpointVersion: -1}
	if base != nil {
		s.protocol, s.metadata, s.schema = base.protocol, base.metadata, base.schema
		s.files = base.files.derive()
		s.tombstones = base.tombstones.derive()
		s.txns = maps.Clone(base.txns)
		s.domains = maps.Clone(base.domains)
		s.checkpointVersion = base.checkpointVersion
		s.skipped = base.skipped
		return s
	}
	s.files = newAddSet()
	s.tombstones = newRemoveSet()
	s.txns = map[string]*Txn{}
	s.domains = map[string]*DomainMetadata{}
	return s
}

// replay builds the snapshot of seg. With base set, seg holds only commits
// after base's version (incremental update) and no checkpoint.
func replay(ctx context.Context, store objectstore.Store, o loadOptions, seg *logSegment, base *Snapshot) (*Snapshot, error) {
	s := newSnapshotFrom(store, o, base)
	s.version = seg.version
	if seg.checkpoint != nil {
		s.checkpointVersion = seg.checkpoint.version
		var pb *packBuilder
		if base == nil {
			// the checkpoint's files become the packed bottom level
			pb = newPackBuilder()
		}
		if err := readCheckpoint(ctx, store, *seg.checkpoint, s.applyCheckpointAction, pb); err != nil {
			if errors.Is(err, ErrCorruptLog) {
				return nil, &checkpointReadError{cp: *seg.checkpoint, err: err}
			}
			return nil, err
		}
		if pb != nil {
			s.files = addSetOf(pb)
		}
	}
	metadataChanged := false
	var pv pvInterner
	err := fetchCommits(ctx, store, seg.commits, seg.version, o.concurrency, func(f logFile, actions []Action) error {
		for i := range actions {
			a := &actions[i]
			if a.Metadata != nil {
				metadataChanged = true
			}
			if a.Add != nil {
				// The actions were decoded for this replay only: equal
				// partitionValues maps can be shared.
				a.Add.PartitionValues = pv.intern(a.Add.PartitionValues)
			}
			s.apply(a)
		}
		if f.version == seg.version {
			s.commitInfo = firstCommitInfo(actions)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.files.seal()
	s.tombstones.seal()
	if s.protocol == nil {
		return nil, fmt.Errorf("%w (version %d)", ErrNoProtocol, s.version)
	}
	if err := checkReadable(s.protocol); err != nil {
		return nil, err
	}
	if s.metadata == nil {
		return nil, fmt.Errorf("%w (version %d)", ErrNoMetadata, s.version)
	}
	if s.schema == nil || metadataChanged {
		st, err := s.metadata.Schema()
		if err != nil {
			return nil, corrupt("", s.version, err, "metaData.schemaString does not parse")
		}
		s.schema = st
	}
	if err := s.setCommitTime(ctx, seg); err != nil {
		return nil, err
	}
	return s, nil
}

// pvInterner shares equal partitionValues maps between the adds decoded by
// one replay (files of one partition, and the empty map of every file of an
// unpartitioned table), as the checkpoint reader does.
type pvInterner struct {
	maps map[string]map[string]string
	key  []byte
}

// emptyPartitionValues is the shared partitionValues of unpartitioned
// tables' files decoded by replay (never modified: snapshot values are
// read-only).
var emptyPartitionValues = fileset.EmptyPartitionValues

// appendPVKey appends one key/value pair of a partitionValues map to a
// sharing key, length-prefixed so that no two different maps give the same
// key.
func appendPVKey(buf []byte, k, v string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(k)))
	buf = append(buf, k...)
	buf = binary.AppendUvarint(buf, uint64(len(v)))
	return append(buf, v...)
}

func (p *pvInterner) intern(m map[string]string) map[string]string {
	switch {
	case m == nil:
		return nil
	case len(m) == 0:
		return emptyPartitionValues
	case len(m) > 8:
		return m
	}
	var ks [8]string
	keys := ks[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	p.key = p.key[:0]
	for _, k := range keys {
		p.key = appendPVKey(p.key, k, m[k])
	}
	if shared, ok := p.maps[string(p.key)]; ok {
		return shared
	}
	if p.maps == nil {
		p.maps = map[string]map[string]string{}
	}
	if len(p.maps) < 4096 {
		p.maps[string(p.key)] = m
	}
	return m
}

func firstCommitInfo(actions []Action) *CommitInfo {
	for i := range actions {
		if actions[i].CommitInfo != nil {
			return actions[i].CommitInfo
		}
	}
	return nil
}

// apply reconciles one action into the state (spec "Action Reconciliation").
func (s *Snapshot) apply(a *Action) {
	switch {
	case a.Add != nil:
		k := a.Add.Key()
		s.files.put(k, a.Add)
		s.tombstones.del(k)
	case a.Remove != nil:
		k := a.Remove.Key()
		s.files.del(k)
		s.tombstones.put(k, a.Remove)
	default:
		Reconciler{&s.protocol, &s.metadata, s.txns, s.domains}.Apply(a)
	}
}

// applyCheckpointAction adds one checkpoint row's action. A checkpoint holds
// reconciled state, so adds and removes go straight into their maps.
func (s *Snapshot) applyCheckpointAction(a *Action) {
	switch {
	case a.Add != nil:
		s.files.putNew(a.Add.Key(), a.Add)
	case a.Remove != nil:
		s.tombstones.putNew(a.Remove.Key(), a.Remove)
	default:
		s.apply(a)
	}
}

// setCommitTime sets the commit time of the snapshot's version.
func (s *Snapshot) setCommitTime(ctx context.Context, seg *logSegment) error {
	if s.ictActiveAt(s.version) {
		ci := s.commitInfo
		if ci == nil && seg.versionFile != nil {
			actions, err := readCommitFile(ctx, s.store, *seg.versionFile, true)
			if err != nil {
				return err
			}
			ci = firstCommitInfo(actions)
			s.commitInfo = ci
		}
		if ci != nil && ci.InCommitTimestamp != nil {
			s.commitTime = time.UnixMilli(*ci.InCommitTimestamp)
			return nil
		}
	}
	switch {
	case seg.versionFile != nil:
		s.commitTime = seg.versionFile.modTime
	case seg.checkpoint != nil && len(seg.checkpoint.files) > 0:
		s.commitTime = seg.checkpoint.files[0].modTime
	}
	return nil
}

// ictActiveAt reports whether in-commit timestamps hold for version v under
// the snapshot's metadata (spec "In-Commit Timestamps").
func (s *Snapshot) ictActiveAt(v int64) bool {
	if s.metadata == nil || !strings.EqualFold(s.metadata.Configuration[PropEnableInCommitTimestamps], "true") {
		return false
	}
	ev, ok := s.ictEnablement()
	return !ok || v >= ev
}

// ictEnablement returns delta.inCommitTimestampEnablementVersion, ok false
// when unset (ICT enabled since the table's creation).
func (s *Snapshot) ictEnablement() (int64, bool) {
	v, err := strconv.ParseInt(s.metadata.Configuration[PropInCommitTimestampEnablementVersion], 10, 64)
	return v, err == nil
}

// Version returns the table version of the snapshot.
func (s *Snapshot) Version() int64 { return s.version }

// Protocol returns the table's protocol action.
func (s *Snapshot) Protocol() *Protocol { return s.protocol }

// Metadata returns the table's metaData action.
func (s *Snapshot) Metadata() *Metadata { return s.metadata }

// Schema returns the parsed table schema (parsed once per metadata change).
func (s *Snapshot) Schema() *schema.StructType { return s.schema }

// PartitionColumns returns the partition column names, in order.
func (s *Snapshot) PartitionColumns() []string { return s.metadata.PartitionColumns }

// Store returns the store the snapshot was loaded from.
func (s *Snapshot) Store() objectstore.Store { return s.store }

// CheckpointVersion returns the version of the checkpoint that replay started
// from, or -1 when replay started at version 0.
func (s *Snapshot) CheckpointVersion() int64 { return s.checkpointVersion }

// SkippedCheckpoints returns the checkpoints at or before the snapshot's
// version that could not be read (damaged, truncated, not Parquet, parts or
// sidecars missing) and that replay went around, by ascending version; nil
// when there were none. Load logs each at Warn; table verify reports them.
func (s *Snapshot) SkippedCheckpoints() []SkippedCheckpoint { return slices.Clone(s.skipped) }

// CommitTimestamp returns the commit time of the snapshot's version: the
// in-commit timestamp when enabled, else the commit file's modification time
// (the checkpoint file's when the commit file was cleaned up).
func (s *Snapshot) CommitTimestamp() time.Time { return s.commitTime }

// CommitInfo returns the commitInfo of the commit at the snapshot's version,
// or nil when that commit has none or was not read (replay started at a
// checkpoint of this version).
func (s *Snapshot) CommitInfo() *CommitInfo { return s.commitInfo }

// NumFiles returns the number of live logical files.
func (s *Snapshot) NumFiles() int { return s.files.len() }

// Files returns the live files (add actions), sorted by decoded path and then
// deletion vector id. The slice is the caller's; the actions (and their
// maps) are shared with the snapshot and others derived from it: read-only.
func (s *Snapshot) Files() []*Add {
	// One level: the level's sorted values are shared (between snapshots,
	// too); otherwise the merge with the overlay is kept per snapshot.
	s.sortOnce.Do(func() { s.sorted = s.files.sortedValues() })
	return slices.Clone(s.sorted)
}

// AllFiles yields the live files in the order of Files without building
// that slice or keeping what it yields: a caller that goes once through
// every file (the checkpoint writer does) keeps a large snapshot at its
// packed size, where Files materialises every action and caches them. The
// actions are read-only, as those of Files, and may be fresh copies.
func (s *Snapshot) AllFiles() iter.Seq[*Add] {
	return s.files.allSorted
}

// File returns the live add action with this key, if any. Before the
// first Files call it may return a new copy on each call (the snapshot
// keeps most files packed): compare actions by value, not by pointer. The
// action is read-only, as those of Files.
func (s *Snapshot) File(k FileKey) (*Add, bool) {
	return s.files.get(k)
}

// Tombstones returns the unexpired remove actions, sorted by key: those whose
// deletionTimestamp plus delta.deletedFileRetentionDuration (default one
// week) is after now. A remove without deletionTimestamp has expired.
func (s *Snapshot) Tombstones() []*Remove {
	retention := s.durationProp(PropDeletedFileRetentionDuration, 7*24*time.Hour)
	cutoff := s.opts.now().Add(-retention).UnixMilli()
	type entry struct {
		k FileKey
		v *Remove
	}
	var live []entry
	s.tombstones.each(func(k FileKey, r *Remove) {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp > cutoff {
			live = append(live, entry{k, r})
		}
	})
	slices.SortFunc(live, func(a, b entry) int { return compareFileKeys(a.k, b.k) })
	out := make([]*Remove, len(live))
	for i, e := range live {
		out[i] = e.v
	}
	return out
}

// durationProp reads an interval table property, or def when unset or
// unparseable.
func (s *Snapshot) durationProp(key string, def time.Duration) time.Duration {
	if d, ok := s.intervalProp(key); ok {
		return d
	}
	return def
}

// intervalProp reads an interval table property; false when unset or
// unparseable.
func (s *Snapshot) intervalProp(key string) (time.Duration, bool) {
	v, ok := s.metadata.Configuration[key]
	if !ok {
		return 0, false
	}
	d, err := ParseInterval(v)
	return d, err == nil
}

// txnLive reports whether txn survives delta.setTransactionRetentionDuration.
func (s *Snapshot) txnLive(t *Txn) bool {
	d, ok := s.intervalProp(PropSetTransactionRetentionDuration)
	if !ok {
		return true
	}
	cutoff := s.opts.now().Add(-d).UnixMilli()
	return t.LastUpdated != nil && *t.LastUpdated > cutoff
}

// TxnVersion returns the latest version recorded by a txn action for appID
// (spec "Transaction Identifiers"), or -1 when there is none or it expired
// under delta.setTransactionRetentionDuration (by lastUpdated).
func (s *Snapshot) TxnVersion(appID string) int64 {
	t, ok := s.txns[appID]
	if !ok || !s.txnLive(t) {
		return -1
	}
	return t.Version
}

// Txns returns the unexpired txn actions by appId. The map is the caller's.
func (s *Snapshot) Txns() map[string]*Txn {
	out := make(map[string]*Txn, len(s.txns))
	for k, t := range s.txns {
		if s.txnLive(t) {
			out[k] = t
		}
	}
	return out
}

// DomainMetadata returns the live domainMetadata action of domain.
func (s *Snapshot) DomainMetadata(domain string) (*DomainMetadata, bool) {
	d, ok := s.domains[domain]
	return d, ok
}

// Domains returns all live domainMetadata actions by domain. The map is the
// caller's.
func (s *Snapshot) Domains() map[string]*DomainMetadata { return maps.Clone(s.domains) }

// maxIncrementalCommits is how many new commits Update applies to a copy of
// its state before it prefers a newer checkpoint, when there is one.
const maxIncrementalCommits = 1000

// Update returns the snapshot of the table's latest version, reading only
// what is new: it lists "_delta_log/" after its own commit, reads the newer
// commits and applies them to a copy of its state. It returns s itself when
// there is no newer commit. When the commits right after s were cleaned up,
// or more than 1,000 commits are new and a newer checkpoint exists, it
// replays from the newest checkpoint in that listing instead. Errors are
// those of Load.
func (s *Snapshot) Update(ctx context.Context) (*Snapshot, error) {
	l, err := listAfter(ctx, s.store, s.version, -1)
	if err != nil {
		return nil, err
	}
	latest := l.latest()
	if latest <= s.version {
		return s, nil
	}
	// Far behind and a newer checkpoint exists: reading it is cheaper than
	// applying every commit.
	cp, hasCP := l.newestCheckpoint(latest)
	farBehind := hasCP && cp.version > s.version && latest-s.version > maxIncrementalCommits
	if len(l.commits) > 0 && l.commits[0].version == s.version+1 && !farBehind {
		seg := &logSegment{version: latest}
		want := s.version + 1
		for i := range l.commits {
			f := l.commits[i]
			if f.version != want {
				return nil, gapError(want, f.version)
			}
			seg.commits = append(seg.commits, f)
			want++
		}
		if want-1 < latest {
			// only a checkpoint is newer than the last commit: use the commits
			seg.version = want - 1
		}
		seg.versionFile = &seg.commits[len(seg.commits)-1]
		return replay(ctx, s.store, s.opts, seg, s)
	}
	snap, _, err := replayListing(ctx, s.store, s.opts, l, -1)
	return snap, err
}

// fetchCommits reads and decodes files with up to conc in flight and calls fn
// for each, in order. Only the commit of version keepInfoOf keeps its
// commitInfo.
func fetchCommits(ctx context.Context, store objectstore.Store, files []logFile, keepInfoOf int64, conc int, fn func(logFile, []Action) error) error {
	if len(files) == 0 {
		return nil
	}
	if conc <= 1 || len(files) == 1 {
		for _, f := range files {
			actions, err := readCommitFile(ctx, store, f, f.version == keepInfoOf)
			if err != nil {
				return err
			}
			if err := fn(f, actions); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	type result struct {
		actions []Action
		err     error
		done    chan struct{}
	}
	results := make([]result, len(files))
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// A sliding window bounds the files fetched but not yet consumed: file
	// i+conc is fetched once file i is applied. (errgroup's SetLimit bounds
	// running reads instead, and would let finished reads pile up ahead of
	// a slow fn.)
	start := func(i int) {
		if i >= len(files) {
			return
		}
		results[i].done = make(chan struct{})
		wg.Go(func() {
			results[i].actions, results[i].err = readCommitFile(ctx, store, files[i], files[i].version == keepInfoOf)
			close(results[i].done)
		})
	}
	for i := range conc {
		start(i)
	}
	for i, f := range files {
		<-results[i].done
		if err := results[i].err; err != nil {
			return err
		}
		if err := fn(f, results[i].actions); err != nil {
			return err
		}
		results[i].actions = nil
		start(i + conc)
	}
	return nil
}
