package table

import (
	"context"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// The names below let the packages above table (streamsink, kafkasink,
// deltactl) and library users work with a table through this package
// alone: they are the lower packages' types and errors, under table's name.

// Row is one table row: the values of the table's columns in schema order
// (or a projection's order), in the value model of package value.
type Row = value.Row

// Date is a Delta date value in a Row (days since the Unix epoch).
type Date = value.Date

// Decimal is a Delta decimal value in a Row.
type Decimal = value.Decimal

// MapEntry is one key/value pair of a Delta map value in a Row.
type MapEntry = value.MapEntry

// Add is a data file as the log records it (spec "Add File and Remove
// File"): what a write adds and a snapshot lists.
type Add = txlog.Add

// Action is one action of a commit (spec "Actions").
type Action = txlog.Action

// CommitInfo is a commit's provenance (spec "Commit Provenance
// Information").
type CommitInfo = txlog.CommitInfo

// Snapshot is the table state at one version (Table.Snapshot).
type Snapshot = txlog.Snapshot

// Protocol is a table's protocol action (reader and writer versions and
// features).
type Protocol = txlog.Protocol

// Metadata is a table's metaData action (id, schema, partition columns,
// format, configuration; spec "Change Metadata").
type Metadata = txlog.Metadata

// Checkpointer writes checkpoints in the background (WithCheckpointer).
type Checkpointer = txlog.Checkpointer

// TxnOption configures the transaction of a commit (WithTxnOptions,
// WithCommitOptions).
type TxnOption = txlog.TxnOption

// Transaction is one commit being built (Table.NewTransaction, Table.Commit;
// txlog.Transaction).
type Transaction = txlog.Transaction

// CommitResult reports a commit: the version written, the attempts it took,
// the snapshot after it and whether a checkpoint followed
// (txlog.CommitResult).
type CommitResult = txlog.CommitResult

// CheckpointerStats counts the snapshots a background checkpointer queued,
// wrote, coalesced, failed and dropped (Table.CheckpointStats; txlog.CheckpointerStats).
type CheckpointerStats = txlog.CheckpointerStats

// Errors of the lower packages that callers of table match with errors.Is.
var (
	// ErrConcurrentTransaction: a concurrent commit changed an application
	// transaction (txn appId) this one read; two live writers of one
	// streaming query.
	ErrConcurrentTransaction = txlog.ErrConcurrentTransaction
	// ErrConcurrentModification is wrapped by every commit conflict.
	ErrConcurrentModification = txlog.ErrConcurrentModification
	// ErrNotExist: an object (a data file, a commit) does not exist.
	ErrNotExist = objectstore.ErrNotExist
)

// LogPrefix is the key prefix of the Delta log under a table root
// ("_delta_log/"): no data file key starts with it. streamsink's two-phase
// commit uses it to tell its data file keys from log keys.
const LogPrefix = txlog.LogPrefix

// CheckpointerOption is the transaction option that hands due checkpoints
// to cp (txlog.WithCheckpointer), for WithCommitOptions; streamsink hands a
// sink's checkpointer to its commits with it.
func CheckpointerOption(cp *Checkpointer) TxnOption { return txlog.WithCheckpointer(cp) }

// DecodePath returns the store key (relative to the table root) or URI of
// an add or remove path, which the log holds URI-encoded (spec "Add File
// and Remove File"; txlog.DecodePath). streamsink (two-phase commit,
// recovery) and deltactl's file listing use it.
func DecodePath(p string) string { return txlog.DecodePath(p) }

// ReadCommit reads and decodes the commit of version v of the table: an
// error wrapping ErrNotExist when the log no longer holds it (log cleanup)
// or never did, a *txlog.CorruptLogError when it cannot be decoded.
func (t *Table) ReadCommit(ctx context.Context, v int64) ([]Action, error) {
	if t == nil {
		return nil, nilTableError("read commit")
	}
	return txlog.ReadCommit(ctx, t.store, v)
}

// Errors of loading a table's log (txlog's), for callers of Open,
// LoadSnapshot, ReadCommit and Verify; match with errors.Is/As.
var (
	// ErrTableNotFound: no Delta log under the table root.
	ErrTableNotFound = txlog.ErrTableNotFound
	// ErrVersionNotFound is wrapped by a *VersionNotFoundError.
	ErrVersionNotFound = txlog.ErrVersionNotFound
	// ErrNoProtocol: the log replays to no protocol action.
	ErrNoProtocol = txlog.ErrNoProtocol
	// ErrNoMetadata: the log replays to no metaData action.
	ErrNoMetadata = txlog.ErrNoMetadata
	// ErrLogGap: commit versions are not contiguous (a commit the replay
	// needs is missing); carried by a *CorruptLogError.
	ErrLogGap = txlog.ErrLogGap
	// ErrCorruptLog: a log file cannot be used (a truncated or non-JSON
	// commit, an unreadable checkpoint, a gap); carried by a
	// *CorruptLogError.
	ErrCorruptLog = txlog.ErrCorruptLog
)

// VersionNotFoundError names a version the log cannot provide and the
// earliest and latest versions it can (txlog.VersionNotFoundError; wraps
// ErrVersionNotFound).
type VersionNotFoundError = txlog.VersionNotFoundError

// CorruptLogError names a log file that does not decode and why
// (txlog.CorruptLogError).
type CorruptLogError = txlog.CorruptLogError
