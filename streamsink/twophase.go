package streamsink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deltakit/deltakit/table"
)

// Two-phase epochs, for stream processors that checkpoint (Flink's Sink V2
// SinkWriter → Committer, TwoPhaseCommitSinkFunction):
//
//  1. on the checkpoint barrier the processor calls Prepare, which writes
//     the epoch's data files and returns a Committable; the processor
//     stores its bytes (MarshalBinary) in its own checkpoint;
//  2. when the checkpoint completes the processor calls Commit, which
//     commits the files with the epoch's txn {appId: queryId, version:
//     epochId} and a STREAMING UPDATE commitInfo, exactly as WriteEpoch
//     does;
//  3. after a restart the processor restores its last completed
//     checkpoint, decodes the committables in it (DecodeCommittable) and
//     calls Commit on each, in epoch order: a committable that committed
//     before the crash is a no-op (CommitResult.AlreadyCommitted), one
//     that did not commits now;
//  4. a committable that will never commit (its checkpoint was declined)
//     may be given to Abort, which deletes its files unless the table
//     references them.
//
// Files of a Prepare whose committable never reached a completed
// checkpoint are orphans the log never references; vacuum removes them.

// CommittableFormat is the "format" field of an encoded Committable, and
// CommittableFormatVersion its "formatVersion": DecodeCommittable refuses
// other formats and newer versions.
const (
	CommittableFormat        = "deltakit.streamsink.committable"
	CommittableFormatVersion = 1
)

var (
	// ErrInvalidCommittable is returned for bytes that are not a
	// committable this package can read (damaged, truncated, another
	// format or a newer format version), and for a committable of another
	// query or another table.
	ErrInvalidCommittable = errors.New("invalid committable")
	// ErrMissingFiles is returned (in a *MissingFilesError) by Commit when
	// data files of the committable are gone from the store (vacuumed
	// before the commit, deleted by Abort): nothing is committed.
	ErrMissingFiles = errors.New("data files of the committable are missing")
	// ErrEpochCommitted is returned by Abort for a committable whose files
	// the table's commit of its epoch references: nothing is deleted.
	ErrEpochCommitted = errors.New("epoch is committed")
	// ErrEpochOrder is returned by Commit for a committable whose epoch is
	// not above the query's txn version although no commit of the table
	// holds it: a later epoch committed first and this one would be lost.
	// Commit epochs in order.
	ErrEpochOrder = errors.New("epoch committed out of order")
)

// MissingFilesError names the data files of a committable that are not in
// the store (or not at their recorded size). It matches ErrMissingFiles.
type MissingFilesError struct {
	QueryID string
	Epoch   int64
	// Keys are the store keys of the missing files, with the reason for
	// each ("does not exist", "has n bytes, the committable says m").
	Keys []string
}

func (e *MissingFilesError) Error() string {
	return fmt.Sprintf("streamsink: query %s epoch %d: %v (nothing committed): %s",
		e.QueryID, e.Epoch, ErrMissingFiles, strings.Join(e.Keys, "; "))
}

func (e *MissingFilesError) Unwrap() error { return ErrMissingFiles }

// Committable is a prepared epoch: its data files are written, its commit
// is not made yet. It is immutable; MarshalBinary encodes it for the
// processor's checkpoint and DecodeCommittable reads it back.
type Committable struct {
	tableID string
	queryID string
	epochID int64
	mode    OutputMode
	adds    []*table.Add
	rows    int64
	// skipped: the table already held the epoch when it was prepared;
	// nothing was written.
	skipped bool
}

// QueryID returns the committable's query id.
func (c *Committable) QueryID() string { return c.queryID }

// EpochID returns the committable's epoch id.
func (c *Committable) EpochID() int64 { return c.epochID }

// Rows returns the number of rows of the committable's files.
func (c *Committable) Rows() int64 { return c.rows }

// Files returns the store keys of the committable's data files (relative
// to the table root).
func (c *Committable) Files() []string {
	keys := make([]string, len(c.adds))
	for i, a := range c.adds {
		keys[i] = table.DecodePath(a.Path)
	}
	return keys
}

// Skipped reports that the table already held the epoch when Prepare ran:
// the committable has no files and its Commit is a no-op.
func (c *Committable) Skipped() bool { return c.skipped }

// committableBody is the JSON of a committable.
type committableBody struct {
	Format        string       `json:"format"`
	FormatVersion int          `json:"formatVersion"`
	TableID       string       `json:"tableId"`
	QueryID       string       `json:"queryId"`
	EpochID       int64        `json:"epochId"`
	OutputMode    OutputMode   `json:"outputMode"`
	Rows          int64        `json:"rows"`
	Skipped       bool         `json:"skipped,omitempty"`
	Adds          []*table.Add `json:"adds"`
}

// committableEnvelope carries the body with its SHA-256, so that damaged
// bytes are refused rather than committed.
type committableEnvelope struct {
	Committable json.RawMessage `json:"committable"`
	SHA256      string          `json:"sha256"`
}

// MarshalBinary encodes the committable as JSON: the table id, query id,
// epoch id, output mode, row count and the add actions (as in the log),
// with the format name and version, and a SHA-256 of it all.
func (c *Committable) MarshalBinary() ([]byte, error) {
	body, err := json.Marshal(committableBody{
		Format: CommittableFormat, FormatVersion: CommittableFormatVersion,
		TableID: c.tableID, QueryID: c.queryID, EpochID: c.epochID, OutputMode: c.mode,
		Rows: c.rows, Skipped: c.skipped, Adds: nonNilAdds(c.adds),
	})
	if err != nil {
		return nil, fmt.Errorf("streamsink: encoding committable of query %s epoch %d: %w", c.queryID, c.epochID, err)
	}
	sum := sha256.Sum256(body)
	return json.Marshal(committableEnvelope{Committable: body, SHA256: hex.EncodeToString(sum[:])})
}

func nonNilAdds(adds []*table.Add) []*table.Add {
	if adds == nil {
		return []*table.Add{}
	}
	return adds
}

// DecodeCommittable decodes bytes of MarshalBinary. Bytes that are not a
// committable (damaged, truncated, a checksum mismatch, another format, a
// newer format version, a negative epoch, an unknown output mode, a data
// file path outside the table root) are an error matching
// ErrInvalidCommittable.
func DecodeCommittable(data []byte) (*Committable, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("streamsink: decoding committable (%d bytes): %w: %s", len(data), ErrInvalidCommittable, fmt.Sprintf(format, args...))
	}
	var env committableEnvelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, bad("not JSON: %v", err)
	}
	if len(env.Committable) == 0 || env.SHA256 == "" {
		return nil, bad("no committable or sha256 field")
	}
	if sum := sha256.Sum256(env.Committable); hex.EncodeToString(sum[:]) != env.SHA256 {
		return nil, bad("sha256 mismatch: the bytes are damaged")
	}
	var b committableBody
	if err := json.Unmarshal(env.Committable, &b); err != nil {
		return nil, bad("%v", err)
	}
	switch {
	case b.Format != CommittableFormat:
		return nil, bad("format %q, want %q", b.Format, CommittableFormat)
	case b.FormatVersion < 1 || b.FormatVersion > CommittableFormatVersion:
		return nil, bad("format version %d, this build reads 1..%d", b.FormatVersion, CommittableFormatVersion)
	case b.QueryID == "":
		return nil, bad("empty query id")
	case b.EpochID < 0:
		return nil, bad("epoch %d", b.EpochID)
	case b.OutputMode != Append && b.OutputMode != Complete:
		return nil, bad("unknown output mode %q", b.OutputMode)
	case b.Skipped && len(b.Adds) > 0:
		return nil, bad("a skipped epoch with %d files", len(b.Adds))
	}
	for i, a := range b.Adds {
		if a == nil || a.Path == "" {
			return nil, bad("add %d has no path", i)
		}
		if !relativeKey(table.DecodePath(a.Path)) {
			return nil, bad("add %d: path %q is not a file under the table root", i, a.Path)
		}
	}
	return &Committable{tableID: b.TableID, queryID: b.QueryID, epochID: b.EpochID, mode: b.OutputMode,
		adds: b.Adds, rows: b.Rows, skipped: b.Skipped}, nil
}

// relativeKey reports whether key names an object under the table root:
// no scheme, no leading slash, no empty, "." or ".." segment, not in the
// log. Prepare writes only such paths; Abort deletes only such keys.
func relativeKey(key string) bool {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "://") || strings.HasPrefix(key, table.LogPrefix) {
		return false
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// Prepare is the first phase of an epoch (not in upsert mode:
// ErrUpsertMode, see WithMergeKeys): it writes the epoch's rows as
// data files (rows aligned with the table schema, see table.Row; in
// the sink's output mode, with its write options) and returns the
// committable that Commit commits. Nothing is committed: until Commit the
// files are orphans that no reader sees.
//
// When the table already holds the epoch (epochID <= the query's txn
// version, as WriteEpoch skips it), Prepare writes nothing and returns a
// committable that reports Skipped, whose Commit is a no-op. Errors: a
// negative epoch (ErrInvalidEpoch), a table that refuses the write
// (table.ErrAppendOnly for Complete mode, constraints, ...) before any
// file is written, store errors (the files written so far are deleted).
func (s *Sink) Prepare(ctx context.Context, epochID int64, rows []table.Row) (*Committable, error) {
	if s.mergeKeys != nil {
		return nil, fmt.Errorf("streamsink: query %s prepare epoch %d: two-phase epochs are %w (WithMergeKeys): use WriteEpoch", s.queryID, epochID, ErrUpsertMode)
	}
	if epochID < 0 {
		return nil, fmt.Errorf("streamsink: prepare epoch %d: %w", epochID, ErrInvalidEpoch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tbl, err := s.refresh(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("streamsink: query %s prepare epoch %d: %w", s.queryID, epochID, err)
	}
	c := &Committable{tableID: tbl.Snapshot().Metadata().ID, queryID: s.queryID, epochID: epochID, mode: s.mode}
	if v := tbl.Snapshot().TxnVersion(s.queryID); epochID <= v {
		s.logger.Debug("streamsink: epoch already committed, preparing nothing", "query", s.queryID, "epoch", epochID, "txnVersion", v)
		c.skipped = true
		return c, nil
	}
	upd := table.StreamingUpdate{QueryID: s.queryID, EpochID: epochID, OutputMode: string(s.mode)}
	wopts := append(slices.Clone(s.wopts), table.WithStreamingUpdate(upd))
	if c.adds, err = tbl.WriteFiles(ctx, rows, wopts...); err != nil {
		return nil, fmt.Errorf("streamsink: query %s prepare epoch %d: writing data files: %w", s.queryID, epochID, err)
	}
	c.rows = int64(len(rows))
	return c, nil
}

// CommitResult reports what Commit did.
type CommitResult struct {
	Epoch int64
	// AlreadyCommitted is true when the table held the epoch before this
	// call (a restart replaying the commit of a restored checkpoint, a
	// Skipped committable): nothing was committed.
	AlreadyCommitted bool
	// ByOtherFiles is true when AlreadyCommitted and the commit that holds
	// the epoch added other files than this committable's (another Prepare
	// of the same epoch committed): this committable's files are orphans
	// that Abort may delete.
	ByOtherFiles bool
	// Version is the table version that committed the epoch (this call's
	// commit, or the earlier one), or -1 when AlreadyCommitted and that
	// commit is no longer in the log (log cleanup).
	Version int64
	// Files, Rows and Bytes are the data files, rows and bytes the commit
	// added (0 when AlreadyCommitted).
	Files int
	Rows  int64
	Bytes int64
	// Attempts counts commit attempts (version files tried).
	Attempts int
}

// Commit is the second phase of an epoch: it commits the committable's
// files with txn {appId: queryId, version: epochId} and commitInfo
// operation STREAMING UPDATE (outputMode, queryId, epochId), as WriteEpoch
// does, on the latest snapshot. It is idempotent: when the table already
// holds the epoch it commits nothing and reports AlreadyCommitted (with
// ByOtherFiles when another Prepare of the epoch committed). So after a
// restart, Commit of a committable restored from the processor's
// checkpoint commits it if the crash came before its commit landed, and is
// a no-op if it came after.
//
// Order: like WriteEpoch, Commit commits any epoch above the query's txn
// version, so epochs may have gaps (epoch 7 after epoch 4); but an epoch
// at or below the txn version that no commit in the log holds (epoch 5
// after 7 was committed) is refused with ErrEpochOrder rather than
// reported committed: commit a query's committables in epoch order. To
// tell these cases apart, Commit of an epoch at or below the txn version
// reads the log back from the latest version to the commit that holds the
// epoch: one commit read per version since then (one or two after a
// restart that replays the last checkpoint's committables).
//
// Before committing, Commit checks that every data file exists at its
// recorded size: missing files are a *MissingFilesError (ErrMissingFiles)
// naming them, and nothing is committed. A committable of another query or
// another table is ErrInvalidCommittable. When another run of the query
// commits the epoch (or a later one) concurrently, Commit fails with
// table.ErrConcurrentTransaction; call it again to learn whether the
// table holds the epoch. Other conflicts are retried from a fresh snapshot
// (WithConflictRetries). Any other error leaves the epoch committed or
// not: call Commit again.
func (s *Sink) Commit(ctx context.Context, c *Committable) (*CommitResult, error) {
	if err := s.checkOwn(c); err != nil {
		return nil, err
	}
	if s.mergeKeys != nil {
		return nil, fmt.Errorf("streamsink: query %s commit epoch %d: two-phase epochs are %w (WithMergeKeys): use WriteEpoch", s.queryID, c.epochID, ErrUpsertMode)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wrap := func(err error) error {
		return fmt.Errorf("streamsink: query %s commit epoch %d: %w", s.queryID, c.epochID, err)
	}
	checked := false
	for round := 0; ; round++ {
		tbl, err := s.refreshFor(ctx, c)
		if err != nil {
			return nil, wrap(err)
		}
		if v := tbl.Snapshot().TxnVersion(s.queryID); c.epochID <= v {
			ec, err := s.findEpochCommit(ctx, tbl, c.epochID)
			if err != nil {
				return nil, wrap(err)
			}
			if ec.gap {
				return nil, wrap(fmt.Errorf("%w: the query's txn version is %d, but no commit holds epoch %d (version %d committed epoch %d)",
					ErrEpochOrder, v, c.epochID, ec.version, ec.epoch))
			}
			res := &CommitResult{Epoch: c.epochID, AlreadyCommitted: true, Version: ec.version}
			res.ByOtherFiles = ec.found && !c.skipped && !ec.holds(c)
			s.logger.Debug("streamsink: epoch already committed", "query", s.queryID, "epoch", c.epochID,
				"txnVersion", v, "version", ec.version, "byOtherFiles", res.ByOtherFiles)
			return res, nil
		}
		if c.skipped {
			// Prepared when the table held the epoch; now it does not: the
			// table was restored or recreated under the processor.
			return nil, wrap(fmt.Errorf("%w: prepared as already committed, but the query's txn version is now %d",
				ErrInvalidCommittable, tbl.Snapshot().TxnVersion(s.queryID)))
		}
		if !checked {
			if err := s.checkFiles(ctx, tbl, c); err != nil {
				return nil, err
			}
			checked = true
		}
		upd := table.StreamingUpdate{QueryID: s.queryID, EpochID: c.epochID, OutputMode: string(c.mode)}
		res, retry, err := s.commitEpoch(ctx, tbl, nil, upd, nonNilAdds(c.adds), nil, c.rows, round)
		if err == nil {
			return &CommitResult{Epoch: c.epochID, Version: res.Version, Files: res.Files, Rows: res.Rows, Bytes: res.Bytes, Attempts: res.Attempts}, nil
		}
		if !retry {
			return nil, wrap(err)
		}
	}
}

// AbortResult reports what Abort did.
type AbortResult struct {
	Epoch int64
	// Deleted counts the data files deleted (absent ones included).
	Deleted int
}

// Abort discards a committable that will never be committed (its
// checkpoint was declined or subsumed): it deletes its data files. It
// never deletes files of a committed epoch: when the table's commit of the
// epoch added these files (or Abort cannot tell, because that commit is no
// longer in the log and a file is live), it deletes nothing and returns
// ErrEpochCommitted. Abort and Commit of one committable must not run
// concurrently (in this or another process): a Commit that lands after
// Abort checked the table would reference deleted files. A committable of
// another query or table is ErrInvalidCommittable.
func (s *Sink) Abort(ctx context.Context, c *Committable) (*AbortResult, error) {
	if err := s.checkOwn(c); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wrap := func(err error) error {
		return fmt.Errorf("streamsink: query %s abort epoch %d: %w", s.queryID, c.epochID, err)
	}
	tbl, err := s.refreshFor(ctx, c)
	if err != nil {
		return nil, wrap(err)
	}
	if len(c.adds) == 0 {
		return &AbortResult{Epoch: c.epochID}, nil
	}
	if v := tbl.Snapshot().TxnVersion(s.queryID); c.epochID <= v {
		ec, err := s.findEpochCommit(ctx, tbl, c.epochID)
		if err != nil {
			return nil, wrap(err)
		}
		switch {
		case ec.found && ec.holdsAny(c):
			return nil, wrap(fmt.Errorf("%w: version %d committed its files; nothing deleted", ErrEpochCommitted, ec.version))
		case !ec.found && !ec.gap && liveAny(tbl.Snapshot(), c):
			return nil, wrap(fmt.Errorf("%w: its commit is no longer in the log and the table references its files; nothing deleted", ErrEpochCommitted))
		}
	}
	store := tbl.Store()
	n := 0
	for _, key := range c.Files() {
		if err := store.Delete(ctx, key); err != nil {
			return &AbortResult{Epoch: c.epochID, Deleted: n}, wrap(fmt.Errorf("deleting %s: %w", key, err))
		}
		n++
	}
	return &AbortResult{Epoch: c.epochID, Deleted: n}, nil
}

// checkOwn refuses a nil committable and one of another query.
func (s *Sink) checkOwn(c *Committable) error {
	switch {
	case c == nil:
		return fmt.Errorf("streamsink: query %s: %w: nil", s.queryID, ErrInvalidCommittable)
	case c.queryID != s.queryID:
		return fmt.Errorf("streamsink: query %s: %w: committable of query %s epoch %d", s.queryID, ErrInvalidCommittable, c.queryID, c.epochID)
	}
	return nil
}

// checkFiles stats every data file of c in tbl's store: a missing file, or
// one whose size differs from its add, is a *MissingFilesError.
func (s *Sink) checkFiles(ctx context.Context, tbl *table.Table, c *Committable) error {
	store := tbl.Store()
	var missing []string
	for _, a := range c.adds {
		key := table.DecodePath(a.Path)
		info, err := store.Stat(ctx, key)
		switch {
		case errors.Is(err, table.ErrNotExist):
			missing = append(missing, key+" does not exist")
		case err != nil:
			return fmt.Errorf("streamsink: query %s commit epoch %d: checking data file %s: %w", s.queryID, c.epochID, key, err)
		case info.Size != a.Size:
			missing = append(missing, fmt.Sprintf("%s has %d bytes, the committable says %d", key, info.Size, a.Size))
		}
	}
	if len(missing) > 0 {
		return &MissingFilesError{QueryID: s.queryID, Epoch: c.epochID, Keys: missing}
	}
	return nil
}

// epochCommit is what findEpochCommit found.
type epochCommit struct {
	// found: version committed the epoch, adding files.
	found   bool
	version int64
	files   map[string]bool
	// gap: version committed a lower epoch (epoch) of the query, and no
	// later commit holds the wanted one: it was never committed.
	gap   bool
	epoch int64
}

// holds reports whether the commit added every file of c.
func (ec *epochCommit) holds(c *Committable) bool {
	for _, key := range c.Files() {
		if !ec.files[key] {
			return false
		}
	}
	return true
}

// holdsAny reports whether the commit added a file of c.
func (ec *epochCommit) holdsAny(c *Committable) bool {
	for _, key := range c.Files() {
		if ec.files[key] {
			return true
		}
	}
	return false
}

// findEpochCommit walks the log of tbl back from its version to the
// commit that holds the query's epoch (txn version == epoch), or to the
// first commit of the query with a lower txn version (a gap). It reads one
// commit per version since the epoch's commit. A version no longer in the
// log (log cleanup) ends the walk with nothing found: Version -1.
func (s *Sink) findEpochCommit(ctx context.Context, tbl *table.Table, epoch int64) (*epochCommit, error) {
	for v := tbl.Version(); v >= 0; v-- {
		actions, err := tbl.ReadCommit(ctx, v)
		if errors.Is(err, table.ErrNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("looking for the commit of epoch %d: %w", epoch, err)
		}
		var txn *table.Txn
		files := map[string]bool{}
		for _, a := range actions {
			switch {
			case a.Txn != nil && a.Txn.AppID == s.queryID:
				txn = a.Txn
			case a.Add != nil:
				files[table.DecodePath(a.Add.Path)] = true
			}
		}
		switch {
		case txn == nil || txn.Version > epoch:
			continue
		case txn.Version == epoch:
			return &epochCommit{found: true, version: v, files: files}, nil
		default:
			return &epochCommit{gap: true, version: v, epoch: txn.Version}, nil
		}
	}
	return &epochCommit{version: -1}, nil
}

// liveAny reports whether the snapshot references a file of c.
func liveAny(snap *table.Snapshot, c *Committable) bool {
	keys := map[string]bool{}
	for _, k := range c.Files() {
		keys[k] = true
	}
	for a := range snap.AllFiles() {
		if keys[table.DecodePath(a.Path)] {
			return true
		}
	}
	return false
}

// refreshFor moves the sink to the table's latest version and checks that
// it is the table c was prepared for (ErrInvalidCommittable otherwise).
func (s *Sink) refreshFor(ctx context.Context, c *Committable) (*table.Table, error) {
	tbl, err := s.refresh(ctx, true)
	if err != nil {
		return nil, err
	}
	if id := tbl.Snapshot().Metadata().ID; c.tableID != "" && id != c.tableID {
		return nil, fmt.Errorf("%w: prepared for table id %s, %s has id %s", ErrInvalidCommittable, c.tableID, tbl.URI(), id)
	}
	return tbl, nil
}
