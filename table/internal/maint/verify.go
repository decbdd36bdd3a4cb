package maint

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
)

// VerifyProblemKind classifies what Verify found wrong.
type VerifyProblemKind string

// Kinds of problem Verify reports.
const (
	// ProblemMissingFile: a data or deletion vector file that the latest
	// snapshot references does not exist.
	ProblemMissingFile VerifyProblemKind = "missing-file"
	// ProblemSizeMismatch: a referenced data file exists with a size other
	// than the one its add action records.
	ProblemSizeMismatch VerifyProblemKind = "size-mismatch"
	// ProblemLogGap: commit versions are not contiguous, or the log starts
	// after version 0 without a checkpoint to start from.
	ProblemLogGap VerifyProblemKind = "log-gap"
	// ProblemCorruptCommit: a commit file cannot be read or decoded.
	ProblemCorruptCommit VerifyProblemKind = "corrupt-commit"
	// ProblemCheckpoint: a checkpoint cannot be read, is incomplete, or does
	// not hold the state that the JSON commits up to its version produce
	// (live files, protocol, metadata, txns, domain metadata).
	ProblemCheckpoint VerifyProblemKind = "checkpoint-mismatch"
	// ProblemLoad: the latest snapshot cannot be loaded.
	ProblemLoad VerifyProblemKind = "load-failed"
	// ProblemOutsideTable: a file the latest snapshot references (a data
	// file, a deletion vector file, a remove tombstone's path) lies outside
	// the table root and outside every WithVerifyAllowedRoots root, or, on
	// the local file system, is a symbolic link inside the root that
	// resolves to a file outside it. Reads refuse the former
	// (ErrPathOutsideTable) and follow the latter.
	ProblemOutsideTable VerifyProblemKind = "outside-table"
	// ProblemInvalidValue: an add action of the latest snapshot holds a
	// value that cannot be right: a negative size, a stats.numRecords that
	// is not a count (negative, fractional or above 2^53), a deletion vector
	// cardinality that is negative or above numRecords, a negative deletion
	// vector sizeInBytes or offset, or a partition value that does not
	// parse as its column's type.
	ProblemInvalidValue VerifyProblemKind = "invalid-value"
)

// VerifyProblem is one thing Verify found wrong.
type VerifyProblem struct {
	Kind VerifyProblemKind
	// Version is the table version concerned, -1 when none is.
	Version int64
	// Path is the file concerned (a data file path or a log key), "" when
	// none is.
	Path string
	// Detail says what is wrong in words.
	Detail string
}

// String returns the problem in one line: kind, version, path, detail.
func (p VerifyProblem) String() string {
	var b strings.Builder
	b.WriteString(string(p.Kind))
	if p.Version >= 0 {
		fmt.Fprintf(&b, " at version %d", p.Version)
	}
	if p.Path != "" {
		fmt.Fprintf(&b, " (%s)", p.Path)
	}
	b.WriteString(": ")
	b.WriteString(p.Detail)
	return b.String()
}

// VerifyReport is the result of Verify.
type VerifyReport struct {
	// Version is the latest table version, -1 when it could not be loaded.
	Version int64
	// FirstCommit and LastCommit are the oldest and newest commit files in
	// the log (-1 when there are none).
	FirstCommit, LastCommit int64
	// Commits is the number of commit files read and decoded.
	Commits int
	// Checkpoints is the number of checkpoints compared with the commits;
	// CheckpointsUnchecked counts those that could not be, because the
	// commits before them were cleaned up.
	Checkpoints, CheckpointsUnchecked int
	// Files and Bytes count the data files of the latest snapshot that were
	// checked, and their recorded sizes.
	Files int
	Bytes int64
	// Problems lists what is wrong, in the order found; empty when the table
	// is consistent.
	Problems []VerifyProblem
}

// OK reports whether Verify found no problem.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

func (r *VerifyReport) add(kind VerifyProblemKind, version int64, path, format string, args ...any) {
	r.Problems = append(r.Problems, VerifyProblem{Kind: kind, Version: version, Path: path, Detail: fmt.Sprintf(format, args...)})
}

// VerifyOption configures Verify.
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	concurrency  int
	progress     func(done, total int)
	now          func() time.Time
	allowedRoots []string
	// parsePartition parses a partition value of a column type (the
	// caller's, table.ParsePartitionValue); nil checks none.
	parsePartition func(t schema.Type, s string) (any, error)
	logger         *slog.Logger
}

// newVerifyConfig is Verify's configuration after opts.
func newVerifyConfig(opts []VerifyOption) verifyConfig {
	cfg := verifyConfig{concurrency: 16, now: time.Now, logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// loadOptions are the txlog.Load options of every load Verify makes.
func (c *verifyConfig) loadOptions(more ...txlog.LoadOption) []txlog.LoadOption {
	return append([]txlog.LoadOption{txlog.WithLoadLogger(c.logger)}, more...)
}

// WithVerifyLogger sets the logger of the snapshot loads Verify and
// VerifyExactlyOnce make (a checkpoint replayed around is logged at Warn;
// default slog.Default()).
func WithVerifyLogger(l *slog.Logger) VerifyOption {
	return func(c *verifyConfig) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithPartitionParser makes Verify check that every partition value of
// the live files parses with parse (spec "Partition Value Serialization"):
// table passes its ParsePartitionValue, so that Verify accepts exactly the
// values its scans read.
func WithPartitionParser(parse func(t schema.Type, s string) (any, error)) VerifyOption {
	return func(c *verifyConfig) { c.parsePartition = parse }
}

// WithVerifyAllowedRoots accepts referenced files under these root URIs
// (shallow clones, as WithAllowedRoots does for reads): they are not
// reported as outside the table, and are not checked either.
func WithVerifyAllowedRoots(uris ...string) VerifyOption {
	return func(c *verifyConfig) { c.allowedRoots = append(c.allowedRoots, uris...) }
}

// WithVerifyConcurrency sets how many files Verify stats or reads at once
// (default 16, minimum 1).
func WithVerifyConcurrency(n int) VerifyOption {
	return func(c *verifyConfig) { c.concurrency = max(1, n) }
}

// WithVerifyProgress calls fn as files are checked, with the number done
// and the total. fn is called from one goroutine at a time.
func WithVerifyProgress(fn func(done, total int)) VerifyOption {
	return func(c *verifyConfig) { c.progress = fn }
}

// WithVerifyClock sets the clock used for txn expiry when checkpoints are
// compared (default time.Now).
func WithVerifyClock(now func() time.Time) VerifyOption {
	return func(c *verifyConfig) { c.now = now }
}

// logScan is a listing of "_delta_log/": the commit versions and the
// checkpoint versions, each ascending, with the checkpoints' files.
type logScan struct {
	commits     []int64
	commitInfo  map[int64]objectstore.ObjectInfo
	checkpoints []int64
	cpFiles     map[int64][]txlog.LogFile // by version, in key order
}

// scanLog lists "_delta_log/" (txlog.ListLogFiles, which lists again when
// the commits listed have a gap) and sorts out commits and checkpoints.
func scanLog(ctx context.Context, store objectstore.Store) (*logScan, error) {
	files, err := txlog.ListLogFiles(ctx, store)
	if err != nil {
		return nil, fmt.Errorf("table: log of %s: %w", store.URI(), err)
	}
	ls := &logScan{commitInfo: map[int64]objectstore.ObjectInfo{}, cpFiles: map[int64][]txlog.LogFile{}}
	for _, f := range files {
		if f.Commit {
			ls.commits = append(ls.commits, f.Version)
			ls.commitInfo[f.Version] = objectstore.ObjectInfo{Key: f.Key, Size: f.Size, ModTime: f.ModTime}
		} else {
			ls.cpFiles[f.Version] = append(ls.cpFiles[f.Version], f)
		}
	}
	ls.checkpoints = slices.Sorted(maps.Keys(ls.cpFiles))
	return ls, nil
}

// LogListing is a listing of "_delta_log/" (ListLog): the commit versions
// and the checkpoint versions, each ascending, and the commits' object
// info (modification times).
type LogListing struct {
	Commits     []int64
	CommitInfo  map[int64]objectstore.ObjectInfo
	Checkpoints []int64
}

// ListLog lists "_delta_log/" of store and sorts out commits and
// checkpoints by their names (txlog.ParseLogKey), listing again when the
// commits have a gap, as Verify does (scanLog); for
// table's History and Changes. Errors are the store's, wrapped.
func ListLog(ctx context.Context, store objectstore.Store) (*LogListing, error) {
	ls, err := scanLog(ctx, store)
	if err != nil {
		return nil, err
	}
	return &LogListing{Commits: ls.commits, CommitInfo: ls.commitInfo, Checkpoints: ls.checkpoints}, nil
}

// checkpointPath names the files of the checkpoint of version v as they
// are in the log: the one file, or the parts of a multi-part checkpoint.
func (ls *logScan) checkpointPath(v int64) string {
	files := ls.cpFiles[v]
	if len(files) == 0 {
		return txlog.CheckpointKey(v)
	}
	keys := make([]string, len(files))
	for i, f := range files {
		keys[i] = f.Key
	}
	return strings.Join(keys, ", ")
}

// missingParts describes the parts missing from the multi-part checkpoint
// of version v ("" when it has a single-file checkpoint or a complete set),
// e.g. "part 2 of 3 missing". The part count comes from file names, which
// anyone can write ("...checkpoint.0000000001.2147483647.parquet"): the
// work and the text are bounded by the files listed, not by that count.
func (ls *logScan) missingParts(v int64) string {
	byParts := map[int][]int{}
	for _, f := range ls.cpFiles[v] {
		if f.Parts == 0 {
			return "" // a classic or v2 checkpoint
		}
		byParts[f.Parts] = append(byParts[f.Parts], f.Part)
	}
	var out []string
	for _, n := range slices.Sorted(maps.Keys(byParts)) {
		have := slices.Compact(slices.Sorted(slices.Values(byParts[n])))
		if len(have) == n {
			return ""
		}
		word := "part"
		if n-len(have) > 1 {
			word = "parts"
		}
		out = append(out, fmt.Sprintf("%s %s of %d missing", word, missingRanges(have, n), n))
	}
	return strings.Join(out, "; ")
}

// maxMissingRanges bounds how many ranges of missing parts missingParts
// names per checkpoint.
const maxMissingRanges = 8

// missingRanges names the numbers in 1..n that are not in have (sorted,
// distinct, each in 1..n) as ranges ("2, 4-9"), at most maxMissingRanges
// of them and then how many more parts are missing: its work is linear
// in len(have), whatever n is.
func missingRanges(have []int, n int) string {
	var b strings.Builder
	ranges, named := 0, 0
	add := func(lo, hi int) {
		if ranges++; ranges > maxMissingRanges {
			return
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(lo))
		if hi > lo {
			b.WriteString("-" + strconv.Itoa(hi))
		}
		named += hi - lo + 1
	}
	prev := 0
	for _, p := range have {
		if p > prev+1 {
			add(prev+1, p-1)
		}
		prev = p
	}
	if prev < n {
		add(prev+1, n)
	}
	if missing := n - len(have); named < missing {
		fmt.Fprintf(&b, " and %d more", missing-named)
	}
	return b.String()
}

// Verify checks the table in store for consistency and returns what it
// found wrong in a report; the error is only for failures that stop the
// check itself (the log cannot be listed, ctx ended) and
// txlog.ErrTableNotFound when there is no log. It checks that
//
//   - commit versions are contiguous and the log starts at version 0 or at
//     a checkpoint (a log of only a checkpoint is the table at the
//     checkpoint's version, spec "Checkpoints");
//   - every commit file reads and decodes;
//   - every checkpoint holds what the JSON commits up to its version
//     produce: the same live files (path, deletion vector, size, partition
//     values), protocol, metadata, unexpired txns and domain metadata. A
//     checkpoint older than the oldest commit file cannot be checked (it is
//     counted in CheckpointsUnchecked), but serves as the starting point for
//     the later ones;
//   - every file the latest snapshot references (data files and deletion
//     vector files) exists, data files with their recorded size;
//   - every path the latest snapshot holds (data files, deletion vectors,
//     remove tombstones) lies under the table root, or under a
//     WithVerifyAllowedRoots root (ProblemOutsideTable), and on the local
//     file system no referenced file is a symbolic link that resolves
//     outside the root;
//   - the live files' add actions hold sane values: size, stats.numRecords,
//     deletion vector cardinality, partition values that parse as their
//     column's type (ProblemInvalidValue).
func Verify(ctx context.Context, store objectstore.Store, opts ...VerifyOption) (*VerifyReport, error) {
	cfg := newVerifyConfig(opts)
	ls, err := scanLog(ctx, store)
	if err != nil {
		return nil, err
	}
	if len(ls.commits) == 0 && len(ls.checkpoints) == 0 {
		return nil, fmt.Errorf("table: verify %s: %w", store.URI(), txlog.ErrTableNotFound)
	}
	rep := &VerifyReport{Version: -1, FirstCommit: -1, LastCommit: -1}
	verifyContiguity(ls, rep)

	// Decode every commit, in parallel.
	commits, err := readAllCommits(ctx, store, ls.commits, cfg.concurrency, rep)
	if err != nil {
		return nil, err
	}
	if err := verifyCheckpoints(ctx, store, ls, commits, cfg, rep); err != nil {
		return nil, err
	}

	snap, err := txlog.Load(ctx, store, cfg.loadOptions()...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.add(ProblemLoad, -1, "", "%v", err)
		return rep, nil
	}
	rep.Version = snap.Version()
	if err := verifyFiles(ctx, store, snap, cfg, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

func verifyContiguity(ls *logScan, rep *VerifyReport) {
	if len(ls.commits) == 0 {
		// A log of only a checkpoint (delta-rs writes them; spec
		// "Checkpoints": a checkpoint stands for the commits up to its
		// version): nothing to be contiguous. Loading the latest snapshot
		// checks that the newest checkpoint reads.
		return
	}
	rep.FirstCommit, rep.LastCommit = ls.commits[0], ls.commits[len(ls.commits)-1]
	for i := 1; i < len(ls.commits); i++ {
		if a, b := ls.commits[i-1], ls.commits[i]; b != a+1 {
			missing := strconv.FormatInt(a+1, 10)
			if b-1 > a+1 {
				missing += ".." + strconv.FormatInt(b-1, 10)
			}
			rep.add(ProblemLogGap, a+1, txlog.CommitKey(a+1), "commit versions are not contiguous: %s missing between %d and %d", missing, a, b)
		}
	}
	if first := ls.commits[0]; first > 0 {
		ok := false
		for _, c := range ls.checkpoints {
			if c >= first-1 && c <= rep.LastCommit {
				ok = true
				break
			}
		}
		if !ok {
			rep.add(ProblemLogGap, 0, txlog.CommitKey(0), "the log starts at version %d without a checkpoint at version %d or later", first, first-1)
		}
	}
	if n := len(ls.checkpoints); n > 0 && ls.checkpoints[n-1] > rep.LastCommit {
		c := ls.checkpoints[n-1]
		rep.add(ProblemLogGap, c, txlog.CommitKey(c), "checkpoint of version %d is newer than the newest commit %d", c, rep.LastCommit)
	}
}

// readAllCommits reads and decodes the commits; an unreadable one becomes a
// problem and a nil entry.
func readAllCommits(ctx context.Context, store objectstore.Store, versions []int64, conc int, rep *VerifyReport) (map[int64][]txlog.Action, error) {
	out := make(map[int64][]txlog.Action, len(versions))
	errs := make(map[int64]error)
	var mu sync.Mutex
	// Up to conc reads at once; an unreadable commit is a problem, not an
	// error, so every call returns nil and only ctx stops the loop.
	err := forEach(ctx, len(versions), conc, nil, func(i int) error {
		v := versions[i]
		actions, err := txlog.ReadCommit(ctx, store, v)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs[v] = err
			return nil
		}
		out[v] = actions
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, v := range versions {
		if err := errs[v]; err != nil {
			rep.add(ProblemCorruptCommit, v, txlog.CommitKey(v), "%v", err)
		}
	}
	rep.Commits = len(out)
	return out, nil
}

// replayState is the reconciled state of JSON commits (spec "Action
// Reconciliation"), built independently of txlog's replay so that
// checkpoints can be compared with it.
type replayState struct {
	version  int64
	protocol *txlog.Protocol
	metadata *txlog.Metadata
	files    map[txlog.FileKey]*txlog.Add
	txns     map[string]*txlog.Txn
	domains  map[string]*txlog.DomainMetadata
}

func stateOfSnapshot(s *txlog.Snapshot) *replayState {
	st := &replayState{version: s.Version(), protocol: s.Protocol(), metadata: s.Metadata(),
		files: map[txlog.FileKey]*txlog.Add{}, txns: s.Txns(), domains: s.Domains()}
	for _, f := range s.Files() {
		st.files[f.Key()] = f
	}
	return st
}

func (st *replayState) apply(actions []txlog.Action) {
	r := txlog.Reconciler{Protocol: &st.protocol, Metadata: &st.metadata, Txns: st.txns, Domains: st.domains}
	for i := range actions {
		a := &actions[i]
		switch {
		case a.Add != nil:
			st.files[a.Add.Key()] = a.Add
		case a.Remove != nil:
			delete(st.files, a.Remove.Key())
		default:
			r.Apply(a)
		}
	}
}

// advance replays the commits after st's version up to version c onto st;
// false when one of them is missing (st is then part-way).
func (st *replayState) advance(commits map[int64][]txlog.Action, c int64) bool {
	for v := st.version + 1; v <= c; v++ {
		actions, ok := commits[v]
		if !ok {
			return false
		}
		st.apply(actions)
		st.version = v
	}
	return true
}

// loadCheckpoint loads the snapshot at checkpoint version c. When it
// cannot, it reports a ProblemCheckpoint ("what: reason") and returns a nil
// snapshot, with ctx's error instead when ctx is done.
func loadCheckpoint(ctx context.Context, store objectstore.Store, ls *logScan, c int64, cfg verifyConfig, rep *VerifyReport, what string) (*txlog.Snapshot, error) {
	snap, err := txlog.Load(ctx, store, cfg.loadOptions(txlog.AtVersion(c), txlog.WithClock(cfg.now))...)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.add(ProblemCheckpoint, c, ls.checkpointPath(c), "%s: %v", what, err)
		return nil, nil
	}
	return snap, nil
}

// verifyCheckpoints compares each checkpoint with the replay of the JSON
// commits up to its version.
func verifyCheckpoints(ctx context.Context, store objectstore.Store, ls *logScan, commits map[int64][]txlog.Action, cfg verifyConfig, rep *VerifyReport) error {
	if len(ls.commits) == 0 {
		// A log of only a checkpoint: no commits to compare it with.
		rep.CheckpointsUnchecked = len(ls.checkpoints)
		return nil
	}
	if len(ls.checkpoints) == 0 {
		return nil
	}
	var st *replayState
	first := ls.commits[0]
	if first == 0 {
		st = &replayState{version: -1, files: map[txlog.FileKey]*txlog.Add{}, txns: map[string]*txlog.Txn{}, domains: map[string]*txlog.DomainMetadata{}}
	}
	for _, c := range ls.checkpoints {
		if c > rep.LastCommit {
			break // reported as a gap
		}
		// start: commits before the first checkpoint were cleaned up, or one
		// is missing; c cannot be checked, but later checkpoints can,
		// starting from it.
		start, what := st == nil, "cannot read the checkpoint"
		if start {
			rep.CheckpointsUnchecked++
			if c < first-1 {
				continue
			}
			what = "cannot load the checkpoint"
		} else if !st.advance(commits, c) {
			rep.add(ProblemCheckpoint, c, ls.checkpointPath(c), "cannot compare the checkpoint: a commit before it is missing or unreadable")
			st = nil
			continue
		}
		snap, err := loadCheckpoint(ctx, store, ls, c, cfg, rep, what)
		if snap == nil {
			if err != nil {
				return err
			}
			continue
		}
		if start {
			st = stateOfSnapshot(snap)
			continue
		}
		if sk := snap.SkippedCheckpoints(); len(sk) > 0 && sk[len(sk)-1].Version == c {
			rep.add(ProblemCheckpoint, c, sk[len(sk)-1].File(), "cannot read the checkpoint (replay goes around it): %v", sk[len(sk)-1].Err)
			continue
		}
		if snap.CheckpointVersion() != c {
			detail := "the checkpoint is incomplete"
			if m := ls.missingParts(c); m != "" {
				detail += " (" + m + ")"
			}
			rep.add(ProblemCheckpoint, c, ls.checkpointPath(c), "%s: replay of version %d cannot start from it", detail, c)
			continue
		}
		rep.Checkpoints++
		for _, d := range compareStates(stateOfSnapshot(snap), st, cfg.now()) {
			rep.add(ProblemCheckpoint, c, ls.checkpointPath(c), "%s", d)
		}
	}
	return nil
}

// compareStates lists how the checkpoint's state cp differs from the JSON
// replay js at time now (for txn expiry).
func compareStates(cp, js *replayState, now time.Time) []string {
	var diffs []string
	if !sameProtocol(cp.protocol, js.protocol) {
		diffs = append(diffs, fmt.Sprintf("protocol differs: checkpoint %s, commits %s", protocolString(cp.protocol), protocolString(js.protocol)))
	}
	if d := metadataDiff(cp.metadata, js.metadata); d != "" {
		diffs = append(diffs, "metadata differs: "+d)
	}
	// Live files.
	var onlyCP, onlyJS, changed []string
	for k, a := range cp.files {
		b, ok := js.files[k]
		switch {
		case !ok:
			onlyCP = append(onlyCP, k.Path)
		case a.Size != b.Size:
			changed = append(changed, fmt.Sprintf("%s size %d vs %d", k.Path, a.Size, b.Size))
		case !samePartitionValues(a.PartitionValues, b.PartitionValues):
			changed = append(changed, fmt.Sprintf("%s partition values %v vs %v", k.Path, a.PartitionValues, b.PartitionValues))
		}
	}
	for k := range js.files {
		if _, ok := cp.files[k]; !ok {
			onlyJS = append(onlyJS, k.Path)
		}
	}
	if len(onlyCP) > 0 {
		diffs = append(diffs, fmt.Sprintf("%d live file(s) in the checkpoint but not in the commits: %s", len(onlyCP), sampleList(onlyCP)))
	}
	if len(onlyJS) > 0 {
		diffs = append(diffs, fmt.Sprintf("%d live file(s) in the commits but not in the checkpoint: %s", len(onlyJS), sampleList(onlyJS)))
	}
	if len(changed) > 0 {
		diffs = append(diffs, fmt.Sprintf("%d live file(s) differ: %s", len(changed), sampleList(changed)))
	}
	// Txns: the checkpoint keeps unexpired ones; expire the replay's alike.
	retention := time.Duration(-1)
	if cp.metadata != nil {
		if s := cp.metadata.Configuration[txlog.PropSetTransactionRetentionDuration]; s != "" {
			if d, err := txlog.ParseInterval(s); err == nil {
				retention = d
			}
		}
	}
	jsTxns := map[string]int64{}
	for id, t := range js.txns {
		if retention >= 0 && (t.LastUpdated == nil || time.UnixMilli(*t.LastUpdated).Add(retention).Before(now)) {
			continue
		}
		jsTxns[id] = t.Version
	}
	cpTxns := project(cp.txns, func(t *txlog.Txn) int64 { return t.Version })
	if !maps.Equal(cpTxns, jsTxns) {
		diffs = append(diffs, fmt.Sprintf("txns differ: checkpoint %s, commits %s", txnString(cpTxns), txnString(jsTxns)))
	}
	config := func(m *txlog.DomainMetadata) string { return m.Configuration }
	cpDom, jsDom := project(cp.domains, config), project(js.domains, config)
	if !maps.Equal(cpDom, jsDom) {
		diffs = append(diffs, fmt.Sprintf("domain metadata differs: checkpoint has %d domain(s), commits %d", len(cpDom), len(jsDom)))
	}
	return diffs
}

func sampleList(s []string) string {
	slices.Sort(s)
	if len(s) > 3 {
		return strings.Join(s[:3], ", ") + fmt.Sprintf(", ... (%d more)", len(s)-3)
	}
	return strings.Join(s, ", ")
}

func txnString(m map[string]int64) string {
	if len(m) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", id, m[id]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func protocolString(p *txlog.Protocol) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("(%d,%d) reader %v writer %v", p.MinReaderVersion, p.MinWriterVersion, p.ReaderFeatures, p.WriterFeatures)
}

func sameProtocol(a, b *txlog.Protocol) bool {
	if a == nil || b == nil {
		return a == b
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	return a.MinReaderVersion == b.MinReaderVersion && a.MinWriterVersion == b.MinWriterVersion &&
		slices.Equal(sorted(a.EffectiveReaderFeatures()), sorted(b.EffectiveReaderFeatures())) &&
		slices.Equal(sorted(a.EffectiveWriterFeatures()), sorted(b.EffectiveWriterFeatures()))
}

func metadataDiff(a, b *txlog.Metadata) string {
	switch {
	case a == nil && b == nil:
		return ""
	case a == nil || b == nil:
		return "present in only one of them"
	case a.ID != b.ID:
		return fmt.Sprintf("id %s vs %s", a.ID, b.ID)
	case a.SchemaString != b.SchemaString:
		return "schemaString differs"
	case !slices.Equal(a.PartitionColumns, b.PartitionColumns):
		return fmt.Sprintf("partitionColumns %v vs %v", a.PartitionColumns, b.PartitionColumns)
	case !maps.Equal(a.Configuration, b.Configuration):
		return fmt.Sprintf("configuration %v vs %v", a.Configuration, b.Configuration)
	case a.Format.Provider != b.Format.Provider:
		return fmt.Sprintf("format %s vs %s", a.Format.Provider, b.Format.Provider)
	}
	return ""
}

func samePartitionValues(a, b map[string]string) bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if a[k] != b[k] { // absent and "" are both null
			return false
		}
	}
	return true
}

// fileRef is one file the snapshot references.
type fileRef struct {
	key  string // store key
	path string // as in the log
	size int64  // -1: unknown (deletion vector files)
}

// tombstoneSize marks a remove tombstone's path in referencedFiles: its
// location is checked, not its existence.
const tombstoneSize = -2

// badRef is a path of the snapshot that lies outside the table root.
type badRef struct {
	what string // "data file", "deletion vector", "remove tombstone"
	path string
	err  error
}

// referencedFiles returns the data and deletion vector files of snap's live
// files that live under the table root, and the paths (live files, their
// deletion vectors, and with tombstones also the remove tombstones) that lie
// outside it. Paths under an allowed root of res are in neither list.
func referencedFiles(snap *txlog.Snapshot, res *txlog.PathResolver, tombstones bool) ([]fileRef, []badRef) {
	var refs []fileRef
	var bad []badRef
	seen := map[string]bool{}
	check := func(what, p string, size int64) {
		loc, err := res.Resolve(p)
		switch {
		case err != nil:
			bad = append(bad, badRef{what: what, path: p, err: err})
		case loc.InTable && !seen[loc.Key] && size != tombstoneSize:
			seen[loc.Key] = true
			refs = append(refs, fileRef{key: loc.Key, path: p, size: size})
		}
	}
	for f := range snap.AllFiles() {
		check("data file", txlog.DecodePath(f.Path), f.Size)
		if dv := f.DeletionVector; dv != nil && dv.StorageType != "i" {
			p, err := dv.AbsolutePath()
			if err != nil {
				bad = append(bad, badRef{what: "deletion vector", path: dv.PathOrInlineDv, err: err})
				continue
			}
			check("deletion vector", p, -1)
		}
	}
	if tombstones {
		for _, r := range snap.Tombstones() {
			check("remove tombstone", txlog.DecodePath(r.Path), tombstoneSize)
		}
	}
	return refs, bad
}

// symlinkOutside reports whether key of the local store l is a symbolic
// link (or lies below one) that resolves outside the store's root
// (realRoot, the root with its own links resolved), with the target.
func symlinkOutside(l *objectstore.Local, realRoot, key string) (string, bool) {
	full := filepath.Join(l.Root(), filepath.FromSlash(key))
	real, err := filepath.EvalSymlinks(full)
	if err != nil || real == full {
		return "", false
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return real, true
	}
	return "", false
}

func verifyFiles(ctx context.Context, store objectstore.Store, snap *txlog.Snapshot, cfg verifyConfig, rep *VerifyReport) error {
	res, err := txlog.NewPathResolver(store.URI(), cfg.allowedRoots...)
	if err != nil {
		return fmt.Errorf("table: verify %s: %w: %v", store.URI(), objectstore.ErrInvalidArgument, err)
	}
	refs, bad := referencedFiles(snap, res, true)
	for _, b := range bad {
		rep.add(ProblemOutsideTable, snap.Version(), b.path, "%s: %v", b.what, b.err)
	}
	verifyValues(snap, cfg.parsePartition, rep)
	local, _ := store.(*objectstore.Local)
	realRoot := ""
	if local != nil {
		if r, err := filepath.EvalSymlinks(local.Root()); err == nil {
			realRoot = r
		} else {
			local = nil
		}
	}
	type result struct {
		info   objectstore.ObjectInfo
		err    error
		target string // symlink target outside the root
	}
	results := make([]result, len(refs))
	// Up to cfg.concurrency stats at once; each result lands in results[i],
	// so the problems below come out in refs order. The calls report
	// through results, so the error is only ctx's.
	err = forEach(ctx, len(refs), cfg.concurrency, cfg.progress, func(i int) error {
		info, err := store.Stat(ctx, refs[i].key)
		results[i] = result{info: info, err: err}
		if local != nil {
			if target, out := symlinkOutside(local, realRoot, refs[i].key); out {
				results[i].target = target
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, r := range refs {
		res := results[i]
		if r.size >= 0 {
			rep.Files++
			rep.Bytes += r.size
		}
		if res.target != "" {
			rep.add(ProblemOutsideTable, snap.Version(), r.path, "a symbolic link inside the table root that resolves outside it, to %s (reads follow it)", res.target)
		}
		switch {
		case errors.Is(res.err, objectstore.ErrNotExist):
			rep.add(ProblemMissingFile, snap.Version(), r.path, "referenced by the latest snapshot but does not exist")
		case res.err != nil:
			rep.add(ProblemMissingFile, snap.Version(), r.path, "cannot stat: %v", res.err)
		case r.size >= 0 && res.info.Size != r.size:
			rep.add(ProblemSizeMismatch, snap.Version(), r.path, "size is %d bytes, the log records %d", res.info.Size, r.size)
		}
	}
	slices.SortStableFunc(rep.Problems, func(a, b VerifyProblem) int { return cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)) })
	return nil
}

// maxNumRecords is the largest stats.numRecords Verify accepts: 2^53, the
// largest count that JSON readers hold exactly (and far more rows than
// any Parquet file holds).
const maxNumRecords = 1 << 53

// verifyValues checks the values of the live files' add actions: size,
// stats.numRecords, deletion vector cardinality, partition values (one for
// each partition column, none for other columns, each parsing as its
// column's type).
func verifyValues(snap *txlog.Snapshot, parse func(schema.Type, string) (any, error), rep *VerifyReport) {
	v := snap.Version()
	sch := snap.Schema()
	mode := snap.Metadata().ColumnMappingMode()
	var parts []partCol
	if sch != nil {
		for _, c := range snap.PartitionColumns() {
			if i := sch.FieldIndex(c); i >= 0 {
				f := sch.Fields[i]
				parts = append(parts, partCol{name: f.Name, key: f.PhysicalName(mode), typ: f.Type})
			}
		}
	}
	for a := range snap.AllFiles() {
		p := txlog.DecodePath(a.Path)
		if a.Size < 0 {
			rep.add(ProblemInvalidValue, v, p, "add.size is negative: %d", a.Size)
		}
		n, known, why := numRecords(a.Stats)
		if why != "" {
			rep.add(ProblemInvalidValue, v, p, "stats.numRecords %s", why)
		}
		if dv := a.DeletionVector; dv != nil {
			switch {
			case dv.Cardinality < 0:
				rep.add(ProblemInvalidValue, v, p, "deletionVector.cardinality is negative: %d", dv.Cardinality)
			case known && dv.Cardinality > n:
				rep.add(ProblemInvalidValue, v, p, "deletionVector.cardinality %d is above stats.numRecords %d", dv.Cardinality, n)
			}
			// Reads refuse these (txlog.LoadDeletionVectorAt) before
			// reading anything.
			if dv.SizeInBytes < 0 {
				rep.add(ProblemInvalidValue, v, p, "deletionVector.sizeInBytes is negative: %d", dv.SizeInBytes)
			}
			if dv.Offset != nil && *dv.Offset < 0 {
				rep.add(ProblemInvalidValue, v, p, "deletionVector.offset is negative: %d", *dv.Offset)
			}
		}
		for _, c := range parts {
			_, has := a.PartitionValues[c.key]
			if !has {
				_, has = a.PartitionValues[c.name]
			}
			if !has {
				// Spec "Add File": partitionValues names every partition
				// column (null as a null value); readers would read null.
				rep.add(ProblemInvalidValue, v, p, "partitionValues lacks partition column %s", c.name)
				continue
			}
			if err := checkPartitionValue(a, c, parse); err != nil {
				rep.add(ProblemInvalidValue, v, p, "%v", err)
			}
		}
		if len(a.PartitionValues) > len(parts) {
			for k := range a.PartitionValues {
				if !slices.ContainsFunc(parts, func(c partCol) bool { return c.key == k || c.name == k }) {
					rep.add(ProblemInvalidValue, v, p, "partitionValues names %q, which is not a partition column", k)
				}
			}
		}
	}
}

// partCol is a partition column of the table.
type partCol struct {
	name string // logical name
	key  string // partitionValues key: the physical name
	typ  schema.Type
}

// checkPartitionValue parses the partition value of column c of file a
// with parse (under column mapping the key is the physical name; absent
// keys are null), as table's scans do; the error names value, column and
// type.
func checkPartitionValue(a *txlog.Add, c partCol, parse func(schema.Type, string) (any, error)) error {
	if parse == nil {
		return nil
	}
	s, ok := a.PartitionValues[c.key]
	if !ok {
		s = a.PartitionValues[c.name]
	}
	if _, err := parse(c.typ, s); err != nil {
		return fmt.Errorf("partition value %q of column %s (%s): %w", s, c.name, c.typ, err)
	}
	return nil
}

// numRecords reads stats.numRecords: n and true when it is a valid count;
// why says what is wrong with an invalid one ("" when it is valid, absent,
// or the stats are empty).
func numRecords(stats string) (n int64, known bool, why string) {
	if stats == "" {
		return 0, false, ""
	}
	var s struct {
		NumRecords *json.Number `json:"numRecords"`
	}
	dec := json.NewDecoder(strings.NewReader(stats))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return 0, false, fmt.Sprintf("cannot be read: the stats are not a JSON object: %v", err)
	}
	if s.NumRecords == nil {
		return 0, false, ""
	}
	n, err := s.NumRecords.Int64()
	switch {
	case err != nil:
		return 0, false, fmt.Sprintf("%s is not an integer count", s.NumRecords)
	case n < 0:
		return 0, false, fmt.Sprintf("is negative: %d", n)
	case n > maxNumRecords:
		return 0, false, fmt.Sprintf("%d is above 2^53, more rows than a data file can hold", n)
	}
	return n, true, ""
}

func kindOrder(k VerifyProblemKind) int {
	return slices.Index([]VerifyProblemKind{ProblemLogGap, ProblemCorruptCommit, ProblemCheckpoint, ProblemLoad, ProblemOutsideTable, ProblemMissingFile, ProblemSizeMismatch, ProblemInvalidValue}, k)
}

// EpochRange is an inclusive range of epoch ids (txn versions).
type EpochRange struct {
	From, To int64
}

// String returns "a-b", or "a" for a range of one epoch.
func (r EpochRange) String() string {
	if r.From == r.To {
		return strconv.FormatInt(r.From, 10)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// EpochRepeat is an epoch that more than one commit wrote: its rows are in
// the table more than once.
type EpochRepeat struct {
	Epoch int64
	// Versions are the table versions that committed it, ascending.
	Versions []int64
}

// EpochStep is an epoch committed after a higher one: the stream went
// backwards.
type EpochStep struct {
	Version int64 // the table version of the commit
	Epoch   int64 // the epoch it committed
	After   int64 // the highest epoch committed before it
}

// QueryEpochs is what the log says about one streaming query (txn appId).
type QueryEpochs struct {
	// AppID is the txn appId: the streaming query id.
	AppID string
	// Commits counts the commits that carry a txn action for AppID.
	Commits int
	// Base is the query's txn version in the oldest state the log can
	// reconstruct when older commits were cleaned up (its epochs up to Base
	// are taken as committed once), -1 otherwise.
	Base int64
	// First and Last are the lowest and highest epoch committed (in the
	// commits read), -1 when none.
	First, Last int64
	// LastVersion is the table version of the newest commit of the query.
	LastVersion int64
	// Committed are the committed epochs as ranges, ascending.
	Committed []EpochRange
	// Streaming is true when a STREAMING UPDATE commit names AppID as its
	// queryId. Only such appIds count epochs one by one; other txn appIds
	// (e.g. Kafka offsets stored as txn versions) may advance by any step.
	Streaming bool
	// Gaps are epochs between Base+1 (or First) and Last that no commit
	// wrote; reported for streaming queries only.
	Gaps []EpochRange
	// Repeats are epochs committed more than once.
	Repeats []EpochRepeat
	// Backwards are commits of an epoch lower than one committed before.
	Backwards []EpochStep
	// Mismatches describe commits whose commitInfo epochId disagrees with
	// their txn version, or STREAMING UPDATE commits without a txn action.
	Mismatches []string
}

// OK reports whether the query's epochs are exactly once: no gap, repeat,
// backward step or mismatch.
func (q *QueryEpochs) OK() bool {
	return len(q.Gaps) == 0 && len(q.Repeats) == 0 && len(q.Backwards) == 0 && len(q.Mismatches) == 0
}

// ExactlyOnceReport is the result of VerifyExactlyOnce.
type ExactlyOnceReport struct {
	// Version is the newest commit read, or the checkpoint's version for
	// a log of only a checkpoint.
	Version int64
	// FromVersion is the oldest commit read: 0, or the version after the
	// oldest reconstructable state when older commits were cleaned up (the
	// checkpoint's version + 1 for a log of only a checkpoint, when no
	// commit is read).
	FromVersion int64
	// Queries are the streaming queries (txn appIds), sorted by AppID.
	Queries []*QueryEpochs
}

// OK reports whether every query is exactly once.
func (r *ExactlyOnceReport) OK() bool {
	for _, q := range r.Queries {
		if !q.OK() {
			return false
		}
	}
	return true
}

// streamingOperation is the commitInfo.operation of streaming epoch commits
// (Spark's and streamsink's).
const streamingOperation = "STREAMING UPDATE"

// VerifyExactlyOnce reads the log of the table in store and reports, per
// streaming query (txn appId, spec "Transaction Identifiers"), which epochs
// were committed, and any gaps, repeats and epochs that went backwards.
// Epochs come from txn actions; a STREAMING UPDATE commit's commitInfo
// (operationParameters queryId and epochId) must agree with its txn action.
// When old commits were cleaned up, the reconstructable state at the oldest
// commit supplies each query's base epoch. Errors: txlog.ErrTableNotFound,
// log read errors (a gap or an unreadable commit), ctx errors.
// Of opts only WithVerifyLogger applies.
func VerifyExactlyOnce(ctx context.Context, store objectstore.Store, opts ...VerifyOption) (*ExactlyOnceReport, error) {
	cfg := newVerifyConfig(opts)
	ls, err := scanLog(ctx, store)
	if err != nil {
		return nil, err
	}
	if len(ls.commits) == 0 && len(ls.checkpoints) == 0 {
		return nil, fmt.Errorf("table: verify %s: %w", store.URI(), txlog.ErrTableNotFound)
	}
	rep := &ExactlyOnceReport{Version: -1}
	queries := map[string]*queryTrack{}
	track := func(id string) *queryTrack {
		q := queries[id]
		if q == nil {
			q = &queryTrack{QueryEpochs: QueryEpochs{AppID: id, Base: -1, First: -1, Last: -1, LastVersion: -1}, max: -1, seen: map[int64][]int64{}}
			queries[id] = q
		}
		return q
	}
	// The snapshot whose txns are the queries' starting epochs: when older
	// commits were cleaned up, that of the oldest checkpoint the remaining
	// commits follow on from (the first version read is the one after it,
	// so a commit after a checkpoint-only start is read, not folded into
	// the base), else of the oldest commit; the latest (its newest
	// readable checkpoint) when the log holds no commit (a log of only a
	// checkpoint); none when the log starts at version 0.
	var base *txlog.Snapshot
	switch {
	case len(ls.commits) == 0:
		base, err = txlog.Load(ctx, store, cfg.loadOptions()...)
	case ls.commits[0] > 0:
		from := ls.commits[0]
		if i, _ := slices.BinarySearch(ls.checkpoints, from-1); i < len(ls.checkpoints) && ls.checkpoints[i] <= ls.commits[len(ls.commits)-1] {
			from = ls.checkpoints[i]
		}
		base, err = txlog.Load(ctx, store, cfg.loadOptions(txlog.AtVersion(from))...)
	}
	if err != nil {
		return nil, fmt.Errorf("table: verify %s: loading the state the log starts from: %w", store.URI(), err)
	}
	if base != nil {
		rep.Version, rep.FromVersion = base.Version(), base.Version()+1
		for id, t := range base.Txns() {
			q := track(id)
			q.Base, q.max = t.Version, t.Version
		}
	}
	for c, err := range txlog.Commits(ctx, store, rep.FromVersion, -1) {
		if err != nil {
			return nil, fmt.Errorf("table: verify %s: %w", store.URI(), err)
		}
		rep.Version = c.Version
		txns := map[string]int64{}
		for _, a := range c.Actions {
			if a.Txn != nil {
				txns[a.Txn.AppID] = a.Txn.Version
			}
		}
		if ci := c.CommitInfo(); ci != nil && ci.Operation == streamingOperation {
			qid, _ := ci.OperationParameters["queryId"].(string)
			epoch, hasEpoch := paramInt(ci.OperationParameters["epochId"])
			if qid != "" && hasEpoch {
				track(qid).Streaming = true
				v, ok := txns[qid]
				switch {
				case !ok:
					q := track(qid)
					q.Mismatches = append(q.Mismatches, fmt.Sprintf("version %d: STREAMING UPDATE of epoch %d without a txn action", c.Version, epoch))
					q.observe(c.Version, epoch)
				case v != epoch:
					track(qid).Mismatches = append(track(qid).Mismatches, fmt.Sprintf("version %d: commitInfo epochId %d but txn version %d", c.Version, epoch, v))
				}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(txns)) {
			track(id).observe(c.Version, txns[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(queries)) {
		rep.Queries = append(rep.Queries, queries[id].finish())
	}
	return rep, nil
}

func paramInt(v any) (int64, bool) {
	switch v := v.(type) {
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		return n, err == nil
	case interface{ Int64() (int64, error) }:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		return int64(v), true
	}
	return 0, false
}

type queryTrack struct {
	QueryEpochs
	max  int64
	seen map[int64][]int64 // epoch -> versions
}

func (q *queryTrack) observe(version, epoch int64) {
	q.Commits++
	q.LastVersion = version
	if epoch < q.max {
		q.Backwards = append(q.Backwards, EpochStep{Version: version, Epoch: epoch, After: q.max})
	}
	q.seen[epoch] = append(q.seen[epoch], version)
	q.max = max(q.max, epoch)
}

func (q *queryTrack) finish() *QueryEpochs {
	epochs := slices.Sorted(maps.Keys(q.seen))
	out := q.QueryEpochs
	if len(epochs) > 0 {
		out.First, out.Last = epochs[0], epochs[len(epochs)-1]
	}
	for _, e := range epochs {
		if vs := q.seen[e]; len(vs) > 1 || (q.Base >= 0 && e <= q.Base) {
			out.Repeats = append(out.Repeats, EpochRepeat{Epoch: e, Versions: vs})
		}
		if n := len(out.Committed); n > 0 && out.Committed[n-1].To == e-1 {
			out.Committed[n-1].To = e
		} else {
			out.Committed = append(out.Committed, EpochRange{From: e, To: e})
		}
	}
	if !q.Streaming {
		return &out
	}
	// Gaps: from the base (when known) or the first epoch up to the last.
	next := out.First
	if q.Base >= 0 {
		next = q.Base + 1
	}
	for _, r := range out.Committed {
		if r.To < next {
			continue
		}
		if r.From > next {
			out.Gaps = append(out.Gaps, EpochRange{From: next, To: r.From - 1})
		}
		next = r.To + 1
	}
	return &out
}

// project maps every value of m through f.
func project[K comparable, V, W any](m map[K]V, f func(V) W) map[K]W {
	out := make(map[K]W, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}
