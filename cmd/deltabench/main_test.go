package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/bench"
)

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0.00", 0.0123: "0.012", 1.156: "1.16", 123.45: "123.5", 1234567: "1,234,567", -20000: "-20,000",
	} {
		if got := formatValue(v); got != want {
			t.Errorf("formatValue(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-o", "xml"}, {"--only", "P99"}, {"extra"}, {"--nope"}} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != 2 {
			t.Errorf("run(%q) = %d, want 2 (stderr %q)", args, code, errOut.String())
		}
	}
}

func TestOutputs(t *testing.T) {
	met, yes := false, true
	rep := &bench.Report{Schema: 1, Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Mode: "quick",
		Figures: []*bench.Figure{{ID: "P2", Title: "append", Setup: "setup", Notes: []string{"a note"},
			Metrics: []*bench.Metric{{Name: "ratio", Value: 1.96, Unit: "x", Goal: "<= 1.1", Met: &met},
				{Name: "rows_per_s", Value: 499185, Unit: "rows/s"},
				{Name: "peak_rss", Value: 250.5, Unit: "MiB", Goal: "<= 400", Met: &yes},
				{Name: "lost", Value: 0, Unit: "count"}, {Name: "files", Value: 1_000_000, Unit: "count"}}}}}
	var tb bytes.Buffer
	if err := (tableOutput{&tb}).Report(rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"P2 append", "ratio", "1.96 x", "goal <= 1.1: MISSED", "499,185 rows/s", "note: a note",
		"250.5 MiB     goal <= 400 MiB: met", " 0 count", "1,000,000 count"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table output lacks %q:\n%s", want, tb.String())
		}
	}
	var jb bytes.Buffer
	if err := (jsonOutput{&jb}).Report(rep); err != nil {
		t.Fatal(err)
	}
	var back bench.Report
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if m := back.Figures[0].Metric("ratio"); m == nil || m.Value != 1.96 || m.Met == nil || *m.Met {
		t.Errorf("JSON round trip: %s", jb.String())
	}
}

// TestHelpExitsZero: -h prints the usage and is not an error.
func TestHelpExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "usage: deltabench") {
		t.Errorf("-h: exit %d, stderr %q", code, errOut.String())
	}
	if code := run(context.Background(), []string{"--no-such-flag"}, &out, &errOut); code != 2 {
		t.Errorf("a bad flag: exit %d, want 2", code)
	}
}

type fakeServer struct{ closed *int }

func (f *fakeServer) Close() error { *f.closed++; return nil }

// TestStartOne checks that a started server's Close is kept for stop and
// that one that does not start is reported, skipped (nil) outside CI and
// fails under CI=true.
func TestStartOne(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ci       string
		startErr error
		wantFail bool
		wantOut  string
	}{
		{"started", "", nil, false, ""},
		{"skipped", "", errors.New("no minio"), false, "deltabench: no minio; the X figures are skipped\n"},
		{"ci", "true", errors.New("no minio"), true, "deltabench: no minio (CI=true, so this fails; scripts/test.sh runs install.sh)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			closed := 0
			var gotDir string
			start := func(_ context.Context, dir string) (*fakeServer, error) {
				gotDir = dir
				if tc.startErr != nil {
					return nil, tc.startErr
				}
				return &fakeServer{closed: &closed}, nil
			}
			var stderr bytes.Buffer
			var closers []func() error
			s, fail := startOne(t.Context(), "/tmp/d", &stderr, &closers, start, "install.sh", "the X figures are skipped")
			if gotDir != "/tmp/d" || fail != tc.wantFail || stderr.String() != tc.wantOut {
				t.Fatalf("dir %q fail %v stderr %q; want /tmp/d, %v, %q", gotDir, fail, stderr.String(), tc.wantFail, tc.wantOut)
			}
			started := tc.startErr == nil
			if (s != nil) != started || (len(closers) == 1) != started || len(closers) > 1 {
				t.Fatalf("server %v, %d closers; want started=%v", s, len(closers), started)
			}
			for _, c := range closers {
				c()
			}
			if closed != len(closers) {
				t.Fatalf("closed %d times, want %d", closed, len(closers))
			}
		})
	}
}
