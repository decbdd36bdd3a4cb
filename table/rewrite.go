package table

// The shared DML rewrite: what DELETE, UPDATE and MERGE do once their
// scan (dml.go; MERGE's join in mergeexec.go) has found the touched files
// and their matched rows. A remover turns them into removes, deletion
// vectors or copy-on-write rewrites of the kept rows, writes the new files
// and change data, and finishRewrite commits the operation with Spark's
// metrics (commitDML).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/table/internal/rowtrack"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/txlog/dvcodec"
	"github.com/deltakit/deltakit/value"
)

// dmlTargets is how DELETE and UPDATE find their rows: it scans for the
// rows where matches (as r says; keptRows is set here, for the
// copy-on-write rewrite when the table has no deletion vectors) and, when
// some match, records the partitions read in op's transaction and returns
// the remover of the touched files with the scan's duration. No targets
// (and no error) when no row matches: nothing is to be committed (logged).
// errVerb names the operation in errors ("delete from", "update").
func (t *Table) dmlTargets(ctx context.Context, op *operation, where Expr, r dmlRead, errVerb string) ([]*dmlTarget, *remover, int64, error) {
	useDV := t.deletionVectorsEnabled()
	r.keptRows = !useDV
	plan, targets, err := t.dmlScan(ctx, where, r)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("table: %s %s: %w", errVerb, t.URI(), err)
	}
	scanMs := time.Since(op.start).Milliseconds()
	if len(targets) == 0 {
		t.cfg.logger.Debug("table: "+strings.ToLower(op.name)+" matched no rows; nothing committed", "table", t.URI(), "version", t.Version(), "predicate", exprString(where))
		return nil, nil, scanMs, nil
	}
	op.tx.ReadFiles(plan.PartitionPredicate())
	return targets, newRemover(t, op, useDV), scanMs, nil
}

// noDML is the result of a DELETE or UPDATE that commits nothing: err, or
// (err nil) t unchanged at its version.
func (t *Table) noDML(err error) (*Table, *DMLResult, error) {
	if err != nil {
		return nil, nil, err
	}
	return t, &DMLResult{Version: t.Version()}, nil
}

// finishDML writes what rw collected, fills res and commits op, a DELETE
// or UPDATE, with the predicate parameter and Spark's metrics (rowsKey:
// numDeletedRows or numUpdatedRows, with value rows).
func (t *Table) finishDML(ctx context.Context, op *operation, rw *remover, where Expr, cfg writeConfig,
	res *DMLResult, scanMs int64, rowsKey string, rows int64) (*Table, *DMLResult, error) {
	params := map[string]string{"predicate": jsonString(predicateList(where))}
	nt, err := t.finishRewrite(ctx, op, rw, cfg, res, strings.ToLower(op.name), params, func() map[string]int64 {
		m := rw.metrics()
		m[rowsKey] = rows
		m["scanTimeMs"] = scanMs
		return m
	})
	if err != nil {
		return nil, nil, err
	}
	return nt, res, nil
}

// finishRewrite is the end that DELETE, UPDATE and MERGE share: it writes
// what rw collected (deletion vectors, rewritten and inserted rows, change
// data), records rw's file counts in res, sets op's parameters (params,
// with the write options') and metrics (metrics' counts, called once the
// files are written, with rewriteTimeMs added) and commits op. errVerb
// names the operation in a write error ("delete", "update", "merge into").
func (t *Table) finishRewrite(ctx context.Context, op *operation, rw *remover, cfg writeConfig, res *DMLResult,
	errVerb string, params map[string]string, metrics func() map[string]int64) (*Table, error) {
	rewriteStart := time.Now()
	if err := rw.write(ctx, cfg); err != nil {
		return nil, fmt.Errorf("table: %s %s: %w", errVerb, t.URI(), err)
	}
	res.CopiedRows = rw.copied
	res.RemovedFiles, res.AddedFiles = rw.removedFiles, rw.addedFiles
	res.DeletionVectorsAdded, res.DeletionVectorsUpdated, res.DeletionVectorsRemoved = rw.dvAdded, rw.dvUpdated, rw.dvRemoved
	op.params = paramsWith(params, cfg)
	m := metrics()
	m["rewriteTimeMs"] = time.Since(rewriteStart).Milliseconds()
	op.metrics = metricsOf(m)
	return t.commitDML(ctx, op, res)
}

// commitDML commits op, a DELETE, UPDATE or MERGE with its metrics but
// executionTimeMs, which it adds, and records the commit in res.
func (t *Table) commitDML(ctx context.Context, op *operation, res *DMLResult) (*Table, error) {
	op.metrics["executionTimeMs"] = op.elapsedMs()
	nt, cr, err := t.commitOperation(ctx, op)
	if err != nil {
		return nil, err
	}
	res.Committed, res.Version, res.Metrics = true, cr.Version, op.metrics
	return nt, nil
}

// exprString renders a predicate for logs and commitInfo ("" for nil).
func exprString(e Expr) string {
	if e == nil {
		return ""
	}
	return e.String()
}

// predicateList is commitInfo's "predicate" parameter: the predicate's SQL
// in a JSON array, as Spark writes it ([] for none).
func predicateList(e Expr) []string {
	if e == nil {
		return []string{}
	}
	return []string{e.String()}
}

// remover turns the rows a DML operation deletes from touched files into
// actions: removes of whole files, deletion vectors, or copy-on-write
// rewrites of the rows kept.
type remover struct {
	t     *Table
	op    *operation
	useDV bool
	now   int64
	// schema is the schema of the rows written (nil: the table's; MERGE's
	// schema evolution sets it).
	schema *schema.StructType
	// dvFiles get the deletion vectors dvBitmaps once write stores them.
	dvFiles   []*txlog.Add
	dvBitmaps []*roaring64.Bitmap
	// rows to write into new files: kept rows of copy-on-write files, and
	// the operation's new rows (UPDATE); with row tracking enabled, tracks
	// holds their stable row ids and commit versions (rowtracking.go).
	rows   []value.Row
	tracks []rowtrack.Track
	copied int64
	// changes are the operation's change data (a change data feed table):
	// written by write to change data files after the data files.
	changes []changeRow

	removedFiles, addedFiles      int
	removedBytes, addedBytes      int64
	dvAdded, dvUpdated, dvRemoved int
	// dvFilesTouched counts files re-added with a (new) deletion vector.
	dvFilesTouched int
}

func newRemover(t *Table, op *operation, useDV bool) *remover {
	return &remover{t: t, op: op, useDV: useDV, now: t.cfg.now().UnixMilli()}
}

// reserve sizes the buffer of kept rows for the copy-on-write rewrite of
// targets at once, so that remove does not grow it file by file (for a
// 1,000,000-row table that was ~10% of a DELETE's CPU: BENCHMARKS.md P7).
func (r *remover) reserve(targets []*dmlTarget) {
	if r.useDV {
		return
	}
	n := len(r.rows)
	for _, tg := range targets {
		if !tg.whole {
			n += len(tg.keptRows)
		}
	}
	r.rows = slices.Grow(r.rows, n-len(r.rows))
}

// remove deletes tg's matched rows and returns how many that is. Kept rows
// of copy-on-write files are collected for write.
func (r *remover) remove(tg *dmlTarget) int64 {
	a := tg.f.Add
	r.op.removes = append(r.op.removes, a.RemoveAt(r.now))
	if tg.whole {
		r.removedFiles++
		r.removedBytes += a.Size
		if a.DeletionVector != nil {
			r.dvRemoved++
		}
		return max(tg.live, 0)
	}
	if r.useDV {
		// As Spark counts: every vector written is added; one that grows
		// also updates the file's and removes its old vector.
		bm := roaring64.New()
		r.dvAdded++
		r.dvFilesTouched++
		if tg.oldDV != nil {
			bm.Or(tg.oldDV)
			r.dvUpdated++
			r.dvRemoved++
		}
		for _, i := range tg.matched {
			bm.Add(uint64(i))
		}
		r.dvFiles = append(r.dvFiles, a)
		r.dvBitmaps = append(r.dvBitmaps, bm)
		return int64(len(tg.matched))
	}
	r.removedFiles++
	r.removedBytes += a.Size
	if a.DeletionVector != nil {
		r.dvRemoved++
	}
	r.addRows(tg.keptRows, tg.keptTracks)
	r.copied += int64(len(tg.keptRows))
	return int64(len(tg.matched))
}

// addRows queues rows (table schema order) to be written into new files by
// write, with tracks their stable row ids and row commit versions when the
// table has row tracking enabled (nil otherwise): tg.keptTracks for copied
// rows, rowTrack.updated of tg.matchedTracks for updated ones, freshTrack
// for inserted ones. write refuses rows queued without tracks on such a
// table.
func (r *remover) addRows(rows []value.Row, tracks []rowtrack.Track) {
	r.rows = append(r.rows, rows...)
	r.tracks = append(r.tracks, tracks...)
}

// write stores the deletion vector file and the new data files, and adds
// their actions to the operation. Written keys are recorded on the
// operation, so that a failed commit deletes them; on an error here they
// are deleted at once.
func (r *remover) write(ctx context.Context, cfg writeConfig) error {
	sch := r.schema
	if sch == nil {
		sch = r.t.Schema()
	}
	p := &prepared{schema: sch, rows: r.rows}
	if len(r.rows) > 0 {
		// Rows rewritten or updated satisfy the table's constraints, like
		// appended rows, before anything is written.
		if err := r.t.checkWrite(nil, p); err != nil {
			return err
		}
	}
	if len(r.dvFiles) > 0 {
		dvw := dvcodec.NewWriter()
		for i, a := range r.dvFiles {
			d, err := dvw.Add(r.dvBitmaps[i])
			if err != nil {
				return err
			}
			r.op.adds = append(r.op.adds, withDeletionVector(a, d))
		}
		r.op.written = append(r.op.written, dvw.Key())
		if err := dvw.Write(ctx, r.t.store); err != nil {
			deleteFiles(r.t.store, r.op.written, r.t.cfg.logger)
			return err
		}
	}
	if len(r.rows) > 0 {
		res, err := r.t.writeRewritten(ctx, sch, r.rows, r.tracks, cfg)
		if err != nil {
			deleteFiles(r.t.store, r.op.written, r.t.cfg.logger)
			return err
		}
		r.op.written = append(r.op.written, res.keys...)
		for _, a := range res.adds {
			r.op.adds = append(r.op.adds, a)
			r.addedFiles++
			r.addedBytes += a.Size
		}
	}
	if err := r.t.writeChangeFiles(ctx, r.op, cfg, sch, r.changes); err != nil {
		deleteFiles(r.t.store, r.op.written, r.t.cfg.logger)
		return err
	}
	return nil
}

// metrics returns the file and deletion-vector counts under Spark's
// DELETE/UPDATE metric keys and meanings: an UPDATE's numRemovedFiles
// counts the files that got a deletion vector too (Spark's UpdateCommand
// takes it from every remove), a DELETE's only the files removed or
// rewritten.
func (r *remover) metrics() map[string]int64 {
	removed := r.removedFiles
	if r.op.name == "UPDATE" {
		removed += r.dvFilesTouched
	}
	return map[string]int64{
		"numRemovedFiles":           int64(removed),
		"numAddedFiles":             int64(r.addedFiles),
		"numRemovedBytes":           r.removedBytes,
		"numAddedBytes":             r.addedBytes,
		"numCopiedRows":             r.copied,
		"numDeletionVectorsAdded":   int64(r.dvAdded),
		"numDeletionVectorsUpdated": int64(r.dvUpdated),
		"numDeletionVectorsRemoved": int64(r.dvRemoved),
		"numAddedChangeFiles":       int64(len(r.op.cdcs)),
	}
}
