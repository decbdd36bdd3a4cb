// Package testsupport holds helpers that tests in several packages of this
// module share: where the conformance corpus is, and the python of the
// interop venv. Only tests import it.
package testsupport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// CorpusEnv names the environment variable that overrides the corpus folder.
const CorpusEnv = "DELTAKIT_CORPUS"

// VenvEnv names the environment variable that overrides the interop venv.
const VenvEnv = "DELTAKIT_VENV"

// RepoRoot returns the repository root: the nearest folder holding go.mod,
// starting at the working directory (a test's package folder).
func RepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod in %s or its parents", wd)
		}
	}
}

// LookupCorpus returns the absolute path of the conformance corpus folder,
// $DELTAKIT_CORPUS, else ../shared/corpus relative to the repository root,
// and an error when it cannot be found or read (wrapping os.ErrNotExist
// when it is absent). Use it where a missing corpus must not skip the test;
// CorpusDir otherwise.
func LookupCorpus() (string, error) {
	dir := os.Getenv(CorpusEnv)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "..", "shared", "corpus")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir, err
	}
	if _, err := os.Stat(abs); err != nil {
		return abs, err
	}
	return abs, nil
}

// Absent ends t because something a test needs is not there: a failure
// with CI=true (where .ci/run must have provided it), a skip with the
// message otherwise.
func Absent(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// CorpusDir returns the absolute path of the conformance corpus folder (see
// LookupCorpus). When the folder is absent it ends t with Absent (a failure
// under CI=true, a skip elsewhere); it fails t on any other error.
func CorpusDir(t testing.TB) string {
	t.Helper()
	dir, err := LookupCorpus()
	if errors.Is(err, os.ErrNotExist) {
		Absent(t, "corpus folder %s is absent; set %s", dir, CorpusEnv)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// CorpusExpected is a corpus table's expected.json: what reading the table
// must give.
type CorpusExpected struct {
	Table         string `json:"table"`  // the table's folder name under the corpus folder
	Root          string `json:"root"`   // the table's root inside its folder; "." when not given
	Expect        string `json:"expect"` // "read", "refuse" or "error"
	LatestVersion int64  `json:"latest_version"`
	Protocol      struct {
		MinReaderVersion int32    `json:"minReaderVersion"`
		MinWriterVersion int32    `json:"minWriterVersion"`
		ReaderFeatures   []string `json:"readerFeatures"`
		WriterFeatures   []string `json:"writerFeatures"`
	} `json:"protocol"`
	CheckpointVersions []int64          `json:"checkpoint_versions"`
	RowsLatest         *int64           `json:"rows_latest"`
	RowsSource         string           `json:"rows_latest_source"`
	RowsByVersion      map[string]int64 `json:"rows_by_version"`
}

// CorpusTables returns the expectations of every table of the corpus folder
// dir (from CorpusDir) that has an expected.json, in folder name order. It
// fails t when a folder or an expected.json cannot be read.
func CorpusTables(t testing.TB, dir string) []CorpusExpected {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []CorpusExpected
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "expected.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var exp CorpusExpected
		if err := json.Unmarshal(raw, &exp); err != nil {
			t.Fatalf("%s/expected.json: %v", e.Name(), err)
		}
		exp.Table = e.Name()
		if exp.Root == "" {
			exp.Root = "."
		}
		out = append(out, exp)
	}
	return out
}

// Python returns the absolute path of the interop venv's python (deltalake
// and pyarrow, installed by scripts/install-interop.sh): the venv is
// $DELTAKIT_VENV, else .venv in the repository root. When it is missing,
// Python fails t with CI=true and skips t with a hint otherwise.
func Python(t testing.TB) string {
	t.Helper()
	venv := os.Getenv(VenvEnv)
	if venv == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		venv = filepath.Join(root, ".venv")
	}
	py, err := filepath.Abs(filepath.Join(venv, "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		Absent(t, "interop venv %s absent (%v): run scripts/install-interop.sh", venv, err)
	}
	return py
}

// pythonTimeout bounds one RunPython call.
const pythonTimeout = 5 * time.Minute

// exitNow ends a script that ran to its end without the interpreter's
// teardown: native libraries (delta-rs's runtime) sometimes abort there
// ("terminate called without an active exception") after the output is
// complete, which would fail a correct run.
const exitNow = "\nimport os as _os, sys as _sys\n_sys.stdout.flush()\n_sys.stderr.flush()\n_os._exit(0)\n"

// RunPython runs script with python py (from Python) as `py -c script
// args...` and returns its standard output. It fails t, showing both
// outputs, when the script fails or runs longer than five minutes.
func RunPython(t testing.TB, py, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pythonTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", script + exitNow}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	return out
}
