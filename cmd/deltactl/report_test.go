package main

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"maps"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
)

// demoTable builds, through deltactl, a small table with the demo's story:
// flights streamed as epochs with a restart that replays two epochs, a
// late-corrections MERGE by key, a DELETE with deletion vectors and an
// UPDATE; partitioned by origin so that every plot of the report has data.
// It returns the table's path.
func demoTable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	origins := []string{"SFO", "LAX", "SEA", "JFK", "ORD"}
	var flights, fixes strings.Builder
	for i := range 600 {
		o := origins[i%5]
		if i%7 == 0 {
			o = "SFO" // a larger partition: skew
		}
		fmt.Fprintf(&flights, `{"id":%d,"date":"2024-01-%02dT%02d:00:00","delay":%d,"origin":%q}`+"\n", i, 1+i%28, i%24, (i*37)%130-10, o)
		if i%40 == 0 {
			fmt.Fprintf(&fixes, `{"id":%d,"date":"2024-01-01T00:00:00","delay":0,"origin":%q}`+"\n", i, o)
		}
	}
	in, fix := filepath.Join(dir, "flights.ndjson"), filepath.Join(dir, "fixes.ndjson")
	for p, s := range map[string]string{in: flights.String(), fix: fixes.String()} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tbl := filepath.Join(dir, "flights")
	mustRun(t, "create", tbl, "--schema", "id long, date timestamp_ntz, delay long, origin string", "--partition-by", "origin",
		"--property", "delta.enableDeletionVectors=true")
	mustRun(t, "ingest", in, tbl, "--epoch-rows", "100", "--query-id", "flights-demo", "--max-epochs", "3")
	mustRun(t, "ingest", in, tbl, "--epoch-rows", "100", "--query-id", "flights-demo", "--from-epoch", "1")
	mustRun(t, "merge", tbl, "--source", fix, "--on", "id")
	mustRun(t, "delete", tbl, "--where", "delay > 100")
	mustRun(t, "update", tbl, "--set", "delay = delay + 1", "--where", "origin = 'SEA' AND delay < 0")
	return tbl
}

// filesFacts is what deltactl files -o json says about a table, summed the
// way the report sums it.
type filesFacts struct {
	files, dvFiles, overFivePct int
	bytes, rows, deletedRows    int64
	// byPartition: Hive-style name ("origin=SFO") -> files, bytes, rows;
	// empty for a table without partition columns. bySize: power-of-two
	// bucket floor -> files.
	byPartition map[string][3]int64
	bySize      map[int64]int
}

func filesOf(t *testing.T, tbl string) filesFacts {
	t.Helper()
	var snap SnapshotView
	if err := json.Unmarshal([]byte(mustRun(t, "snapshot", tbl, "-o", "json")), &snap); err != nil {
		t.Fatal(err)
	}
	var v FilesView
	if err := json.Unmarshal([]byte(mustRun(t, "files", tbl, "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	ff := filesFacts{byPartition: map[string][3]int64{}, bySize: map[int64]int{}}
	for _, f := range v.Files {
		ff.files++
		ff.bytes += f.Size
		if f.Rows == nil {
			t.Fatalf("file %s has no row count", f.Path)
		}
		ff.rows += *f.Rows
		ff.deletedRows += f.DeletedRows
		if f.DeletedRows > 0 {
			ff.dvFiles++
			if float64(f.DeletedRows) > 0.05*float64(*f.Rows) {
				ff.overFivePct++
			}
		}
		if len(snap.PartitionColumns) > 0 {
			var name []string
			for _, c := range snap.PartitionColumns {
				val := "__HIVE_DEFAULT_PARTITION__"
				if p := f.PartitionValues[c]; p != nil {
					val = *p
				}
				name = append(name, c+"="+val)
			}
			k := strings.Join(name, "/")
			p := ff.byPartition[k]
			ff.byPartition[k] = [3]int64{p[0] + 1, p[1] + f.Size, p[2] + *f.Rows}
		}
		floor := int64(0)
		if f.Size > 0 {
			floor = 1 << (bits.Len64(uint64(f.Size)) - 1)
		}
		ff.bySize[floor]++
	}
	return ff
}

// TestReportMatchesFiles: the report's numbers are those of deltactl files
// and history, in JSON and in text.
func TestReportMatchesFiles(t *testing.T) {
	tbl := demoTable(t)
	ff := filesOf(t, tbl)
	var r ReportView
	if err := json.Unmarshal([]byte(mustRun(t, "report", tbl, "-o", "json")), &r); err != nil {
		t.Fatal(err)
	}
	if r.Files.Count != ff.files || r.Files.Bytes != ff.bytes || r.Files.Rows != ff.rows || r.Files.DeletedRows != ff.deletedRows || r.Files.SmallFiles != ff.files {
		t.Errorf("report files %+v, deltactl files: %d files, %d bytes, %d rows, %d deleted", r.Files, ff.files, ff.bytes, ff.rows, ff.deletedRows)
	}
	gotSize := map[int64]int{}
	for _, b := range r.SizeHistogram {
		if b.Files > 0 {
			gotSize[b.Min] = b.Files
		}
	}
	if !maps.Equal(gotSize, ff.bySize) {
		t.Errorf("size histogram %v, want %v", gotSize, ff.bySize)
	}
	gotPart := map[string][3]int64{}
	for _, p := range r.Partitions.Top {
		gotPart[p.Name] = [3]int64{int64(p.Files), p.Bytes, p.Rows}
	}
	if r.Partitions.Count != len(ff.byPartition) || !maps.Equal(gotPart, ff.byPartition) {
		t.Errorf("partitions %d %v, want %v", r.Partitions.Count, gotPart, ff.byPartition)
	}
	if d := r.DeletionVectors; d.Files != ff.dvFiles || d.DeletedRows != ff.deletedRows || d.OverThreshold != ff.overFivePct || ff.dvFiles == 0 {
		t.Errorf("deletion vectors %+v, want %d files, %d over 5%%", d, ff.dvFiles, ff.overFivePct)
	}

	var h HistoryView
	if err := json.Unmarshal([]byte(mustRun(t, "history", tbl, "-o", "json")), &h); err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, c := range h.Commits {
		ops[c.Operation]++
	}
	gotOps := map[string]int{}
	for _, o := range r.Commits.Operations {
		gotOps[o.Operation] = o.Commits
	}
	hourSum := 0
	for _, hr := range r.Commits.Hours {
		hourSum += hr.Commits
	}
	if r.Commits.Read != len(h.Commits) || hourSum != len(h.Commits) || !maps.Equal(gotOps, ops) {
		t.Errorf("commits %+v, history has %d commits %v", r.Commits, len(h.Commits), ops)
	}
	// 6 streaming epochs, then MERGE, DELETE, UPDATE: version 9, and no
	// checkpoint yet (the first is due at version 10).
	if r.Version != 9 || r.Log.CheckpointVersion != -1 || r.Log.CommitsSinceCheckpoint != 10 || r.Settings.CheckpointInterval != 10 {
		t.Errorf("version %d, log %+v", r.Version, r.Log)
	}
	if len(r.Recommendations) != 1 || r.Recommendations[0].Action != "optimize" || r.Recommendations[0].Command != "deltactl optimize file://"+tbl {
		t.Errorf("recommendations %+v", r.Recommendations)
	}

	text := mustRun(t, "report", tbl)
	for _, want := range []string{
		fmt.Sprintf("files: %d, ", ff.files),
		fmt.Sprintf("(%d bytes), %d rows, %d deleted by deletion vectors", ff.bytes, ff.rows, ff.deletedRows),
		fmt.Sprintf("partitions: %d by origin", len(ff.byPartition)),
		fmt.Sprintf("deletion vectors: %d file(s), %d row(s) deleted; %d file(s)", ff.dvFiles, ff.deletedRows, ff.overFivePct),
		fmt.Sprintf("commits: %d read (versions 0-9)", len(h.Commits)),
		"log: no checkpoint, 10 commit(s) since (delta.checkpointInterval 10)",
		"recommendations:\n  deltactl optimize file://" + tbl + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", tbl, "--target-size", "big"}, "--target-size"},
		{[]string{"report", tbl, "--history", "-1"}, "--history must be >= 0"},
	} {
		if _, errs, code := runCLI(t, tc.args...); code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q", tc.args, code, errs)
		}
	}
}

// TestReportHTMLInBrowser renders deltactl report --html of the demo's
// table in headless Chromium: the screenshot is not blank, every plot has
// bars in its colour, and the numbers in the page are deltactl files'.
// (TestDemo checks the report of the demo's own table the same way.)
func TestReportHTMLInBrowser(t *testing.T) {
	browser := findChromium(t)
	tbl := demoTable(t)
	page := filepath.Join(t.TempDir(), "report.html")
	out := mustRun(t, "report", tbl, "--html", page)
	if !strings.Contains(out, "# HTML report written to "+page) {
		t.Errorf("report output lacks the HTML file:\n%s", out)
	}
	checkReportPage(t, browser, page, tbl, map[string]string{"file sizes": colorSmallBar, "bytes per partition": colorPartBytes,
		"rows per partition": colorPartRows, "deletion-vector share": colorDVOver, "commits per hour": opColors[0]})
}

// checkReportPage checks the HTML report page of the table tbl: it is
// self-contained, its numbers and the values of its bars are those of
// deltactl files, and its screenshot in browser is not blank and shows the
// bars of each plot in its colour.
func checkReportPage(t *testing.T, browser, page, tbl string, plots map[string]string) {
	t.Helper()
	ff := filesOf(t, tbl)
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	// Self-contained: nothing to fetch, no script.
	for _, bad := range []string{"http://", "https://", "<script", "<link", "<img", "@import", "url("} {
		if strings.Contains(html, bad) {
			t.Errorf("the HTML report holds %q", bad)
		}
	}
	for id, want := range map[string]int64{"numFiles": int64(ff.files), "numBytes": ff.bytes, "numRows": ff.rows, "deletedRows": ff.deletedRows,
		"numPartitions": int64(len(ff.byPartition)), "dvFiles": int64(ff.dvFiles)} {
		m := regexp.MustCompile(`id="` + id + `" data-value="(-?\d+)"`).FindStringSubmatch(html)
		if m == nil || m[1] != strconv.FormatInt(want, 10) {
			t.Errorf("%s in the page: %v, deltactl files says %d", id, m, want)
		}
	}
	// The bars of the file-size plot add up to the files, those of the
	// partitions plot (when partitioned) to the bytes and rows.
	sums := map[string]int64{}
	want := map[string]int64{"plot-sizes": int64(ff.files)}
	svgs := []string{"plot-sizes"}
	if len(ff.byPartition) > 0 {
		svgs = append(svgs, "plot-partitions")
		want["plot-partitions "+colorPartBytes], want["plot-partitions "+colorPartRows] = ff.bytes, ff.rows
	}
	for _, plot := range svgs {
		i := strings.Index(html, `<svg id="`+plot+`"`)
		if i < 0 {
			t.Fatalf("no %s in the page", plot)
		}
		svg := html[i : i+strings.Index(html[i:], "</svg>")]
		for _, m := range regexp.MustCompile(`fill="(#[0-9a-f]{6})" data-value="(\d+)"`).FindAllStringSubmatch(svg, -1) {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			k := plot + " " + m[1]
			if plot == "plot-sizes" {
				k = plot // small and large files alike
			}
			sums[k] += n
		}
	}
	if !maps.Equal(sums, want) {
		t.Errorf("plot bars sum to %v, want %v", sums, want)
	}

	shot := screenshot(t, browser, page)
	if err := checkPicture(shot, plots); err != nil {
		t.Error(err)
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "deltactl-report-test.png")
		if f, err := os.Create(keep); err == nil {
			png.Encode(f, shot)
			f.Close()
			t.Logf("screenshot kept in %s", keep)
		}
	}
}

// TestCheckPicture: the screenshot check fails on a blank page and on a
// page whose plots lack one colour.
func TestCheckPicture(t *testing.T) {
	blank := image.NewRGBA(image.Rect(0, 0, 400, 300))
	for i := range blank.Pix {
		blank.Pix[i] = 0xff
	}
	plots := map[string]string{"a": colorSmallBar, "b": colorPartBytes}
	if err := checkPicture(blank, plots); err == nil || !strings.Contains(err.Error(), "blank") {
		t.Errorf("blank page: %v", err)
	}
	drawn := image.NewRGBA(blank.Rect)
	copy(drawn.Pix, blank.Pix)
	fill := func(x0, y0, x1, y1 int, hex string) {
		c := parseHex(hex)
		for y := y0; y < y1; y++ {
			for x := x0; x < x1; x++ {
				drawn.Set(x, y, c)
			}
		}
	}
	fill(0, 0, 400, 150, "#333333")
	fill(0, 150, 100, 200, colorSmallBar)
	if err := checkPicture(drawn, plots); err == nil || !strings.Contains(err.Error(), "b (") {
		t.Errorf("a page without plot b: %v", err)
	}
	fill(100, 150, 200, 200, colorPartBytes)
	if err := checkPicture(drawn, plots); err != nil {
		t.Errorf("a page with both plots: %v", err)
	}
}

// Thresholds of checkPicture: a rendered report covers far more than
// minInk pixels; a plot's bars more than minPlot pixels of its colour (a
// legend swatch is 100).
const (
	minInk  = 20000
	minPlot = 500
)

// checkPicture returns an error when img is blank (fewer than minInk
// pixels differ from the page's white) or a plot's colour covers fewer
// than minPlot pixels.
func checkPicture(img image.Image, plots map[string]string) error {
	counts := map[color.RGBA]int{}
	ink := 0
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			counts[c]++
			if c != (color.RGBA{0xff, 0xff, 0xff, 0xff}) {
				ink++
			}
		}
	}
	if ink < minInk {
		return fmt.Errorf("the screenshot is blank: %d of %d pixels are not white, want at least %d", ink, r.Dx()*r.Dy(), minInk)
	}
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(plots)) {
		if n := counts[parseHex(plots[name])]; n < minPlot {
			missing = append(missing, fmt.Sprintf("%s (%s: %d pixels)", name, plots[name], n))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the screenshot lacks the bars of %s, want at least %d pixels each", strings.Join(missing, ", "), minPlot)
	}
	return nil
}

func parseHex(s string) color.RGBA {
	v, _ := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

// lookChromium returns the headless browser: $DELTAKIT_CHROMIUM, else
// chromium (Debian's, scripts/install-chromium.sh) or Chrome on the PATH;
// "" when there is none.
func lookChromium() string {
	if p := os.Getenv("DELTAKIT_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// noChromium says how to get a browser for the HTML report checks.
const noChromium = "no chromium for the HTML report check: scripts/install-chromium.sh installs it (apt-get install chromium), or set DELTAKIT_CHROMIUM"

// findChromium is lookChromium for a test that needs the browser: without
// one the test is skipped, or fails under CI=true.
func findChromium(t *testing.T) string {
	t.Helper()
	p := lookChromium()
	if p == "" {
		testsupport.Absent(t, noChromium)
	}
	return p
}

// screenshot renders page (a local file) in headless Chromium at 1200 ×
// 2000 and returns the picture.
func screenshot(t *testing.T, browser, page string) image.Image {
	t.Helper()
	dir := t.TempDir()
	png1 := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--force-color-profile=srgb",
		"--hide-scrollbars", "--user-data-dir="+filepath.Join(dir, "profile"), "--screenshot="+png1, "--window-size=1200,2000",
		"file://"+page)
	cmd.Env = append(os.Environ(), "HOME="+dir) // no writes to the user's profile
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, out)
	}
	f, err := os.Open(png1)
	if err != nil {
		t.Fatalf("%s wrote no screenshot: %v\n%s", browser, err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if r := img.Bounds(); r.Dx() != 1200 || r.Dy() != 2000 {
		t.Fatalf("screenshot is %v, want 1200x2000", r)
	}
	return img
}
