package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/table"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
)

// P7 deletes the flights of one airport: origin = 'MSY' is 37/3600 ≈ 1.03%
// of GenerateFlights' rows (the origin index is the minimum of two uniform
// draws of 60, so index 41 has probability (119-2·41)/3600), spread evenly
// over departure time and so over every file of a table appended in
// departure order, and no file's min/max stats can exclude it. A second
// delete on the deletion-vector table, of origin = 'SAT' (index 42, 35/3600),
// measures a delete of files that already carry a deletion vector.
const (
	deleteOrigin       = "MSY"
	deleteSecondOrigin = "SAT"
)

// countingStore passes every call through and counts requests and bytes,
// split into the table's log (_delta_log/) and everything else (data and
// deletion-vector files).
type countingStore struct {
	objectstore.Store
	gets, dvGets             atomic.Int64
	puts, logPuts            atomic.Int64
	putBytes, logPutBytes    atomic.Int64
	dataFilesPut, dvFilesPut atomic.Int64
	getBytes                 atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	b, err := c.Store.Get(ctx, key, r)
	c.gets.Add(1)
	c.getBytes.Add(int64(len(b)))
	if isDVKey(key) {
		c.dvGets.Add(1)
	}
	return b, err
}

func (c *countingStore) Put(ctx context.Context, key string, data []byte) error {
	c.count(key, data)
	return c.Store.Put(ctx, key, data)
}

func (c *countingStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	c.count(key, data)
	return c.Store.PutIfAbsent(ctx, key, data)
}

func (c *countingStore) count(key string, data []byte) {
	if strings.HasPrefix(key, "_delta_log/") {
		c.logPuts.Add(1)
		c.logPutBytes.Add(int64(len(data)))
		return
	}
	c.puts.Add(1)
	c.putBytes.Add(int64(len(data)))
	if isDVKey(key) {
		c.dvFilesPut.Add(1)
	} else {
		c.dataFilesPut.Add(1)
	}
}

func isDVKey(key string) bool {
	i := strings.LastIndexByte(key, '/')
	return strings.HasPrefix(key[i+1:], "deletion_vector_")
}

// counts is a snapshot of a countingStore.
type counts struct {
	gets, dvGets, getBytes, puts, putBytes, logPuts, logPutBytes, dataFiles, dvFiles int64
}

func (c *countingStore) snapshot() counts {
	return counts{gets: c.gets.Load(), dvGets: c.dvGets.Load(), getBytes: c.getBytes.Load(),
		puts: c.puts.Load(), putBytes: c.putBytes.Load(), logPuts: c.logPuts.Load(),
		logPutBytes: c.logPutBytes.Load(), dataFiles: c.dataFilesPut.Load(), dvFiles: c.dvFilesPut.Load()}
}

func (c counts) sub(o counts) counts {
	return counts{gets: c.gets - o.gets, dvGets: c.dvGets - o.dvGets, getBytes: c.getBytes - o.getBytes,
		puts: c.puts - o.puts, putBytes: c.putBytes - o.putBytes, logPuts: c.logPuts - o.logPuts,
		logPutBytes: c.logPutBytes - o.logPutBytes, dataFiles: c.dataFiles - o.dataFiles, dvFiles: c.dvFiles - o.dvFiles}
}

// flightFile is Flight with the parquet schema of the files deltakit
// writes for FlightsSchema (date timestamp(isAdjustedToUTC=false), the longs
// annotated INT(64,true)): the floor of P7 reads those files with it, so
// that parquet-go reads them without converting between schemas (with
// Flight, ~18% of the floor's CPU went to parquet-go's conversion).
type flightFile struct {
	Date        int64  `parquet:"date,optional,timestamp(microsecond:local)"`
	Delay       int64  `parquet:"delay,optional,int(64)"`
	Distance    int64  `parquet:"distance,optional,int(64)"`
	Origin      string `parquet:"origin,optional,dict"`
	Destination string `parquet:"destination,optional,dict"`
}

// deleteBench is the state of P7: two flights tables on S3 with the same
// files, one with deletion vectors enabled and one without (copy-on-write),
// each restored to its initial version after every measured delete, and a
// raw prefix that the floor writes its rewritten files to.
type deleteBench struct {
	dv, cow         *table.Table
	dvBase, cowBase int64 // versions holding the initial files
	dvStore         *countingStore
	cowStore        *countingStore
	raw             *countingStore
	files           []string // keys of the initial files (of the cow table)
	rawN            int
}

// newDeleteBench creates the two tables, each of files appends of rows/files
// flights in departure order (one file per append, so the files are the
// same on both tables and every file holds every airport).
func newDeleteBench(ctx context.Context, s3 *testenv.MinIO, rows, files int) (*deleteBench, error) {
	if files < 1 || rows < files {
		return nil, fmt.Errorf("bench: P7 needs at least one row per file (rows %d, files %d)", rows, files)
	}
	stores, err := storesAt(ctx, s3, "p7", "dv-table", "cow-table", "raw")
	if err != nil {
		return nil, err
	}
	d := &deleteBench{dvStore: &countingStore{Store: stores[0]}, cowStore: &countingStore{Store: stores[1]},
		raw: &countingStore{Store: stores[2]}}
	d.dv, err = table.Create(ctx, "", FlightsSchema(), table.WithStore(d.dvStore),
		table.WithProperties(map[string]string{txlog.PropEnableDeletionVectors: "true"}))
	if err != nil {
		return nil, err
	}
	d.cow, err = table.Create(ctx, "", FlightsSchema(), table.WithStore(d.cowStore))
	if err != nil {
		return nil, err
	}
	per := rows / files
	for i := range files {
		n := per
		if i == files-1 {
			n = rows - per*(files-1)
		}
		fs, _ := GenerateFlights(i*per, n)
		if d.dv, err = table.Append(ctx, d.dv, fs); err != nil {
			return nil, err
		}
		if d.cow, err = table.Append(ctx, d.cow, fs); err != nil {
			return nil, err
		}
	}
	d.dvBase, d.cowBase = d.dv.Version(), d.cow.Version()
	for f := range d.cow.Snapshot().AllFiles() {
		d.files = append(d.files, f.Path)
	}
	if len(d.files) != files {
		return nil, fmt.Errorf("bench: P7 table has %d files, want %d", len(d.files), files)
	}
	return d, nil
}

// deleteOutcome is what one measured delete did.
type deleteOutcome struct {
	deleted      int64
	filesTouched int // files that lost rows: rewritten, or given a deletion vector
	filesWritten int // data files written
	dvsWritten   int // deletion vectors (descriptors) written
	io           counts
}

// deltakitDelete runs table.Table.Delete of origin = o on *tbl and returns what it
// did according to its result and the store's counters.
func deltakitDelete(ctx context.Context, tbl **table.Table, store *countingStore, o string) (deleteOutcome, error) {
	c0 := store.snapshot()
	nt, res, err := (*tbl).Delete(ctx, table.Col("origin").Eq(o))
	if err != nil {
		return deleteOutcome{}, err
	}
	if !res.Committed {
		return deleteOutcome{}, errors.New("bench: P7 delete matched no rows")
	}
	*tbl = nt
	return deleteOutcome{deleted: res.DeletedRows,
		// DeletionVectorsAdded counts every vector written, grown ones
		// included (Spark's numDeletionVectorsAdded).
		filesTouched: res.RemovedFiles + res.DeletionVectorsAdded,
		filesWritten: res.AddedFiles, dvsWritten: res.DeletionVectorsAdded,
		io: store.snapshot().sub(c0)}, nil
}

// restore returns *tbl to version base (not measured).
func restore(ctx context.Context, tbl **table.Table, base int64) error {
	nt, _, err := (*tbl).Restore(ctx, table.ToVersion(base))
	if err != nil {
		return err
	}
	*tbl = nt
	return nil
}

// dvDelete is the deletion-vector side: a delete of 1% from files without
// deletion vectors.
func (d *deleteBench) dvDelete(ctx context.Context) (deleteOutcome, error) {
	return deltakitDelete(ctx, &d.dv, d.dvStore, deleteOrigin)
}

// dvSecondDelete deletes another airport from the deletion-vector table
// after dvDelete: every touched file already has a deletion vector, which
// is merged into the new one.
func (d *deleteBench) dvSecondDelete(ctx context.Context) (deleteOutcome, error) {
	return deltakitDelete(ctx, &d.dv, d.dvStore, deleteSecondOrigin)
}

// cowDelete is the copy-on-write side.
func (d *deleteBench) cowDelete(ctx context.Context) (deleteOutcome, error) {
	return deltakitDelete(ctx, &d.cow, d.cowStore, deleteOrigin)
}

// floor rewrites every file with raw parquet-go: GET the file, read it with
// GenericReader[flightFile], drop the rows of the deleted origin, write the
// rest with GenericWriter[flightFile] in deltakit's layout (snappy, data page v1,
// 1 MiB pages, dictionary strings: P2's floor) and PUT it under a new key.
// Nothing is committed. The files are read from the copy-on-write table's
// store, uncounted there.
func (d *deleteBench) floor(ctx context.Context) (deleteOutcome, error) {
	var out deleteOutcome
	c0 := d.raw.snapshot()
	var rows []flightFile
	for _, key := range d.files {
		data, err := d.cowStore.Store.Get(ctx, key, objectstore.FullObject)
		if err != nil {
			return out, err
		}
		d.raw.gets.Add(1) // the floor's own request count
		d.raw.getBytes.Add(int64(len(data)))
		pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return out, fmt.Errorf("bench: P7 floor: %s: %w", key, err)
		}
		r := parquet.NewGenericReader[flightFile](pf)
		rows = rows[:0]
		rows = append(rows, make([]flightFile, pf.NumRows())...)
		n, err := r.Read(rows)
		if err != nil && !errors.Is(err, io.EOF) {
			return out, fmt.Errorf("bench: P7 floor: %s: %w", key, err)
		}
		if int64(n) != pf.NumRows() {
			return out, fmt.Errorf("bench: P7 floor: %s: read %d of %d rows", key, n, pf.NumRows())
		}
		if err := r.Close(); err != nil {
			return out, err
		}
		kept := rows[:0]
		for _, f := range rows {
			if f.Origin != deleteOrigin {
				kept = append(kept, f)
			}
		}
		out.deleted += int64(n - len(kept))
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[flightFile](&buf, parquet.Compression(&parquet.Snappy),
			parquet.DataPageVersion(1), parquet.PageBufferSize(1<<20))
		if _, err := w.Write(kept); err != nil {
			return out, err
		}
		if err := w.Close(); err != nil {
			return out, err
		}
		d.rawN++
		if err := d.raw.Put(ctx, fmt.Sprintf("part-%05d-raw-c000.snappy.parquet", d.rawN), buf.Bytes()); err != nil {
			return out, err
		}
		out.filesTouched++
		out.filesWritten++
	}
	out.io = d.raw.snapshot().sub(c0)
	return out, nil
}

// DeleteFigure measures P7: DELETE of ~1% of the rows (origin = 'MSY') from
// a table of DeleteRows flights rows in DeleteFiles files, every file
// touched, by table.Table.Delete with deletion vectors and without
// (copy-on-write), each against the floor of rewriting the touched files
// with raw parquet-go, on MinIO. The three sides run in rotating order;
// after each deltakit delete the table is restored (table.Table.Restore, not
// measured) to its initial files.
func DeleteFigure(ctx context.Context, env *Env, cfg Config) (*Figure, error) {
	fig := &Figure{ID: "P7", Title: "DELETE 1% (deletion vectors, copy-on-write) vs rewriting with raw parquet-go",
		Setup: fmt.Sprintf("MinIO on localhost; unpartitioned flights table of %d rows in %d files of equal rows, appended in departure order "+
			"(one Append[Flight] per file); DELETE WHERE origin = '%s' (~1.03%%, spread over every file, not skippable by stats); "+
			"%d repetitions per side, rotating order, median counted: table.Table.Delete on a table with delta.enableDeletionVectors=true, "+
			"on one without (copy-on-write), and the floor: GET each file, parquet.GenericReader[T], drop the rows, "+
			"GenericWriter[T] (snappy) + PUT, T a struct of the files' exact schema; each deltakit table restored to its initial files after each delete (not timed)",
			cfg.DeleteRows, cfg.DeleteFiles, deleteOrigin, cfg.DeleteReps)}
	if env.skipWithoutS3(fig) {
		return fig, nil
	}
	d, err := newDeleteBench(ctx, env.S3, cfg.DeleteRows, cfg.DeleteFiles)
	if err != nil {
		return fig, err
	}
	type side struct {
		run       func(context.Context) (deleteOutcome, error)
		after     func(context.Context) error // untimed, after each run
		wall, cpu []time.Duration
		alloc     []float64
		last      deleteOutcome
	}
	measure := func(s *side) error {
		runtime.GC() // no side pays for another's garbage
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		t0, c0 := time.Now(), cpuTime()
		out, err := s.run(ctx)
		wall, cpu := time.Since(t0), cpuTime()-c0
		runtime.ReadMemStats(&m1)
		if err != nil {
			return err
		}
		s.wall, s.cpu = append(s.wall, wall), append(s.cpu, cpu)
		s.alloc = append(s.alloc, float64(m1.TotalAlloc-m0.TotalAlloc))
		s.last = out
		return nil
	}
	second := &side{run: d.dvSecondDelete}
	dv := &side{run: d.dvDelete, after: func(ctx context.Context) error {
		if err := measure(second); err != nil {
			return err
		}
		return restore(ctx, &d.dv, d.dvBase)
	}}
	cow := &side{run: d.cowDelete, after: func(ctx context.Context) error { return restore(ctx, &d.cow, d.cowBase) }}
	floor := &side{run: d.floor}
	order := []*side{dv, cow, floor}
	for i := range cfg.DeleteReps {
		for j := range order {
			s := order[(i+j)%len(order)]
			if err := measure(s); err != nil {
				return fig, err
			}
			if s.after != nil {
				if err := s.after(ctx); err != nil {
					return fig, err
				}
			}
		}
	}
	if dv.last.deleted != floor.last.deleted || cow.last.deleted != floor.last.deleted {
		return fig, fmt.Errorf("bench: P7 deleted rows differ: deletion vectors %d, copy-on-write %d, floor %d",
			dv.last.deleted, cow.last.deleted, floor.last.deleted)
	}
	for _, s := range []struct {
		name string
		s    *side
	}{{"dv", dv}, {"cow", cow}, {"floor", floor}, {"dv_second", second}} {
		o := s.s.last
		fig.add(s.name+"_delete", median(s.s.wall).Seconds(), "s")
		fig.add(s.name+"_cpu", median(s.s.cpu).Seconds(), "s")
		fig.add(s.name+"_deleted_rows", float64(o.deleted), "rows")
		fig.add(s.name+"_files_touched", float64(o.filesTouched), "count")
		fig.add(s.name+"_data_files_written", float64(o.io.dataFiles), "count")
		fig.add(s.name+"_dv_files_written", float64(o.io.dvFiles), "count")
		fig.add(s.name+"_bytes_written", float64(o.io.putBytes), "B")
		fig.add(s.name+"_log_bytes_written", float64(o.io.logPutBytes), "B")
		fig.add(s.name+"_gets", float64(o.io.gets), "count")
		fig.add(s.name+"_dv_gets", float64(o.io.dvGets), "count")
		fig.add(s.name+"_bytes_read", float64(o.io.getBytes), "B")
		fig.add(s.name+"_alloc", medianF(s.s.alloc)/(1<<20), "MiB")
	}
	fig.add("ratio_dv", ratio(median(dv.wall), median(floor.wall)), "x")
	fig.add("ratio_dv_cpu", ratio(median(dv.cpu), median(floor.cpu)), "x")
	fig.add("ratio_cow", ratio(median(cow.wall), median(floor.wall)), "x")
	fig.add("ratio_cow_cpu", ratio(median(cow.cpu), median(floor.cpu)), "x")
	fig.add("ratio_dv_second", ratio(median(second.wall), median(floor.wall)), "x")
	fig.note("rows deleted: %d of %d (%.2f%%); files touched: %d of %d", floor.last.deleted, cfg.DeleteRows,
		100*float64(floor.last.deleted)/float64(cfg.DeleteRows), floor.last.filesTouched, cfg.DeleteFiles)
	fig.note("ratio* divide by the floor's median; *_cpu is this process's user+system CPU (getrusage), without MinIO's; " +
		"*_bytes_written counts data and deletion-vector files PUT (the log's in *_log_bytes_written); *_alloc is Go heap allocated per delete")
	fig.note("dv_second: origin = '%s' deleted right after each dv delete, every touched file already carrying a deletion vector "+
		"(merged into the new one); its bytes and requests are of that delete", deleteSecondOrigin)
	return fig, nil
}

// medianF is the median of xs (the upper one for an even count); 0 for none.
func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	ds := make([]time.Duration, len(xs))
	for i, x := range xs {
		ds[i] = time.Duration(x)
	}
	return float64(median(ds))
}
