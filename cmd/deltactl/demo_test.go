package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
)

// TestDemo runs scripts/demo.sh end to end on a slice of the real data
// (200,000 flights in 4 epochs), as the README's first command does with
// all of it. It needs npm to fetch vega-datasets@3.2.1 once (cached in
// ~/.cache/deltakit/demo): without it the test fails in CI (CI=true) and is
// skipped elsewhere.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the demo takes about 20 s")
	}
	ci := os.Getenv("CI") == "true"
	for _, tool := range []string{"bash", "tar", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testsupport.Absent(t, "%s not found: the demo needs it", tool)
		}
	}
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "deltakit", "demo")
	if _, err := os.Stat(filepath.Join(cache, "flights-3m.parquet")); err != nil {
		if _, err := exec.LookPath("npm"); err != nil {
			testsupport.Absent(t, "npm not found: the demo fetches vega-datasets@3.2.1 with npm pack (apt-get install npm)")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "npm", "view", "vega-datasets@3.2.1", "version").CombinedOutput(); err != nil {
			testsupport.Absent(t, "npm cannot reach the registry (%v): %s", err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "demo.sh"))
	cmd.Env = append(os.Environ(), "DEMO_ROWS=200000", "DEMO_EPOCHS=8", "DEMO_DIR="+out)
	// As on a fresh clone, the demo's venv does not exist: demo.sh must run
	// scripts/install-interop.sh itself. When the interop venv is already
	// here, a python3 stand-in "creates" the fresh venv as a link to it, so
	// that the install needs no network; otherwise install-interop.sh
	// installs into the fresh venv with pip.
	if real := interopVenv(t); real != "" {
		stubs := stubPython(t, `if [ "$1" = -m ] && [ "$2" = venv ]; then ln -sfn "`+real+`" "$3"; exit 0; fi
exec "`+realPython3(t)+`" "$@"`)
		cmd.Env = append(cmd.Env, "PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"),
			"DELTAKIT_VENV="+filepath.Join(t.TempDir(), "fresh-venv"))
	}
	start := time.Now()
	b, err := cmd.CombinedOutput()
	text := string(b)
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, text)
	}
	t.Logf("demo.sh on 200,000 rows took %v", time.Since(start).Round(time.Second))
	for _, want := range []string{
		"epoch 0: committed as version 0 (25000 rows",
		"stopped by --max-epochs",
		// The restart replays from epoch 1: it skips 25,000 rows of the
		// file, inside its first row group.
		"epoch 1: skipped by the sink",
		"epoch 2: skipped by the sink",
		"epoch 7: committed as version 7 (25000 rows",
		"rows:              200000",
		"timestampNtz",
		"query flights-demo: exactly once; 8 commit(s), epochs 0-7",
		"8 file(s) (",
		"MiB) compacted into 1",
		"would delete 8 file(s)",
		"created file://" + out + "/weather: version 0, 1461 rows in 5 file(s)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if strings.Contains(text, "delta-rs check skipped") {
		if ci {
			t.Errorf("CI has no interop venv and demo.sh could not install it: %s", text[strings.Index(text, "read back with delta-rs"):])
		} else {
			t.Log("delta-rs read-back skipped: scripts/install-interop.sh failed (no network?)")
		}
	} else {
		for _, want := range []string{"200,000 rows (expected 200,000) ok", "1,461 rows (expected 1,461) ok"} {
			if !strings.Contains(text, want) {
				t.Errorf("delta-rs read-back lacks %q", want)
			}
		}
	}
	// The report of the streamed, compacted table: the page renders in
	// headless Chromium with deltactl files' numbers.
	page := filepath.Join(out, "flights-report.html")
	if !strings.Contains(text, "# HTML report written to "+page) {
		t.Errorf("demo output lacks the HTML report %s", page)
	} else if browser := lookChromium(); browser != "" {
		checkReportPage(t, browser, page, filepath.Join(out, "flights"), map[string]string{"file sizes": colorSmallBar, "commits per hour": opColors[0]})
	} else if ci {
		t.Error("CI=true: " + noChromium)
	} else {
		t.Log(noChromium + "; the demo's report page was not rendered")
	}
	if t.Failed() {
		t.Log(text)
	}
}

// TestDemoWithoutInterop: when scripts/install-interop.sh fails (no
// network), demo.sh says so and finishes without the delta-rs check.
func TestDemoWithoutInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the demo")
	}
	home, _ := os.UserHomeDir()
	if _, err := os.Stat(filepath.Join(home, ".cache", "deltakit", "demo", "flights-3m.parquet")); err != nil {
		testsupport.Absent(t, "no demo data in ~/.cache/deltakit/demo (TestDemo fetches it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", "scripts", "demo.sh"))
	stubs := stubPython(t, `echo "python3 stand-in: no network" >&2; exit 1`)
	cmd.Env = append(os.Environ(), "DEMO_ROWS=20000", "DEMO_EPOCHS=2", "DEMO_DIR="+t.TempDir(),
		"PATH="+stubs+string(os.PathListSeparator)+os.Getenv("PATH"), "DELTAKIT_VENV="+filepath.Join(t.TempDir(), "fresh-venv"))
	b, err := cmd.CombinedOutput()
	text := string(b)
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, text)
	}
	for _, want := range []string{"scripts/install-interop.sh failed", "delta-rs check skipped", "== done in"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q\n%s", want, text)
		}
	}
}

// interopVenv returns the interop venv ($DELTAKIT_VENV, else the repo's
// .venv) when its python imports deltalake, else "".
func interopVenv(t *testing.T) string {
	t.Helper()
	venv := os.Getenv("DELTAKIT_VENV")
	if venv == "" {
		venv, _ = filepath.Abs(filepath.Join("..", "..", ".venv"))
	}
	py := filepath.Join(venv, "bin", "python")
	// os._exit: deltalake sometimes aborts at interpreter exit.
	if err := exec.Command(py, "-c", "import os, sys, deltalake; sys.stdout.flush(); os._exit(0)").Run(); err != nil {
		return ""
	}
	return venv
}

func realPython3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		testsupport.Absent(t, "python3 not found")
	}
	return p
}

// stubPython returns a directory holding a python3 script with body.
func stubPython(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
