package table

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/rowtrack"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// OptimizeOperation is the commitInfo.operation of an optimize commit.
const OptimizeOperation = "OPTIMIZE"

// OptimizeOption configures Optimize.
type OptimizeOption func(*optimizeConfig)

type optimizeConfig struct {
	target   int64
	progress func(doneBytes, totalBytes int64)
	wopts    []WriteOption
}

// WithOptimizeTargetSize sets the size in bytes that compacted files aim
// for; files at least this large are left alone (default
// DefaultTargetFileSize, 128 MiB).
func WithOptimizeTargetSize(bytes int64) OptimizeOption {
	return func(c *optimizeConfig) { c.target = bytes }
}

// WithOptimizeProgress calls fn after each input file is read, with the
// bytes of input read so far and the total to read.
func WithOptimizeProgress(fn func(doneBytes, totalBytes int64)) OptimizeOption {
	return func(c *optimizeConfig) { c.progress = fn }
}

// WithOptimizeWriteOptions passes options to the writer of the compacted
// files (compression, Parquet options). WithTargetFileSize is set from
// WithOptimizeTargetSize.
func WithOptimizeWriteOptions(opts ...WriteOption) OptimizeOption {
	return func(c *optimizeConfig) { c.wopts = append(c.wopts, opts...) }
}

// OptimizeResult reports what Optimize did.
type OptimizeResult struct {
	// Version is the table version after Optimize: the new commit's, or t's
	// when there was nothing to compact (Committed false).
	Version   int64
	Committed bool
	// TargetSize is the target file size applied, in bytes.
	TargetSize int64
	// FilesConsidered counts the live files looked at.
	FilesConsidered int
	// Partitions counts the partitions that were compacted.
	Partitions int
	// FilesRemoved and BytesRemoved are the compacted input files;
	// FilesAdded and BytesAdded the files that replace them.
	FilesRemoved, FilesAdded int
	BytesRemoved, BytesAdded int64
	// Rows counts the rows rewritten (after deletion vectors).
	Rows int64
}

// optimizeBin is a set of small files of one partition that are rewritten
// together.
type optimizeBin struct {
	values map[string]string
	files  []*txlog.Add
	bytes  int64
}

// Optimize compacts small files, as Spark's OPTIMIZE does (bin-packing, no
// Z-order): in each partition, the files smaller than the target size, and
// the files with deletion vectors, are sorted by size and packed into bins
// of at most the target size; each bin holding more than one file (or a
// file with a deletion vector) is read, with its deletion vector applied,
// and written again as files of about the target size. One commit through
// the table's commit path (operation OPTIMIZE) removes the old files and
// adds the new ones, all with dataChange false: the table's rows do not
// change, so streaming readers skip the commit.
//
// The transaction records the files of the compacted partitions as read:
// a concurrent commit that removes one of them (a delete, an overwrite,
// another optimize) makes Optimize fail with a *txlog.ConflictError, and
// its written files are deleted; concurrent blind appends do not conflict.
// Optimize holds one bin's rows in memory at a time.
//
// On a clustered table (feature clustering) Optimize compacts the same way
// and does not cluster: the delta.clustering domain is left as it is, and
// the new files carry no clusteringProvider (Spark's OPTIMIZE clusters them
// and sets clusteringProvider "liquid"; a later Spark OPTIMIZE still
// clusters them). With row tracking enabled (delta.enableRowTracking=true)
// the compacted rows keep their stable row ids and row commit versions in
// the new files' materialized columns, as Spark's OPTIMIZE does
// (rowtracking.go).
//
// It returns t itself and Committed false when there is nothing to
// compact. Errors: ErrInvalidArgument for a bad target size; errors reading
// the data files or deletion vectors; write and commit errors.
func (t *Table) Optimize(ctx context.Context, opts ...OptimizeOption) (*Table, *OptimizeResult, error) {
	if t == nil {
		return nil, nil, nilTableError("optimize")
	}
	cfg := optimizeConfig{target: DefaultTargetFileSize}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.target <= 0 {
		return nil, nil, fmt.Errorf("table: optimize %s: %w: target size %d", t.URI(), ErrInvalidArgument, cfg.target)
	}
	res := &OptimizeResult{Version: t.Version(), TargetSize: cfg.target}
	op, err := t.begin(OptimizeOperation, false, writeConfig{})
	if err != nil {
		return nil, nil, err
	}
	files := t.snap.Files()
	res.FilesConsidered = len(files)
	bins := planBins(t, files, cfg.target)
	if len(bins) == 0 {
		return t, res, nil
	}
	rt, err := t.rowTracker()
	if err != nil {
		return nil, nil, fmt.Errorf("table: optimize %s: %w", t.URI(), err)
	}

	parts := map[string]bool{}
	for _, b := range bins {
		parts[partitionKey(t.partitionKeys(), b.values)] = true
	}
	cols := t.partitionKeys()
	op.tx.ReadFiles(func(pv map[string]string) bool { return parts[partitionKey(cols, pv)] })
	res.Partitions = len(parts)

	var total, done int64
	for _, b := range bins {
		total += b.bytes
	}
	wcfg := newWriteConfig(append(slices.Clone(cfg.wopts), WithTargetFileSize(cfg.target)))
	fw := t.optimizeWriter(rt, wcfg)
	now := t.cfg.now().UnixMilli()
	var dvsRemoved int64
	for _, b := range bins {
		adds, rows, err := t.compactBin(ctx, b, rt, fw, func(n int64) {
			done += n
			if cfg.progress != nil {
				cfg.progress(done, total)
			}
		})
		if err != nil {
			deleteFiles(t.store, fw.written(), t.cfg.logger)
			return nil, nil, fmt.Errorf("table: optimize %s: %w", t.URI(), err)
		}
		res.Rows += rows
		for _, a := range adds {
			a.DataChange = false
			if k, ok := storeKey(t.store.URI(), txlog.DecodePath(a.Path)); ok {
				op.written = append(op.written, k)
			}
			op.adds = append(op.adds, a)
			res.FilesAdded++
			res.BytesAdded += a.Size
		}
		for _, f := range b.files {
			r := f.RemoveAt(now)
			r.DataChange = false
			op.removes = append(op.removes, r)
			res.FilesRemoved++
			res.BytesRemoved += f.Size
			if f.DeletionVector != nil {
				dvsRemoved++
			}
		}
	}
	op.params = map[string]string{
		"predicate":  "[]",
		"zOrderBy":   "[]",
		"auto":       "false",
		"targetSize": strconv.FormatInt(cfg.target, 10),
	}
	m := map[string]int64{
		"numRemovedFiles":           int64(res.FilesRemoved),
		"numAddedFiles":             int64(res.FilesAdded),
		"numRemovedBytes":           res.BytesRemoved,
		"numAddedBytes":             res.BytesAdded,
		"numDeletionVectorsRemoved": dvsRemoved,
	}
	maps.Copy(m, fileSizeStats(op.adds))
	op.metrics = metricsOf(m)
	nt, cr, err := t.commitOperation(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	res.Version = cr.Version
	res.Committed = true
	return nt, res, nil
}

// fileSizeStats are Spark's OPTIMIZE file size metrics of the added files:
// minFileSize, p25FileSize, p50FileSize, p75FileSize and maxFileSize, in
// bytes (percentile p is the size at index floor(p*(n-1)) of the sorted
// sizes; all 0 without files).
func fileSizeStats(adds []*txlog.Add) map[string]int64 {
	sizes := make([]int64, len(adds))
	for i, a := range adds {
		sizes[i] = a.Size
	}
	slices.Sort(sizes)
	at := func(p float64) int64 {
		if len(sizes) == 0 {
			return 0
		}
		return sizes[int(p*float64(len(sizes)-1))]
	}
	return map[string]int64{
		"minFileSize": at(0), "p25FileSize": at(0.25), "p50FileSize": at(0.5),
		"p75FileSize": at(0.75), "maxFileSize": at(1),
	}
}

// partitionKey identifies a partition by its values in column order.
func partitionKey(cols []string, pv map[string]string) string {
	var b strings.Builder
	for _, c := range cols {
		v, ok := pv[c]
		if !ok || v == "" {
			b.WriteString("\x00N")
		} else {
			b.WriteString("\x00V")
			b.WriteString(v)
		}
	}
	return b.String()
}

// planBins groups the compactable files of each partition into bins.
func planBins(t *Table, files []*txlog.Add, target int64) []*optimizeBin {
	uri := t.store.URI()
	byPart := map[string][]*txlog.Add{}
	var order []string
	keys := t.partitionKeys()
	for _, f := range files {
		if _, ok := storeKey(uri, txlog.DecodePath(f.Path)); !ok {
			continue // outside the table root: not ours to rewrite
		}
		if f.Size >= target && f.DeletionVector == nil {
			continue
		}
		k := partitionKey(keys, f.PartitionValues)
		if _, ok := byPart[k]; !ok {
			order = append(order, k)
		}
		byPart[k] = append(byPart[k], f)
	}
	slices.Sort(order)
	var bins []*optimizeBin
	for _, k := range order {
		fs := byPart[k]
		slices.SortStableFunc(fs, func(a, b *txlog.Add) int {
			return cmp.Or(cmp.Compare(a.Size, b.Size), strings.Compare(a.Path, b.Path))
		})
		var cur *optimizeBin
		flush := func() {
			if cur != nil && (len(cur.files) > 1 || (len(cur.files) == 1 && cur.files[0].DeletionVector != nil)) {
				bins = append(bins, cur)
			}
			cur = nil
		}
		for _, f := range fs {
			if cur != nil && cur.bytes+f.Size > target {
				flush()
			}
			if cur == nil {
				cur = &optimizeBin{values: f.PartitionValues}
			}
			cur.files = append(cur.files, f)
			cur.bytes += f.Size
		}
		flush()
	}
	return bins
}

// optimizeWriter returns the writer of an optimize's data files: the
// table's data schema (without partition columns), with the materialized
// row tracking columns when rt is set, and the options of a write with
// cfg.
func (t *Table) optimizeWriter(rt *rowtrack.Tracker, cfg writeConfig) *fileWriter {
	isPart := map[string]bool{}
	for _, c := range t.PartitionColumns() {
		isPart[c] = true
	}
	data := &schema.StructType{}
	for _, f := range t.Schema().Fields {
		if !isPart[f.Name] {
			data.Fields = append(data.Fields, f)
		}
	}
	if rt != nil {
		data.Fields = append(data.Fields, rt.Fields()...)
	}
	return t.newFileWriter(cfg, data)
}

// learn adds raw estimated bytes to the ratio of file bytes to raw bytes
// (for a file written with writeFile's raw 0).
func (w *fileWriter) learn(raw int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rawSum += float64(raw)
	if w.rawSum > 0 {
		w.ratio = w.fileSum / w.rawSum
	}
}

// optimizeBatch is the number of rows read before they go to the writer.
const optimizeBatch = 256

// compactBin rewrites the rows of a bin's files as new data files, one
// input row group at a time: the rows read are written to the file being
// built as they come (data columns from the files, deletion vectors
// applied; partition values are those of the bin), and a file is closed
// once its estimated size reaches the target, as WriteFiles cuts files.
// With rt (row tracking enabled) each row keeps its stable row id and
// commit version in the materialized columns, read from the files in the
// same pass (coalesced with baseRowId+index and defaultRowCommitVersion).
// It returns the add actions and the number of rows; fw records the keys
// written (for cleanup on failure).
func (t *Table) compactBin(ctx context.Context, b *optimizeBin, rt *rowtrack.Tracker, fw *fileWriter, read func(bytes int64)) ([]*txlog.Add, int64, error) {
	values, err := t.binPartitionValues(b)
	if err != nil {
		return nil, 0, err
	}
	dir := fw.root
	if partKeys := t.partitionKeys(); len(partKeys) > 0 {
		dir += partitionDir(partKeys, values) + "/"
	}
	batches, err := t.binBatches(ctx, b, rt, fw, read)
	if err != nil {
		return nil, 0, err
	}
	next, stop := iter.Pull2(batches)
	defer stop()
	var pending batch // rows read but not written yet
	pull := func() (bool, error) {
		if len(pending.rows) > 0 {
			return true, nil
		}
		bt, err, ok := next()
		if !ok {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		pending = bt
		return true, nil
	}
	var adds []*txlog.Add
	var total int64
	for {
		more, err := pull()
		if err != nil {
			return nil, 0, err
		}
		if !more {
			break
		}
		ratio := fw.currentRatio()
		var est float64
		var raw int64
		add, err := fw.writeFile(ctx, dir, values, 0, func(pw *parquetio.Writer) error {
			for est < float64(fw.target) {
				more, err := pull()
				if err != nil {
					return err
				}
				if !more {
					return nil
				}
				k := 0
				for k < len(pending.rows) && est < float64(fw.target) {
					raw += pending.sizes[k]
					est += float64(pending.sizes[k]) * ratio
					k++
				}
				if err := pw.Write(pending.rows[:k]); err != nil {
					return err
				}
				total += int64(k)
				pending.rows, pending.sizes = pending.rows[k:], pending.sizes[k:]
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		fw.learn(raw)
		if rt != nil {
			add.Stats = rowtrack.WithoutStatsOf(add.Stats, rt.IDCol, rt.VersionCol)
		}
		adds = append(adds, add)
	}
	return adds, total, nil
}

// binPartitionValues returns the partition values of bin b, keyed by the
// add actions' keys (physical names under column mapping), parsed and
// serialized again as a write of the rows would.
func (t *Table) binPartitionValues(b *optimizeBin) (map[string]string, error) {
	sch := t.Schema()
	values := map[string]string{}
	partKeys := t.partitionKeys()
	for i, c := range t.PartitionColumns() {
		fld := sch.Fields[sch.FieldIndex(c)]
		s, ok := b.values[partKeys[i]]
		if !ok {
			s = b.values[c]
		}
		v, err := ParsePartitionValue(fld.Type, s)
		if err != nil {
			return nil, fmt.Errorf("partition value of %s in bin of %s: %w", c, b.files[0].Path, err)
		}
		ser, _, err := SerializePartitionValue(fld.Type, v)
		if err != nil {
			return nil, fmt.Errorf("partition value of %s in bin of %s: %w", c, b.files[0].Path, err)
		}
		values[partKeys[i]] = ser
	}
	return values, nil
}

// binBatches returns the rows of bin b's files (as data rows of fw.schema,
// deletion vectors applied, with rt the stable row ids and commit
// versions) in batches of up to optimizeBatch, with each row's estimated
// size; read is told the size of every file read to its end.
func (t *Table) binBatches(ctx context.Context, b *optimizeBin, rt *rowtrack.Tracker, fw *fileWriter, read func(bytes int64)) (iter.Seq2[batch, error], error) {
	checkers := make([]func(any) (int64, error), len(fw.schema.Fields))
	for i, f := range fw.schema.Fields {
		checkers[i] = fieldChecker(f)
	}
	ndata := len(fw.schema.Fields)
	if rt != nil {
		ndata -= 2
	}
	locs, err := newLocator(t)
	if err != nil {
		return nil, err
	}
	mode := t.snap.Metadata().ColumnMappingMode()
	return func(yield func(batch, error) bool) {
		rows := make([]value.Row, 0, optimizeBatch)
		sizes := make([]int64, 0, optimizeBatch)
		for _, f := range b.files {
			key, ok := storeKey(t.store.URI(), txlog.DecodePath(f.Path))
			if !ok { // planBins keeps only files under the table root
				yield(batch{}, fmt.Errorf("file %s: %w", f.Path, ErrPathOutsideTable))
				return
			}
			ropts := []parquetio.ReadOption{parquetio.WithColumnMapping(mode)}
			if f.DeletionVector != nil {
				bm, err := locs.LoadDV(ctx, f.DeletionVector)
				if err != nil {
					yield(batch{}, fmt.Errorf("file %s: %w", f.Path, err))
					return
				}
				ropts = append(ropts, parquetio.WithSkipRows(func(i int64) bool { return i >= 0 && bm.Contains(uint64(i)) }))
			}
			pf, err := parquetio.Open(ctx, t.store, key, fw.schema, ropts...)
			if err != nil {
				yield(batch{}, err)
				return
			}
			for ir, err := range pf.IndexedRows(ctx) {
				if err != nil {
					yield(batch{}, err)
					return
				}
				r := ir.Row
				if rt != nil {
					tr, err := rowtrack.StableTrack(f, ir.Index, r[ndata], r[ndata+1])
					if err != nil {
						yield(batch{}, err)
						return
					}
					r[ndata], r[ndata+1] = nil, nil
					if tr.ID >= 0 {
						r[ndata] = tr.ID
					}
					if tr.Version >= 0 {
						r[ndata+1] = tr.Version
					}
				}
				var size int64
				for c, check := range checkers {
					n, err := check(r[c])
					if err != nil {
						yield(batch{}, fmt.Errorf("file %s, row %d: %w", f.Path, ir.Index, err))
						return
					}
					size += n
				}
				rows, sizes = append(rows, r), append(sizes, size)
				if len(rows) == optimizeBatch {
					if !yield(batch{rows, sizes}, nil) {
						return
					}
					rows, sizes = rows[:0], sizes[:0]
				}
			}
			read(f.Size)
		}
		if len(rows) > 0 {
			yield(batch{rows, sizes}, nil)
		}
	}, nil
}

// batch is rows with their estimated sizes.
type batch struct {
	rows  []value.Row
	sizes []int64
}
