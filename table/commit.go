package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/txlog"
)

// This file holds the table's one commit path. Every write (append,
// overwrite, replaceWhere, AppendFiles and drafts, streaming epochs,
// OPTIMIZE, DELETE, UPDATE, RESTORE, CREATE TABLE) is described by an
// operation and committed by commitOperation; it is the only code of the
// package that creates or commits a txlog transaction.

// operation is one write to the table as it is committed: Spark's
// commitInfo.operation name, its operationParameters and operationMetrics
// (Spark's keys), the actions, a new metaData or protocol, and what it read
// (recorded on tx, for conflict detection). Every operation is committed by
// commitOperation.
type operation struct {
	name string
	// verb names the operation in errors ("append", "overwrite"); default
	// the lower-case name.
	verb    string
	tx      *txlog.Transaction
	params  map[string]string
	metrics map[string]string
	adds    []*txlog.Add
	removes []*txlog.Remove
	// cdcs are the change data files of the operation (writeChangeFiles).
	cdcs []*txlog.AddCDCFile
	// metadata and protocol, when set, are committed as the table's new
	// metaData and protocol (schema evolution, RESTORE of an older schema).
	metadata *txlog.Metadata
	protocol *txlog.Protocol
	// written are the store keys of data, change data and deletion-vector
	// files this operation wrote: deleted again when its commit definitely fails.
	written []string
	// txns are the txn actions of WithTxn (first) and WithExtraTxns, each
	// recorded as read; skip is true when the table already holds the
	// WithTxn version: nothing is committed.
	txns []*txlog.Txn
	skip bool
	// start is when the operation began, by the process's monotonic clock
	// (not the table's WithClock, which may be pinned): executionTimeMs
	// and scanTimeMs are measured from it.
	start time.Time
}

// begin starts an operation on t: it refuses, before any file is written, a
// table deltakit cannot write (unsupported writer features; spec "Table
// Features") and, when removesData is set, an append-only table
// (ErrAppendOnly). With WithTxn it records the appId as read and marks the
// operation skipped when its version is already committed; the appIds of
// WithExtraTxns are recorded as read too.
func (t *Table) begin(name string, removesData bool, cfg writeConfig) (*operation, error) {
	return t.beginAs(name, strings.ToLower(name), removesData, cfg)
}

// beginAs is begin with verb naming the operation in errors.
func (t *Table) beginAs(name, verb string, removesData bool, cfg writeConfig) (*operation, error) {
	if err := t.precheck(verb, removesData); err != nil {
		return nil, err
	}
	op := &operation{name: name, verb: verb, tx: t.newTransaction(name, cfg.txnOpts...), start: time.Now()}
	if name != "OPTIMIZE" && t.snap.Metadata().Configuration[txlog.PropIsolationLevel] == "Serializable" {
		// Spark's Serializable: a concurrent blind append within what the
		// operation read conflicts too (compactions, which change no data,
		// run at snapshot isolation).
		op.tx.RequireSerializable()
	}
	op.recordTxns(cfg, t.cfg, t.URI())
	return op, nil
}

// recordTxns adds the txn actions of WithTxn and WithExtraTxns to op,
// recording each appId as read, and marks op skipped when the WithTxn
// version is already committed. c is the table's configuration (clock,
// logger), uri the table's location for the log.
func (op *operation) recordTxns(cfg writeConfig, c config, uri string) {
	now := c.now()
	if !cfg.txnTime.IsZero() {
		now = cfg.txnTime
	}
	lastUpdated := now.UnixMilli()
	if cfg.txnSet {
		if v := op.tx.TxnVersion(cfg.txnAppID); v >= cfg.txnVersion {
			op.skip = true
			c.logger.Debug("table: operation skipped, txn version already committed",
				"operation", op.name, "appId", cfg.txnAppID, "version", cfg.txnVersion, "txnVersion", v, "table", uri)
		}
		op.txns = append(op.txns, &txlog.Txn{AppID: cfg.txnAppID, Version: cfg.txnVersion, LastUpdated: &lastUpdated})
	}
	for _, x := range cfg.extraTxns {
		op.tx.TxnVersion(x.AppID)
		if x.LastUpdated == nil {
			x.LastUpdated = &lastUpdated
		}
		op.txns = append(op.txns, &x)
	}
}

// precheck refuses, before any file is written, a table deltakit cannot
// write and, when removesData is set, an append-only table
// (ErrAppendOnly); verb names the operation in the error.
func (t *Table) precheck(verb string, removesData bool) error {
	if err := t.checkWritable(nil); err != nil {
		return err
	}
	if removesData && t.snap.Metadata().AppendOnly() {
		return fmt.Errorf("table: %s %s: %w", verb, t.URI(), ErrAppendOnly)
	}
	return nil
}

// elapsedMs returns the milliseconds since the operation began, as Spark's
// executionTimeMs.
func (op *operation) elapsedMs() string {
	return strconv.FormatInt(time.Since(op.start).Milliseconds(), 10)
}

// commitTable is commitOperation for callers that need only the new table.
func (t *Table) commitTable(ctx context.Context, op *operation) (*Table, error) {
	nt, _, err := t.commitOperation(ctx, op)
	if err != nil {
		return nil, err
	}
	return nt, nil
}

// commitOperation commits op as the next table version: its new metaData
// and protocol, its txns, removes and adds, and commitInfo with its
// operation name, parameters and metrics. The protocol's write-side rules
// are checked by the transaction before anything is written
// (txlog.Transaction.Commit: writer features the table requires,
// delta.appendOnly, no action twice); conflicts with concurrent commits
// follow Delta's rules (*txlog.ConflictError). When the commit definitely
// did not land (a conflict, or a refusal), the files op wrote are deleted
// (best effort). Errors name the operation and the table. On a table
// opened WithGroupCommit, a blind append is queued on the group committer
// (groupcommit.go), which commits it, alone or merged with concurrent
// appends into one operation, with commitAlone.
func (t *Table) commitOperation(ctx context.Context, op *operation) (*Table, *txlog.CommitResult, error) {
	if g := t.cfg.group; g != nil && op.groupable() {
		return g.commit(ctx, t, op)
	}
	return t.commitAlone(ctx, op)
}

// commitAlone commits op as a version of its own (see commitOperation).
func (t *Table) commitAlone(ctx context.Context, op *operation) (*Table, *txlog.CommitResult, error) {
	tx := op.tx
	if op.metadata != nil {
		if t.snap != nil {
			// Every metaData of an existing table: the column mapping
			// mode changes only from none to name, with the names kept
			// as physical names (colmap.go).
			if err := t.checkMappingModeChange(op.metadata); err != nil {
				deleteFiles(t.store, op.written, t.cfg.logger)
				return nil, nil, fmt.Errorf("table: %s %s: %w", op.verbName(), t.URI(), err)
			}
		}
		tx.UpdateMetadata(op.metadata)
	}
	if op.protocol != nil {
		tx.UpdateProtocol(op.protocol)
	}
	for _, x := range op.txns {
		tx.Add(txlog.Action{Txn: x})
	}
	for _, r := range op.removes {
		tx.Add(txlog.Action{Remove: r})
	}
	for _, a := range op.adds {
		tx.Add(txlog.Action{Add: a})
	}
	for _, c := range op.cdcs {
		tx.Add(txlog.Action{CDC: c})
	}
	tx.SetOperationParameters(op.params)
	tx.SetOperationMetrics(op.metrics)
	if t.snap != nil && t.rowTrackingEnabled() {
		// Every rewrite keeps stable row ids (rowtracking.go); Spark tags
		// each commit on such a table the same way.
		tx.SetTags(map[string]string{preservedRowTrackingTag: "true"})
	}
	nt, res, err := t.commitTx(ctx, tx)
	if err != nil {
		if definitelyNotCommitted(err) {
			deleteFiles(t.store, op.written, t.cfg.logger)
		}
		return nil, nil, fmt.Errorf("table: %s %s: %w", op.verbName(), t.URI(), err)
	}
	return nt, res, nil
}

// verbName names op in errors: its verb, else its lower-case name.
func (op *operation) verbName() string {
	if op.verb == "" {
		return strings.ToLower(op.name)
	}
	return op.verb
}

// beginCreate starts operation name (CREATE TABLE; CREATE TABLE AS SELECT
// or STREAMING UPDATE for a new table created with its data) of a new
// table in store: version 0 with protocol p and metadata m, and the
// transaction options of the table and then opts. Commit it with
// commitCreate.
func beginCreate(store objectstore.Store, name string, p *txlog.Protocol, m *txlog.Metadata, cfg config, opts ...txlog.TxnOption) *operation {
	tx := txlog.CreateTransaction(store, p, m, append(slices.Clone(cfg.txnOpts), opts...)...)
	tx.SetOperation(name)
	return &operation{name: name, verb: "create", tx: tx, start: time.Now()}
}

// commitCreate commits op (from beginCreate) as version 0 of the table in
// store. A table another writer created first is ErrTableExists, naming
// the version (0) the winner committed.
func commitCreate(ctx context.Context, store objectstore.Store, cfg config, op *operation) (*Table, error) {
	nt, _, err := (&Table{store: store, cfg: cfg}).commitOperation(ctx, op)
	if err != nil {
		if errors.Is(err, txlog.ErrConcurrentModification) {
			return nil, fmt.Errorf("table: create %s: %w: another writer committed version 0 first", store.URI(), ErrTableExists)
		}
		return nil, err
	}
	return nt, nil
}

// newTransaction starts a txlog transaction on t's version with the
// table's transaction options (and opts after them).
func (t *Table) newTransaction(operation string, opts ...txlog.TxnOption) *txlog.Transaction {
	return txlog.NewTransaction(t.snap, operation, append(slices.Clone(t.cfg.txnOpts), opts...)...)
}

// commitTx commits tx and returns the table at the new version.
func (t *Table) commitTx(ctx context.Context, tx *txlog.Transaction) (*Table, *txlog.CommitResult, error) {
	res, err := tx.Commit(ctx)
	if err != nil {
		return nil, nil, err
	}
	if res.Snapshot == nil {
		// The commit landed but its snapshot could not be built in memory.
		nt, err := Open(ctx, "", WithStore(t.store))
		if err != nil {
			return nil, res, err
		}
		nt.cfg = t.cfg
		return nt, res, nil
	}
	return t.with(res.Snapshot), res, nil
}

// NewTransaction starts a txlog transaction on this version, with the
// table's transaction options (its logger and clock, WithTxnOptions), for
// Commit.
//
// NewTransaction and Commit are the low-level escape hatch for commits the
// table's operations do not cover (a custom operation, tests that craft
// actions). Every write of this package (AppendRows, Overwrite,
// AppendFiles, Optimize, Delete, ...) and the streaming sink commit
// through the table's one operation path instead, which adds the
// operation's Spark metrics and refuses writes before any data file is
// written.
func (t *Table) NewTransaction(operation string, opts ...TxnOption) *Transaction {
	if t == nil {
		return txlog.NewTransaction(nil, operation, opts...) // its Commit fails
	}
	return t.newTransaction(operation, opts...)
}

// Commit commits tx (from NewTransaction; the low-level escape hatch, see
// there) and returns the table at the new version with the commit's
// result. It goes through the same commit as the table's operations: the
// transaction checks the protocol's write-side rules before it writes
// (writer features the table requires, delta.appendOnly: ErrAppendOnly,
// no file added or removed twice). Errors are txlog's
// (*txlog.ConflictError, txlog.ErrCommitFailed, ...).
func (t *Table) Commit(ctx context.Context, tx *Transaction) (*Table, *CommitResult, error) {
	if t == nil {
		return nil, nil, nilTableError("commit")
	}
	if tx == nil {
		return nil, nil, bind.Invalidf("commit %s: nil *txlog.Transaction", t.URI())
	}
	return t.commitTx(ctx, tx)
}

// metricsOf renders counts as Spark's string-valued operationMetrics.
func metricsOf(m map[string]int64) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = strconv.FormatInt(v, 10)
	}
	return out
}

// paramsWith returns params plus WithOperationParameters' (which win).
func paramsWith(params map[string]string, cfg writeConfig) map[string]string {
	maps.Copy(params, cfg.params)
	return params
}

// definitelyNotCommitted reports whether a commit error means that no
// version was created: a conflict, or a commit refused before its PUT.
// Other failures (store errors, exhausted retries) may hide a commit that
// landed, whose files must stay.
func definitelyNotCommitted(err error) bool {
	var ce *txlog.ConflictError
	if errors.Is(err, txlog.ErrCommitOutcomeUnknown) {
		return false
	}
	return errors.As(err, &ce) || errors.Is(err, txlog.ErrAppendOnly) ||
		errors.Is(err, txlog.ErrUnsupportedFeature) || errors.Is(err, txlog.ErrUnsupportedProtocol) ||
		// a full disk, a read-only store: the version file was not created
		errors.Is(err, objectstore.ErrNotStored)
}
