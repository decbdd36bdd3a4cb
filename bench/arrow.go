package bench

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	"github.com/deltakit/deltakit/value"
)

// P8 measures the Arrow entry points against delta-rs on the demo's
// flights-3m.parquet in full mode (when the file is there; see
// FlightsParquet), else on GenerateFlights' rows (both sorted by date): a
// full scan of a many-file table (the rows appended in cfg.ArrowFiles
// commits) and of the same table optimized to one file through
// table.Table.ScanArrow vs
// DeltaTable.to_pyarrow_table(), the row scans (Scan, ScanAs) as ratios to
// ScanArrow, the selective scan (p8Pred) vs
// to_pyarrow_dataset().to_table(filter=...), AppendArrow vs AppendRows vs
// parquet-go's GenericWriter, and the peak RSS of a child process that
// scans a large table (ArrowScanChild).

// p8Pred is P8's selective filter: delay > minDelay AND origin = origin.
type p8Pred struct {
	minDelay int64
	origin   string
}

func (p p8Pred) String() string {
	return fmt.Sprintf("delay > %d AND origin = '%s'", p.minDelay, p.origin)
}

// p8Selective is P8's selective filter, issue 14's on the demo's flights
// (33 of 3,000,000 rows) and on the synthetic rows (p8Synthetic).
var p8Selective = p8Pred{300, "SFO"}

// synthLateEvery is the stride of P8's synthetic flights delayed past
// p8Selective's bound: GenerateFlights' delays have an exponential tail of
// mean 18 min (delay > 300 about 4e-8 of the rows, so the filter would
// select nothing), so every 33rd row (3%) is made 301 to 600 minutes late;
// SFO is the origin of about 2.8% of the flights (airport), so the filter
// keeps about 0.085% of the rows (170 of quick mode's 200,000), spread over
// every file as the demo's are.
const synthLateEvery = 33

// p8Synthetic returns P8's n synthetic flights: GenerateFlights' with every
// synthLateEvery-th (from row 0) delayed 301 + (i/synthLateEvery)%300
// minutes.
func p8Synthetic(n int) ([]Flight, []value.Row) {
	fs, rows := GenerateFlights(0, n)
	for i := 0; i < n; i += synthLateEvery {
		fs[i].Delay = 301 + int64(i/synthLateEvery%300)
		rows[i] = fs[i].row()
	}
	return fs, rows
}

// p8Data is what P8 scans and appends.
type p8Data struct {
	fs   []Flight
	rows []value.Row
	what string // the rows, for the figure's setup
	sel  p8Pred
}

// p8Input returns P8's rows: all of the demo file at demo (in its order,
// checked to be sorted by date) in full mode when demo is not "", else
// cfg.ArrowRows of p8Synthetic's.
func p8Input(cfg Config, demo string) (*p8Data, error) {
	if cfg.Mode != "full" || demo == "" {
		fs, rows := p8Synthetic(cfg.ArrowRows)
		return &p8Data{fs: fs, rows: rows, sel: p8Selective,
			what: groupDigits(len(rows)) + fmt.Sprintf(" synthetic GenerateFlights rows (departures every 30 s, so sorted by date; 1 in %d delayed over 300 min)", synthLateEvery)}, nil
	}
	f, err := os.Open(demo)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := parquet.NewGenericReader[Flight](f)
	defer r.Close()
	fs := make([]Flight, 0, r.NumRows())
	if _, err := readFlights(r, r.NumRows(), func(b []Flight) error { fs = append(fs, b...); return nil }); err != nil {
		return nil, fmt.Errorf("bench: P8: reading %s: %w", demo, err)
	}
	rows := make([]value.Row, len(fs))
	for i, fl := range fs {
		if i > 0 && fl.Date < fs[i-1].Date {
			return nil, fmt.Errorf("bench: P8: %s is not sorted by date (row %d)", demo, i)
		}
		rows[i] = fl.row()
	}
	return &p8Data{fs: fs, rows: rows, sel: p8Selective,
		what: "the demo's " + filepath.Base(demo) + " (" + groupDigits(len(rows)) + " rows, sorted by date)"}, nil
}

// arrowLinePrefix starts the line an Arrow scan child writes.
const arrowLinePrefix = "deltabench-arrow: "

// arrowChildReport is what ArrowScanChild measures.
type arrowChildReport struct {
	childUsage
	Rows    int64 `json:"rows"`
	Batches int64 `json:"batches"`
}

// ArrowScanChild is the body of P8's memory child: it scans the table at
// dir through table.Table.ScanArrow to the end, releasing every batch, and writes
// one line "deltabench-arrow: {json}" to w with the rows and the process's
// peak resident set (VmHWM).
func ArrowScanChild(ctx context.Context, dir string, w io.Writer) error {
	var r arrowChildReport
	usage, err := measureChild(func() error {
		tbl, err := table.Open(ctx, dir)
		if err != nil {
			return err
		}
		rr, err := tbl.ScanArrow(ctx)
		if err != nil {
			return err
		}
		for rr.Next() {
			r.Rows += rr.RecordBatch().NumRows()
			r.Batches++
		}
		err = rr.Err()
		rr.Release()
		return err
	})
	if err != nil {
		return err
	}
	r.childUsage = usage
	return writeChildLine(w, arrowLinePrefix, r)
}

// wideSchema is the memory table's: the flights columns and a payload of
// random hex, so that 20,000,000 rows make more than 1 GiB of Parquet.
func wideSchema() *schema.StructType {
	return schema.NewStruct(append(FlightsSchema().Fields,
		schema.NewField("payload", schema.Primitive(schema.String), true))...)
}

// wideFlight is a Flight with wideSchema's payload.
// table.Append promotes the embedded Flight's fields, in order, before
// Payload.
type wideFlight struct {
	Flight
	Payload string `parquet:"payload,optional" delta:"payload"`
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
			ws[i] = wideFlight{Flight: f, Payload: hex.EncodeToString(buf)}
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
	rr, err := tbl.ScanArrow(ctx, opts...)
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
	fig := &Figure{ID: "P8", Title: "Arrow scan and append vs delta-rs"}
	setup := func(what string, sel p8Pred, per int) string {
		return fmt.Sprintf("%s, appended in %d commits of %s rows (the %d-file table), and that table optimized to 1 file (local filesystem); "+
			"selective %q on the %d-file table; append of the same rows to an in-memory store; memory: ScanArrow of %s synthetic rows (%d files) in a child process; "+
			"%d repetitions per side, interleaved, medians",
			what, cfg.ArrowFiles, groupDigits(per), cfg.ArrowFiles, sel, cfg.ArrowFiles,
			groupDigits(cfg.ArrowMemoryRows), cfg.ArrowMemoryFiles, cfg.ArrowReps)
	}
	if cfg.ArrowRows <= 0 || cfg.ArrowFiles <= 0 || cfg.ArrowReps <= 0 {
		fig.Setup = setup("flights rows", p8Selective, 0)
		fig.Skipped = "no sizes (ArrowRows, ArrowFiles, ArrowReps)"
		return fig, nil
	}
	dir := filepath.Join(env.TempDir, "p8")
	defer os.RemoveAll(dir)
	demo := FlightsParquet()
	in, err := p8Input(cfg, demo)
	if err != nil {
		return fig, err
	}
	n, sel := len(in.rows), in.sel
	per := (n + cfg.ArrowFiles - 1) / cfg.ArrowFiles
	fig.Setup = setup(in.what, sel, per)
	env.logf("P8: writing %d rows in %d files and optimizing them to 1 file", n, cfg.ArrowFiles)
	tabs, err := writeP8Tables(ctx, dir, per, in.rows)
	if err != nil {
		return fig, err
	}
	fig.note("1-file table after optimize: %d file(s), %d row groups", tabs.oneFiles, tabs.oneRowGroups)
	// The scans run without the rows alive: delta-rs reads in a fresh
	// process, and 3,000,000 boxed rows on the heap made every GC of
	// deltakit's scans mark them. The appends read or generate them again.
	in = nil
	runtime.GC()
	s, err := p8Scans(ctx, env, cfg, tabs, n, sel)
	if err != nil {
		return fig, err
	}
	if err := s.report(fig, env, cfg); err != nil {
		return fig, err
	}
	env.logf("P8: appends")
	if in, err = p8Input(cfg, demo); err != nil {
		return fig, err
	}
	if err := p8Appends(ctx, fig, cfg, in.fs, in.rows); err != nil {
		return fig, err
	}
	in = nil
	return fig, p8Memory(ctx, fig, env, cfg, dir)
}

// p8Tables are P8's scan tables: the rows in many files (many) and the
// same table optimized to one file (one).
type p8Tables struct {
	many, one       *table.Table
	manyDir, oneDir string
	oneFiles        int
	oneRowGroups    int
}

// writeP8Tables appends rows to a new table in dir/many in commits of per
// rows, copies it to dir/one and optimizes that.
func writeP8Tables(ctx context.Context, dir string, per int, rows []value.Row) (*p8Tables, error) {
	t := &p8Tables{manyDir: filepath.Join(dir, "many"), oneDir: filepath.Join(dir, "one")}
	tm, err := table.Create(ctx, t.manyDir, FlightsSchema())
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(rows); i += per {
		if tm, err = tm.AppendRows(ctx, rows[i:min(i+per, len(rows))]); err != nil {
			return nil, err
		}
	}
	// The copy must not race the checkpoint due at the last append, which
	// the table writes in the background: a copy that listed the log before
	// the checkpoint existed and read _last_checkpoint after it named the
	// checkpoint is refused by delta-rs ("_last_checkpoint hint but didn't
	// find any checkpoints").
	if err := tm.Close(ctx); err != nil {
		return nil, err
	}
	if err := os.CopyFS(t.oneDir, os.DirFS(t.manyDir)); err != nil {
		return nil, err
	}
	t1, err := table.Open(ctx, t.oneDir)
	if err != nil {
		return nil, err
	}
	if t1, _, err = t1.Optimize(ctx); err != nil {
		return nil, err
	}
	if err := t1.Close(ctx); err != nil {
		return nil, err
	}
	t.many, t.one = tm, t1
	for a := range t1.Snapshot().AllFiles() {
		md, err := localFooter(filepath.Join(t.oneDir, filepath.FromSlash(a.Path)))
		if err != nil {
			return nil, err
		}
		t.oneRowGroups += len(md.RowGroups)
		t.oneFiles++
	}
	return t, nil
}

// p8Sample is the wall and CPU seconds of each repetition of one scan.
type p8Sample struct{ wall, cpu []float64 }

func (s *p8Sample) add(w, c float64) { s.wall, s.cpu = append(s.wall, w), append(s.cpu, c) }

// med is the median wall and CPU seconds.
func (s *p8Sample) med() (float64, float64) { return medianSeconds(s.wall), medianSeconds(s.cpu) }

// addSeconds adds the medians to fig as name (wall) and name_cpu, in
// seconds.
func (s *p8Sample) addSeconds(fig *Figure, name string) {
	w, c := s.med()
	fig.add(name, w, "s")
	fig.add(name+"_cpu", c, "s")
}

// addRatio adds the medians over base's to fig as name (wall) and
// name_cpu, and returns the wall metric (for a goal).
func (s *p8Sample) addRatio(fig *Figure, name string, base *p8Sample) *Metric {
	w, c := s.med()
	bw, bc := base.med()
	m := fig.add(name, w/bw, "x")
	fig.add(name+"_cpu", c/bc, "x")
	return m
}

// p8ScanSamples are the scans' samples, interleaved per repetition.
type p8ScanSamples struct {
	arrowOne, arrowMany, rowsMany, asMany, selMany, rsOne, rsMany, rsSel p8Sample
	st                                                                   table.ScanStats
	selRows, rsSelRows                                                   int64
}

// p8Scans times the deltakit scans and (with a Python) delta-rs's,
// interleaved, cfg.ArrowReps times each.
func p8Scans(ctx context.Context, env *Env, cfg Config, t *p8Tables, rows int, pred p8Pred) (*p8ScanSamples, error) {
	sel, err := table.ParsePredicate(pred.String(), t.many.Schema())
	if err != nil {
		return nil, err
	}
	s := &p8ScanSamples{}
	drain := func(seq func(yield func(struct{}, error) bool)) error {
		for _, err := range seq {
			if err != nil {
				return err
			}
		}
		return nil
	}
	for range cfg.ArrowReps {
		runs := []struct {
			s  *p8Sample
			fn func() error
		}{
			{&s.arrowOne, func() error { return scanArrowAll(ctx, t.one, rows) }},
			{&s.arrowMany, func() error { return scanArrowAll(ctx, t.many, rows) }},
			{&s.rowsMany, func() error { return drain(ignoreValues(t.many.Scan(ctx))) }},
			{&s.asMany, func() error { return drain(ignoreValues(table.ScanAs[Flight](ctx, t.many))) }},
			{&s.selMany, func() error {
				s.st = table.ScanStats{}
				s.selRows, err = scanArrowRows(ctx, t.many, table.WithFilter(sel), table.WithScanStats(&s.st))
				return err
			}},
		}
		for _, r := range runs {
			w, cpu, err := timed(r.fn)
			if err != nil {
				return nil, err
			}
			r.s.add(w, cpu)
		}
		if env.Python == "" {
			continue
		}
		for _, c := range []struct {
			s    *p8Sample
			dir  string
			args []string
		}{{&s.rsOne, t.oneDir, []string{"full"}}, {&s.rsMany, t.manyDir, []string{"full"}}, {&s.rsSel, t.manyDir, []string{"sel", strconv.FormatInt(pred.minDelay, 10), pred.origin}}} {
			w, cpu, n, err := runDeltaRSP8(ctx, env.Python, c.dir, c.args...)
			if err != nil {
				return nil, err
			}
			c.s.add(w, cpu)
			if c.s == &s.rsSel {
				s.rsSelRows = n
			}
		}
	}
	return s, nil
}

// ignoreValues drops the values of a scan's sequence.
func ignoreValues[V any](seq func(yield func(V, error) bool)) func(yield func(struct{}, error) bool) {
	return func(yield func(struct{}, error) bool) {
		for _, err := range seq {
			if !yield(struct{}{}, err) {
				return
			}
		}
	}
}

// scanArrowAll scans tbl through ScanArrow and checks it read want rows.
func scanArrowAll(ctx context.Context, tbl *table.Table, want int) error {
	n, err := scanArrowRows(ctx, tbl)
	if err == nil && n != int64(want) {
		err = fmt.Errorf("bench: ScanArrow read %d rows, want %d", n, want)
	}
	return err
}

// report adds the scan figures (medians, ratios, goals) to fig.
func (s *p8ScanSamples) report(fig *Figure, env *Env, cfg Config) error {
	s.arrowOne.addSeconds(fig, "scanarrow_1file")
	s.arrowMany.addSeconds(fig, "scanarrow_files")
	s.rowsMany.addRatio(fig, "scan_rows_vs_scanarrow", &s.arrowMany)
	s.asMany.addRatio(fig, "scanas_vs_scanarrow", &s.arrowMany)
	s.selMany.addSeconds(fig, "selective")
	fig.add("selective_rows", float64(s.selRows), "rows")
	fig.add("selective_files_skipped", float64(s.st.FilesSkipped+s.st.FilesPruned), "files")
	fig.add("selective_rowgroups_skipped", float64(s.st.RowGroupsSkipped), "row groups")
	fig.add("selective_rows_late_skipped", float64(s.st.RowsLateSkipped), "rows")
	if env.Python == "" {
		fig.note("delta-rs side skipped: no Python venv with deltalake ($DELTAKIT_VENV or <repo>/.venv)")
		return nil
	}
	if s.rsSelRows != s.selRows {
		return fmt.Errorf("bench: the selective scan gave %d rows, delta-rs %d", s.selRows, s.rsSelRows)
	}
	s.rsOne.addSeconds(fig, "deltars_1file")
	s.rsMany.addSeconds(fig, "deltars_files")
	s.rsSel.addSeconds(fig, "deltars_selective")
	fig.goalFull(cfg, s.arrowOne.addRatio(fig, "scanarrow_1file_vs_deltars", &s.rsOne), "<=", 1.0)
	fig.goalFull(cfg, s.arrowMany.addRatio(fig, "scanarrow_files_vs_deltars", &s.rsMany), "<=", 1.0)
	fig.goalFull(cfg, s.selMany.addRatio(fig, "selective_vs_deltars", &s.rsSel), "<=", 1.0)
	fig.note("delta-rs timed inside Python (perf_counter, process_time) per run, Go runs interleaved; _cpu ratios are process CPU time, all threads")
	return nil
}

// p8Appends times the rows appended as Arrow batches, as rows, and as
// structs to raw parquet-go.
func p8Appends(ctx context.Context, fig *Figure, cfg Config, fs []Flight, rows []value.Row) error {
	var recs []arrow.RecordBatch
	rb, err := arrowio.NewRecordBuilder(nil, FlightsSchema())
	if err != nil {
		return err
	}
	for i, r := range rows {
		if err := rb.Append(r); err != nil {
			rb.Release()
			return err
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
	var apArrow, apRows, apRaw p8Sample
	for range cfg.ArrowReps {
		for _, c := range []struct {
			s  *p8Sample
			fn func(tbl *table.Table) error
		}{
			{&apArrow, func(tbl *table.Table) error {
				rr, err := array.NewRecordReader(recs[0].Schema(), recs)
				if err != nil {
					return err
				}
				defer rr.Release()
				_, err = tbl.AppendArrow(ctx, rr)
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
				return err
			}
			w, cpu, err := timed(func() error { return c.fn(tbl) })
			if err != nil {
				return err
			}
			c.s.add(w, cpu)
		}
	}
	apArrow.addSeconds(fig, "append_arrow")
	apArrow.addRatio(fig, "append_arrow_vs_rows", &apRows)
	apArrow.addRatio(fig, "append_arrow_vs_parquet_go", &apRaw)
	return nil
}

// p8Memory scans a large table in a fresh process and reports its peak
// RSS.
func p8Memory(ctx context.Context, fig *Figure, env *Env, cfg Config, dir string) error {
	if env.ArrowChild == nil {
		fig.note("memory part skipped: no child command")
		return nil
	}
	if cfg.ArrowMemoryRows <= 0 || cfg.ArrowMemoryFiles <= 0 {
		fig.note("memory part skipped: no sizes")
		return nil
	}
	env.logf("P8: writing the memory table: %d rows in %d files", cfg.ArrowMemoryRows, cfg.ArrowMemoryFiles)
	wide := filepath.Join(dir, "wide")
	size, err := writeWideTable(ctx, wide, cfg.ArrowMemoryRows, (cfg.ArrowMemoryRows+cfg.ArrowMemoryFiles-1)/cfg.ArrowMemoryFiles)
	if err != nil {
		return err
	}
	var r arrowChildReport
	if err := runChild(env.ArrowChild(ctx, wide), "arrow child", "arrow child", arrowLinePrefix, &r); err != nil {
		return err
	}
	if r.Rows != int64(cfg.ArrowMemoryRows) {
		return fmt.Errorf("bench: arrow child read %d rows, want %d", r.Rows, cfg.ArrowMemoryRows)
	}
	fig.add("memory_table_bytes", float64(size), "bytes")
	fig.add("memory_scan", r.Seconds, "s")
	m := fig.add("memory_peak_rss", float64(r.PeakRSSKB)/1024, "MiB")
	fig.goalFull(cfg, m, "<=", 512)
	fig.add("memory_baseline_rss", float64(r.BaselineRSSKB)/1024, "MiB")
	return nil
}

// medianSeconds is the median of xs, in seconds.
func medianSeconds(xs []float64) float64 {
	ds := make([]time.Duration, len(xs))
	for i, x := range xs {
		ds[i] = time.Duration(x * float64(time.Second))
	}
	return median(ds).Seconds()
}
