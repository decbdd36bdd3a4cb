// Package streamsink writes a stream of epochs (micro-batches) into a Delta
// table exactly once, the way Spark's Delta sink does: each epoch commits its
// data files together with a txn action {appId: queryId, version: epochId}
// (spec "Transaction Identifiers"), and an epoch whose id is not above the
// table's recorded txn version for the query is skipped.
//
// There is no write-ahead log and no rename. A crash at any point leaves
// either no commit for the epoch (its data files are orphans that the log
// never references, removed later by vacuum) or the whole commit. After a
// restart the source replays from the epoch after LastCommittedEpoch, or
// replays older epochs, which are skipped.
//
// A stream processor that checkpoints (Flink's model: pre-commit on the
// checkpoint barrier, commit when the checkpoint completes, recover pending
// commits after a restart) uses the two phases separately: Prepare writes
// an epoch's files and returns a Committable for the processor's
// checkpoint, Commit commits it idempotently, Abort deletes its files (see
// Sink.Prepare and Sink.Commit).
package streamsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// Operation is the commitInfo.operation of every epoch commit, as Spark
// writes it.
const Operation = table.StreamingUpdateOperation

// OutputMode is Spark's output mode of a streaming query.
type OutputMode string

const (
	// Append adds each epoch's rows to the table.
	Append OutputMode = "Append"
	// Complete replaces the table's contents with each epoch's rows, in the
	// same commit.
	Complete OutputMode = "Complete"
)

// ErrInvalidEpoch is returned for a negative epoch id.
var ErrInvalidEpoch = errors.New("invalid epoch id")

// Sink writes epochs of one streaming query into one table. Its methods are
// safe for concurrent use but serialize: epochs commit one at a time.
//
// Schema evolution: with table.WithSchemaEvolution among the sink's write
// options (WithWriteOptions), an append epoch (WriteEpoch, WriteEpochWith,
// WriteEpochChecked with WithRowSchema rows, WriteEpochOf, WriteEpochBatches,
// WriteEpochArrow) whose rows have columns the table lacks adds them
// (nullable, and relaxes NOT NULL where the rows are nullable, as
// table.WithSchemaEvolution does): the metaData with the merged schema
// commits in the epoch's own version, with its files, txn and commitInfo.
// A retry after a conflict merges the change again onto the fresh
// snapshot's schema, or fails with an error wrapping
// table.ErrConcurrentModification and table.ErrSchemaMismatch when the
// epoch's files no longer fit it (see table.Draft.CommitOn). Without the
// option such an epoch is refused, naming the column, before any file is
// written. Upsert epochs (WithMergeKeys) evolve through MERGE's own
// schema evolution; two-phase epochs (Prepare) never change the schema.
type Sink struct {
	queryID string
	mode    OutputMode
	logger  *slog.Logger
	now     func() time.Time
	retries int
	wopts   []table.WriteOption
	params  map[string]string // extra commitInfo.operationParameters
	txnOpts []table.TxnOption
	// mergeKeys, when set, make the sink upsert (upsert.go); rowSchema is
	// the schema of untyped epoch rows (nil: the table's).
	mergeKeys []string
	rowSchema *schema.StructType

	// create, when set, is the table a CreateOrOpen sink creates with its
	// first epoch; tbl is nil until the table exists.
	create *pendingTable

	mu  sync.Mutex
	tbl *table.Table
}

// pendingTable is the table at uri that a sink of CreateOrOpen creates with
// schema sch and options opts.
type pendingTable struct {
	uri  string
	sch  *schema.StructType
	opts []table.Option
}

// Option configures a Sink.
type Option func(*Sink)

// WithOutputMode sets the output mode (default Append).
func WithOutputMode(m OutputMode) Option { return func(s *Sink) { s.mode = m } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Sink) { s.logger = l } }

// WithClock sets the clock for txn.lastUpdated (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Sink) { s.now = now } }

// WithWriteOptions passes options to the data file writer (target file
// size, ...); table.WithSchemaEvolution among them lets epochs add columns
// to the table (see Sink).
func WithWriteOptions(opts ...table.WriteOption) Option {
	return func(s *Sink) { s.wopts = append(s.wopts, opts...) }
}

// WithCheckpointer makes the sink's epoch commits hand their due
// checkpoints to cp, which writes them in the background, so that an epoch
// every delta.checkpointInterval does not wait for a checkpoint of the whole
// table (see table.Checkpointer). The caller owns cp: close it after the
// last epoch (a checkpoint still queued then is written by Close, or
// dropped if Close's context ends first: the table stays valid either way,
// and exactly-once does not depend on checkpoints). Without this option the
// table's own checkpointer writes them in the background (the table
// package's default; Sink.Close waits for it), or the epoch's commit does
// when the table was opened with table.WithSyncCheckpoints, as Spark's sink
// does.
func WithCheckpointer(cp *table.Checkpointer) Option {
	return func(s *Sink) { s.txnOpts = append(s.txnOpts, table.CheckpointerOption(cp)) }
}

// WithConflictRetries bounds how often an epoch is retried from a fresh
// snapshot after a conflict that does not fence the query (a concurrent
// metadata change, ...). Default 3.
func WithConflictRetries(n int) Option { return func(s *Sink) { s.retries = max(0, n) } }

// New returns a sink for the streaming query queryID on tbl. queryID must be
// stable across restarts of the query (persist it, as Spark keeps its query
// id in the checkpoint); a per-run id would defeat exactly-once. A nil tbl
// (the table a failed call returned) is an error wrapping table.ErrNilTable.
func New(tbl *table.Table, queryID string, opts ...Option) (*Sink, error) {
	if tbl == nil {
		return nil, fmt.Errorf("streamsink: new sink of query %q: %w: %w", queryID, table.ErrInvalidArgument, table.ErrNilTable)
	}
	return newSink(tbl, nil, queryID, opts)
}

// newSink is New on tbl, or on the table create makes (tbl nil).
func newSink(tbl *table.Table, create *pendingTable, queryID string, opts []Option) (*Sink, error) {
	if queryID == "" {
		return nil, errors.New("streamsink: empty queryId")
	}
	s := &Sink{queryID: queryID, mode: Append, now: time.Now, retries: 3, tbl: tbl, create: create}
	for _, o := range opts {
		o(s)
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.mode != Append && s.mode != Complete {
		return nil, fmt.Errorf("streamsink: unknown output mode %q", s.mode)
	}
	if err := s.checkUpsert(); err != nil {
		return nil, err
	}
	return s, nil
}

// CreateOrOpen returns a sink for the streaming query queryID on the table
// at uri; when there is no table there yet, the sink's first epoch creates
// it, with schema sch and the partition columns and properties of topts,
// in the epoch's own commit, as Spark's first streaming batch into a new
// path does: version 0 holds the protocol, the metaData, the txn {appId:
// queryID, version: epochId} (and WriteEpochWith's extra txns), the
// epoch's adds and commitInfo STREAMING UPDATE with queryId and epochId
// (see table.Draft.Commit of a table.NewDraft). Nothing is written by
// CreateOrOpen itself: a stream that fails or crashes before its first
// commit leaves no table (only data files no log references). A replay of
// the epoch once version 0 exists is skipped, as on any table. When
// another writer creates the table between the sink's look and its
// commit, the epoch is appended to that table as the next version if its
// files fit it as they are, else the error wraps table.ErrTableExists
// (and table.ErrSchemaMismatch, naming the difference); a winner that is
// another run of the same query and committed the epoch already fences
// this one (table.ErrConcurrentTransaction).
//
// Epochs that need a table before their data files (upsert mode's MERGE,
// WriteEpochChecked's precondition, the two-phase Prepare and Commit)
// create the empty table first, in a commit of its own (CREATE TABLE, as
// table.CreateOrOpen does). Table returns nil until the table exists. An
// invalid new table (partition columns, properties) is an error here, as
// table.Create reports it; an existing table is opened as table.Open
// opens it (sch is not compared: an epoch that does not fit it is refused
// as on any table).
func CreateOrOpen(ctx context.Context, uri, queryID string, sch *schema.StructType, opts []Option, topts ...table.Option) (*Sink, error) {
	tbl, err := table.Open(ctx, uri, topts...)
	if err == nil {
		return New(tbl, queryID, opts...)
	}
	if !errors.Is(err, table.ErrTableNotFound) {
		return nil, err
	}
	if _, err := table.NewDraft(ctx, uri, sch, topts...); err != nil {
		return nil, err
	}
	return newSink(nil, &pendingTable{uri: uri, sch: sch, opts: topts}, queryID, opts)
}

// Open opens the table at uri (see table.Open) and returns a sink on it.
func Open(ctx context.Context, uri, queryID string, opts []Option, topts ...table.Option) (*Sink, error) {
	tbl, err := table.Open(ctx, uri, topts...)
	if err != nil {
		return nil, err
	}
	return New(tbl, queryID, opts...)
}

// Close waits until the checkpoints the sink's epochs queued in the
// background are written (table.Table.Close) and returns their failures
// since the last Close; a failed checkpoint leaves a valid table, and
// exactly-once does not depend on it. Call it before the process exits. The
// sink stays usable after Close.
func (s *Sink) Close(ctx context.Context) error {
	if s == nil {
		return nil // the sink a failed New returned: nothing to wait for
	}
	if t := s.Table(); t != nil {
		return t.Close(ctx)
	}
	return nil
}

// QueryID returns the sink's query id (the txn appId of its commits).
func (s *Sink) QueryID() string { return s.queryID }

// Table returns the table as of the sink's last refresh or commit; nil for
// a sink of CreateOrOpen whose table does not exist yet.
func (s *Sink) Table() *table.Table {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tbl
}

// LastCommittedEpoch returns the newest epoch of this query recorded in the
// table (its txn version), or -1 when none, after reading any commits newer
// than the sink's snapshot. A source resumes from the epoch after it.
func (s *Sink) LastCommittedEpoch(ctx context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tbl, err := s.refresh(ctx, false)
	if err != nil || tbl == nil {
		return -1, err
	}
	return tbl.Snapshot().TxnVersion(s.queryID), nil
}

// refresh moves the sink to the newest version of its table (s.mu held)
// and returns it. For a sink of CreateOrOpen whose table does not exist
// yet it returns nil, or with create it creates the empty table first
// (table.CreateOrOpen: a commit of its own), for the writes that need a
// table before their files.
func (s *Sink) refresh(ctx context.Context, create bool) (*table.Table, error) {
	var tbl *table.Table
	var err error
	switch {
	case s.tbl != nil:
		tbl, err = s.tbl.Refresh(ctx)
	case create:
		tbl, _, err = table.CreateOrOpen(ctx, s.create.uri, s.create.sch, s.create.opts...)
	default:
		if tbl, err = table.Open(ctx, s.create.uri, s.create.opts...); errors.Is(err, table.ErrTableNotFound) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, err
	}
	s.tbl = tbl
	return tbl, nil
}

// Result reports what WriteEpoch did.
type Result struct {
	Epoch int64
	// Skipped is true when the table already holds the epoch (epochId <=
	// the query's txn version): nothing was written.
	Skipped bool
	// Version is the table version that committed the epoch, or the version
	// whose snapshot proved it was already committed.
	Version int64
	// Files, Rows and Bytes are the data files, rows and bytes (sum of the
	// files' sizes) the commit added.
	Files int
	Rows  int64
	Bytes int64
	// Attempts counts commit attempts (version files tried; for an epoch
	// that lost the create of a new table to another writer, 2: its
	// version 0 and the append).
	Attempts int
	// Created is true when the epoch's commit created the table (version
	// 0 of a CreateOrOpen sink's new table).
	Created bool
	// Merge is what the epoch's MERGE did, in upsert mode (WithMergeKeys;
	// nil otherwise or when skipped): Files and Bytes are then its added
	// files and bytes, Rows the epoch's rows as given (Merge.SourceRows
	// counts them after the deduplication by key).
	Merge *table.MergeResult
}

// WriteEpoch writes one epoch: rows are aligned with the table schema (see
// table.Row). It follows Spark's DeltaSink.addBatch:
//
//  1. refresh the snapshot and read the query's txn version v (recorded as
//     read, so a concurrent commit of the same query conflicts);
//  2. if epochID <= v, skip: write nothing;
//  3. write the data files (rows of new columns need
//     table.WithSchemaEvolution among the write options, see Sink; else
//     they are refused here, before any file is written);
//  4. commit their adds (and in Complete mode removes of every live file),
//     the metaData of the evolved schema when the rows changed it,
//     txn{appId: queryId, version: epochID, lastUpdated} and commitInfo
//     (operation STREAMING UPDATE with outputMode, queryId, epochId).
//
// Steps 1 and 3 overlap: when the sink's snapshot does not hold the
// epoch yet, the rows are encoded for it while the refresh lists the log,
// and the files are held in memory (table.WithUploadGate) until the
// refresh says the epoch is not committed and the table's metadata and
// protocol are unchanged; otherwise they are dropped (and encoded again
// for a changed table). A skipped epoch stores nothing.
//
// When another run of the same query commits first, WriteEpoch returns an
// error matching table.ErrConcurrentTransaction: two live runs of one query
// are fenced. Other conflicts (a concurrent metadata change, ...) are retried
// from a fresh snapshot, re-checking step 2. Other errors are returned
// wrapped; the epoch may then be written again: it lands once.
func (s *Sink) WriteEpoch(ctx context.Context, epochID int64, rows []table.Row) (*Result, error) {
	return s.writeEpoch(ctx, epochID, untyped(rows), nil, nil, nil, true)
}

// WriteEpochWith is WriteEpoch with more txn actions in the epoch's commit,
// for a source that keeps its own progress in the table next to the
// query's epoch: the Kafka source records the next offset of every
// partition as txn{appId: "<queryId>-<topic>-<partition>", version:
// offset}, so the data and the offsets commit atomically. Each extra appId
// is recorded as read, like the query's: a concurrent commit that writes
// one of them fences this one (table.ErrConcurrentTransaction). A nil
// LastUpdated is set to the sink's clock. An extra txn must not use the
// query id as its appId, and appIds must not repeat (ErrInvalidTxn). When
// the epoch is skipped, the extra txns are not written either: they belong
// to the commit that wrote the epoch.
func (s *Sink) WriteEpochWith(ctx context.Context, epochID int64, rows []table.Row, extra ...table.Txn) (*Result, error) {
	if err := s.checkExtra(extra); err != nil {
		return nil, err
	}
	return s.writeEpoch(ctx, epochID, untyped(rows), nil, extra, nil, true)
}

// ErrInvalidTxn is returned by WriteEpochWith for an extra txn action with
// an empty appId, the query's own appId, or an appId given twice.
var ErrInvalidTxn = errors.New("invalid txn action")

func (s *Sink) checkExtra(extra []table.Txn) error {
	seen := make(map[string]bool, len(extra))
	for _, t := range extra {
		switch {
		case t.AppID == "":
			return fmt.Errorf("streamsink: query %s: %w: empty appId", s.queryID, ErrInvalidTxn)
		case t.AppID == s.queryID:
			return fmt.Errorf("streamsink: query %s: %w: appId %q is the query's own", s.queryID, ErrInvalidTxn, t.AppID)
		case seen[t.AppID]:
			return fmt.Errorf("streamsink: query %s: %w: appId %q given twice", s.queryID, ErrInvalidTxn, t.AppID)
		}
		seen[t.AppID] = true
	}
	return nil
}

// rowsFunc produces an epoch's rows for the table version it is written
// to, with the schema they are aligned with (nil: the caller's untyped
// rows, aligned with the table schema or WithRowSchema's); it runs only
// when the epoch is not skipped.
type rowsFunc func(tbl *table.Table) ([]table.Row, *schema.StructType, error)

func untyped(rows []table.Row) rowsFunc {
	return func(*table.Table) ([]table.Row, *schema.StructType, error) { return rows, nil, nil }
}

// writeEpoch is the one path of every epoch write (WriteEpoch,
// WriteEpochWith, WriteEpochOf, WriteEpochChecked). It writes the epoch's
// data files once and commits them through the table's operation path
// (table.WithStreamingUpdate), retrying the commit from fresh snapshots.
// check, when not nil, runs on every snapshot an attempt starts from,
// after the skip test and before anything of that attempt is written or
// committed. files, when not nil, writes the data files instead of
// WriteFiles of rowsOf's rows (an upsert sink always merges rowsOf's rows).
// reusable says that the input may be encoded twice (rows or structs in a
// slice, not a reader), so that the first attempt of an append epoch may
// encode it while the refresh runs (overlapAttempt).
func (s *Sink) writeEpoch(ctx context.Context, epochID int64, rowsOf rowsFunc, files filesFunc, extra []table.Txn, check func(*table.Table) error, reusable bool) (*Result, error) {
	if epochID < 0 {
		return nil, fmt.Errorf("streamsink: epoch %d: %w", epochID, ErrInvalidEpoch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mergeKeys != nil {
		return s.upsertEpoch(ctx, epochID, rowsOf, extra, check)
	}
	if files != nil {
		return s.writeEpochFiles(ctx, epochID, files, extra, check, reusable)
	}
	return s.writeEpochFiles(ctx, epochID, func(ctx context.Context, tbl *table.Table, wopts []table.WriteOption) (*table.Draft, []*table.Add, int64, error) {
		rows, rsch, err := rowsOf(tbl)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
		if rsch == nil {
			rsch = s.rowSchema
		}
		if rsch != nil {
			wopts = append(wopts, table.WithRowSchema(rsch))
		}
		d, err := s.draft(ctx, tbl, epochID, rsch, wopts)
		if err != nil {
			return nil, nil, 0, err
		}
		adds, err := d.WriteFiles(ctx, rows, wopts...)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("streamsink: query %s epoch %d: writing data files: %w", s.queryID, epochID, err)
		}
		return d, adds, int64(len(rows)), nil
	}, extra, check, reusable)
}

// draft returns the draft of appending the epoch's rows of schema sch
// (nil: a table.WithRowSchema among wopts, else the table's) to tbl, or,
// when tbl is nil (a CreateOrOpen sink's table does not exist yet), of
// the new table with them (table.NewDraft; rows of sch are written as
// table.WithRowSchema aligns them): with
// table.WithSchemaEvolution among the sink's write options the table's
// schema evolves to take them, in the epoch's commit; without it a column
// the table lacks is refused here, before any file is written.
func (s *Sink) draft(ctx context.Context, tbl *table.Table, epochID int64, sch *schema.StructType, wopts []table.WriteOption) (*table.Draft, error) {
	if tbl == nil {
		d, err := table.NewDraft(ctx, s.create.uri, s.create.sch, s.create.opts...)
		if err != nil {
			return nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
		return d, nil
	}
	d, err := tbl.DraftAppend(ctx, sch, wopts...)
	if err != nil {
		return nil, fmt.Errorf("streamsink: query %s epoch %d: table version %d: %w", s.queryID, epochID, tbl.Version(), err)
	}
	if d.ChangesSchema() {
		s.logger.Info("streamsink: epoch evolves the table schema", "query", s.queryID, "epoch", epochID, "version", tbl.Version(), "schema", d.Schema().String())
	}
	return d, nil
}

// filesFunc writes an epoch's data files for the table version it is
// written to, with wopts (the sink's write options and the epoch's
// streaming update), through a draft of tbl (Sink.draft, which carries a
// schema change to the commit), and returns the draft, the files' add
// actions and rows, writing under ctx. For input that is not reusable
// (see writeEpoch) it runs only when the epoch is not skipped, at most
// once; for reusable input the first attempt may also run it while the
// refresh is under way, for the sink's older snapshot, with ctx cancelled
// when the refresh finds the epoch skipped (overlapAttempt).
type filesFunc func(ctx context.Context, tbl *table.Table, wopts []table.WriteOption) (*table.Draft, []*table.Add, int64, error)

// writeEpochFiles is writeEpoch (s.mu held, no merge keys) with the files
// written by write.
func (s *Sink) writeEpochFiles(ctx context.Context, epochID int64, write filesFunc, extra []table.Txn, check func(*table.Table) error, reusable bool) (*Result, error) {
	var adds []*table.Add
	var nrows int64
	var d *table.Draft
	for round := 0; ; round++ {
		upd := table.StreamingUpdate{QueryID: s.queryID, EpochID: epochID, OutputMode: string(s.mode)}
		var tbl *table.Table
		var skipped *Result
		var err error
		// The overlap only pays off when the epoch is new to the sink's
		// snapshot; a replay it already holds takes the plain refresh.
		if round == 0 && reusable && s.mode == Append && check == nil && s.tbl != nil && epochID > s.tbl.Snapshot().TxnVersion(s.queryID) {
			tbl, skipped, d, adds, nrows, err = s.overlapAttempt(ctx, epochID, write, upd)
		} else {
			tbl, skipped, err = s.beginAttempt(ctx, epochID, check)
		}
		if err != nil || skipped != nil {
			return skipped, err
		}
		if adds == nil {
			if d, adds, nrows, err = write(ctx, tbl, append(slices.Clone(s.wopts), table.WithStreamingUpdate(upd))); err != nil {
				return nil, err
			}
			if adds == nil {
				adds = []*table.Add{} // no rows: commit the epoch without files
			}
		}
		res, retry, err := s.commitEpoch(ctx, tbl, d, upd, adds, extra, nrows, round)
		if err == nil {
			return res, nil
		}
		if !retry {
			return nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
		}
	}
}

// errStale is the upload gate's refusal of files encoded for a snapshot
// whose metadata or protocol the refresh found changed.
var errStale = errors.New("streamsink: table changed while the epoch was encoded")

// errNotNeeded is the upload gate's refusal when the refresh failed or
// found the epoch committed.
var errNotNeeded = errors.New("streamsink: epoch files not needed")

// overlapAttempt is the first attempt of an append epoch (s.mu held): it
// refreshes the snapshot (beginAttempt) while write encodes the epoch's
// files for the sink's current snapshot, behind a table.WithUploadGate
// that stores them only once the refresh found the epoch not committed and
// the table's metadata and protocol unchanged; a skipped epoch stores
// nothing. When the files could not be kept (the table changed, or the
// write failed), they are written again for the fresh snapshot, as the
// sequential path does. It returns beginAttempt's results, and the draft,
// adds and rows of the written files (adds nil when skipped or on error).
func (s *Sink) overlapAttempt(ctx context.Context, epochID int64, write filesFunc, upd table.StreamingUpdate) (*table.Table, *Result, *table.Draft, []*table.Add, int64, error) {
	stale := s.tbl
	var (
		tbl     *table.Table
		skipped *Result
		berr    error
	)
	// The encoding stops when the refresh finds the files not needed.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		tbl, skipped, berr = s.beginAttempt(ctx, epochID, nil)
		if berr != nil || skipped != nil {
			cancel()
		}
	}()
	gate := func(gctx context.Context) error {
		select {
		case <-refreshed:
		case <-gctx.Done():
			return context.Cause(gctx)
		}
		switch {
		case berr != nil || skipped != nil:
			return errNotNeeded
		case !sameTable(stale, tbl):
			return errStale
		}
		return nil
	}
	wopts := append(slices.Clone(s.wopts), table.WithStreamingUpdate(upd), table.WithUploadGate(gate))
	d, adds, nrows, werr := write(wctx, stale, wopts)
	<-refreshed
	if berr != nil || skipped != nil {
		if werr == nil && len(adds) > 0 {
			// Files written without the gate (never: every data file is
			// gated); do not leave them behind.
			d.Discard()
		}
		return nil, skipped, nil, nil, 0, berr
	}
	if !sameTable(stale, tbl) {
		// The files (none were stored: the gate refused them, or there
		// were none) or the write's error belong to an older table:
		// encode again for the fresh snapshot, as the sequential path
		// does. A failed write of the same table is the epoch's error.
		if werr == nil && d != nil {
			d.Discard()
		}
		d, adds, nrows, werr = write(ctx, tbl, append(slices.Clone(s.wopts), table.WithStreamingUpdate(upd)))
	}
	if werr != nil {
		return nil, nil, nil, nil, 0, werr
	}
	if adds == nil {
		adds = []*table.Add{}
	}
	return tbl, nil, d, adds, nrows, nil
}

// sameTable reports whether files written for a are valid for b: the same
// table metadata (schema, partitioning, properties) and protocol.
func sameTable(a, b *table.Table) bool {
	if a.Version() == b.Version() {
		return true
	}
	sa, sb := a.Snapshot(), b.Snapshot()
	return sameMetadata(sa.Metadata(), sb.Metadata()) && sameProtocol(sa.Protocol(), sb.Protocol())
}

// sameMetadata reports whether a and b agree on what the data files depend
// on: table id, schema, partition columns, format and configuration. Nil and
// empty slices and maps are equal (both are written as [] and {}); name,
// description and creation time are ignored.
func sameMetadata(a, b *table.Metadata) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ID == b.ID && a.SchemaString == b.SchemaString &&
		slices.Equal(a.PartitionColumns, b.PartitionColumns) &&
		a.Format.Provider == b.Format.Provider && maps.Equal(a.Format.Options, b.Format.Options) &&
		maps.Equal(a.Configuration, b.Configuration)
}

// sameProtocol reports whether a and b require the same reader and writer
// versions and features (nil and empty feature lists are equal).
func sameProtocol(a, b *table.Protocol) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.MinReaderVersion == b.MinReaderVersion && a.MinWriterVersion == b.MinWriterVersion &&
		slices.Equal(a.ReaderFeatures, b.ReaderFeatures) && slices.Equal(a.WriterFeatures, b.WriterFeatures)
}

// beginAttempt starts an attempt at writing epochID (s.mu held): it moves
// the sink to a fresh snapshot of the table and, when that snapshot already
// holds the epoch (the query's txn version, which the commit records as
// read, on this same snapshot), returns the skipped Result; otherwise it
// runs check (when not nil) on the snapshot and returns it. For a sink of
// CreateOrOpen whose table does not exist yet it returns a nil table (the
// epoch creates it), unless check or upsert mode needs one: then it
// creates the empty table first (see refresh).
func (s *Sink) beginAttempt(ctx context.Context, epochID int64, check func(*table.Table) error) (*table.Table, *Result, error) {
	tbl, err := s.refresh(ctx, check != nil || s.mergeKeys != nil)
	if err != nil {
		return nil, nil, fmt.Errorf("streamsink: query %s epoch %d: %w", s.queryID, epochID, err)
	}
	if tbl == nil {
		return nil, nil, nil
	}
	if v := tbl.Snapshot().TxnVersion(s.queryID); epochID <= v {
		s.logger.Debug("streamsink: epoch already committed, skipping", "query", s.queryID, "epoch", epochID, "txnVersion", v)
		return nil, &Result{Epoch: epochID, Skipped: true, Version: tbl.Version()}, nil
	}
	if check != nil {
		if err := check(tbl); err != nil {
			return nil, nil, fmt.Errorf("streamsink: query %s epoch %d: precondition at table version %d: %w", s.queryID, epochID, tbl.Version(), err)
		}
	}
	return tbl, nil, nil
}

// retryable says whether a failed commit of attempt round may be followed
// by another attempt from a fresh snapshot: a conflict other than a
// concurrent run of the same query, within the sink's conflict retries.
func (s *Sink) retryable(err error, round int) bool {
	return !errors.Is(err, table.ErrConcurrentTransaction) && !errors.Is(err, table.ErrSchemaMismatch) &&
		errors.Is(err, table.ErrConcurrentModification) && round < s.retries
}

// commitEpoch commits adds as the epoch of upd on tbl (STREAMING UPDATE
// with the sink's parameters, extra txns and commit options), with the
// schema change of d (the draft that wrote them, nil: none; re-merged onto
// tbl's schema when a concurrent commit changed it, see
// table.Draft.CommitOn), and moves the sink to the new table; rows is the
// epoch's row count for the result. On
// failure, retry says whether round may be followed by another attempt
// from a fresh snapshot: a conflict other than a concurrent run of the
// same query, within the sink's conflict retries.
func (s *Sink) commitEpoch(ctx context.Context, tbl *table.Table, d *table.Draft, upd table.StreamingUpdate, adds []*table.Add, extra []table.Txn, rows int64, round int) (res *Result, retry bool, err error) {
	upd.Time = s.now()
	opts := []table.WriteOption{
		table.WithOperationParameters(s.params),
		table.WithStreamingUpdate(upd),
		table.WithExtraTxns(extra...),
		table.WithCommitOptions(s.txnOpts...),
	}
	if tbl == nil {
		return s.createEpoch(ctx, d, upd, adds, opts, rows)
	}
	ntbl, cr, err := d.CommitOn(ctx, tbl, adds, opts...)
	if err != nil {
		retry = s.retryable(err, round)
		if retry {
			s.logger.Info("streamsink: conflict, retrying epoch from a fresh snapshot", "query", s.queryID, "epoch", upd.EpochID, "err", err)
		}
		return nil, retry, err
	}
	s.tbl = ntbl
	return epochResult(upd, adds, rows, cr.Version, cr.Attempts), false, nil
}

// createEpoch commits the epoch of upd as version 0 of the new table of
// draft d, with opts (commitEpoch's), and moves the sink to the table;
// when another writer created the table first, Draft.Commit appends the
// files to it or refuses them (never retried here: a table that does not
// fit stays refused, and a winner of the same query fences the epoch).
func (s *Sink) createEpoch(ctx context.Context, d *table.Draft, upd table.StreamingUpdate, adds []*table.Add, opts []table.WriteOption, rows int64) (*Result, bool, error) {
	ntbl, created, err := d.Commit(ctx, adds, opts...)
	if err != nil {
		return nil, false, err
	}
	s.tbl = ntbl
	attempts := 1
	if !created {
		attempts = 2
		s.logger.Info("streamsink: another writer created the table first; epoch appended to it", "query", s.queryID, "epoch", upd.EpochID, "version", ntbl.Version())
	}
	res := epochResult(upd, adds, rows, ntbl.Version(), attempts)
	res.Created = created
	return res, false, nil
}

// epochResult is the Result of the epoch of upd committed at version with
// adds holding rows.
func epochResult(upd table.StreamingUpdate, adds []*table.Add, rows, version int64, attempts int) *Result {
	var bytes int64
	for _, a := range adds {
		bytes += a.Size
	}
	return &Result{Epoch: upd.EpochID, Version: version, Files: len(adds), Rows: rows, Bytes: bytes, Attempts: attempts}
}

// schemaURI returns the schema and location of the sink's table, or of the
// table its first epoch creates.
func (s *Sink) schemaURI() (*schema.StructType, string) {
	if s.tbl != nil {
		return s.tbl.Schema(), s.tbl.URI()
	}
	return s.create.sch, s.create.uri
}
