package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

type historyJSON struct {
	Commits []struct {
		Version             int64
		Timestamp           string
		CommitInfoTimestamp string
	}
	OldestCommit int64
	Cleaned      bool
}

func historyOf(t *testing.T, tbl string) historyJSON {
	t.Helper()
	var h historyJSON
	if err := json.Unmarshal([]byte(mustRun(t, "history", tbl, "-o", "json")), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// fourVersionTable creates a table "id long, v string" in a temp dir and
// appends three CSV files: versions 0 (CREATE TABLE) to 3 (WRITE).
func fourVersionTable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string")
	for i := range 3 {
		mustRun(t, "ingest", writeCSV(t, filepath.Join(dir, "in.csv"), i*10, i*10+2), tbl)
	}
	return tbl
}

// TestHistoryTimestampsTimeTravel: snapshot --timestamp with a time that
// history printed returns that version, also for a copy of the table
// (new modification times); commitInfo.timestamp is its own field.
func TestHistoryTimestampsTimeTravel(t *testing.T) {
	tbl := fourVersionTable(t)
	check := func(tbl string) {
		t.Helper()
		h := historyOf(t, tbl)
		if len(h.Commits) != 4 || h.Cleaned || h.OldestCommit != 0 {
			t.Fatalf("history %+v", h)
		}
		for _, c := range h.Commits {
			if c.CommitInfoTimestamp != fmtTime(pinned) {
				t.Errorf("v%d commitInfoTimestamp %q, want the writer's clock %s", c.Version, c.CommitInfoTimestamp, fmtTime(pinned))
			}
			var snap struct{ Version int64 }
			if err := json.Unmarshal([]byte(mustRun(t, "snapshot", tbl, "--timestamp", c.Timestamp, "-o", "json")), &snap); err != nil {
				t.Fatal(err)
			}
			if snap.Version != c.Version {
				t.Errorf("snapshot --timestamp %s (history's time of v%d) loaded v%d", c.Timestamp, c.Version, snap.Version)
			}
		}
	}
	check(tbl)
	// A copy has new modification times; history shows them.
	cp := filepath.Join(filepath.Dir(tbl), "copy")
	copyDir(t, tbl, cp)
	check(cp)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCleanedLog: a log that starts at a checkpoint (older commits
// removed) still shows its history and latest commit, noting the cleanup.
func TestCleanedLog(t *testing.T) {
	dir := t.TempDir()
	tbl := filepath.Join(dir, "t")
	mustRun(t, "create", tbl, "--schema", "id long, v string")
	for i := range 10 {
		mustRun(t, "ingest", writeCSV(t, filepath.Join(dir, "in.csv"), i, i), tbl)
	}
	logDir := filepath.Join(tbl, "_delta_log")
	if _, err := os.Stat(filepath.Join(logDir, "00000000000000000010.checkpoint.parquet")); err != nil {
		t.Fatalf("no checkpoint at 10: %v", err)
	}
	for v := range 10 {
		if err := os.Remove(filepath.Join(logDir, commitName(v))); err != nil {
			t.Fatal(err)
		}
	}
	h := historyOf(t, tbl)
	if len(h.Commits) != 1 || h.Commits[0].Version != 10 || !h.Cleaned || h.OldestCommit != 10 {
		t.Errorf("history of a cleaned log: %+v", h)
	}
	if out := mustRun(t, "history", tbl); !strings.Contains(out, "# commits before version 10 were removed by log cleanup") {
		t.Errorf("history text has no cleanup note:\n%s", out)
	}
	mustRun(t, "log", tbl, "-o", "json")
	// Only the checkpoint is left: log and history still exit 0 and say so.
	if err := os.Remove(filepath.Join(logDir, commitName(10))); err != nil {
		t.Fatal(err)
	}
	var lv LogView
	if err := json.Unmarshal([]byte(mustRun(t, "log", tbl, "-o", "json")), &lv); err != nil {
		t.Fatal(err)
	}
	if lv.Version != 10 || !lv.Cleaned || len(lv.Actions) != 0 || !strings.Contains(lv.Note, "removed by log cleanup") {
		t.Errorf("log of a checkpoint-only log: %+v", lv)
	}
	h = historyOf(t, tbl)
	if len(h.Commits) != 0 || !h.Cleaned || h.OldestCommit != -1 {
		t.Errorf("history of a checkpoint-only log: %+v", h)
	}
	if out := mustRun(t, "history", tbl); !strings.Contains(out, "no commit file is left") {
		t.Errorf("history text:\n%s", out)
	}
	// An explicit --version of a cleaned commit is still an error.
	if _, errs, code := runCLI(t, "log", tbl, "--version", "3"); code != 1 {
		t.Errorf("log --version 3: exit %d: %s", code, errs)
	}
}

func commitName(v int) string { return fmt.Sprintf("%020d.json", v) }

// TestHistoryLogCorruptCommit: history and log of a table with one commit
// file damaged show the readable commits, report the damaged one in place
// (its file and the reason), and exit 1 at the end; snapshot keeps refusing
// the table.
func TestHistoryLogCorruptCommit(t *testing.T) {
	const bad = "_delta_log/00000000000000000002.json"
	for _, tc := range []struct {
		name, content string
		reason        string // in the reason reported for version 2
	}{
		{"garbage", "garbage\n", "not a JSON object"},
		{"truncated", `{"commitInfo":{"operation":"WR`, "truncated"},
		{"empty", "", ""},
		{"wrong JSON kind", `{"add":5}` + "\n", "field add is a JSON number, want an object"},
		{"binary", "\x00\x01\xff", "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := fourVersionTable(t)
			if err := os.WriteFile(filepath.Join(tbl, bad), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			// history -o json: versions 3, 2 (in place, with file and
			// reason), 1, 0, and the reason the table does not load.
			out, errs, code := runCLI(t, "history", tbl, "-o", "json")
			if code != 1 || !strings.Contains(errs, "commit(s) 2 cannot be read") {
				t.Fatalf("history: exit %d, stderr %q", code, errs)
			}
			var h struct {
				Commits []struct {
					Version     int64
					Operation   string
					File, Error string
				}
				LoadError string
			}
			if err := json.Unmarshal([]byte(out), &h); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var got []string
			for _, c := range h.Commits {
				got = append(got, fmt.Sprintf("%d %s %s", c.Version, c.Operation, c.File))
				if (c.Version == 2) != (c.Error != "") || c.Version == 2 && (!strings.Contains(c.Error, tc.reason) || !strings.Contains(c.Error, bad)) {
					t.Errorf("v%d error %q, want one naming %s and %q only for v2", c.Version, c.Error, bad, tc.reason)
				}
			}
			want := []string{"3 WRITE ", "2  " + bad, "1 WRITE ", "0 CREATE TABLE "}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("history commits %q, want %q", got, want)
			}
			if !strings.Contains(h.LoadError, bad) {
				t.Errorf("loadError %q does not name %s", h.LoadError, bad)
			}
			// Text history: the damaged commit in place.
			out, _, code = runCLI(t, "history", tbl)
			if code != 1 || !regexp.MustCompile(`(?m)^2 .*UNREADABLE.*`+regexp.QuoteMeta(bad)).MatchString(out) || !strings.Contains(out, "\n1 ") {
				t.Errorf("history text: exit %d\n%s", code, out)
			}
			// --limit counts the damaged commit.
			out, _, _ = runCLI(t, "history", tbl, "-o", "json", "--limit", "2")
			if err := json.Unmarshal([]byte(out), &h); err != nil || len(h.Commits) != 2 || h.Commits[1].Version != 2 {
				t.Errorf("history --limit 2: %v %+v", err, h.Commits)
			}
			// log (latest): commit 3, then exit 1 naming the bad file.
			out, errs, code = runCLI(t, "log", tbl, "-o", "json")
			var lv struct{ Version int64 }
			if err := json.Unmarshal([]byte(out), &lv); err != nil || lv.Version != 3 || code != 1 || !strings.Contains(errs, bad) {
				t.Errorf("log: version %d (%v), exit %d, stderr %q", lv.Version, err, code, errs)
			}
			// log --version 2: the file and the reason.
			_, errs, code = runCLI(t, "log", tbl, "--version", "2")
			if code != 1 || !strings.Contains(errs, bad) || !strings.Contains(errs, tc.reason) {
				t.Errorf("log --version 2: exit %d, stderr %q", code, errs)
			}
			// log --version 1 is readable.
			mustRun(t, "log", tbl, "--version", "1")
			// snapshot still refuses the table.
			if _, errs, code := runCLI(t, "snapshot", tbl); code != 1 || !strings.Contains(errs, bad) {
				t.Errorf("snapshot: exit %d, stderr %q", code, errs)
			}
		})
	}
}

// TestHistoryCorruptCommitBelowCheckpoint: a table that loads from a
// checkpoint past a damaged commit file still gets its history, with the
// damaged commit in place and exit 1 (and no load error).
func TestHistoryCorruptCommitBelowCheckpoint(t *testing.T) {
	tbl := fourVersionTable(t)
	mustRun(t, "checkpoint", tbl)
	if err := os.WriteFile(filepath.Join(tbl, "_delta_log/00000000000000000001.json"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "snapshot", tbl) // loads from the checkpoint of version 3
	out, errs, code := runCLI(t, "history", tbl, "-o", "json")
	var h struct {
		Commits []struct {
			Version int64
			Error   string
		}
		LoadError string
	}
	if err := json.Unmarshal([]byte(out), &h); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got []string
	for _, c := range h.Commits {
		got = append(got, fmt.Sprintf("%d:%t", c.Version, c.Error != ""))
	}
	if want := "3:false 2:false 1:true 0:false"; strings.Join(got, " ") != want || code != 1 || h.LoadError != "" ||
		!strings.Contains(errs, "commit(s) 1 cannot be read") {
		t.Errorf("history: %v (want %s), loadError %q, exit %d, stderr %q", got, want, h.LoadError, code, errs)
	}
}
