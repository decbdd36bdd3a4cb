package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakit/deltakit/parquetio"
)

// S1 is issue 30's item 6, "files as small as other writers'": the bytes
// of the Parquet file deltakit writes for the demo's flights rows vs the
// bytes pyarrow's default writer (pq.write_table, row_group_size only)
// writes for the same rows at the same rows per row group, and the write
// CPU of deltakit's encoding defaults vs its previous ones (dictionary
// pages for strings only, numbers PLAIN).
//
//	deltakit  parquetio.NewWriter with its defaults and
//	          WithRowGroupRows(N), WriteColumns of the rows
//	previous  the same with WithDictionaryMode(DictionaryStrings)
//	pyarrow   pq.write_table(tbl, path, row_group_size=N) (pyarrow from
//	          the interop venv), timed inside Python
//
// Both deltakit writes run in this process on rows read before the clock
// starts; pyarrow reads deltakit's file back and must find the input's
// table in it.

// pyarrowFileSizeScript is the pyarrow side of S1.
//
//go:embed pyarrow_filesize.py
var pyarrowFileSizeScript string

// fileSizeGoalRows is the input size S1's goal is set for: all of
// flights-3m.parquet.
const fileSizeGoalRows = 3_000_000

// fileSizeSide is what one deltakit write of S1 measured.
type fileSizeSide struct {
	wall, cpu time.Duration
	bytes     int64
}

// FileSizeFigure measures S1: the bytes of deltakit's Parquet file of
// flights-3m.parquet's rows (Config.SizeRows of them; all when 0) at
// Config.SizeRowGroupRows rows a row group vs pyarrow's default writer,
// and the write CPU of deltakit's encoding defaults vs its previous ones,
// median of Config.SizeReps alternating writes. Without the demo file the
// figure is skipped (with CI=true it fails); without Env.Python the
// pyarrow side is.
func FileSizeFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "S1", Title: "file size: deltakit's Parquet bytes for the flights rows vs pyarrow's default writer (issue 30 item 6)"}
	src := FlightsParquet()
	if src == "" {
		const why = "no flights-3m.parquet ($DELTAKIT_FLIGHTS_PARQUET or ~/.cache/deltakit/demo; run scripts/fetch-demo-data.sh)"
		fig.Setup = "the demo's flights-3m.parquet written by deltakit and by pyarrow"
		if os.Getenv("CI") == "true" {
			return fig, errors.New("bench: S1: " + why + " (CI=true, so this fails)")
		}
		fig.Skipped = why
		return fig, nil
	}
	dir, err := os.MkdirTemp(env.TempDir, "s1-")
	if err != nil {
		return fig, err
	}
	defer os.RemoveAll(dir)
	// Both sides read the first rows of src itself, not a slice written by
	// parquet-go (as P12's ingestInput does): Flight's optional fields
	// make parquet-go write zero delays as nulls.
	md, err := localFooter(src)
	if err != nil {
		return fig, err
	}
	rows := md.NumRows
	if cfg.SizeRows > 0 && int64(cfg.SizeRows) < rows {
		rows = int64(cfg.SizeRows)
	}
	rgRows := int64(cfg.SizeRowGroupRows)
	if rgRows <= 0 {
		rgRows = 1_000_000
	}
	reps := max(cfg.SizeReps, 1)
	what := "all of flights-3m.parquet"
	if rows < md.NumRows {
		what = "the first " + groupDigits(int(rows)) + " rows of flights-3m.parquet"
	}
	fig.Setup = fmt.Sprintf("issue 30 item 6; input %s: %s rows, %s rows a row group (%d row groups), one file a side; "+
		"deltakit: parquetio.NewWriter defaults + WithRowGroupRows, WriteColumns; previous: the same with "+
		"WithDictionaryMode(DictionaryStrings) (the defaults before issue 30); pyarrow: pq.write_table(tbl, path, row_group_size=N); "+
		"write CPU median of %d alternating writes per deltakit side",
		what, groupDigits(int(rows)), groupDigits(int(rgRows)), (rows+rgRows-1)/rgRows, reps)
	cols, err := flightsColumns(src, rows)
	if err != nil {
		return fig, err
	}
	sides := []struct {
		name string
		opts []parquetio.WriteOption
		runs []fileSizeSide
	}{
		{name: "deltakit"},
		{name: "previous", opts: []parquetio.WriteOption{parquetio.WithDictionaryMode(parquetio.DictionaryStrings)}},
	}
	path := func(name string) string { return filepath.Join(dir, name+".parquet") }
	for rep := range reps {
		for k := range sides {
			s := &sides[(k+rep)%len(sides)] // alternate which side goes first
			r, err := writeFlightsFile(path(s.name), cols, int(rows), rgRows, s.opts)
			if err != nil {
				return fig, fmt.Errorf("bench: S1 %s: %w", s.name, err)
			}
			s.runs = append(s.runs, r)
			env.logf("S1: %s %v wall, %v CPU, %d bytes", s.name, r.wall.Round(time.Millisecond), r.cpu.Round(time.Millisecond), r.bytes)
			if err := ctx.Err(); err != nil {
				return fig, err
			}
		}
	}
	cols = nil
	var footers []*format.FileMetaData
	for _, s := range sides {
		md, err := localFooter(path(s.name))
		if err != nil {
			return fig, err
		}
		if md.NumRows != rows {
			return fig, fmt.Errorf("bench: S1 %s wrote %d rows, want %d", s.name, md.NumRows, rows)
		}
		footers = append(footers, md)
		wall, cpu := make([]time.Duration, len(s.runs)), make([]time.Duration, len(s.runs))
		for i, r := range s.runs {
			wall[i], cpu[i] = r.wall, r.cpu
		}
		fig.add(s.name+"_bytes", float64(s.runs[0].bytes), "bytes")
		fig.add(s.name+"_write", median(wall).Seconds(), "s")
		fig.add(s.name+"_write_cpu", median(cpu).Seconds(), "s")
	}
	fig.add("ratio_write_cpu_vs_previous", ratio(fig.cpuOf("deltakit"), fig.cpuOf("previous")), "x")
	fig.add("ratio_bytes_vs_previous", fig.Metric("deltakit_bytes").Value/fig.Metric("previous_bytes").Value, "x")
	fig.add("rows", float64(rows), "count")
	fig.add("row_groups", float64(len(footers[0].RowGroups)), "count")
	names := []string{"deltakit", "previous"}
	if env.Python == "" {
		fig.Skipped = "pyarrow side skipped: no Python venv with pyarrow ($DELTAKIT_VENV or <repo>/.venv; run scripts/install-interop.sh)"
	} else {
		pa, err := runPyarrowFileSize(ctx, env.Python, src, rows, rgRows, path("pyarrow"), path("deltakit"))
		if err != nil {
			return fig, fmt.Errorf("bench: S1 pyarrow: %w", err)
		}
		if pa.Rows != rows {
			return fig, fmt.Errorf("bench: S1 pyarrow wrote %d rows, want %d", pa.Rows, rows)
		}
		if !pa.Same {
			return fig, fmt.Errorf("bench: S1: pyarrow does not read the input's rows from deltakit's file: %s", pa.Diff)
		}
		info, err := os.Stat(path("pyarrow"))
		if err != nil {
			return fig, err
		}
		pmd, err := localFooter(path("pyarrow"))
		if err != nil {
			return fig, err
		}
		footers = append(footers, pmd)
		names = append(names, "pyarrow")
		fig.add("pyarrow_bytes", float64(info.Size()), "bytes")
		fig.add("pyarrow_write", pa.Wall, "s")
		fig.add("pyarrow_write_cpu", pa.CPU, "s")
		m := fig.add("ratio_bytes_vs_pyarrow", fig.Metric("deltakit_bytes").Value/float64(info.Size()), "x")
		if rows >= fileSizeGoalRows && cfg.Mode == "full" {
			m.goal("<=", 1.05)
		} else {
			fig.note("ratio_bytes_vs_pyarrow: goal <= 1.05 applies in full mode to all 3,000,000 rows; this %s run writes %s, so no verdict", cfg.Mode, groupDigits(int(rows)))
		}
		fig.add("ratio_previous_bytes_vs_pyarrow", fig.Metric("previous_bytes").Value/float64(info.Size()), "x")
		fig.add("ratio_write_cpu_vs_pyarrow", fig.Metric("deltakit_write_cpu").Value/pa.CPU, "x")
		fig.note("pyarrow %s (Python), timed inside Python (time.process_time around pq.write_table, all threads; reading the input excluded); "+
			"it read deltakit's file back as the input's table", pa.Version)
	}
	for i, md := range footers {
		fig.note("%s: %s", names[i], columnBytes(md))
	}
	fig.note("deltakit_* and previous_* are written in this process (getrusage of the process) from columns read before the clock starts; " +
		"bytes are whole files, footer included")
	return fig, nil
}

// cpuOf returns the write CPU metric of side name as a duration.
func (f *Figure) cpuOf(name string) time.Duration {
	return time.Duration(f.Metric(name+"_write_cpu").Value * float64(time.Second))
}

// flightsColumns reads the first n rows of the flights file at path into
// the Columns of FlightsSchema (date as microseconds).
func flightsColumns(path string, n int64) ([]parquetio.Column, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := parquet.NewGenericReader[Flight](f)
	defer r.Close()
	cols := make([]parquetio.Column, 5)
	got, err := readFlights(r, n, func(b []Flight) error {
		for _, x := range b {
			cols[0].Int64 = append(cols[0].Int64, x.Date)
			cols[1].Int64 = append(cols[1].Int64, x.Delay)
			cols[2].Int64 = append(cols[2].Int64, x.Distance)
			cols[3].String = append(cols[3].String, x.Origin)
			cols[4].String = append(cols[4].String, x.Destination)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bench: S1: read %s: %w", path, err)
	}
	if got != n {
		return nil, fmt.Errorf("bench: S1: read %d rows of %s, want %d", got, path, n)
	}
	return cols, nil
}

// writeFlightsFile writes the n rows of cols to a new file at path with
// deltakit's writer (FlightsSchema, snappy, rgRows rows a row group, opts)
// and measures the write: wall, process CPU, the file's bytes.
func writeFlightsFile(path string, cols []parquetio.Column, n int, rgRows int64, opts []parquetio.WriteOption) (fileSizeSide, error) {
	var s fileSizeSide
	runtime.GC() // the previous side's garbage is not this side's CPU
	cpu0, t0 := cpuTime(), time.Now()
	f, err := os.Create(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	w, err := parquetio.NewWriter(f, FlightsSchema(), append([]parquetio.WriteOption{parquetio.WithRowGroupRows(rgRows)}, opts...)...)
	if err != nil {
		return s, err
	}
	const batch = 65536
	part := make([]parquetio.Column, len(cols))
	for start := 0; start < n; start += batch {
		end := min(n, start+batch)
		for j, c := range cols {
			part[j] = parquetio.Column{}
			if c.Int64 != nil {
				part[j].Int64 = c.Int64[start:end]
			} else {
				part[j].String = c.String[start:end]
			}
		}
		if err := w.WriteColumns(end-start, part); err != nil {
			return s, err
		}
	}
	if _, err := w.Close(); err != nil {
		return s, err
	}
	if err := f.Close(); err != nil {
		return s, err
	}
	s.wall, s.cpu = time.Since(t0), cpuTime()-cpu0
	info, err := os.Stat(path)
	if err != nil {
		return s, err
	}
	s.bytes = info.Size()
	return s, nil
}

// columnBytes describes md's column chunks: per column, the compressed
// bytes summed over row groups and the data page encodings.
func columnBytes(md *format.FileMetaData) string {
	type col struct {
		bytes int64
		encs  []string
	}
	var order []string
	by := map[string]*col{}
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			name := strings.Join(cc.MetaData.PathInSchema, ".")
			c := by[name]
			if c == nil {
				c = &col{}
				by[name] = c
				order = append(order, name)
			}
			c.bytes += cc.MetaData.TotalCompressedSize
			for _, e := range cc.MetaData.EncodingStats {
				if e.PageType == format.DictionaryPage || e.Count == 0 {
					continue
				}
				if es := e.Encoding.String(); !slices.Contains(c.encs, es) {
					c.encs = append(c.encs, es)
				}
			}
		}
	}
	parts := make([]string, len(order))
	for i, name := range order {
		c := by[name]
		encs := strings.Join(c.encs, "+")
		if encs == "" {
			encs = "?"
		}
		parts[i] = fmt.Sprintf("%s %s (%s)", name, groupDigits(int(c.bytes)), encs)
	}
	return fmt.Sprintf("%d row groups; column chunk bytes: %s", len(md.RowGroups), strings.Join(parts, ", "))
}

// pyarrowFileSize is what pyarrow_filesize.py answered.
type pyarrowFileSize struct {
	Version   string  `json:"pyarrow"`
	Wall      float64 `json:"wall"`
	CPU       float64 `json:"cpu"`
	Rows      int64   `json:"rows"`
	RowGroups int     `json:"row_groups"`
	Same      bool    `json:"same"`
	Diff      string  `json:"diff"`
	Error     string  `json:"error"`
}

// runPyarrowFileSize runs pyarrow_filesize.py in a fresh Python process:
// pyarrow writes the first rows of input to out at rgRows rows a row
// group and reads ours back.
func runPyarrowFileSize(ctx context.Context, python, input string, rows, rgRows int64, out, ours string) (*pyarrowFileSize, error) {
	cmd := exec.CommandContext(ctx, python, "-c", pyarrowFileSizeScript, input, fmt.Sprint(rows), fmt.Sprint(rgRows), out, ours)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pyarrow file size script: %w\n%s%s", err, stdout.String(), stderr.String())
	}
	var ans pyarrowFileSize
	if err := json.Unmarshal(stdout.Bytes(), &ans); err != nil {
		return nil, fmt.Errorf("pyarrow file size script said %q: %w\n%s", stdout.String(), err, stderr.String())
	}
	if ans.Error != "" {
		return nil, errors.New(ans.Error)
	}
	return &ans, nil
}
