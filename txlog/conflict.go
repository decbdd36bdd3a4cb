package txlog

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConcurrentModification is wrapped by every error that reports a
// conflict with a transaction that committed first (spec "Optimistic
// Concurrency"; Spark's ConflictChecker). Each conflict also wraps one of the
// kinds below, so callers can tell them apart with errors.Is.
var ErrConcurrentModification = errors.New("concurrent modification")

// Kinds of conflict, each wrapped together with ErrConcurrentModification.
var (
	// ErrProtocolChanged: the winning commit changed the protocol.
	ErrProtocolChanged = errors.New("protocol changed by a concurrent commit")
	// ErrMetadataChanged: the winning commit changed the table metadata.
	ErrMetadataChanged = errors.New("metadata changed by a concurrent commit")
	// ErrConcurrentDomain: both commits changed the same metadata domain.
	ErrConcurrentDomain = errors.New("metadata domain changed by a concurrent commit")
	// ErrConcurrentTransaction: the winning commit wrote a txn action for an
	// appId this transaction read (two runs of one streaming query).
	ErrConcurrentTransaction = errors.New("concurrent transaction for the same appId")
	// ErrConcurrentAppend: the winning commit added files this transaction
	// should have read.
	ErrConcurrentAppend = errors.New("files added by a concurrent commit match what this transaction read")
	// ErrConcurrentDeleteRead: the winning commit removed a file this
	// transaction read.
	ErrConcurrentDeleteRead = errors.New("a file this transaction read was removed by a concurrent commit")
	// ErrConcurrentDeleteDelete: both commits removed the same file.
	ErrConcurrentDeleteDelete = errors.New("a file this transaction removes was removed by a concurrent commit")
)

// ConflictError reports why a transaction cannot be retried on top of a
// commit that won the race for its version. It matches
// ErrConcurrentModification and every kind in Kinds with errors.Is.
type ConflictError struct {
	ReadVersion   int64    // the snapshot version the transaction started from
	WinnerVersion int64    // the version of the winning commit that conflicts
	Operation     string   // the winning commit's operation, when recorded
	Kinds         []error  // the conflict kinds, e.g. ErrConcurrentDeleteRead
	Details       []string // human-readable reasons (paths, appIds): one per kind, one for both kinds of a removed file read and removed
	Attempts      int      // commit attempts made, including the first
}

func (e *ConflictError) Error() string {
	op := ""
	if e.Operation != "" {
		op = fmt.Sprintf(" (%s)", e.Operation)
	}
	return fmt.Sprintf("txlog: %v: transaction read version %d, version %d%s conflicts after %d attempt(s): %s",
		ErrConcurrentModification, e.ReadVersion, e.WinnerVersion, op, e.Attempts, strings.Join(e.Details, "; "))
}

// Unwrap returns ErrConcurrentModification and the conflict kinds.
func (e *ConflictError) Unwrap() []error {
	return append([]error{ErrConcurrentModification}, e.Kinds...)
}

// readSet is what a transaction read from its snapshot, for conflict checks.
type readSet struct {
	wholeTable bool
	// serializable: blind appends of winners conflict too (Spark's
	// Serializable isolation level instead of WriteSerializable).
	serializable bool
	// predicates over partition values; a winning add that matches any of
	// them was something this transaction should have read.
	predicates []PartitionPredicate
	files      map[FileKey]bool // files this transaction read
	appIDs     map[string]bool  // appIds whose txn version this transaction read
}

// PartitionPredicate tells whether a file with these partition values (the
// add action's partitionValues: column name to serialized value, "" for
// null, spec "Partition Value Serialization") is within what a transaction
// read.
type PartitionPredicate func(partitionValues map[string]string) bool

// winnerSummary is the part of a winning commit the checker looks at.
type winnerSummary struct {
	version     int64
	operation   string
	blindAppend bool
	protocol    bool
	metadata    bool
	domains     []string
	appIDs      []string
	added       []*Add    // dataChange adds
	removed     []*Remove // all removes
}

func summarize(version int64, actions []Action) winnerSummary {
	w := winnerSummary{version: version}
	for _, a := range actions {
		switch {
		case a.CommitInfo != nil:
			w.operation = a.CommitInfo.Operation
			if a.CommitInfo.IsBlindAppend != nil {
				w.blindAppend = *a.CommitInfo.IsBlindAppend
			}
		case a.Protocol != nil:
			w.protocol = true
		case a.Metadata != nil:
			w.metadata = true
		case a.DomainMetadata != nil:
			w.domains = append(w.domains, a.DomainMetadata.Domain)
		case a.Txn != nil:
			w.appIDs = append(w.appIDs, a.Txn.AppID)
		case a.Add != nil && a.Add.DataChange:
			w.added = append(w.added, a.Add)
		case a.Remove != nil:
			// Every remove counts, dataChange or not: a compaction
			// (OPTIMIZE, dataChange=false) that removed a file we read or
			// remove conflicts as much as a delete does (Spark checks all
			// removed files).
			w.removed = append(w.removed, a.Remove)
		}
	}
	return w
}

// checkConflicts runs Spark's conflict rules, in Spark's order, of one
// winning commit against this transaction's reads and writes, and returns
// every conflict found (nil when the transaction may be retried on top of
// the winner). Rules:
//  1. the winner changed the protocol;
//  2. the winner changed the metadata;
//  3. both changed the same metadata domain;
//  4. the winner added files matching what we read (unless the winner is a
//     blind append, we do not change metadata and we are not serializable);
//  5. the winner removed a file we read;
//  6. the winner removed a file we remove;
//  7. the winner wrote a txn for an appId whose version we read.
func checkConflicts(rs *readSet, ours *ownWrites, w winnerSummary) (kinds []error, details []string) {
	add := func(kind error, format string, args ...any) {
		kinds = append(kinds, kind)
		details = append(details, fmt.Sprintf(format, args...))
	}
	if w.protocol {
		add(ErrProtocolChanged, "version %d changed the protocol", w.version)
	}
	if w.metadata {
		add(ErrMetadataChanged, "version %d changed the metadata", w.version)
	}
	for _, d := range w.domains {
		if ours.domains[d] {
			add(ErrConcurrentDomain, "version %d changed metadata domain %q", w.version, d)
		}
	}
	if !w.blindAppend || ours.metadata || rs.serializable {
		for _, f := range w.added {
			if rs.wholeTable || rs.matches(f.PartitionValues) {
				add(ErrConcurrentAppend, "version %d added %s", w.version, f.Path)
				break
			}
		}
	}
	// Rules 5 and 6 name one file each; a file this transaction read and
	// removes is named once for both ("read and removes"), not twice.
	var read, removed *Remove
	for _, f := range w.removed {
		r, o := rs.wholeTable || rs.files[f.Key()], ours.removes[f.Key()]
		if r && o {
			read, removed = f, f
			break
		}
		if r && read == nil {
			read = f
		}
		if o && removed == nil {
			removed = f
		}
	}
	switch {
	case read != nil && read == removed:
		kinds = append(kinds, ErrConcurrentDeleteRead, ErrConcurrentDeleteDelete)
		details = append(details, fmt.Sprintf("version %d removed %s, which this transaction read and removes", w.version, read.Path))
	default:
		if read != nil {
			add(ErrConcurrentDeleteRead, "version %d removed %s, which this transaction read", w.version, read.Path)
		}
		if removed != nil {
			add(ErrConcurrentDeleteDelete, "version %d removed %s, which this transaction removes", w.version, removed.Path)
		}
	}
	for _, id := range w.appIDs {
		if rs.appIDs[id] {
			add(ErrConcurrentTransaction, "version %d wrote a txn for appId %q", w.version, id)
		}
	}
	return kinds, details
}

// ownWrites is what the transaction's own actions change, for conflict
// checks; computed once per commit, not per winning commit.
type ownWrites struct {
	metadata bool
	domains  map[string]bool
	removes  map[FileKey]bool
}

func newOwnWrites(actions []Action) *ownWrites {
	o := &ownWrites{domains: map[string]bool{}, removes: map[FileKey]bool{}}
	for _, a := range actions {
		switch {
		case a.Metadata != nil:
			o.metadata = true
		case a.DomainMetadata != nil:
			o.domains[a.DomainMetadata.Domain] = true
		case a.Remove != nil:
			o.removes[a.Remove.Key()] = true
		}
	}
	return o
}

func (rs *readSet) matches(pv map[string]string) bool {
	for _, p := range rs.predicates {
		if p(pv) {
			return true
		}
	}
	return false
}
