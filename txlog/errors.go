package txlog

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors of package txlog. Every error that Load, Update and the
// commit readers return wraps at most one of these, usually inside one of the
// typed errors below; match with errors.Is, and use errors.As on the typed
// error for the details.
var (
	// ErrVersionNotFound: the requested version (or timestamp) cannot be
	// reconstructed from the log: it is newer than the latest commit, or
	// older than the oldest checkpoint left after log cleanup. Carried by
	// *VersionNotFoundError.
	ErrVersionNotFound = errors.New("txlog: version not found")

	// ErrUnsupportedFeature: the table's protocol lists table features that
	// deltakit does not implement (spec "Table Features"). Carried by
	// *UnsupportedFeatureError, which names them.
	ErrUnsupportedFeature = errors.New("txlog: unsupported table feature")

	// ErrUnsupportedProtocol: the table needs a reader version beyond 3 or a
	// writer version beyond 7 (spec "Protocol Evolution"). Carried by
	// *UnsupportedProtocolError.
	ErrUnsupportedProtocol = errors.New("txlog: unsupported protocol version")

	// ErrCorruptLog: a log file cannot be used: truncated or non-JSON commit,
	// empty commit, gap in the commit versions, missing checkpoint part,
	// checkpoint with the wrong schema, bad deletion vector. Carried by
	// *CorruptLogError, which names the file, the version and the reason.
	ErrCorruptLog = errors.New("txlog: corrupt log")

	// ErrLogGap: a commit version between two listed versions is missing
	// (spec "Delta Log Entries": versions are contiguous). Returned as a
	// *CorruptLogError whose Version is the missing version; it matches
	// both ErrLogGap and ErrCorruptLog.
	ErrLogGap = errors.New("txlog: commit versions are not contiguous")

	// ErrNoMetadata: replay ended without a metaData action (spec "Change
	// Metadata": the first version must contain one).
	ErrNoMetadata = errors.New("txlog: no metaData action in the log")

	// ErrNoProtocol: replay ended without a protocol action.
	ErrNoProtocol = errors.New("txlog: no protocol action in the log")

	// ErrTableNotFound: the store holds no commit and no checkpoint under
	// "_delta_log/": it is not a Delta table (yet).
	ErrTableNotFound = errors.New("txlog: not a Delta table: no commits in _delta_log/")

	// ErrAppendOnly: a commit removes data (a remove action with
	// dataChange=true) from a table whose metadata sets delta.appendOnly=true
	// (spec "Append-only Tables"; Spark's DELTA_CANNOT_MODIFY_APPEND_ONLY).
	// Transaction.Commit refuses such a commit before writing anything.
	ErrAppendOnly = errors.New("txlog: table is append-only (delta.appendOnly=true): data cannot be removed")
)

// VersionNotFoundError reports a version or timestamp that the log cannot
// reconstruct. It matches ErrVersionNotFound with errors.Is.
type VersionNotFoundError struct {
	// Version is the requested version; -1 when a timestamp was requested.
	Version int64
	// Timestamp is the requested time for AtTimestamp; zero otherwise.
	Timestamp time.Time
	// Earliest is the oldest version that can be reconstructed (0, or the
	// oldest complete checkpoint when older commits were cleaned up); -1
	// when unknown.
	Earliest int64
	// Latest is the newest committed version; -1 when unknown.
	Latest int64
}

func (e *VersionNotFoundError) Error() string {
	var b strings.Builder
	b.WriteString("txlog: ")
	if !e.Timestamp.IsZero() {
		fmt.Fprintf(&b, "no version at or before timestamp %s", e.Timestamp.UTC().Format(time.RFC3339Nano))
	} else {
		fmt.Fprintf(&b, "version %d not found", e.Version)
	}
	if e.Earliest >= 0 {
		fmt.Fprintf(&b, ": earliest reconstructable version is %d", e.Earliest)
		if e.Latest >= 0 {
			fmt.Fprintf(&b, ", latest is %d", e.Latest)
		}
	} else if e.Latest >= 0 {
		fmt.Fprintf(&b, ": latest version is %d", e.Latest)
	}
	return b.String()
}

// Is reports whether target is ErrVersionNotFound.
func (e *VersionNotFoundError) Is(target error) bool { return target == ErrVersionNotFound }

// UnsupportedFeatureError names the table features deltakit cannot honour.
// It matches ErrUnsupportedFeature with errors.Is.
type UnsupportedFeatureError struct {
	// Features are the unsupported feature names, sorted.
	Features []string
	// Reader is true when reading is refused (reader features), false when
	// only writing is refused (writer features).
	Reader bool
}

func (e *UnsupportedFeatureError) Error() string {
	kind := "writer"
	if e.Reader {
		kind = "reader"
	}
	return fmt.Sprintf("txlog: unsupported table %s feature(s): %s", kind, strings.Join(e.Features, ", "))
}

// Is reports whether target is ErrUnsupportedFeature.
func (e *UnsupportedFeatureError) Is(target error) bool { return target == ErrUnsupportedFeature }

// UnsupportedProtocolError reports protocol versions beyond those deltakit
// implements (reader 3, writer 7). It matches ErrUnsupportedProtocol.
type UnsupportedProtocolError struct {
	MinReaderVersion int32
	MinWriterVersion int32
	// Reader is true when the reader version is the problem, false when only
	// the writer version is.
	Reader bool
}

func (e *UnsupportedProtocolError) Error() string {
	if e.Reader {
		return fmt.Sprintf("txlog: table requires reader version %d (writer %d); deltakit reads up to reader version %d",
			e.MinReaderVersion, e.MinWriterVersion, maxReaderVersion)
	}
	return fmt.Sprintf("txlog: table requires writer version %d; deltakit writes up to writer version %d",
		e.MinWriterVersion, maxWriterVersion)
}

// Is reports whether target is ErrUnsupportedProtocol.
func (e *UnsupportedProtocolError) Is(target error) bool { return target == ErrUnsupportedProtocol }

// CorruptLogError reports a log file that cannot be used. It matches
// ErrCorruptLog with errors.Is and unwraps to the underlying cause, if any.
type CorruptLogError struct {
	// File is the store key of the offending file ("_delta_log/...").
	File string
	// Version is the table version the file belongs to; -1 when unknown.
	Version int64
	// Reason says what is wrong, e.g. "truncated JSON on line 3".
	Reason string
	// Err is the underlying cause (a JSON or Parquet error), or nil.
	Err error
	gap bool // a commit version is missing: matches ErrLogGap
}

func (e *CorruptLogError) Error() string {
	var b strings.Builder
	b.WriteString("txlog: corrupt log")
	if e.File != "" {
		fmt.Fprintf(&b, ": file %q", e.File)
	}
	if e.Version >= 0 {
		fmt.Fprintf(&b, " (version %d)", e.Version)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is ErrCorruptLog, or ErrLogGap for a missing
// commit version.
func (e *CorruptLogError) Is(target error) bool {
	return target == ErrCorruptLog || target == ErrLogGap && e.gap
}

// Unwrap returns the underlying cause.
func (e *CorruptLogError) Unwrap() error { return e.Err }

// gapError reports that commit version missing is absent from the log;
// next is the version listed after it, -1 when none is.
func gapError(missing, next int64) *CorruptLogError {
	e := corrupt(CommitKey(missing), missing, nil, "commit versions are not contiguous: version %d is missing", missing)
	if next >= 0 {
		e.Reason += fmt.Sprintf(" (next commit is %d)", next)
	}
	e.gap = true
	return e
}

func corrupt(file string, version int64, err error, format string, args ...any) *CorruptLogError {
	return &CorruptLogError{File: file, Version: version, Reason: fmt.Sprintf(format, args...), Err: err}
}
