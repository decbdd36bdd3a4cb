package testsupport

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("RepoRoot() = %s, which has no go.mod: %v", root, err)
	}
	if wd, _ := os.Getwd(); filepath.Join(root, "internal", "testsupport") != wd {
		t.Errorf("RepoRoot() = %s from %s", root, wd)
	}
}

func TestLookupCorpus(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(CorpusEnv, dir)
	if got, err := LookupCorpus(); err != nil || got != dir {
		t.Errorf("LookupCorpus() = %q, %v; want %q", got, err, dir)
	}
	if got := CorpusTables(t, dir); len(got) != 0 {
		t.Errorf("CorpusTables of an empty folder = %v", got)
	}
	missing := filepath.Join(dir, "missing")
	t.Setenv(CorpusEnv, missing)
	if got, err := LookupCorpus(); !errors.Is(err, os.ErrNotExist) || got != missing {
		t.Errorf("LookupCorpus() = %q, %v; want %q and ErrNotExist", got, err, missing)
	}
}

func TestCorpusTables(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a": `{"table": "x", "expect": "read", "latest_version": 3}`,
		"b": `{"root": "sub", "expect": "refuse"}`,
	} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "expected.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "no-expectations"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := CorpusTables(t, dir)
	if len(got) != 2 || got[0].Table != "a" || got[0].Root != "." || got[0].LatestVersion != 3 ||
		got[1].Table != "b" || got[1].Root != "sub" || got[1].Expect != "refuse" {
		t.Errorf("CorpusTables = %+v", got)
	}
}

// TestSparkBatchAnswer decodes a batch answer as spark_oracle.py writes it:
// each result as Do would return it, a refused request as a *SparkError.
func TestSparkBatchAnswer(t *testing.T) {
	a, err := decodeAnswer([]byte(`{"ok": true, "results": [{"ok": true, "schema": [{"name": "id", "type": "bigint", "nullable": false}], "rows": [[1], [20]]},` +
		` {"ok": false, "error": "no table", "condition": "DELTA_MISSING_DELTA_TABLE"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.result(); err != nil || len(a.Results) != 2 {
		t.Fatalf("batch answer: %v, %d results", err, len(a.Results))
	}
	first, err := decodeAnswer(a.Results[0])
	if err != nil {
		t.Fatal(err)
	}
	res, err := first.result()
	if err != nil || len(res.Rows) != 2 || res.Rows[1][0] != json.Number("20") || res.Schema[0].Type != "bigint" {
		t.Errorf("first result %+v, %v", res, err)
	}
	second, err := decodeAnswer(a.Results[1])
	if err != nil {
		t.Fatal(err)
	}
	var se *SparkError
	if _, err := second.result(); !errors.As(err, &se) || se.Condition != "DELTA_MISSING_DELTA_TABLE" {
		t.Errorf("second result: %v, want a SparkError DELTA_MISSING_DELTA_TABLE", err)
	}
}
