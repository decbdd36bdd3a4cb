package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recordHandler is a slog.Handler that keeps the messages it is given.
type recordHandler struct {
	mu   *sync.Mutex
	msgs *[]string
}

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.msgs = append(*h.msgs, r.Level.String()+" "+r.Message)
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// TestOneLogFormat: every command logs through the one handler the global
// flags choose (--log-format text or json, -v for Debug), on stderr; none
// through slog's default logger, which writes through the standard log
// package in its own format (verify's warnings about a checkpoint replayed
// around did, while cat's went through the text handler: issue 31 item 6).
// The process-wide default logger is replaced by a recorder for the test,
// so that a message sent to it is seen.
func TestOneLogFormat(t *testing.T) {
	var mu sync.Mutex
	var stray []string
	old := slog.Default()
	slog.SetDefault(slog.New(recordHandler{mu: &mu, msgs: &stray}))
	t.Cleanup(func() { slog.SetDefault(old) })

	dir := t.TempDir()
	tbl := streamTable(t, dir, 12)
	// An unreadable checkpoint: every load warns that it replays around it.
	if err := os.WriteFile(filepath.Join(tbl, "_delta_log", "00000000000000000010.checkpoint.parquet"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	const warning = "txlog: checkpoint cannot be read; replaying without it"
	commands := []struct {
		args []string
		code int
	}{
		{[]string{"verify", tbl}, 3},
		{[]string{"verify", "--exactly-once", tbl}, 0},
		{[]string{"cat", tbl, "--limit", "1"}, 0},
		{[]string{"snapshot", tbl}, 0},
		{[]string{"files", tbl}, 0},
		{[]string{"history", tbl}, 0},
		{[]string{"log", tbl}, 0},
		{[]string{"vacuum", tbl, "--dry-run"}, 0},
		{[]string{"report", tbl}, 0},
	}
	for _, format := range []string{"text", "json"} {
		for _, c := range commands {
			args := append([]string{"--log-format", format}, c.args...)
			out, errs, code := runCLI(t, args...)
			if code != c.code {
				t.Errorf("deltactl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, c.code, out, errs)
				continue
			}
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if errs == "" {
				lines = nil
			}
			if c.args[0] != "verify" || c.args[1] != "--exactly-once" {
				// verify --exactly-once loads the oldest commit's state
				// only, which replays no checkpoint.
				if len(lines) == 0 {
					t.Errorf("deltactl %s: no warning on stderr", strings.Join(args, " "))
				}
			}
			for _, l := range lines {
				switch format {
				case "json":
					var rec struct{ Level, Msg string }
					if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Level != "WARN" || rec.Msg != warning {
						t.Errorf("deltactl %s: stderr line %q is not the JSON warning (%v)", strings.Join(args, " "), l, err)
					}
				case "text":
					if !strings.HasPrefix(l, "time=") || !strings.Contains(l, `level=WARN msg="`+warning+`"`) {
						t.Errorf("deltactl %s: stderr line %q is not the text handler's warning", strings.Join(args, " "), l)
					}
				}
			}
		}
	}
	// -v: Debug messages, in the format chosen.
	_, errs, code := runCLI(t, "-v", "--log-format", "json", "ingest", writeCSV(t, filepath.Join(dir, "more.csv"), 13, 14), tbl)
	if code != 0 || !strings.Contains(errs, `"level":"DEBUG"`) {
		t.Errorf("-v --log-format json ingest: exit %d, stderr:\n%s", code, errs)
	}
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("-v --log-format json: stderr line %q is not JSON", l)
		}
	}
	if _, errs, code := runCLI(t, "--log-format", "xml", "snapshot", tbl); code != 2 || !strings.Contains(errs, `--log-format "xml": want text or json`) {
		t.Errorf("--log-format xml: exit %d, stderr:\n%s", code, errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stray) > 0 {
		t.Errorf("messages sent to slog's default logger instead of deltactl's: %q", stray)
	}
}
