package txlog

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
)

// A put that fails definitely (full disk, read-only filesystem, no
// permission) ends the commit at its first attempt with that cause; it is
// not retried as an unknown outcome.
func TestCommitDefiniteStoreFailure(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EDQUOT} {
		t.Run(errno.Error(), func(t *testing.T) {
			ctx := context.Background()
			mem := objectstore.NewMem("t")
			createTestTable(t, mem, nil)
			store := faultstore.New(mem)
			snap, err := Load(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			store.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 1, Kind: faultstore.Fail, Err: errno})
			tx := NewTransaction(snap, "WRITE", WithBackoff(time.Millisecond, time.Millisecond))
			tx.Add(addFile("a.parquet", "a"))
			res, err := tx.Commit(ctx)
			if err == nil {
				t.Fatalf("commit succeeded: %+v", res)
			}
			if !errors.Is(err, errno) || !errors.Is(err, ErrCommitFailed) || !errors.Is(err, objectstore.ErrNotStored) {
				t.Fatalf("commit: %v; want ErrCommitFailed wrapping ErrNotStored and %v", err, errno)
			}
			if errors.Is(err, ErrCommitOutcomeUnknown) {
				t.Fatalf("commit: %v; a definite failure is not an unknown outcome", err)
			}
			for _, want := range []string{CommitKey(1), "version 1", "attempt 1", "WRITE"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("commit error %q does not name %q", err, want)
				}
			}
			puts := 0
			for _, c := range store.Calls() {
				if c.Op == faultstore.OpPutIfAbsent {
					puts++
				}
			}
			if puts != 1 {
				t.Fatalf("%d put-if-absent calls, want 1 (no retry)", puts)
			}
			if _, err := mem.Stat(ctx, CommitKey(1)); !errors.Is(err, objectstore.ErrNotExist) {
				t.Fatalf("version 1 exists after a failed commit: %v", err)
			}
		})
	}
}

// A definite failure after an attempt whose reply was lost does not hide
// that earlier attempt: Commit reads the version back and finds its own
// commit there.
func TestCommitDefiniteFailureAfterUnknownOutcome(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	createTestTable(t, mem, nil)
	store := faultstore.New(mem)
	snap, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	store.Inject(
		faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 1, Phase: faultstore.After, Kind: faultstore.DropReply},
		faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 2, Kind: faultstore.Fail, Err: syscall.ENOSPC},
	)
	tx := NewTransaction(snap, "WRITE", WithBackoff(time.Millisecond, time.Millisecond))
	tx.Add(addFile("a.parquet", "a"))
	res, err := tx.Commit(ctx)
	if err != nil || res.Version != 1 || res.Attempts != 2 {
		t.Fatalf("commit: %v %+v, want success at version 1 after 2 attempts", err, res)
	}
}

// Unknown outcomes are retried for at most withMaxRetryTime, even when
// withMaxAttempts allows many more attempts.
func TestCommitRetryTimeLimit(t *testing.T) {
	tests := []struct {
		name     string
		limit    time.Duration // 0: the default
		wantMax  time.Duration // the fake time spent must not exceed it
		attempts int           // withMaxAttempts
	}{
		{"default 60s", 0, defaultMaxRetryTime, 100000},
		{"5s", 5 * time.Second, 5 * time.Second, 100000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := objectstore.NewMem("t")
			createTestTable(t, mem, nil)
			store := faultstore.New(mem, faultstore.WithRandomFaults(1, 1.0)) // every call 503
			snap, err := Load(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			snap.store = store
			opts := []TxnOption{withMaxAttempts(tc.attempts), WithBackoff(time.Second, time.Second),
				WithLogger(slog.New(slog.DiscardHandler))}
			if tc.limit > 0 {
				opts = append(opts, withMaxRetryTime(tc.limit))
			}
			tx := NewTransaction(snap, "WRITE", opts...)
			// A fake clock that only the backoff sleeps advance.
			now := time.Unix(1700000000, 0)
			start := now
			tx.cfg.clock = func() time.Time { return now }
			tx.cfg.sleep = func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil }
			tx.cfg.rand = func() float64 { return 1 } // every wait is the full second
			tx.Add(addFile("a.parquet", "a"))
			_, err = tx.Commit(ctx)
			if !errors.Is(err, ErrCommitFailed) || !strings.Contains(err.Error(), "retry time limit") {
				t.Fatalf("commit: %v, want ErrCommitFailed naming the retry time limit", err)
			}
			spent := now.Sub(start)
			if spent > tc.wantMax || spent < tc.wantMax-time.Second {
				t.Fatalf("retried for %v, want just under %v", spent, tc.wantMax)
			}
		})
	}
}

// recordingHandler is a slog.Handler that keeps every record.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// find returns the attributes of the records with message msg.
func (h *recordingHandler) find(msg string) []map[string]slog.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]slog.Value
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		attrs := map[string]slog.Value{"level": slog.StringValue(r.Level.String())}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		out = append(out, attrs)
	}
	return out
}

// Commit logs each commit at Debug, and lost races and unknown outcomes
// (with their backoff) at Info.
func TestCommitLogs(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	snap := createTestTable(t, mem, nil)
	// A concurrent writer wins version 1.
	other := NewTransaction(snap, "WRITE")
	other.Add(addFile("b.parquet", "b"))
	if _, err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	store := faultstore.New(mem)
	snap.store = store
	// The attempt at version 2 fails with an unknown outcome once.
	store.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: CommitKey(2), Nth: 1, Kind: faultstore.Status, Status: 503})
	h := &recordingHandler{}
	tx := NewTransaction(snap, "STREAMING UPDATE", WithLogger(slog.New(h)), WithBackoff(time.Millisecond, time.Millisecond))
	tx.Add(addFile("a.parquet", "a"))
	res, err := tx.Commit(ctx)
	if err != nil || res.Version != 2 || res.Attempts != 3 {
		t.Fatalf("commit: %v %+v, want version 2 after 3 attempts", err, res)
	}
	commits := h.find("txlog: committed")
	if len(commits) != 1 {
		t.Fatalf("%d commit records, want 1: %v", len(commits), h.records)
	}
	c := commits[0]
	if c["level"].String() != "DEBUG" || c["version"].Int64() != 2 || c["attempts"].Int64() != 3 ||
		c["operation"].String() != "STREAMING UPDATE" || c["txnId"].String() != res.TxnID {
		t.Fatalf("commit record %v", c)
	}
	data, err := mem.Get(ctx, CommitKey(2), objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	if c["bytes"].Int64() != int64(len(data)) {
		t.Fatalf("commit record bytes %v, want %d", c["bytes"], len(data))
	}
	if c["duration"].Kind() != slog.KindDuration || c["duration"].Duration() <= 0 {
		t.Fatalf("commit record duration %v", c["duration"])
	}
	for _, msg := range []string{
		"txlog: version taken by a concurrent commit, retrying at the next version",
		"txlog: commit attempt failed with an unknown outcome, retrying",
		"txlog: commit backing off before retry",
	} {
		recs := h.find(msg)
		if len(recs) != 1 || recs[0]["level"].String() != "INFO" {
			t.Errorf("%q: records %v, want one at INFO", msg, recs)
		}
	}
}

// A conflict is logged at Info before Commit returns it.
func TestCommitLogsConflict(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	snap := createTestTable(t, mem, nil)
	other := NewTransaction(snap, "SET TBLPROPERTIES")
	m := snap.Metadata().Clone()
	m.Description = "x"
	other.UpdateMetadata(m)
	if _, err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	h := &recordingHandler{}
	tx := NewTransaction(snap, "WRITE", WithLogger(slog.New(h)))
	tx.Add(addFile("a.parquet", "a"))
	if _, err := tx.Commit(ctx); !errors.Is(err, ErrConcurrentModification) {
		t.Fatalf("commit: %v, want a conflict", err)
	}
	recs := h.find("txlog: commit conflicts with a concurrent commit")
	if len(recs) != 1 || recs[0]["level"].String() != "INFO" || recs[0]["winnerVersion"].Int64() != 1 || recs[0]["winnerOperation"].String() != "SET TBLPROPERTIES" {
		t.Fatalf("conflict records %v", recs)
	}
}
