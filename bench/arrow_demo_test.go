package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// writeDemoLike writes fs to a Parquet file in t's temp directory as
// Polars writes the demo's flights-3m.parquet (the Flight schema) and
// returns its path.
func writeDemoLike(t *testing.T, fs []Flight) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "flights-3m.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[Flight](f, parquet.Compression(&parquet.Zstd))
	if _, err := w.Write(fs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// demoFlights is 12,000 of GenerateFlights' rows (delays up to about 160)
// with every 500th of rows 3,000-5,999 a flight from SFO delayed 301+
// minutes: 6 rows of p8Selective, all in the second quarter.
func demoFlights() []Flight {
	fs, _ := GenerateFlights(0, 12_000)
	for i := 3_000; i < 6_000; i += 500 {
		fs[i].Origin, fs[i].Delay = "SFO", 301+int64(i%7)
	}
	return fs
}

// TestP8Input checks P8's choice of rows: the demo file's rows, in order,
// in full mode when there is one; GenerateFlights' otherwise; and a clear
// error for a demo file not sorted by date.
func TestP8Input(t *testing.T) {
	fs := demoFlights()
	path := writeDemoLike(t, fs)
	in, err := p8Input(Config{Mode: "full", ArrowRows: 99}, path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.fs, fs) || len(in.rows) != len(fs) || in.sel != p8Selective {
		t.Fatalf("full mode with a demo file: %d flights, %d rows, filter %v; want the file's %d, %v", len(in.fs), len(in.rows), in.sel, len(fs), p8Selective)
	}
	if !reflect.DeepEqual(in.rows[7], fs[7].row()) || !strings.Contains(in.what, "demo's flights-3m.parquet (12,000 rows") {
		t.Fatalf("row 7 %v, setup %q", in.rows[7], in.what)
	}
	// Synthetic rows: GenerateFlights' with rows 0, 33, 66, ... delayed
	// 301, 302, 303, ... minutes; the filter keeps those from SFO.
	for _, c := range []struct {
		mode, demo string
		n          int
	}{{"quick", path, 99}, {"full", "", 99}, {"quick", "", 200_000}} {
		in, err := p8Input(Config{Mode: c.mode, ArrowRows: c.n}, c.demo)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := GenerateFlights(0, c.n)
		late, matches := 0, 0
		for i := range want {
			if i%33 == 0 {
				want[i].Delay = 301 + int64(i/33%300)
				late++
				if want[i].Origin == "SFO" {
					matches++
				}
			}
		}
		if !reflect.DeepEqual(in.fs, want) || in.sel != p8Selective || !strings.Contains(in.what, "synthetic") {
			t.Fatalf("mode %s demo %q: %d flights, filter %v, setup %q; want %d generated, %v", c.mode, c.demo, len(in.fs), in.sel, in.what, c.n, p8Selective)
		}
		got := 0
		for i, r := range in.rows {
			if !reflect.DeepEqual(r, in.fs[i].row()) {
				t.Fatalf("row %d %v, flight %v", i, r, in.fs[i])
			}
			if in.fs[i].Delay > p8Selective.minDelay && in.fs[i].Origin == p8Selective.origin {
				got++
			}
		}
		if got != matches || c.n == 200_000 && (matches < 50 || late != 6061) {
			t.Errorf("%d rows: %d match %v, want %d (of %d late rows)", c.n, got, p8Selective, matches, late)
		}
	}
	fs[100].Date = fs[0].Date - 1
	if _, err := p8Input(Config{Mode: "full"}, writeDemoLike(t, fs)); err == nil || !strings.Contains(err.Error(), "not sorted by date (row 100)") {
		t.Fatalf("unsorted demo file: err %v", err)
	}
}

// TestP8DemoFigure runs P8 in full mode on a small demo-like file: the
// 4-file table and the 1-file table optimized from it, the demo's filter
// (checked against delta-rs when there is a Python), files and row groups
// skipped reported. It asserts no timing.
func TestP8DemoFigure(t *testing.T) {
	t.Setenv("DELTAKIT_FLIGHTS_PARQUET", writeDemoLike(t, demoFlights()))
	env := &Env{TempDir: t.TempDir()}
	if wd, err := os.Getwd(); err == nil {
		env.Python = FindPython(wd)
	}
	fig, err := ArrowFigure(t.Context(), env, Config{Mode: "full", ArrowRows: 5, ArrowFiles: 4, ArrowReps: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range fig.Metrics {
		got[m.Name] = m.Value
	}
	// The 6 rows are all in the second of the 3,000-row files.
	if got["selective_rows"] != 6 || got["selective_files_skipped"] != 3 {
		t.Fatalf("selective: %v rows, %v files skipped; want 6, 3 (metrics %v)", got["selective_rows"], got["selective_files_skipped"], got)
	}
	if _, ok := got["deltars_selective"]; (!ok || got["selective_vs_deltars"] <= 0) && env.Python != "" {
		t.Errorf("no delta-rs selective time and ratio with Python %s: metrics %v, notes %q", env.Python, got, fig.Notes)
	}
	for _, want := range []string{"the demo's flights-3m.parquet (12,000 rows", "4 commits of 3,000 rows", `"delay > 300 AND origin = 'SFO'"`} {
		if !strings.Contains(fig.Setup, want) {
			t.Errorf("setup %q: want %q", fig.Setup, want)
		}
	}
	if !strings.Contains(strings.Join(fig.Notes, "\n"), "1-file table after optimize: 1 file(s)") {
		t.Errorf("notes %q: want the optimized table's 1 file", fig.Notes)
	}
}
