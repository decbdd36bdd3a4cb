package table

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// recordingHandler keeps every log record.
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

// WithLogger reaches the commits: a create and two appends log one Debug
// record each, with the commit's version, attempts, bytes, duration and
// operation.
func TestWithLoggerLogsCommits(t *testing.T) {
	ctx := context.Background()
	h := &recordingHandler{}
	sch := schema.NewStruct(field("id", prim(schema.Long), true))
	tbl, err := Create(ctx, "mem://logs", sch, WithLogger(slog.New(h)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if tbl, err = tbl.AppendRows(ctx, []value.Row{{int64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []map[string]slog.Value
	h.mu.Lock()
	for _, r := range h.records {
		if r.Message != "txlog: committed" {
			continue
		}
		if r.Level != slog.LevelDebug {
			t.Errorf("commit logged at %v, want DEBUG", r.Level)
		}
		attrs := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		got = append(got, attrs)
	}
	h.mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d commit records, want 3 (create, 2 appends)", len(got))
	}
	wantOps := []string{"CREATE TABLE", "WRITE", "WRITE"}
	for v, attrs := range got {
		if attrs["version"].Int64() != int64(v) || attrs["attempts"].Int64() != 1 || attrs["operation"].String() != wantOps[v] {
			t.Errorf("commit record %d: %v, want version %d, 1 attempt, operation %s", v, attrs, v, wantOps[v])
		}
		if attrs["bytes"].Int64() <= 0 || attrs["duration"].Kind() != slog.KindDuration {
			t.Errorf("commit record %d: bytes %v duration %v", v, attrs["bytes"], attrs["duration"])
		}
	}
}

// A logger given with WithTxnOptions wins over WithLogger for commits.
func TestTxnLoggerOverridesTableLogger(t *testing.T) {
	ctx := context.Background()
	tableLog, txnLog := &recordingHandler{}, &recordingHandler{}
	sch := schema.NewStruct(field("id", prim(schema.Long), true))
	if _, err := Create(ctx, "mem://logs2", sch, WithLogger(slog.New(tableLog)),
		WithTxnOptions(txlog.WithLogger(slog.New(txnLog)))); err != nil {
		t.Fatal(err)
	}
	if len(tableLog.records) != 0 || len(txnLog.records) != 1 {
		t.Fatalf("table logger %d records, txn logger %d; want 0 and 1", len(tableLog.records), len(txnLog.records))
	}
}
