package txlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/deltakit/deltakit/internal/ctxwait"
	"github.com/deltakit/deltakit/objectstore"
)

// EngineInfo is written as commitInfo.engineInfo by every commit.
const EngineInfo = "deltakit/" + releaseVersion

// releaseVersion is the deltakit release.
const releaseVersion = "0.1.0-dev"

// defaultCheckpointInterval is Spark's default delta.checkpointInterval.
const defaultCheckpointInterval = 10

// ErrCommitFailed is wrapped when a commit gives up for a reason other than a
// conflict: too many attempts (withMaxAttempts), store errors that did not
// resolve within withMaxRetryTime, or a definite store failure
// (objectstore.ErrNotStored: a full disk, a read-only filesystem, no
// permission), whose cause the error wraps too.
var ErrCommitFailed = errors.New("commit failed")

// ErrCommitOutcomeUnknown is wrapped when Commit gives up after an attempt
// whose outcome it could not learn (the reply was lost and reading the
// version back failed too). The commit may exist: reload the table and look
// for the txnId named in the error before writing the same data again.
var ErrCommitOutcomeUnknown = errors.New("commit outcome unknown")

// ErrTransactionDone is returned by Commit when the transaction was already
// committed (a Transaction commits at most once).
var ErrTransactionDone = errors.New("transaction already committed")

// TxnOption configures a Transaction.
type TxnOption func(*txnConfig)

type txnConfig struct {
	maxAttempts  int
	maxRetryTime time.Duration
	minBackoff   time.Duration
	maxBackoff   time.Duration
	now          func() time.Time
	logger       *slog.Logger
	noCheckpoint bool
	checkpointer *Checkpointer
	sleep        func(ctx context.Context, d time.Duration) error
	rand         func() float64
	clock        func() time.Time // measures retry time and commit duration
}

// defaultMaxRetryTime is how long Commit keeps retrying attempts whose
// outcome is unknown, unless withMaxRetryTime says otherwise.
const defaultMaxRetryTime = 60 * time.Second

// withMaxAttempts bounds how many times Commit tries to create a version file
// (the first try included). Default 100: a lost race costs one attempt, so
// this bounds how many concurrent winners a commit survives.
func withMaxAttempts(n int) TxnOption {
	return func(c *txnConfig) { c.maxAttempts = max(1, n) }
}

// withMaxRetryTime bounds the time Commit spends on attempts whose outcome
// is unknown (store errors other than "already exists"), counted from its
// first attempt: no such attempt is retried once the next one would start
// later than d, whatever withMaxAttempts allows. Lost races are bounded by
// withMaxAttempts only: each is progress of another writer. Default
// defaultMaxRetryTime (60 s); d <= 0 turns the time bound off.
func withMaxRetryTime(d time.Duration) TxnOption {
	return func(c *txnConfig) { c.maxRetryTime = d }
}

// WithBackoff sets the exponential backoff before a retry after n
// consecutive attempts with an unknown outcome: Commit waits a uniformly
// random time in [0, min(maxWait, minWait*2^(n-1))] (full jitter). Default
// 5 ms and 2 s. Lost races are retried at once (as Spark and delta-rs do):
// backing off after them made the writer that lost most wait most, and one
// of 16 contending writers in TestContendingBlindAppendsMinIO lost 160
// races in a row. maxWait also caps the wait of a writer that yields to
// the ones that lost (see Commit).
func WithBackoff(minWait, maxWait time.Duration) TxnOption {
	return func(c *txnConfig) { c.minBackoff, c.maxBackoff = minWait, maxWait }
}

// WithTxnClock sets the clock for commitInfo.timestamp (default time.Now).
func WithTxnClock(now func() time.Time) TxnOption {
	return func(c *txnConfig) { c.now = now }
}

// WithLogger sets the logger of Commit (default: slog.Default()). Each
// commit is logged at Debug ("txlog: committed" with version, attempts,
// bytes, duration, operation and txnId); lost races, conflicts, attempts
// with an unknown outcome and backoff waits at Info; checkpoint failures at
// Warn.
func WithLogger(l *slog.Logger) TxnOption {
	return func(c *txnConfig) { c.logger = l }
}

// WithoutAutoCheckpoint turns off the checkpoint written after commits whose
// version is a multiple of delta.checkpointInterval.
func WithoutAutoCheckpoint() TxnOption {
	return func(c *txnConfig) { c.noCheckpoint = true }
}

// WithCheckpointer hands the post-commit snapshot to cp when a checkpoint is
// due, instead of writing the checkpoint inside Commit: the commit returns
// without waiting for it (CommitResult.CheckpointQueued). For long-running
// writers, whose commit latency should not include a checkpoint of the
// whole table every delta.checkpointInterval commits. A nil cp keeps the
// synchronous default; WithoutAutoCheckpoint wins over it.
func WithCheckpointer(cp *Checkpointer) TxnOption {
	return func(c *txnConfig) { c.checkpointer = cp }
}

// Transaction is an optimistic transaction (spec "Optimistic Concurrency
// Control"). It starts from a snapshot, records what it read from it (files by
// partition predicate or the whole table, txn versions by appId, metadata),
// collects actions and commits them as one new version with Commit.
//
// A Transaction is not safe for concurrent use; the snapshot it starts from
// is never modified.
type Transaction struct {
	store objectstore.Store
	snap  *Snapshot // nil when creating a table
	cfg   txnConfig

	operation string
	params    map[string]string
	metrics   map[string]string
	tags      map[string]string
	reads     readSet

	protocol *Protocol
	metadata *Metadata
	actions  []Action
	done     bool

	commitStart time.Time // when Commit started, for its log record
	commitBytes int       // size of the commit file
	initErr     error     // why the transaction cannot commit (NewTransaction of a nil snapshot)
}

// NewTransaction starts a transaction on snap for the named operation
// ("WRITE", "STREAMING UPDATE", "OPTIMIZE", ...). Use CreateTransaction for
// a table that does not exist yet. A nil snap (the snapshot a failed Load
// returned) gives a transaction whose Commit fails with an error wrapping
// objectstore.ErrInvalidArgument.
func NewTransaction(snap *Snapshot, operation string, opts ...TxnOption) *Transaction {
	if snap == nil {
		t := newTransaction(nil, operation, opts)
		t.initErr = fmt.Errorf("txlog: commit %s: %w: the transaction was started on a nil *Snapshot", operation, objectstore.ErrInvalidArgument)
		return t
	}
	t := newTransaction(snap.store, operation, opts)
	t.snap = snap
	return t
}

// CreateTransaction starts the transaction that creates a table: it commits
// version 0 with the given protocol and metadata, and fails with a
// *ConflictError wrapping ErrProtocolChanged and ErrMetadataChanged when the
// table was created concurrently (spec "Creation of a Table").
func CreateTransaction(store objectstore.Store, p *Protocol, m *Metadata, opts ...TxnOption) *Transaction {
	t := newTransaction(store, "CREATE TABLE", opts)
	t.protocol, t.metadata = p, m
	return t
}

func newTransaction(store objectstore.Store, operation string, opts []TxnOption) *Transaction {
	cfg := txnConfig{
		maxAttempts:  100,
		maxRetryTime: defaultMaxRetryTime,
		minBackoff:   5 * time.Millisecond,
		maxBackoff:   2 * time.Second,
		now:          time.Now,
		sleep:        ctxwait.Sleep,
		rand:         rand.Float64,
		clock:        time.Now,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	return &Transaction{
		store:     store,
		cfg:       cfg,
		operation: operation,
		reads:     readSet{files: map[FileKey]bool{}, appIDs: map[string]bool{}},
	}
}

// ReadVersion returns the version of the snapshot the transaction started
// from, or -1 when it creates the table.
func (t *Transaction) ReadVersion() int64 {
	if t.snap == nil {
		return -1
	}
	return t.snap.version
}

// TxnVersion returns the latest txn version of appID in the read snapshot (-1
// when none) and records that the transaction depends on it: a concurrent
// commit that writes a txn for appID makes Commit fail with
// ErrConcurrentTransaction (spec "Transaction Identifiers").
func (t *Transaction) TxnVersion(appID string) int64 {
	t.reads.appIDs[appID] = true
	if t.snap == nil {
		return -1
	}
	return t.snap.TxnVersion(appID)
}

// ReadWholeTable records that the transaction depends on every file of the
// table (e.g. a full overwrite): any concurrent data change conflicts.
func (t *Transaction) ReadWholeTable() {
	// The conflict checks test wholeTable before the set of read files, so
	// nothing per file needs recording.
	t.reads.wholeTable = true
}

// RequireSerializable makes the transaction serializable (Spark's
// Serializable isolation level) instead of WriteSerializable: files added
// concurrently within what it read conflict (ErrConcurrentAppend) even when
// the winning commit is a blind append. For operations whose result must
// equal a given state of the table, not merely include it, such as RESTORE
// (Spark commits it only at the version after the one it read). Without
// reads recorded it changes nothing.
func (t *Transaction) RequireSerializable() { t.reads.serializable = true }

// ReadFiles returns the live files whose partition values match pred, and
// records both the predicate (files added concurrently that match it
// conflict, ErrConcurrentAppend) and the files (removing them concurrently
// conflicts, ErrConcurrentDeleteRead). A nil pred reads the whole table.
func (t *Transaction) ReadFiles(pred PartitionPredicate) []*Add {
	if pred == nil {
		t.ReadWholeTable()
		if t.snap == nil {
			return nil
		}
		return t.snap.Files()
	}
	t.reads.predicates = append(t.reads.predicates, pred)
	if t.snap == nil {
		return nil
	}
	var out []*Add
	for _, f := range t.snap.Files() {
		if pred(f.PartitionValues) {
			t.reads.files[f.Key()] = true
			out = append(out, f)
		}
	}
	return out
}

// Add appends actions (add, remove, txn, domainMetadata, cdc) to the commit.
// Protocol and metadata changes go through UpdateProtocol and
// UpdateMetadata; commitInfo is written by Commit.
func (t *Transaction) Add(actions ...Action) { t.actions = append(t.actions, actions...) }

// UpdateMetadata replaces the table metadata in this commit. When m uses
// table features the protocol in force (or the one given to UpdateProtocol)
// does not support, Commit upgrades the protocol (ProtocolFor, in the same
// commit).
func (t *Transaction) UpdateMetadata(m *Metadata) { t.metadata = m }

// UpdateProtocol asks for protocol p in this commit. Commit writes
// UpgradeProtocol of the table's protocol with every feature p supports:
// p's content when it keeps every feature of the table's protocol and is
// in the form UpgradeProtocol gives; a feature of the table's protocol that p
// lacks is kept (spec "Supported Features": a feature is never removed).
// For version 0 (CreateTransaction) p is written as given, upgraded only
// for the features its metadata uses.
func (t *Transaction) UpdateProtocol(p *Protocol) { t.protocol = p }

// SetOperation sets commitInfo.operation, the operation name given to
// NewTransaction ("CREATE TABLE" for CreateTransaction): a new table created
// with its data is Spark's "CREATE TABLE AS SELECT", say.
func (t *Transaction) SetOperation(name string) { t.operation = name }

// SetOperationParameters sets commitInfo.operationParameters (strings only:
// Databricks fails on other JSON types).
func (t *Transaction) SetOperationParameters(p map[string]string) { t.params = maps.Clone(p) }

// SetOperationMetrics sets commitInfo.operationMetrics (values as strings,
// as Spark writes them).
func (t *Transaction) SetOperationMetrics(m map[string]string) { t.metrics = maps.Clone(m) }

// SetTags sets commitInfo.tags (Spark's commit tags, e.g.
// "delta.rowTracking.preserved").
func (t *Transaction) SetTags(tags map[string]string) { t.tags = maps.Clone(tags) }

// CommitResult reports a successful commit.
type CommitResult struct {
	// Version is the table version the commit created.
	Version int64
	// Attempts counts the version files Commit tried to create, 1 when the
	// first try won.
	Attempts int
	// TxnID is the commitInfo.txnId of the commit.
	TxnID string
	// Snapshot is the table state right after the commit: the read snapshot
	// with every winning commit and this one applied.
	Snapshot *Snapshot
	// Checkpointed is true when a checkpoint of Version was written after
	// the commit, inside Commit (the default). CheckpointErr holds why
	// writing or queueing it failed; the commit itself succeeded either way.
	Checkpointed  bool
	CheckpointErr error
	// CheckpointQueued is true when a checkpoint of Version was due and
	// handed to the transaction's Checkpointer (WithCheckpointer), which
	// writes it in the background; its outcome is in the Checkpointer's
	// Stats and Close.
	CheckpointQueued bool
}

// isBlindAppend reports whether the commit only adds files and read nothing.
func (t *Transaction) isBlindAppend() bool {
	if t.reads.wholeTable || len(t.reads.predicates) > 0 || len(t.reads.files) > 0 || t.metadata != nil || t.protocol != nil {
		return false
	}
	for _, a := range t.actions {
		if a.Remove != nil || a.DomainMetadata != nil {
			return false
		}
	}
	return true
}

// buildActions returns the actions of the commit, commitInfo first, and the
// txnId of this commit.
func (t *Transaction) buildActions() ([]Action, string) {
	txnID := uuid.NewString()
	blind := t.isBlindAppend()
	params := map[string]any{}
	for k, v := range t.params {
		params[k] = v
	}
	ci := &CommitInfo{
		Timestamp:           t.cfg.now().UnixMilli(),
		Operation:           t.operation,
		OperationParameters: params,
		IsBlindAppend:       &blind,
		TxnID:               txnID,
		EngineInfo:          EngineInfo,
	}
	if len(t.metrics) > 0 {
		ci.OperationMetrics = map[string]any{}
		for k, v := range t.metrics {
			ci.OperationMetrics[k] = v
		}
	}
	if t.snap != nil {
		ci.Extra = map[string]json.RawMessage{"readVersion": json.RawMessage(strconv.FormatInt(t.snap.version, 10))}
	}
	if len(t.tags) > 0 {
		if b, err := json.Marshal(t.tags); err == nil {
			if ci.Extra == nil {
				ci.Extra = map[string]json.RawMessage{}
			}
			ci.Extra["tags"] = b
		}
	}
	out := make([]Action, 0, len(t.actions)+3)
	out = append(out, Action{CommitInfo: ci})
	if t.protocol != nil {
		out = append(out, Action{Protocol: t.protocol})
	}
	if t.metadata != nil {
		out = append(out, Action{Metadata: t.metadata})
	}
	out = append(out, t.actions...)
	return out, txnID
}

// validate checks the commit before anything is written: the writer protocol
// gate, delta.appendOnly (no remove with dataChange=true) and the spec's rule that one commit holds no two actions that
// reconcile with each other.
func (t *Transaction) validate() error {
	p, m := t.resulting()
	if p == nil || m == nil {
		return fmt.Errorf("txlog: commit of version 0 needs protocol and metaData: %w", ErrNoMetadata)
	}
	if err := t.prepareRowTrackingMetadata(); err != nil {
		return err
	}
	m = t.metadata
	if m == nil && t.snap != nil {
		m = t.snap.metadata
	}
	if t.metadata != nil || t.protocol != nil {
		// The one protocol decision (UpgradeProtocol), on every commit that
		// changes metadata or protocol: a metadata change (schema,
		// properties) may use features the protocol lacks, and a protocol
		// given by UpdateProtocol must keep every feature the table's
		// protocol supports. Nothing else changes the protocol.
		var need []string
		if t.metadata != nil {
			st, err := t.metadata.Schema()
			if err != nil {
				return err
			}
			need = metadataFeatures(st, t.metadata.Configuration)
		}
		base := p
		if t.protocol != nil && t.snap != nil && t.snap.protocol != nil {
			base = t.snap.protocol
			need = append(need, t.protocol.SupportedFeatures()...)
		}
		np := UpgradeProtocol(base, need...)
		if t.protocol != nil || np != p {
			t.protocol = np
		}
		p = np
	}
	if t.snap != nil && m == t.snap.metadata && t.snap.schema != nil {
		// Unchanged metadata: reuse the snapshot's parsed schema.
		if err := checkWritable(p); err != nil {
			return err
		}
		if err := checkActiveFeatures(p, m, t.snap.schema); err != nil {
			return err
		}
	} else if err := CheckWritableTable(p, m); err != nil {
		return err
	}
	if m.AppendOnly() {
		for _, a := range t.actions {
			if a.Remove != nil && a.Remove.DataChange {
				return fmt.Errorf("txlog: %s removes %s: %w", t.operation, a.Remove.Path, ErrAppendOnly)
			}
		}
	}
	files := map[FileKey]bool{}
	apps := map[string]bool{}
	domains := map[string]bool{}
	for _, a := range t.actions {
		switch {
		case a.CommitInfo != nil || a.Protocol != nil || a.Metadata != nil:
			return errors.New("txlog: commitInfo, protocol and metaData are set by the transaction, not Add")
		case a.Add != nil:
			if files[a.Add.Key()] {
				return fmt.Errorf("txlog: commit adds or removes %s twice", a.Add.Path)
			}
			files[a.Add.Key()] = true
		case a.Remove != nil:
			if files[a.Remove.Key()] {
				return fmt.Errorf("txlog: commit adds or removes %s twice", a.Remove.Path)
			}
			files[a.Remove.Key()] = true
		case a.Txn != nil:
			if apps[a.Txn.AppID] {
				return fmt.Errorf("txlog: commit has two txn actions for appId %q", a.Txn.AppID)
			}
			apps[a.Txn.AppID] = true
		case a.DomainMetadata != nil:
			if domains[a.DomainMetadata.Domain] {
				return fmt.Errorf("txlog: commit has two domainMetadata actions for %q", a.DomainMetadata.Domain)
			}
			domains[a.DomainMetadata.Domain] = true
		}
	}
	return nil
}

// Commit writes the transaction as the next table version. It is the one
// place in deltakit that creates version files ("_delta_log/%020d.json",
// with objectstore PutIfAbsent; spec "Delta Log Entries").
//
// When the version is already taken, Commit reads the winning commit. If it
// is this transaction's own (its commitInfo.txnId matches: an earlier attempt
// landed but its reply was lost), the commit succeeded. Otherwise the
// conflict rules run against it (*ConflictError wrapping
// ErrConcurrentModification and each kind found); without a conflict, Commit
// retries at the next version. Store errors other than "already exists" have
// an unknown outcome: the same version is tried again after a backoff.
// Attempts are bounded in number (withMaxAttempts) and, for unknown
// outcomes, in time (withMaxRetryTime); giving up returns an error wrapping
// ErrCommitFailed that says how many attempts were made and why. A store
// error wrapping objectstore.ErrNotStored (a full disk, a read-only
// filesystem, no permission) is a definite failure: Commit fails at once
// with an error wrapping ErrCommitFailed and that cause (errors.Is(err,
// syscall.ENOSPC) holds for a full local disk).
//
// Fairness: a writer whose commits won yieldAfterWins (4) versions in a row
// within a second of losing a race waits 2 to 3 round trips of its last PUT
// before its next commit's first attempt, so that writers that lost (which
// must read its commit before they can PUT again) get a version too; a
// writer that never lost never waits.
//
// After the commit, a checkpoint is written when the version is a multiple
// of delta.checkpointInterval (default 10), or queued on the Checkpointer
// given WithCheckpointer; a failure to write or queue it is reported in
// CommitResult.CheckpointErr, never as a commit failure.
func (t *Transaction) Commit(ctx context.Context) (*CommitResult, error) {
	if t == nil {
		return nil, fmt.Errorf("txlog: commit: %w: nil *Transaction", objectstore.ErrInvalidArgument)
	}
	if t.initErr != nil {
		return nil, t.initErr
	}
	if t.done {
		return nil, ErrTransactionDone
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	c, err := t.newCommitLoop()
	if err != nil {
		return nil, err
	}
	if err := t.yieldToLosers(ctx); err != nil {
		return nil, err
	}
	for attempt := 1; attempt <= t.cfg.maxAttempts; attempt++ {
		if err := t.waitBeforeAttempt(ctx, c, attempt); err != nil {
			return t.settle(ctx, c, attempt-1, err)
		}
		if res, done, err := t.attempt(ctx, c, attempt); done {
			return res, err
		}
	}
	return t.settle(ctx, c, t.cfg.maxAttempts,
		fmt.Errorf("txlog: %w: gave up on version %d after %d attempts; last: %v", ErrCommitFailed, c.version, t.cfg.maxAttempts, c.lastErr))
}

// commitLoop is the state of Commit's attempts.
type commitLoop struct {
	base        []Action // the actions as built, before per-attempt stamps
	actions     []Action // as encoded in data, for version encodedAt
	data        []byte
	txnID       string
	readVersion int64
	version     int64 // the version the next attempt tries
	encodedAt   int64
	dynamic     bool       // in-commit timestamps or row ids: re-encode per version
	prev        prevCommit // the commit before version, for the stamps
	own         *ownWrites
	winners     []versionedActions // commits read after lost races, in version order
	lastErr     error
	failures    int           // consecutive attempts with an unknown outcome
	lost        int           // consecutive lost races
	lostAny     bool          // a race was lost in this commit
	pending     bool          // an attempt at version had an unknown outcome: it may have landed
	rtt         time.Duration // the last PutIfAbsent's round trip
}

// newCommitLoop builds and encodes the commit for the version after the
// read snapshot.
func (t *Transaction) newCommitLoop() (*commitLoop, error) {
	base, txnID := t.buildActions()
	c := &commitLoop{base: base, actions: base, txnID: txnID, readVersion: t.ReadVersion(), own: newOwnWrites(base)}
	c.version, c.encodedAt = c.readVersion+1, c.readVersion+1
	// In-commit timestamps and row ids depend on the commit before the
	// version tried: each attempt at a new version encodes them anew.
	c.prev, c.dynamic = t.prevFromSnapshot(), t.perAttempt()
	if c.dynamic {
		var err error
		if c.actions, err = t.stamp(base, c.version, c.prev, t.cfg.now().UnixMilli()); err != nil {
			return nil, err
		}
	}
	data, err := EncodeCommit(c.actions)
	if err != nil {
		return nil, err
	}
	c.data = data
	t.commitStart, t.commitBytes = t.cfg.clock(), len(data)
	return c, nil
}

// waitBeforeAttempt backs off before an attempt that follows attempts with
// an unknown outcome (full jitter over an exponentially growing cap), and
// re-encodes the commit when the version to try moved and its stamps
// depend on the version. Lost races are retried at once, as Spark and
// delta-rs do: the winners were read and the next version is known, and a
// loser that waited would only fall further behind the writers that won
// (with 16 writers, one lost 160 races in a row while it backed off).
func (t *Transaction) waitBeforeAttempt(ctx context.Context, c *commitLoop, attempt int) error {
	if c.failures > 0 {
		wait := t.backoff(c.failures)
		if elapsed := t.cfg.clock().Sub(t.commitStart); t.cfg.maxRetryTime > 0 && elapsed+wait > t.cfg.maxRetryTime {
			return fmt.Errorf("txlog: %w: gave up on version %d after %d attempts in %v (retry time limit %v); last: %v",
				ErrCommitFailed, c.version, attempt-1, elapsed.Round(time.Millisecond), t.cfg.maxRetryTime, c.lastErr)
		}
		t.cfg.logger.Info("txlog: commit backing off before retry", "version", c.version, "attempt", attempt, "wait", wait, "operation", t.operation)
		if err := t.cfg.sleep(ctx, wait); err != nil {
			return err
		}
	}
	if !c.dynamic || c.encodedAt == c.version {
		return nil
	}
	next, err := t.stamp(c.base, c.version, c.prev, t.cfg.now().UnixMilli())
	if err != nil {
		return err
	}
	b, err := EncodeCommit(next)
	if err != nil {
		return err
	}
	c.actions, c.data, c.encodedAt, t.commitBytes = next, b, c.version, len(b)
	return nil
}

// attempt tries to create c.version. done reports that Commit ends with
// res and err; otherwise the loop tries again (at the next version after a
// lost race, at the same one after an unknown outcome).
func (t *Transaction) attempt(ctx context.Context, c *commitLoop, attempt int) (res *CommitResult, done bool, err error) {
	key := CommitKey(c.version)
	t0 := t.cfg.clock()
	err = t.store.PutIfAbsent(ctx, key, c.data)
	c.rtt = t.cfg.clock().Sub(t0)
	if err == nil {
		return t.finish(ctx, c, c.version, attempt), true, nil
	}
	if errors.Is(err, objectstore.ErrNotStored) {
		// A definite failure (full disk, read-only, no permission): this
		// attempt created nothing and retrying will not help. An earlier
		// attempt with an unknown outcome may still have landed: settle
		// reads the version back then.
		res, err := t.settle(ctx, c, attempt,
			fmt.Errorf("txlog: %w: %s %s (version %d, attempt %d): %w", ErrCommitFailed, t.operation, key, c.version, attempt, err))
		return res, true, err
	}
	if !errors.Is(err, objectstore.ErrAlreadyExists) {
		// Unknown outcome (timeout, reset, 5xx): try the same version
		// again; if it landed, the next try finds our own txnId there.
		c.lastErr, c.pending = err, true
		c.failures, c.lost = c.failures+1, 0
		if ctx.Err() != nil {
			res, err := t.settle(ctx, c, attempt, err)
			return res, true, err
		}
		t.cfg.logger.Info("txlog: commit attempt failed with an unknown outcome, retrying", "version", c.version, "attempt", attempt, "operation", t.operation, "err", err)
		return nil, false, nil
	}
	return t.lostRace(ctx, c, attempt)
}

// lostRace handles a version found taken: it reads the winners already in
// the log (readWinners: each once, from the version tried until a free
// one), checks each for a conflict and moves c past them; the next attempt
// tries the version after the last.
func (t *Transaction) lostRace(ctx context.Context, c *commitLoop, attempt int) (*CommitResult, bool, error) {
	c.lostAny = true
	wons, err := readWinners(ctx, t.store, c.version)
	readFailed := err != nil && !errors.Is(err, objectstore.ErrNotExist) // ErrNotExist: free again, try it
	if readFailed {
		// Unknown whether it is ours: retry the PUT, which finds the
		// version taken again, and read once more.
		c.lastErr = fmt.Errorf("reading commit %d: %w", c.version, err)
	}
	for _, won := range wons {
		ci := firstCommitInfo(won)
		if ci != nil && ci.TxnID == c.txnID {
			// An earlier attempt of ours landed and its reply was lost.
			return t.finish(ctx, c, c.version, attempt), true, nil
		}
		if kinds, details := checkConflicts(&t.reads, c.own, summarize(c.version, won)); len(kinds) > 0 {
			op := ""
			if ci != nil {
				op = ci.Operation
			}
			cerr := &ConflictError{ReadVersion: c.readVersion, WinnerVersion: c.version, Operation: op,
				Kinds: kinds, Details: details, Attempts: attempt}
			t.cfg.logger.Info("txlog: commit conflicts with a concurrent commit", "readVersion", c.readVersion, "winnerVersion", c.version,
				"winnerOperation", op, "attempt", attempt, "operation", t.operation, "err", cerr)
			return nil, true, cerr
		}
		t.cfg.logger.Info("txlog: version taken by a concurrent commit, retrying at the next version", "version", c.version,
			"attempt", attempt, "operation", t.operation)
		c.winners = append(c.winners, versionedActions{version: c.version, actions: won})
		c.prev = c.prev.after(won)
		c.lastErr = fmt.Errorf("version %d taken by a concurrent commit", c.version)
		c.version++
		c.pending = false // our earlier attempts were at lower versions, and not ours
	}
	if readFailed {
		c.failures, c.lost = c.failures+1, 0
		if ctx.Err() != nil {
			res, err := t.settle(ctx, c, attempt, c.lastErr)
			return res, true, err
		}
		return nil, false, nil
	}
	c.failures, c.lost = 0, c.lost+1
	return nil, false, nil
}

// raceState is what a writer's post-commit snapshot remembers of the
// races its commits ran, so that the next commit from it can be fair to
// the writers that lost (yieldToLosers).
type raceState struct {
	lostAt time.Time     // when a commit of this lineage last lost a race
	wins   int           // commits won since then without losing one
	rtt    time.Duration // the round trip of the last PutIfAbsent
}

const (
	// contendedFor is how long after a lost race a writer still counts
	// as contended.
	contendedFor = time.Second
	// yieldAfterWins is how many commits in a row a contended writer
	// makes before it lets the others have a version (yieldToLosers).
	yieldAfterWins = 4
)

// nextRace is the race state of the snapshot after c's commit.
func (t *Transaction) nextRace(c *commitLoop) raceState {
	var r raceState
	if t.snap != nil {
		r = t.snap.race
	}
	if c.lostAny {
		r.lostAt, r.wins = t.cfg.clock(), 0
	} else {
		r.wins++
	}
	r.rtt = c.rtt
	return r
}

// yieldToLosers waits before the first attempt of a commit whose writer has
// won yieldAfterWins commits in a row since it last lost a race (within
// contendedFor): 2 to 3 round trips of its last PUT, jittered, at most
// WithBackoff's maximum. A writer whose last commit won needs one PUT for
// the next version, a writer that lost needs a GET of the winner before its
// PUT; without the wait the writer that won once keeps winning while the
// others keep losing (one of 16 lost 160 races in a row). Nothing waits
// without contention: a lone writer never loses a race; and a writer whose
// yields nobody takes stops yielding after yieldAfterWins of them.
func (t *Transaction) yieldToLosers(ctx context.Context) error {
	if t.snap == nil {
		return nil
	}
	r := t.snap.race
	// After yieldAfterWins yields in a row that no other writer took, the
	// others have stopped or are not racing: no more waiting.
	if r.wins < yieldAfterWins || r.wins >= 2*yieldAfterWins || r.lostAt.IsZero() || t.cfg.clock().Sub(r.lostAt) > contendedFor {
		return nil
	}
	wait := min(time.Duration((2+t.cfg.rand())*float64(r.rtt)), t.cfg.maxBackoff)
	t.cfg.logger.Info("txlog: commit yielding to contending writers", "version", t.snap.version+1, "wait", wait,
		"wins", r.wins, "operation", t.operation)
	return t.cfg.sleep(ctx, wait)
}

// settle ends a commit that is giving up with cause. When an attempt at
// version had an unknown outcome (pending), it reads version back once (also
// after ctx ended, for a few seconds): our txnId there means the commit
// landed and settle reports success. When that cannot be decided it returns
// an error wrapping ErrCommitOutcomeUnknown and cause, so that callers do not
// blindly write the same data again.
func (t *Transaction) settle(ctx context.Context, c *commitLoop, attempts int, cause error) (*CommitResult, error) {
	version := c.version
	if !c.pending {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("txlog: commit of version %d after %d attempt(s): %w", version, attempts, cause)
		}
		return nil, cause
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	won, err := ReadCommit(rctx, t.store, version)
	switch {
	case err == nil:
		if ci := firstCommitInfo(won); ci != nil && ci.TxnID == c.txnID {
			return t.finish(rctx, c, version, attempts), nil
		}
		return nil, cause // the version is someone else's: ours did not land
	case errors.Is(err, objectstore.ErrNotExist):
		return nil, cause
	default:
		return nil, fmt.Errorf("txlog: %w: commit %s (txnId %s) may have landed at version %d; reading it back failed: %v; %w",
			ErrCommitOutcomeUnknown, CommitKey(version), c.txnID, version, err, cause)
	}
}

// backoff returns the wait before retry n (1-based): full jitter over an
// exponentially growing cap.
//
// The commit loop keeps its own retry control instead of
// github.com/cenkalti/backoff/v5 (which objectstore's S3 PutIfAbsent uses
// for its 409 retries): backoff.Retry cannot express it. Its wait depends
// on why the last attempt failed (lost races retry at once, because the
// next version is known; unknown outcomes back off); its
// time bound counts only unknown outcomes (withMaxRetryTime), where
// Retry's MaxElapsedTime counts every attempt; giving up must read the
// version back (settle) with the loop's state; and the clock, sleep and
// jitter source are injected (txnConfig) so that the time bound is tested
// without waiting, where Retry's timer is fixed. backoff.ExponentialBackOff
// alone draws from its own random source, so it cannot replace these six
// lines either.
func (t *Transaction) backoff(n int) time.Duration {
	ceil := t.cfg.minBackoff << min(n-1, 20)
	if ceil <= 0 || ceil > t.cfg.maxBackoff {
		ceil = t.cfg.maxBackoff
	}
	return time.Duration(t.cfg.rand() * float64(ceil))
}

type versionedActions struct {
	version int64
	actions []Action
}

// finish builds the post-commit snapshot of c's commit at version and
// writes (or queues) a checkpoint when due.
func (t *Transaction) finish(ctx context.Context, c *commitLoop, version int64, attempts int) *CommitResult {
	t.done = true
	t.cfg.logger.Debug("txlog: committed", "version", version, "attempts", attempts, "bytes", t.commitBytes,
		"duration", t.cfg.clock().Sub(t.commitStart), "operation", t.operation, "txnId", c.txnID)
	res := &CommitResult{Version: version, Attempts: attempts, TxnID: c.txnID}
	commits := append(c.winners, versionedActions{version: version, actions: c.actions})
	snap, err := advance(t.store, t.snap, commits, t.cfg.now())
	if err != nil {
		// The commit exists; only the in-memory snapshot could not be built
		// (e.g. a winner dropped the metadata). Callers reload.
		t.cfg.logger.Warn("txlog: committed, but the post-commit snapshot could not be built", "version", version, "err", err)
		return res
	}
	res.Snapshot = snap
	snap.race = t.nextRace(c)
	if t.cfg.noCheckpoint || version == 0 || version%snap.CheckpointInterval() != 0 {
		return res
	}
	if cp := t.cfg.checkpointer; cp != nil {
		if err := cp.enqueue(snap); err != nil {
			res.CheckpointErr = err
			t.cfg.logger.Warn("txlog: checkpoint not queued", "version", version, "err", err)
		} else {
			res.CheckpointQueued = true
		}
		return res
	}
	if err := WriteCheckpoint(ctx, snap); err != nil {
		res.CheckpointErr = err
		t.cfg.logger.Warn("txlog: checkpoint failed", "version", version, "err", err)
	} else {
		res.Checkpointed = true
	}
	return res
}

// CheckpointInterval returns the snapshot's delta.checkpointInterval, the
// number of commits between checkpoints: Spark's default 10 when the
// property is unset or not a positive integer, as the commit path reads it.
func (s *Snapshot) CheckpointInterval() int64 {
	if v, err := strconv.ParseInt(s.metadata.Configuration[PropCheckpointInterval], 10, 64); err == nil && v > 0 {
		return v
	}
	return defaultCheckpointInterval
}

// advance returns the snapshot after applying commits (in version order) on
// top of base (nil for a new table), without any I/O. commitTime is the
// time of the last commit.
func advance(store objectstore.Store, base *Snapshot, commits []versionedActions, commitTime time.Time) (*Snapshot, error) {
	o := defaultLoadOptions()
	if base != nil {
		o = base.opts
	}
	s := newSnapshotFrom(store, o, base)
	metadataChanged := base == nil
	for _, c := range commits {
		for i := range c.actions {
			a := &c.actions[i]
			if a.Metadata != nil {
				metadataChanged = true
			}
			s.apply(a)
		}
		s.version = c.version
		s.commitInfo = firstCommitInfo(c.actions)
	}
	if ci := s.commitInfo; ci != nil && ci.InCommitTimestamp != nil && s.metadata != nil && s.ictActiveAt(s.version) {
		commitTime = time.UnixMilli(*ci.InCommitTimestamp)
	}
	s.files.seal()
	s.tombstones.seal()
	if s.protocol == nil || s.metadata == nil {
		return nil, fmt.Errorf("txlog: version %d: %w", s.version, ErrNoMetadata)
	}
	if metadataChanged {
		st, err := s.metadata.Schema()
		if err != nil {
			return nil, err
		}
		s.schema = st
	}
	s.commitTime = commitTime
	return s, nil
}
