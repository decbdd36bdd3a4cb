package table

import (
	"context"
	"log/slog"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table/internal/maint"
)

// Verify and VerifyExactlyOnce are table's API of the consistency checks;
// the checks live in table/internal/maint (maintenance), which works on the
// log through txlog (its log-name parsing, txlog.ParseLogKey, included).

// VerifyProblemKind classifies what Verify found wrong.
type VerifyProblemKind = maint.VerifyProblemKind

// Kinds of problem Verify reports.
const (
	// ProblemMissingFile: a data or deletion vector file that the latest
	// snapshot references does not exist.
	ProblemMissingFile = maint.ProblemMissingFile
	// ProblemSizeMismatch: a referenced data file exists with a size other
	// than the one its add action records.
	ProblemSizeMismatch = maint.ProblemSizeMismatch
	// ProblemLogGap: commit versions are not contiguous, or the log starts
	// after version 0 without a checkpoint to start from.
	ProblemLogGap = maint.ProblemLogGap
	// ProblemCorruptCommit: a commit file cannot be read or decoded.
	ProblemCorruptCommit = maint.ProblemCorruptCommit
	// ProblemCheckpoint: a checkpoint cannot be read, is incomplete, or does
	// not hold the state that the JSON commits up to its version produce
	// (live files, protocol, metadata, txns, domain metadata).
	ProblemCheckpoint = maint.ProblemCheckpoint
	// ProblemLoad: the latest snapshot cannot be loaded.
	ProblemLoad = maint.ProblemLoad
	// ProblemOutsideTable: a file the latest snapshot references (a data
	// file, a deletion vector file, a remove tombstone's path) lies outside
	// the table root and outside every WithVerifyAllowedRoots root, or, on
	// the local file system, is a symbolic link inside the root that
	// resolves to a file outside it. Reads refuse the former
	// (ErrPathOutsideTable) and follow the latter.
	ProblemOutsideTable = maint.ProblemOutsideTable
	// ProblemInvalidValue: an add action of the latest snapshot holds a
	// value that cannot be right: a negative size, a stats.numRecords that
	// is not a count (negative, fractional or above 2^53), a deletion vector
	// cardinality that is negative or above numRecords, a negative deletion
	// vector sizeInBytes or offset, or a partition value that does not
	// parse as its column's type.
	ProblemInvalidValue = maint.ProblemInvalidValue
)

// VerifyProblem is one thing Verify found wrong.
type VerifyProblem = maint.VerifyProblem

// VerifyReport is the result of Verify.
type VerifyReport = maint.VerifyReport

// VerifyOption configures Verify.
type VerifyOption = maint.VerifyOption

// WithVerifyAllowedRoots accepts referenced files under these root URIs
// (shallow clones, as WithAllowedRoots does for reads): they are not
// reported as outside the table, and are not checked either.
func WithVerifyAllowedRoots(uris ...string) VerifyOption {
	return maint.WithVerifyAllowedRoots(uris...)
}

// WithVerifyConcurrency sets how many files Verify stats or reads at once
// (default 16, minimum 1).
func WithVerifyConcurrency(n int) VerifyOption { return maint.WithVerifyConcurrency(n) }

// WithVerifyProgress calls fn as files are checked, with the number done
// and the total. fn is called from one goroutine at a time.
func WithVerifyProgress(fn func(done, total int)) VerifyOption { return maint.WithVerifyProgress(fn) }

// WithVerifyLogger sets the logger of the snapshot loads Verify and
// VerifyExactlyOnce make (a checkpoint replayed around is logged at Warn;
// default slog.Default()), as WithLogger does for a table.
func WithVerifyLogger(l *slog.Logger) VerifyOption { return maint.WithVerifyLogger(l) }

// Verify checks the table in store for consistency and returns what it
// found wrong in a report; the error is only for failures that stop the
// check itself (the log cannot be listed, ctx ended) and
// ErrTableNotFound when there is no log. It checks that
//
//   - commit versions are contiguous and the log starts at version 0 or at
//     a checkpoint;
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
//
// Txn expiry (delta.setTransactionRetentionDuration), which decides the
// txns a checkpoint must hold, is measured back from time.Now.
func Verify(ctx context.Context, store Store, opts ...VerifyOption) (*VerifyReport, error) {
	opts = append([]VerifyOption{maint.WithPartitionParser(ParsePartitionValue)}, opts...)
	return maint.Verify(ctx, store, opts...)
}

// EpochRange is an inclusive range of epoch ids (txn versions).
type EpochRange = maint.EpochRange

// EpochRepeat is an epoch that more than one commit wrote: its rows are in
// the table more than once.
type EpochRepeat = maint.EpochRepeat

// EpochStep is an epoch committed after a higher one: the stream went
// backwards.
type EpochStep = maint.EpochStep

// QueryEpochs is what the log says about one streaming query (txn appId).
type QueryEpochs = maint.QueryEpochs

// ExactlyOnceReport is the result of VerifyExactlyOnce.
type ExactlyOnceReport = maint.ExactlyOnceReport

// VerifyExactlyOnce reads the log of the table in store and reports, per
// streaming query (txn appId, spec "Transaction Identifiers"), which epochs
// were committed, and any gaps, repeats and epochs that went backwards.
// Epochs come from txn actions; a STREAMING UPDATE commit's commitInfo
// (operationParameters queryId and epochId) must agree with its txn action.
// When old commits were cleaned up, the reconstructable state at the oldest
// commit supplies each query's base epoch. Errors: ErrTableNotFound,
// log read errors (a gap or an unreadable commit), ctx errors. Of opts
// only WithVerifyLogger applies.
func VerifyExactlyOnce(ctx context.Context, store Store, opts ...VerifyOption) (*ExactlyOnceReport, error) {
	return maint.VerifyExactlyOnce(ctx, store, opts...)
}

// logScan is a listing of "_delta_log/" (maint.ListLog): the commit
// versions and the checkpoint versions, each ascending, and the commits'
// object info, for History, OldestCommit and Changes.
type logScan struct {
	commits     []int64
	commitInfo  map[int64]objectstore.ObjectInfo
	checkpoints []int64
}

// scanLog lists "_delta_log/" (maint.ListLog, which lists again on a gap).
func scanLog(ctx context.Context, store objectstore.Store) (*logScan, error) {
	l, err := maint.ListLog(ctx, store)
	if err != nil {
		return nil, err
	}
	return &logScan{commits: l.Commits, commitInfo: l.CommitInfo, checkpoints: l.Checkpoints}, nil
}
