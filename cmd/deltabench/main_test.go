package main

import (
	"bytes"
	"context"
	"encoding/json"
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
