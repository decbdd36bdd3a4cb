package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table"
)

// P8 measures the Arrow entry points on GenerateFlights' rows (in
// departure order, so sorted by date) against delta-rs: a full scan of a
// one-file and a many-file table through table.ScanArrow vs
// DeltaTable.to_pyarrow_table(), the row scans (Scan, ScanAs) as ratios to
// ScanArrow, the selective scan arrowSelective vs
// to_pyarrow_dataset().to_table(filter=...), AppendArrow vs AppendRows vs
// parquet-go's GenericWriter, and the peak RSS of a child process that
// scans a large table (ArrowScanChild).

// arrowSelective is P8's selective filter. GenerateFlights' delays have an
// exponential tail of mean 18 min, so delay > 150 keeps about 1.5e-4 of
// the rows, and SFO about 1/40 of those: a selectivity close to that of
// delay > 300 AND origin = 'SFO' on the demo's real flights (33 of
// 3,000,000).
const arrowSelective = "delay > 150 AND origin = 'SFO'"

// arrowLinePrefix starts the line an Arrow scan child writes.
const arrowLinePrefix = "deltabench-arrow: "

// arrowChildReport is what ArrowScanChild measures.
type arrowChildReport struct {
	Rows          int64   `json:"rows"`
	Batches       int64   `json:"batches"`
	Seconds       float64 `json:"seconds"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	BaselineRSSKB int64   `json:"baseline_rss_kb"`
	PeakRSSKB     int64   `json:"peak_rss_kb"`
}

// ArrowScanChild is the body of P8's memory child: it scans the table at
// dir through table.ScanArrow to the end, releasing every batch, and writes
// one line "deltabench-arrow: {json}" to w with the rows and the process's
// peak resident set (VmHWM).
func ArrowScanChild(ctx context.Context, dir string, w io.Writer) error {
	before, err := procStatus()
	if err != nil {
		return err
	}
	t0, c0 := time.Now(), cpuTime()
	tbl, err := table.Open(ctx, dir)
	if err != nil {
		return err
	}
	rr, err := table.ScanArrow(ctx, tbl)
	if err != nil {
		return err
	}
	var r arrowChildReport
	for rr.Next() {
		r.Rows += rr.RecordBatch().NumRows()
		r.Batches++
	}
	err = rr.Err()
	rr.Release()
	if err != nil {
		return err
	}
	r.Seconds, r.CPUSeconds = time.Since(t0).Seconds(), (cpuTime() - c0).Seconds()
	after, err := procStatus()
	if err != nil {
		return err
	}
	r.BaselineRSSKB, r.PeakRSSKB = procKB(before, "VmRSS"), procKB(after, "VmHWM")
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", arrowLinePrefix, b)
	return err
}

// wideSchema is the memory table's: the flights columns and a payload of
// random hex, so that 20,000,000 rows make more than 1 GiB of Parquet.
func wideSchema() *schema.StructType {
	return schema.NewStruct(append(FlightsSchema().Fields,
		schema.NewField("payload", schema.Primitive(schema.String), true))...)
}

// wideFlight is a Flight with wideSchema's payload.
type wideFlight struct {
	Date        int64  `parquet:"date,optional,timestamp(microsecond)" delta:"date,timestamp_ntz"`
	Delay       int64  `parquet:"delay,optional" delta:"delay"`
	Distance    int64  `parquet:"distance,optional" delta:"distance"`
	Origin      string `parquet:"origin,optional,dict" delta:"origin"`
	Destination string `parquet:"destination,optional,dict" delta:"destination"`
	Payload     string `parquet:"payload,optional" delta:"payload"`
}

// writeWideTable creates the memory table at dir: rows rows in files of
// perFile rows, appended with table.Append.
func writeWideTable(ctx context.Context, dir string, rows, perFile int) (int64, error) {
	tbl, err := table.Create(ctx, dir, wideSchema())
	if err != nil {
		return 0, err
	}
	var p rand.PCG
	p.Seed(0x8a11, 1)
	buf := make([]byte, 28)
	for first := 0; first < rows; first += perFile {
		n := min(perFile, rows-first)
		fs, _ := GenerateFlights(first, n)
		ws := make([]wideFlight, n)
		for i, f := range fs {
			for j := 0; j < len(buf); j += 8 {
				v := p.Uint64()
				for k := 0; k < 8 && j+k < len(buf); k++ {
					buf[j+k] = byte(v >> (8 * k))
				}
			}
			ws[i] = wideFlight{f.Date, f.Delay, f.Distance, f.Origin, f.Destination, hex.EncodeToString(buf)}
		}
		if tbl, err = table.Append(ctx, tbl, ws); err != nil {
			return 0, err
		}
	}
	var size int64
	for a := range tbl.Snapshot().AllFiles() {
		size += a.Size
	}
	return size, nil
}

// deltarsP8Script times one delta-rs read of a table: argv table, "full" or
// the selective filter's delay bound and origin; prints "wall cpu rows".
const deltarsP8Script = `
import os, sys, time
import pyarrow.compute as pc
from deltalake import DeltaTable
path, mode = sys.argv[1], sys.argv[2]
w0, c0 = time.perf_counter(), time.process_time()
dt = DeltaTable(path)
if mode == "full":
    t = dt.to_pyarrow_table()
else:
    t = dt.to_pyarrow_dataset().to_table(filter=(pc.field("delay") > int(sys.argv[3])) & (pc.field("origin") == sys.argv[4]))
print(time.perf_counter() - w0, time.process_time() - c0, t.num_rows, flush=True)
# Skip the interpreter's teardown: on a loaded machine deltalake's threads
# sometimes abort it ("terminate called without an active exception").
os._exit(0)
`

func runDeltaRSP8(ctx context.Context, python, dir string, args ...string) (wall, cpu float64, rows int64, err error) {
	cmd := exec.CommandContext(ctx, python, append([]string{"-c", deltarsP8Script, dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && len(strings.Fields(string(out))) == 3 {
		err = nil // the figures were printed before the process failed
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("bench: delta-rs read of %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return 0, 0, 0, fmt.Errorf("bench: delta-rs read of %s said %q", dir, out)
	}
	wall, _ = strconv.ParseFloat(f[0], 64)
	cpu, _ = strconv.ParseFloat(f[1], 64)
	rows, _ = strconv.ParseInt(f[2], 10, 64)
	return wall, cpu, rows, nil
}

// timed runs fn and returns its wall and CPU seconds.
func timed(fn func() error) (wall, cpu float64, err error) {
	t0, c0 := time.Now(), cpuTime()
	err = fn()
	return time.Since(t0).Seconds(), (cpuTime() - c0).Seconds(), err
}

func scanArrowRows(ctx context.Context, tbl *table.Table, opts ...table.ScanOption) (int64, error) {
	rr, err := table.ScanArrow(ctx, tbl, opts...)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	var n int64
	for rr.Next() {
		n += rr.RecordBatch().NumRows()
	}
	return n, rr.Err()
}

// ArrowFigure is P8.
func ArrowFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P8", Title: "Arrow scan and append vs delta-rs",
		Setup: fmt.Sprintf("%s flights rows sorted by date, in %d files and in 1 file (local filesystem); selective %q; append of the rows to an in-memory store; memory: ScanArrow of %s rows (%d files) in a child process; %d repetitions per side, interleaved, medians",
			groupDigits(cfg.ArrowRows), cfg.ArrowFiles, arrowSelective, groupDigits(cfg.ArrowMemoryRows), cfg.ArrowMemoryFiles, cfg.ArrowReps)}
	if cfg.ArrowRows <= 0 || cfg.ArrowFiles <= 0 || cfg.ArrowReps <= 0 {
		fig.Skipped = "no sizes (ArrowRows, ArrowFiles, ArrowReps)"
		return fig, nil
	}
	dir := filepath.Join(env.TempDir, "p8")
	defer os.RemoveAll(dir)
	many, one := filepath.Join(dir, "many"), filepath.Join(dir, "one")
	env.logf("P8: writing %d rows in %d files and in 1 file", cfg.ArrowRows, cfg.ArrowFiles)
	fs, rows := GenerateFlights(0, cfg.ArrowRows)
	tm, err := table.Create(ctx, many, FlightsSchema())
	if err != nil {
		return fig, err
	}
	per := (cfg.ArrowRows + cfg.ArrowFiles - 1) / cfg.ArrowFiles
	for i := 0; i < len(rows); i += per {
		if tm, err = tm.AppendRows(ctx, rows[i:min(i+per, len(rows))]); err != nil {
			return fig, err
		}
	}
	t1, err := table.Create(ctx, one, FlightsSchema())
	if err != nil {
		return fig, err
	}
	if t1, err = t1.AppendRows(ctx, rows); err != nil {
		return fig, err
	}
	sel, err := table.ParsePredicate(arrowSelective, tm.Schema())
	if err != nil {
		return fig, err
	}
	type sample struct{ wall, cpu []float64 }
	add := func(s *sample, w, c float64) { s.wall, s.cpu = append(s.wall, w), append(s.cpu, c) }
	var arrowOne, arrowMany, rowsMany, asMany, selMany, rsOne, rsMany, rsSel sample
	var st table.ScanStats
	var selRows, rsSelRows int64
	for rep := 0; rep < cfg.ArrowReps; rep++ {
		for _, c := range []struct {
			s   *sample
			tbl *table.Table
		}{{&arrowOne, t1}, {&arrowMany, tm}} {
			w, cpu, err := timed(func() error {
				n, err := scanArrowRows(ctx, c.tbl)
				if err == nil && n != int64(cfg.ArrowRows) {
					err = fmt.Errorf("bench: ScanArrow read %d rows, want %d", n, cfg.ArrowRows)
				}
				return err
			})
			if err != nil {
				return fig, err
			}
			add(c.s, w, cpu)
		}
		w, cpu, err := timed(func() error {
			for _, err := range tm.Scan(ctx) {
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fig, err
		}
		add(&rowsMany, w, cpu)
		w, cpu, err = timed(func() error {
			for _, err := range table.ScanAs[Flight](ctx, tm) {
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fig, err
		}
		add(&asMany, w, cpu)
		w, cpu, err = timed(func() error {
			st = table.ScanStats{}
			selRows, err = scanArrowRows(ctx, tm, table.WithFilter(sel), table.WithScanStats(&st))
			return err
		})
		if err != nil {
			return fig, err
		}
		add(&selMany, w, cpu)
		if env.Python != "" {
			for _, c := range []struct {
				s    *sample
				dir  string
				args []string
			}{{&rsOne, one, []string{"full"}}, {&rsMany, many, []string{"full"}}, {&rsSel, many, []string{"sel", "150", "SFO"}}} {
				w, cpu, n, err := runDeltaRSP8(ctx, env.Python, c.dir, c.args...)
				if err != nil {
					return fig, err
				}
				add(c.s, w, cpu)
				if c.s == &rsSel {
					rsSelRows = n
				}
			}
		}
	}
	med := func(s sample) (float64, float64) { return medianSeconds(s.wall), medianSeconds(s.cpu) }
	aw1, ac1 := med(arrowOne)
	awm, acm := med(arrowMany)
	fig.add("scanarrow_1file", aw1, "s")
	fig.add("scanarrow_1file_cpu", ac1, "s")
	fig.add("scanarrow_files", awm, "s")
	fig.add("scanarrow_files_cpu", acm, "s")
	rw, rc := med(rowsMany)
	sw, sc := med(asMany)
	fig.add("scan_rows_vs_scanarrow", rw/awm, "x")
	fig.add("scan_rows_vs_scanarrow_cpu", rc/acm, "x")
	fig.add("scanas_vs_scanarrow", sw/awm, "x")
	fig.add("scanas_vs_scanarrow_cpu", sc/acm, "x")
	selw, selc := med(selMany)
	fig.add("selective", selw, "s")
	fig.add("selective_cpu", selc, "s")
	fig.add("selective_rows", float64(selRows), "rows")
	fig.add("selective_files_skipped", float64(st.FilesSkipped+st.FilesPruned), "files")
	fig.add("selective_rowgroups_skipped", float64(st.RowGroupsSkipped), "row groups")
	fig.add("selective_rows_late_skipped", float64(st.RowsLateSkipped), "rows")
	if env.Python == "" {
		fig.note("delta-rs side skipped: no Python venv with deltalake ($DELTAKIT_VENV or <repo>/.venv)")
	} else {
		if rsSelRows != selRows {
			return fig, fmt.Errorf("bench: the selective scan gave %d rows, delta-rs %d", selRows, rsSelRows)
		}
		r1w, r1c := med(rsOne)
		rmw, rmc := med(rsMany)
		rsw, rsc := med(rsSel)
		fig.goalFull(cfg, fig.add("scanarrow_1file_vs_deltars", aw1/r1w, "x"), "<=", 1.0)
		fig.add("scanarrow_1file_vs_deltars_cpu", ac1/r1c, "x")
		fig.goalFull(cfg, fig.add("scanarrow_files_vs_deltars", awm/rmw, "x"), "<=", 1.0)
		fig.add("scanarrow_files_vs_deltars_cpu", acm/rmc, "x")
		fig.goalFull(cfg, fig.add("selective_vs_deltars", selw/rsw, "x"), "<=", 1.0)
		fig.add("selective_vs_deltars_cpu", selc/rsc, "x")
		fig.note("delta-rs timed inside Python (perf_counter, process_time) per run, Go runs interleaved; _cpu ratios are process CPU time, all threads")
	}

	// Append: the rows as Arrow batches, as rows, as structs to raw parquet-go.
	env.logf("P8: appends")
	var recs []arrow.RecordBatch
	rb, err := arrowio.NewRecordBuilder(nil, FlightsSchema())
	if err != nil {
		return fig, err
	}
	for i, r := range rows {
		if err := rb.Append(r); err != nil {
			rb.Release()
			return fig, err
		}
		if rb.Len() == 65536 || i == len(rows)-1 {
			recs = append(recs, rb.NewRecordBatch())
		}
	}
	rb.Release()
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var apArrow, apRows, apRaw sample
	for rep := 0; rep < cfg.ArrowReps; rep++ {
		for _, c := range []struct {
			s  *sample
			fn func(tbl *table.Table) error
		}{
			{&apArrow, func(tbl *table.Table) error {
				rr, err := array.NewRecordReader(recs[0].Schema(), recs)
				if err != nil {
					return err
				}
				defer rr.Release()
				_, err = table.AppendArrow(ctx, tbl, rr)
				return err
			}},
			{&apRows, func(tbl *table.Table) error { _, err := tbl.AppendRows(ctx, rows); return err }},
			{&apRaw, func(*table.Table) error {
				var buf bytes.Buffer
				w := parquet.NewGenericWriter[Flight](&buf, parquet.Compression(&parquet.Snappy))
				if _, err := w.Write(fs); err != nil {
					return err
				}
				return w.Close()
			}},
		} {
			tbl, err := table.Create(ctx, "", FlightsSchema(), table.WithStore(objectstore.NewMem("p8")))
			if err != nil {
				return fig, err
			}
			w, cpu, err := timed(func() error { return c.fn(tbl) })
			if err != nil {
				return fig, err
			}
			add(c.s, w, cpu)
		}
	}
	aaw, aac := med(apArrow)
	arw, arc := med(apRows)
	raw, rac := med(apRaw)
	fig.add("append_arrow", aaw, "s")
	fig.add("append_arrow_cpu", aac, "s")
	fig.add("append_arrow_vs_rows", aaw/arw, "x")
	fig.add("append_arrow_vs_rows_cpu", aac/arc, "x")
	fig.add("append_arrow_vs_parquet_go", aaw/raw, "x")
	fig.add("append_arrow_vs_parquet_go_cpu", aac/rac, "x")
	fs, rows = nil, nil

	// Memory: a large table scanned in a fresh process.
	if env.ArrowChild == nil {
		fig.note("memory part skipped: no child command")
		return fig, nil
	}
	if cfg.ArrowMemoryRows <= 0 || cfg.ArrowMemoryFiles <= 0 {
		fig.note("memory part skipped: no sizes")
		return fig, nil
	}
	env.logf("P8: writing the memory table: %d rows in %d files", cfg.ArrowMemoryRows, cfg.ArrowMemoryFiles)
	wide := filepath.Join(dir, "wide")
	size, err := writeWideTable(ctx, wide, cfg.ArrowMemoryRows, (cfg.ArrowMemoryRows+cfg.ArrowMemoryFiles-1)/cfg.ArrowMemoryFiles)
	if err != nil {
		return fig, err
	}
	cmd := env.ArrowChild(ctx, wide)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fig, fmt.Errorf("bench: arrow child: %w\n%s%s", err, stdout.String(), stderr.String())
	}
	var r *arrowChildReport
	sc2 := bufio.NewScanner(&stdout)
	for sc2.Scan() {
		if rest, ok := strings.CutPrefix(sc2.Text(), arrowLinePrefix); ok {
			r = &arrowChildReport{}
			if err := json.Unmarshal([]byte(rest), r); err != nil {
				return fig, fmt.Errorf("bench: arrow child said %q: %w", rest, err)
			}
		}
	}
	if r == nil {
		return fig, fmt.Errorf("bench: arrow child wrote no %q line:\n%s%s", arrowLinePrefix, stdout.String(), stderr.String())
	}
	if r.Rows != int64(cfg.ArrowMemoryRows) {
		return fig, fmt.Errorf("bench: arrow child read %d rows, want %d", r.Rows, cfg.ArrowMemoryRows)
	}
	fig.add("memory_table_bytes", float64(size), "bytes")
	fig.add("memory_scan", r.Seconds, "s")
	m := fig.add("memory_peak_rss", float64(r.PeakRSSKB)/1024, "MiB")
	fig.goalFull(cfg, m, "<=", 512)
	fig.add("memory_baseline_rss", float64(r.BaselineRSSKB)/1024, "MiB")
	return fig, nil
}

// medianSeconds is the median of xs, in seconds.
func medianSeconds(xs []float64) float64 {
	ds := make([]time.Duration, len(xs))
	for i, x := range xs {
		ds[i] = time.Duration(x * float64(time.Second))
	}
	return median(ds).Seconds()
}
