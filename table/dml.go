package table

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/deltakit/deltakit/table/internal/bind"
	"github.com/deltakit/deltakit/table/internal/rowtrack"
	"github.com/deltakit/deltakit/table/internal/scan"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// DMLResult reports what a Delete, Update or Restore did. Counts are rows
// and files; the same figures are in the commit's
// commitInfo.operationMetrics under Spark's keys (Metrics).
type DMLResult struct {
	// Committed is false when the operation changed nothing and committed
	// no version (no row matched, or the WithTxn version was already in the
	// table); Version is then the table's current version.
	Committed bool
	// Version is the version the operation committed.
	Version int64
	// DeletedRows (Delete), UpdatedRows (Update) and CopiedRows (rows
	// rewritten unchanged into new files by copy-on-write) count rows.
	DeletedRows, UpdatedRows, CopiedRows int64
	// AddedFiles and RemovedFiles count data files added and removed; a
	// file that only got a (new) deletion vector counts in neither (an
	// UPDATE's numRemovedFiles metric counts it, as Spark's does).
	AddedFiles, RemovedFiles int
	// As Spark counts them: DeletionVectorsAdded counts the deletion
	// vectors written (a file's first one or a grown one),
	// DeletionVectorsUpdated the files whose deletion vector grew, and
	// DeletionVectorsRemoved the vectors no longer live (replaced by a grown
	// one, or of a file removed or rewritten).
	DeletionVectorsAdded, DeletionVectorsUpdated, DeletionVectorsRemoved int
	// Metrics is commitInfo.operationMetrics of the commit (nil when
	// nothing was committed).
	Metrics map[string]string
}

// dmlTarget is a live file that a DML predicate touches.
type dmlTarget struct {
	f     *scan.File
	oldDV *roaring64.Bitmap // rows the file's current deletion vector deletes; nil for none
	// whole is true when every live row of the file matches, known without
	// reading it (partition-only predicate, or stats that prove it).
	whole bool
	live  int64 // live rows of the file (numRecords minus its DV), -1 unknown
	// matched are the indexes of the live rows that match, in file order;
	// matchedRows and keptRows hold the full rows, when asked for.
	matched     []int64
	matchedRows []value.Row
	keptRows    []value.Row
	// matchedTracks and keptTracks are the stable row ids and row commit
	// versions of matchedRows and keptRows, when the table has row
	// tracking enabled (rowtracking.go); nil otherwise.
	matchedTracks, keptTracks []rowtrack.Track
}

// dmlRead says which rows a DML scan keeps in memory.
type dmlRead struct {
	matchedRows bool // the rows the predicate matches (UPDATE)
	keptRows    bool // the rows it does not match (copy-on-write)
	// readWhole reads the rows of files that match as a whole too (UPDATE
	// needs their rows; DELETE does not).
	readWhole bool
	// changeData is set on a change data feed table: the matched rows of
	// every touched file are read (matchedRows and readWhole), for the
	// change data files, unless the predicate is on partition columns
	// alone and no touched file has a deletion vector: then the operation
	// removes whole files only and readers of the feed take the deleted
	// rows from the removes (Spark writes no cdc file for such a DELETE
	// either).
	changeData bool
}

// dmlScan plans a scan of every column with where as filter (nil: every
// row), then reads each file left to find the rows where is true. Files
// whose rows the predicate cannot match are not returned. The plan holds the
// partition pruning and stats skipping (its files are what the operation
// read, for conflict detection).
//
// Up to DefaultScanConcurrency files are read at once, and at most
// arrowInflightBytes of Parquet (a larger file alone), as a scan reads
// them; the targets come back in the plan's file order whatever the order
// the reads end in. The first error (naming its file) stops the other
// reads and is returned; the context's error is returned as it is.
func (t *Table) dmlScan(ctx context.Context, where Expr, r dmlRead) (*scan.Plan, []*dmlTarget, error) {
	var opts []ScanOption
	if where != nil {
		opts = append(opts, WithFilter(where))
	}
	plan, err := t.plan(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	partOnly := plan.Pred == nil || !plan.Pred.HasDataLeaf()
	if r.changeData {
		hasDV := slices.ContainsFunc(plan.Files, func(f *scan.File) bool { return f.Add.DeletionVector != nil })
		if !partOnly || hasDV {
			r.matchedRows, r.readWhole = true, true
		}
	}
	reader, proj, err := t.dmlReader(plan, r)
	if err != nil {
		return nil, nil, err
	}
	rt, err := t.rowTracker()
	if err != nil {
		return nil, nil, plan.Errorf("", err)
	}
	if !r.matchedRows && !r.keptRows {
		rt = nil // no row is written again
	}
	d := &dmlFileReader{plan: plan, reader: &reader, proj: proj, width: len(t.snap.Schema().Fields), r: r, rt: rt, partOnly: partOnly}
	found := make([]*dmlTarget, len(plan.Files))
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(max(plan.Cfg.Concurrency, 1))
	budget := semaphore.NewWeighted(scan.ArrowInflightBytes)
	for i, f := range plan.Files {
		w := scan.InflightWeight(f)
		if gctx.Err() != nil || budget.Acquire(gctx, w) != nil {
			break // a read failed, or ctx is done
		}
		eg.Go(func() error {
			defer budget.Release(w)
			tg, err := d.read(gctx, f)
			found[i] = tg
			return err
		})
	}
	err = eg.Wait()
	if cerr := ctx.Err(); cerr != nil {
		return nil, nil, cerr
	}
	if err != nil {
		return nil, nil, err
	}
	var out []*dmlTarget
	for _, tg := range found {
		if tg != nil {
			out = append(out, tg)
		}
	}
	return plan, out, nil
}

// dmlFileReader reads the files of a DML scan (dmlScan), one call of read
// per file, safe for concurrent use.
type dmlFileReader struct {
	plan     *scan.Plan
	reader   *scan.Plan // what the files are read with (dmlReader)
	proj     []int      // dmlReader's projection, nil for none
	width    int        // top-level columns of the table schema
	r        dmlRead
	rt       *rowtrack.Tracker // nil: no row tracking to carry
	partOnly bool              // the predicate is on partition columns alone
}

// read returns the target of file f: nil when no row of it matches.
func (d *dmlFileReader) read(ctx context.Context, f *scan.File) (*dmlTarget, error) {
	plan, r := d.plan, d.r
	tg := &dmlTarget{f: f, live: -1, whole: d.partOnly}
	if !d.partOnly && !r.readWhole {
		// Stats may prove every row matches: removed unread.
		if fs := bind.ParseFileStats(f.Add.Stats); fs != nil {
			partFn := func(c *bind.BoundCol) any { return f.Part[plan.PartSlot[c.Top]] }
			tg.whole = plan.Pred.MustMatch(partFn, fs.Bounds)
		}
	}
	if f.Add.DeletionVector != nil {
		bm, err := plan.Locs.LoadDV(ctx, f.Add.DeletionVector)
		if err != nil {
			return nil, plan.Errorf(f.Path, fmt.Errorf("deletion vector: %w", err))
		}
		tg.oldDV = bm
		f.Dv = bm // readFile applies it without loading it again
	}
	if n, ok := f.Add.NumRecords(); ok {
		tg.live = n
		if tg.oldDV != nil {
			tg.live -= int64(tg.oldDV.GetCardinality())
		}
	}
	if tg.whole && !r.readWhole && tg.live >= 0 {
		return tg, nil
	}
	var full value.Row // the projected row placed at its top-level indexes
	if d.proj != nil {
		full = make(value.Row, d.width)
	}
	var live int64
	var keptIdx []int64
	_, err := d.reader.ReadFile(ctx, f, func(idx int64, row value.Row) bool {
		live++
		if d.proj != nil {
			for i, top := range d.proj {
				full[top] = row[i]
			}
			row = full
		}
		if plan.Pred == nil || plan.Pred.MatchRow(row) {
			tg.matched = append(tg.matched, idx)
			if r.matchedRows {
				tg.matchedRows = append(tg.matchedRows, row)
			}
		} else if r.keptRows {
			tg.keptRows = append(tg.keptRows, row)
			if d.rt != nil {
				keptIdx = append(keptIdx, idx)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if d.rt != nil && len(tg.matched) > 0 {
		if err := tg.track(ctx, d.rt, plan.Mode, keptIdx, r.matchedRows); err != nil {
			return nil, plan.Errorf(f.Path, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tg.live = live
	tg.whole = int64(len(tg.matched)) == live
	if len(tg.matched) == 0 {
		return nil, nil
	}
	return tg, nil
}

// dmlReader returns the plan dmlScan reads plan's files with: rows are
// read unfiltered and matched by dmlScan. A DELETE with deletion vectors
// keeps no rows: it reads only the predicate's columns (proj, to be placed
// at their top-level indexes in a row of every column for matching), not
// every column; otherwise proj is nil.
func (t *Table) dmlReader(plan *scan.Plan, r dmlRead) (reader scan.Plan, proj []int, err error) {
	reader = *plan
	reader.Pred = nil
	if r.matchedRows || r.keptRows || plan.Pred == nil {
		return reader, nil, nil
	}
	sch := t.snap.Schema()
	need := make([]bool, len(sch.Fields))
	plan.Pred.Columns(func(c *bind.BoundCol) { need[c.Top] = true })
	var names []string
	for i, f := range sch.Fields {
		if need[i] {
			names = append(names, f.Name)
		}
	}
	cfg := plan.Cfg
	cfg.Filters, cfg.Columns, cfg.ColumnsSet = nil, names, true
	np, err := scan.NewPlan(t.scanSource(), cfg)
	if err != nil {
		return scan.Plan{}, nil, err
	}
	np.Files, np.Locs = plan.Files, plan.Locs
	return *np, np.Out, nil
}

// track fills tg.matchedTracks (when matched, for matchedRows) and
// tg.keptTracks (the rows at physical indexes kept) from its file.
func (tg *dmlTarget) track(ctx context.Context, rt *rowtrack.Tracker, mode string, kept []int64, matched bool) error {
	var idx []int64
	if matched {
		idx = tg.matched
	}
	if len(kept) > 0 {
		idx = slices.Sorted(slices.Values(append(slices.Clone(idx), kept...)))
	}
	tracks, err := rt.TracksOf(ctx, tg.f.Store, tg.f.Key, mode, tg.f.Add, idx)
	if err != nil {
		return err
	}
	// Split tracks (in idx order) back into matched and kept, both ascending.
	var mi, ki int
	for i, x := range idx {
		if matched && mi < len(tg.matched) && tg.matched[mi] == x {
			tg.matchedTracks = append(tg.matchedTracks, tracks[i])
			mi++
		} else if ki < len(kept) && kept[ki] == x {
			tg.keptTracks = append(tg.keptTracks, tracks[i])
			ki++
		}
	}
	return nil
}

// deletionVectorsEnabled reports whether DML on this table removes rows with
// deletion vectors: delta.enableDeletionVectors=true and the protocol
// supports the deletionVectors feature (spec "Deletion Vectors"), as Spark
// decides. Otherwise touched files are rewritten (copy-on-write).
func (t *Table) deletionVectorsEnabled() bool {
	m, p := t.snap.Metadata(), t.snap.Protocol()
	return strings.EqualFold(m.Configuration[txlog.PropEnableDeletionVectors], "true") &&
		p.HasReaderFeature(txlog.FeatureDeletionVectors) && p.HasWriterFeature(txlog.FeatureDeletionVectors)
}

// withDeletionVector returns the add that replaces a in a commit which
// deletes more of its rows: the same file with dv, dataChange true, and
// stats marked tightBounds false (the bounds still enclose the live rows;
// numRecords stays the file's physical row count, spec "Per-file
// Statistics").
func withDeletionVector(a *txlog.Add, dv *txlog.DeletionVectorDescriptor) *txlog.Add {
	n := *a
	n.DeletionVector = dv
	n.DataChange = true
	n.Stats = looseStats(a.Stats)
	return &n
}

// looseStats sets "tightBounds": false in a stats JSON object; stats that
// do not parse are dropped (a reader then assumes nothing).
func looseStats(stats string) string {
	if stats == "" {
		return ""
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stats), &m); err != nil || m == nil {
		return ""
	}
	m["tightBounds"] = json.RawMessage("false")
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}
