package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// P11 merges MergeKeys changed keys into a table of MergeRows rows
// partitioned by date (MergeDates dates, one file each): half of the keys
// update existing rows, half insert new ones, with WHEN MATCHED UPDATE ALL
// and WHEN NOT MATCHED INSERT ALL on target.id = source.id AND target.date
// = source.date. Two spreads of the same number of keys: "narrow", the
// keys of MergeNarrowDates dates (the latest ones: late corrections and
// late arrivals), so that partition pruning leaves that many files; and
// "wide", keys spread evenly over every date, so that every file is
// touched.

// deltarsMergeScript is the delta-rs side of P11.
//
//go:embed deltars_merge.py
var deltarsMergeScript string

// mergeRow is a row of P11's table: id long, date date, value double,
// payload string (all nullable, as Spark creates them).
type mergeRow struct {
	ID      int64      `delta:"id"`
	Date    value.Date `delta:"date"`
	Value   float64    `delta:"value"`
	Payload string     `delta:"payload"`
}

// mergeSourceFile is mergeRow in the parquet schema pyarrow reads into the
// same Arrow types (int64, date32, double, string).
type mergeSourceFile struct {
	ID      int64   `parquet:"id"`
	Date    int32   `parquet:"date,date"`
	Value   float64 `parquet:"value"`
	Payload string  `parquet:"payload"`
}

// mergeDay0 is the first date of P11's table.
var mergeDay0 = value.DateOf(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))

// mergeInitialRow is row id of the initial table: date index id/perDate.
func mergeInitialRow(id int64, perDate int) mergeRow {
	return mergeRow{ID: id, Date: mergeDay0 + value.Date(id/int64(perDate)),
		Value:   float64((id*7919)%100_000) / 4, // a multiple of 1/4: sums are exact
		Payload: fmt.Sprintf("payload-%010d-%08x", id, uint32(id*2654435761))}
}

// mergeUpdated is what the source sets an existing row to.
func mergeUpdated(r mergeRow) mergeRow {
	r.Value += 0.5
	r.Payload = "updated-" + r.Payload
	return r
}

// mergeSource returns the source of a variant: updates existing rows of
// the given date indexes (as evenly as they go), inserts new ids (from
// rows up) spread over the same dates. updates+inserts = keys.
func mergeSource(rows, perDate int, dates []int, keys int) ([]mergeRow, error) {
	updates := keys / 2
	out := make([]mergeRow, 0, keys)
	// Existing rows of date d: ids d*perDate + j, j picked by a stride
	// coprime with perDate so that they are distinct and spread.
	stride := int64(7919)
	for gcd(stride, int64(perDate)) != 1 {
		stride += 2
	}
	for i := range updates {
		d := dates[i%len(dates)]
		k := int64(i / len(dates))
		if k >= int64(perDate) {
			return nil, fmt.Errorf("bench: P11 wants %d updates of %d dates of %d rows", updates, len(dates), perDate)
		}
		j := (k*stride + int64(d)*31) % int64(perDate)
		out = append(out, mergeUpdated(mergeInitialRow(int64(d)*int64(perDate)+j, perDate)))
	}
	for i := range keys - updates {
		id := int64(rows + i)
		r := mergeInitialRow(id, perDate)
		r.Date = mergeDay0 + value.Date(dates[i%len(dates)])
		r.Payload = "new-" + r.Payload
		out = append(out, r)
	}
	return out, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// mergeDigest summarises a table's rows so that two engines' results can
// be compared: aggregates over every row, and a checksum over the rows
// whose id is a source key (the changed ones).
type mergeDigest struct {
	Rows          int64  `json:"rows"`
	SumID         int64  `json:"sum_id"`
	SumDate       int64  `json:"sum_date"`
	SumValue4     int64  `json:"sum_value4"` // sum of value*4 (exact: values are multiples of 1/4)
	SumPayloadLen int64  `json:"sum_payload_len"`
	KeyRows       int64  `json:"key_rows"`
	KeyCRC        uint64 `json:"key_crc"` // sum of crc32("id|date|value*4|payload") of the key rows, mod 2^64
	Error         string `json:"error,omitempty"`
}

func (d *mergeDigest) addRow(r mergeRow, key bool) {
	d.Rows++
	d.SumID += r.ID
	d.SumDate += int64(r.Date)
	d.SumValue4 += int64(r.Value * 4)
	d.SumPayloadLen += int64(len([]rune(r.Payload)))
	if key {
		d.KeyRows++
		d.KeyCRC += uint64(crc32.ChecksumIEEE(fmt.Appendf(nil, "%d|%d|%d|%s", r.ID, r.Date, int64(r.Value*4), r.Payload)))
	}
}

func (d *mergeDigest) subRow(r mergeRow) {
	d.Rows--
	d.SumID -= r.ID
	d.SumDate -= int64(r.Date)
	d.SumValue4 -= int64(r.Value * 4)
	d.SumPayloadLen -= int64(len([]rune(r.Payload)))
}

func (d mergeDigest) String() string {
	return fmt.Sprintf("%d rows, sum(id) %d, sum(date) %d, sum(value*4) %d, sum(len(payload)) %d; %d key rows, crc %d",
		d.Rows, d.SumID, d.SumDate, d.SumValue4, d.SumPayloadLen, d.KeyRows, d.KeyCRC)
}

// expectedDigest is the reference: the initial table's digest with the
// source applied (updates replace their row, inserts add one), computed
// from the generator, not from any engine.
func expectedDigest(base mergeDigest, src []mergeRow, rows, perDate int) mergeDigest {
	d := base
	for _, r := range src {
		if r.ID < int64(rows) {
			d.subRow(mergeInitialRow(r.ID, perDate))
		}
		d.addRow(r, true)
	}
	return d
}

// digestTable scans t with ScanArrow and digests it; keys are the source ids.
func digestTable(ctx context.Context, t *table.Table, keys map[int64]bool) (mergeDigest, error) {
	var d mergeDigest
	rr, err := t.ScanArrow(ctx, table.WithColumns("id", "date", "value", "payload"))
	if err != nil {
		return d, err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		ids, ok1 := rec.Column(0).(*array.Int64)
		dates, ok2 := rec.Column(1).(*array.Date32)
		vals, ok3 := rec.Column(2).(*array.Float64)
		pays, ok4 := rec.Column(3).(*array.String)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return d, fmt.Errorf("bench: P11 digest: unexpected arrow types %s", rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			if ids.IsNull(i) || dates.IsNull(i) || vals.IsNull(i) || pays.IsNull(i) {
				return d, fmt.Errorf("bench: P11 digest: a null in row %d of a batch", i)
			}
			r := mergeRow{ID: ids.Value(i), Date: value.Date(dates.Value(i)), Value: vals.Value(i), Payload: pays.Value(i)}
			d.addRow(r, keys[r.ID])
		}
	}
	return d, rr.Err()
}

// mergeBench is the state of P11: three copies of the same table on the
// local filesystem (deltakit with deletion vectors, deltakit
// copy-on-write, delta-rs), each restored to its initial version after
// every measured MERGE.
type mergeBench struct {
	dir                      string
	rows, dates, perDate     int
	dv, cow                  *table.Table
	dvStore, cowStore        *countingStore
	dvBase, cowBase, rsBase  int64
	rsDir                    string
	base                     mergeDigest
	generated, generateBytes float64
}

// newMergeBench writes the deltakit tables (one Append[mergeRow] per date,
// so one file per date) and a copy of the copy-on-write table for delta-rs
// (its log copied, its data files hard-linked).
func newMergeBench(ctx context.Context, tmp string, rows, dates int) (*mergeBench, error) {
	if dates < 1 || rows%dates != 0 {
		return nil, fmt.Errorf("bench: P11 needs rows (%d) a multiple of dates (%d)", rows, dates)
	}
	dir, err := os.MkdirTemp(tmp, "p10-")
	if err != nil {
		return nil, err
	}
	m := &mergeBench{dir: dir, rows: rows, dates: dates, perDate: rows / dates}
	sch, err := table.SchemaOf[mergeRow]()
	if err != nil {
		return nil, err
	}
	mk := func(sub string, props map[string]string) (*table.Table, *countingStore, error) {
		st, err := objectstore.NewLocal(filepath.Join(dir, sub))
		if err != nil {
			return nil, nil, err
		}
		cs := &countingStore{Store: st}
		t, err := table.Create(ctx, "", sch, table.WithStore(cs), table.WithPartitionColumns("date"), table.WithProperties(props))
		return t, cs, err
	}
	if m.dv, m.dvStore, err = mk("deltakit-dv", map[string]string{txlog.PropEnableDeletionVectors: "true"}); err != nil {
		return nil, err
	}
	if m.cow, m.cowStore, err = mk("deltakit-cow", nil); err != nil {
		return nil, err
	}
	t0 := time.Now()
	batch := make([]mergeRow, m.perDate)
	for d := range dates {
		for j := range batch {
			batch[j] = mergeInitialRow(int64(d*m.perDate+j), m.perDate)
			m.base.addRow(batch[j], false)
		}
		if m.dv, err = table.Append(ctx, m.dv, batch); err != nil {
			return nil, err
		}
		if m.cow, err = table.Append(ctx, m.cow, batch); err != nil {
			return nil, err
		}
	}
	m.generated = time.Since(t0).Seconds()
	m.dvBase, m.cowBase = m.dv.Version(), m.cow.Version()
	for f := range m.cow.Snapshot().AllFiles() {
		m.generateBytes += float64(f.Size)
	}
	if n := m.cow.Snapshot().NumFiles(); n != dates {
		return nil, fmt.Errorf("bench: P11 table has %d files, want %d", n, dates)
	}
	// The last Append may have made a checkpoint due that the tables'
	// background checkpointers are still writing: copyTable lists the log
	// once and reads _last_checkpoint last, so a copy taken meanwhile can
	// hold a hint naming a checkpoint it lacks (delta-rs then refuses the
	// table: "Had a _last_checkpoint hint but didn't find any checkpoints").
	if err := m.closeTables(ctx); err != nil {
		return nil, err
	}
	m.rsDir = filepath.Join(dir, "deltars")
	if err := copyTable(filepath.Join(dir, "deltakit-cow"), m.rsDir); err != nil {
		return nil, err
	}
	m.rsBase = m.cowBase
	return m, nil
}

// closeTables waits for the checkpoints the deltakit tables write in the
// background (table.Table.Close).
func (m *mergeBench) closeTables(ctx context.Context) error {
	return errors.Join(m.dv.Close(ctx), m.cow.Close(ctx))
}

// close waits for the background checkpoints (the restores after each
// MERGE make some due) and removes the tables.
func (m *mergeBench) close(ctx context.Context) error {
	return errors.Join(m.closeTables(ctx), os.RemoveAll(m.dir))
}

// copyTable copies the table at src to dst: the log's files are copied
// (a writer may replace _last_checkpoint), data files hard-linked (never
// written again), copied when links fail. No writer (nor background
// checkpointer) may be writing src: the log is listed once and
// _last_checkpoint, last in the listing, could otherwise name a
// checkpoint written after the listing, absent from the copy.
func copyTable(src, dst string) error {
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if de.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if !strings.HasPrefix(rel, "_delta_log") && os.Link(p, out) == nil {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
}

// mergeOutcome is what one measured MERGE did.
type mergeOutcome struct {
	wall, cpu                 time.Duration
	peakRSSKB, baseRSSKB      int64
	alloc                     float64 // Go heap bytes allocated (deltakit only)
	updated, inserted, copied int64
	filesAdded, filesRemoved  int
	bytesAdded, bytesRemoved  int64
	dvs                       int // adds carrying a new deletion vector
	io                        counts
	version                   int64
	deltarsMetrics            map[string]any
}

// commitFiles reads commit version of store and counts its data-file adds
// and removes and their bytes, and the adds carrying a deletion vector
// whose file existed before (a file that only got a DV).
func commitFiles(ctx context.Context, store objectstore.Store, version int64, o *mergeOutcome) error {
	acts, err := txlog.ReadCommit(ctx, store, version)
	if err != nil {
		return err
	}
	removed := map[string]bool{}
	for _, a := range acts {
		if a.Remove != nil {
			removed[a.Remove.Path] = true
		}
	}
	for _, a := range acts {
		switch {
		case a.Add != nil && a.Add.DeletionVector != nil && removed[a.Add.Path]:
			o.dvs++ // the same file again, with a deletion vector
			delete(removed, a.Add.Path)
		case a.Add != nil:
			o.filesAdded++
			o.bytesAdded += a.Add.Size
		}
	}
	for _, a := range acts {
		if a.Remove != nil && removed[a.Remove.Path] {
			o.filesRemoved++
			if a.Remove.Size != nil {
				o.bytesRemoved += *a.Remove.Size
			}
		}
	}
	return nil
}

// resetPeakRSS returns freed heap to the OS and resets VmHWM to the current
// resident set (Linux /proc/self/clear_refs); false when it cannot.
func resetPeakRSS() bool {
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

func statusKB(key string) int64 {
	s, err := procStatus()
	if err != nil {
		return -1
	}
	return procKB(s, key)
}

// deltakitMerge runs table.Table.Merge of src on *tbl and returns what it did.
func deltakitMerge(ctx context.Context, tbl **table.Table, store *countingStore, src []mergeRow) (mergeOutcome, error) {
	var o mergeOutcome
	ms, err := table.MergeStructs(src)
	if err != nil {
		return o, err
	}
	b := table.NewMerge(ms, table.MergeOn("id", "date")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll()
	runtime.GC()
	reset := resetPeakRSS()
	o.baseRSSKB = statusKB("VmRSS")
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := store.snapshot()
	t0, cpu0 := time.Now(), cpuTime()
	nt, res, err := (*tbl).Merge(ctx, b)
	o.wall, o.cpu = time.Since(t0), cpuTime()-cpu0
	if err != nil {
		return o, err
	}
	o.peakRSSKB = -1
	if reset {
		o.peakRSSKB = statusKB("VmHWM")
	}
	runtime.ReadMemStats(&m1)
	o.alloc = float64(m1.TotalAlloc - m0.TotalAlloc)
	o.io = store.snapshot().sub(c0)
	*tbl = nt
	o.updated, o.inserted, o.copied, o.version = res.UpdatedRows, res.InsertedRows, res.CopiedRows, res.Version
	return o, commitFiles(ctx, store, res.Version, &o)
}

// deltaRSMerge is a running deltars_merge.py.
type deltaRSMerge struct {
	*pyScript
	Version string
}

func startDeltaRSMerge(ctx context.Context, python string) (*deltaRSMerge, error) {
	p, err := startPyScript(ctx, "delta-rs merge script", python, deltarsMergeScript, 1<<20)
	if err != nil {
		return nil, err
	}
	d := &deltaRSMerge{pyScript: p}
	var hello struct {
		Deltalake string `json:"deltalake"`
	}
	if err := d.do(map[string]any{"cmd": "hello"}, &hello); err != nil {
		d.close()
		return nil, err
	}
	d.Version = hello.Deltalake
	return d, nil
}

// do sends one command and decodes the answer into out.
func (d *deltaRSMerge) do(req map[string]any, out any) error {
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return d.ask(line, fmt.Sprint(req["cmd"]), out)
}

// merge runs delta-rs's MERGE of the source file into the delta-rs table.
func (d *deltaRSMerge) merge(ctx context.Context, m *mergeBench, srcFile string) (mergeOutcome, error) {
	var ans struct {
		Wall, CPU float64
		PeakRSSKB int64 `json:"peak_rss_kb"`
		BaseRSSKB int64 `json:"base_rss_kb"`
		Version   int64
		Before    int64
		Metrics   map[string]any
	}
	if err := d.do(map[string]any{"cmd": "merge", "table": m.rsDir, "source": srcFile}, &ans); err != nil {
		return mergeOutcome{}, err
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	o := mergeOutcome{wall: sec(ans.Wall), cpu: sec(ans.CPU), peakRSSKB: ans.PeakRSSKB, baseRSSKB: ans.BaseRSSKB,
		version: ans.Version, deltarsMetrics: ans.Metrics}
	num := func(k string) int64 {
		f, _ := ans.Metrics[k].(float64)
		return int64(f)
	}
	o.updated, o.inserted, o.copied = num("num_target_rows_updated"), num("num_target_rows_inserted"), num("num_target_rows_copied")
	store, err := objectstore.NewLocal(m.rsDir)
	if err != nil {
		return o, err
	}
	if ans.Version != ans.Before+1 {
		return o, fmt.Errorf("bench: delta-rs merge went from version %d to %d", ans.Before, ans.Version)
	}
	return o, commitFiles(ctx, store, ans.Version, &o)
}

// writeSourceFile writes src as a parquet file for delta-rs (pyarrow reads
// it into its source table, untimed).
func writeSourceFile(path string, src []mergeRow) error {
	rows := make([]mergeSourceFile, len(src))
	for i, r := range src {
		rows[i] = mergeSourceFile{ID: r.ID, Date: int32(r.Date), Value: r.Value, Payload: r.Payload}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := parquet.NewGenericWriter[mergeSourceFile](f)
	if _, err := w.Write(rows); err != nil {
		f.Close()
		return err
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MergeFigure measures P11: MERGE of MergeKeys changed keys (half updates,
// half inserts) into a table of MergeRows rows partitioned by date, one
// file per date, on the local filesystem: table.Table.Merge on a table with
// deletion vectors and on one without (copy-on-write), and delta-rs's
// DeltaTable.merge (copy-on-write: it writes no deletion vectors) on a
// copy of the latter, same source, for the narrow and the wide spread of
// keys. Every result is checked against the reference digest computed
// from the input. Without Env.Python only deltakit is measured.
func MergeFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P11", Title: "MERGE upsert into a date-partitioned table vs delta-rs",
		Setup: fmt.Sprintf("local filesystem; table of %d rows (id long, date date, value double, payload string ~27 chars) partitioned by date, "+
			"%d dates of %d rows, one file each (written by table.Append); source of %d keys, half updates of existing rows and half inserts of new ids; "+
			"MERGE ON target.id = source.id AND target.date = source.date WHEN MATCHED UPDATE ALL WHEN NOT MATCHED INSERT ALL; "+
			"narrow: the keys of the latest %d dates; wide: keys spread over all %d dates; "+
			"sides: table.Table.Merge with deletion vectors, table.Table.Merge copy-on-write, delta-rs DeltaTable.merge(streamed_exec=False) on a copy "+
			"of the copy-on-write table; %d repetition(s) per side, each table restored after each MERGE (untimed)",
			cfg.MergeRows, cfg.MergeDates, cfg.MergeRows/max(cfg.MergeDates, 1), cfg.MergeKeys, cfg.MergeNarrowDates, cfg.MergeDates, cfg.MergeReps)}
	if cfg.MergeNarrowDates > cfg.MergeDates {
		return fig, fmt.Errorf("bench: P11 narrow spread of %d dates > %d dates", cfg.MergeNarrowDates, cfg.MergeDates)
	}
	m, err := newMergeBench(ctx, env.TempDir, cfg.MergeRows, cfg.MergeDates)
	if err != nil {
		return fig, err
	}
	defer m.close(ctx)
	fig.add("generate_table", m.generated, "s")
	fig.add("table_bytes", m.generateBytes, "B")
	env.logf("P11: tables generated in %.1f s (%s bytes per copy)", m.generated, groupDigits(int(m.generateBytes)))

	var rs *deltaRSMerge
	if env.Python == "" {
		fig.Skipped = "delta-rs side skipped: no Python venv with deltalake ($DELTAKIT_VENV or <repo>/.venv; run scripts/install-interop.sh)"
	} else if rs, err = startDeltaRSMerge(ctx, env.Python); err != nil {
		return fig, err
	} else {
		defer rs.close()
		fig.note("delta-rs: deltalake %s (Python), timed inside Python; its source is a pyarrow table read from a parquet file before the clock starts", rs.Version)
	}
	fig.note("load average (1 min) at the start: %s", loadAvg())

	narrow := make([]int, cfg.MergeNarrowDates)
	for i := range narrow {
		narrow[i] = cfg.MergeDates - cfg.MergeNarrowDates + i
	}
	wide := make([]int, cfg.MergeDates)
	for i := range wide {
		wide[i] = i
	}
	for _, v := range []struct {
		name  string
		dates []int
	}{{"narrow", narrow}, {"wide", wide}} {
		src, err := mergeSource(m.rows, m.perDate, v.dates, cfg.MergeKeys)
		if err != nil {
			return fig, err
		}
		keys := make(map[int64]bool, len(src))
		for _, r := range src {
			keys[r.ID] = true
		}
		want := expectedDigest(m.base, src, m.rows, m.perDate)
		srcFile := filepath.Join(m.dir, "source-"+v.name+".parquet")
		if err := writeSourceFile(srcFile, src); err != nil {
			return fig, err
		}
		sides := []*mergeSide{
			{name: "dv",
				run:   func() (mergeOutcome, error) { return deltakitMerge(ctx, &m.dv, m.dvStore, src) },
				check: func() (mergeDigest, error) { return digestTable(ctx, m.dv, keys) },
				reset: func() error { return restore(ctx, &m.dv, m.dvBase) }},
			{name: "cow",
				run:   func() (mergeOutcome, error) { return deltakitMerge(ctx, &m.cow, m.cowStore, src) },
				check: func() (mergeDigest, error) { return digestTable(ctx, m.cow, keys) },
				reset: func() error { return restore(ctx, &m.cow, m.cowBase) }},
		}
		if rs != nil {
			sides = append(sides, &mergeSide{name: "deltars",
				run: func() (mergeOutcome, error) { return rs.merge(ctx, m, srcFile) },
				check: func() (mergeDigest, error) {
					// Read by deltakit, and by delta-rs itself: both must agree.
					var d mergeDigest
					if err := rs.do(map[string]any{"cmd": "digest", "table": m.rsDir, "source": srcFile}, &d); err != nil {
						return d, err
					}
					if d != want {
						return d, fmt.Errorf("delta-rs reads its own result as %v", d)
					}
					t, err := table.Open(ctx, m.rsDir)
					if err != nil {
						return d, err
					}
					return digestTable(ctx, t, keys)
				},
				reset: func() error {
					var ans struct{ Version int64 }
					return rs.do(map[string]any{"cmd": "restore", "table": m.rsDir, "version": m.rsBase}, &ans)
				}})
		}
		if err := runMergeSides(env, cfg, v.name, sides, want); err != nil {
			return fig, err
		}
		byName := map[string]*mergeSide{}
		for _, s := range sides {
			byName[s.name] = s
			addMergeSideMetrics(fig, v.name+"_"+s.name+"_", s)
		}
		if rs := byName["deltars"]; rs != nil {
			for _, n := range []string{"dv", "cow"} {
				fig.add(v.name+"_ratio_"+n, ratio(medianOf(byName[n].outs, true), medianOf(rs.outs, true)), "x")
				fig.add(v.name+"_ratio_"+n+"_cpu", ratio(medianOf(byName[n].outs, false), medianOf(rs.outs, false)), "x")
			}
		}
		fig.note("%s: updates of %d dates (%d..%d days after %s), inserts into the same dates; result of every side = the reference: %v",
			v.name, len(v.dates), v.dates[0], v.dates[len(v.dates)-1], mergeDay0, want)
	}
	fig.note("load average (1 min) at the end: %s", loadAvg())
	fig.note("ratio* are deltakit / delta-rs (wall, and *_cpu process CPU: getrusage in Go, time.process_time in Python); " +
		"*_peak_rss is VmHWM after resetting it to the resident set just before the MERGE (Linux clear_refs; Go's freed heap returned first), " +
		"base_rss that resident set; files and bytes added/removed are from the MERGE's commit (files_given_dv: files kept with a new deletion vector); " +
		"bytes_written counts data and DV files PUT; alloc is Go heap allocated")
	return fig, nil
}

// mergeSide is one side of P11 (table.Table.Merge with or without deletion
// vectors, delta-rs): how to run its MERGE, read its result and restore
// its table, and the outcomes of its repetitions.
type mergeSide struct {
	name  string
	run   func() (mergeOutcome, error)
	check func() (mergeDigest, error)
	reset func() error
	outs  []mergeOutcome
}

// runMergeSides runs cfg.MergeReps repetitions of every side's MERGE for
// the key spread named spread (the order of the sides rotating), checks
// each result's counts and digest against want and restores the side's
// table after it.
func runMergeSides(env *Env, cfg Config, spread string, sides []*mergeSide, want mergeDigest) error {
	for i := range cfg.MergeReps {
		for j := range sides {
			s := sides[(i+j)%len(sides)]
			env.logf("P11: %s %s (repetition %d)", spread, s.name, i+1)
			o, err := s.run()
			if err != nil {
				return fmt.Errorf("P11 %s %s: %w", spread, s.name, err)
			}
			if o.updated != int64(cfg.MergeKeys/2) || o.inserted != int64(cfg.MergeKeys-cfg.MergeKeys/2) {
				return fmt.Errorf("bench: P11 %s %s updated %d and inserted %d rows, want %d and %d", spread, s.name,
					o.updated, o.inserted, cfg.MergeKeys/2, cfg.MergeKeys-cfg.MergeKeys/2)
			}
			got, err := s.check()
			if err != nil {
				return fmt.Errorf("bench: P11 %s %s: checking the result: %w", spread, s.name, err)
			}
			if got != want {
				return fmt.Errorf("bench: P11 %s %s: the table holds %v, the reference %v", spread, s.name, got, want)
			}
			s.outs = append(s.outs, o)
			if err := s.reset(); err != nil {
				return fmt.Errorf("bench: P11 %s %s: restore: %w", spread, s.name, err)
			}
		}
	}
	return nil
}

// addMergeSideMetrics adds the metrics of side s named with prefix p
// ("narrow_dv_"): the medians of its repetitions' wall, CPU and peak RSS,
// and the last one's files, bytes and side-specific figures.
func addMergeSideMetrics(fig *Figure, p string, s *mergeSide) {
	var wall, cpu []time.Duration
	var peak []float64
	for _, o := range s.outs {
		wall, cpu, peak = append(wall, o.wall), append(cpu, o.cpu), append(peak, float64(o.peakRSSKB))
	}
	o := s.outs[len(s.outs)-1]
	fig.add(p+"merge", median(wall).Seconds(), "s")
	fig.add(p+"cpu", median(cpu).Seconds(), "s")
	if pk := medianF(peak); pk > 0 {
		fig.add(p+"peak_rss", pk/1024, "MiB")
		fig.add(p+"base_rss", float64(o.baseRSSKB)/1024, "MiB")
	}
	fig.add(p+"files_added", float64(o.filesAdded), "count")
	fig.add(p+"files_removed", float64(o.filesRemoved), "count")
	fig.add(p+"files_given_dv", float64(o.dvs), "count")
	fig.add(p+"bytes_added", float64(o.bytesAdded), "B")
	fig.add(p+"bytes_removed", float64(o.bytesRemoved), "B")
	fig.add(p+"rows_copied", float64(o.copied), "rows")
	if s.name != "deltars" {
		fig.add(p+"bytes_written", float64(o.io.putBytes), "B")
		fig.add(p+"dv_files_written", float64(o.io.dvFiles), "count")
		fig.add(p+"bytes_read", float64(o.io.getBytes), "B")
		fig.add(p+"alloc", o.alloc/(1<<20), "MiB")
	} else {
		for _, k := range []string{"num_target_files_scanned", "num_target_files_skipped_during_scan", "scan_time_ms", "rewrite_time_ms", "execution_time_ms"} {
			if f, ok := o.deltarsMetrics[k].(float64); ok {
				fig.add(p+k, f, "count")
			}
		}
	}
}

func medianOf(outs []mergeOutcome, wall bool) time.Duration {
	ds := make([]time.Duration, len(outs))
	for i, o := range outs {
		ds[i] = o.cpu
		if wall {
			ds[i] = o.wall
		}
	}
	return median(ds)
}

// loadAvg returns the 1-minute load average of /proc/loadavg, or "?".
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
