package bench

import (
	"bytes"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestArrowScanChild runs P8's memory child body in this process on a
// small wide table and checks its one report line: the rows and batches it
// scanned and the usage keys the parent reads.
func TestArrowScanChild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wide")
	if _, err := writeWideTable(t.Context(), dir, 3_000, 1_000); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ArrowScanChild(t.Context(), dir, &out); err != nil {
		t.Fatal(err)
	}
	rest, ok := strings.CutPrefix(out.String(), arrowLinePrefix)
	if !ok || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("output %q: want one line starting %q", out.String(), arrowLinePrefix)
	}
	var r arrowChildReport
	if err := json.Unmarshal([]byte(rest), &r); err != nil {
		t.Fatal(err)
	}
	if r.Rows != 3_000 || r.Batches < 3 || r.PeakRSSKB <= 0 || r.BaselineRSSKB <= 0 || r.PeakRSSKB < r.BaselineRSSKB || r.Seconds <= 0 {
		t.Fatalf("report %+v: want 3000 rows in >= 3 batches, peak >= baseline > 0, seconds > 0", r)
	}
	var keys map[string]any
	if err := json.Unmarshal([]byte(rest), &keys); err != nil {
		t.Fatal(err)
	}
	want := []string{"baseline_rss_kb", "batches", "cpu_seconds", "peak_rss_kb", "rows", "seconds"}
	if got := slices.Sorted(maps.Keys(keys)); !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}
