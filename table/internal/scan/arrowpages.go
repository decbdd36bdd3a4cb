package scan

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/table/internal/bind"
)

// Page-index skipping. After the row groups are selected by their
// statistics, each selected row group whose filter columns have a column
// index (per-page min/max, null pages, null counts) and an offset index
// (each page's first row) is cut at the union of those columns' page
// boundaries. The predicate is evaluated on each interval with the bounds
// of the pages covering it (the trusted kinds of rowGroupBounds: signed
// integers, date32, strings; no type widening); the intervals it proves
// false are dropped, and the stripe readers read only the kept spans,
// seeking past the rest (readStripe seeks to each stripe's first row, the
// late columns per batch). Stream positions, and so deletion vectors,
// keep counting every row of the selected row groups: fileRow maps them
// to file rows as before.
//
// It is done only where the readers may seek (seekable: every decoded
// column chunk has an offset index), so a file without page indexes reads
// as it did.

// pageLeaf is the page index of one filter column in one row group.
type pageLeaf struct {
	top   int                  // the column's top-level index in the table schema
	ri    int                  // its read index
	first []int64              // first row of each page, then the row group's rows
	ci    metadata.ColumnIndex // per-page statistics
	kept  []bool               // whether some kept interval lies in page k
	at    int                  // page of the interval being evaluated
}

// selectPages drops from fr the intervals of the selected row groups that
// the filter's page statistics prove false (see above), counting their
// rows as read (minus deleted) in c, as for skipped row groups.
func (cf *columnarFile) selectPages(p *Plan, f *File, fr *fileRead, c *fileCounts) {
	if p.Pred == nil || p.Cfg.Arrow.NoPageIndex || fr.total == 0 || !cf.seekable(fr) || !cf.seekableLeaves(fr, cf.lateLeaves(fr)) {
		return
	}
	pir := cf.fr.ParquetReader().GetPageIndexReader()
	if pir == nil {
		return
	}
	var keep []stripe
	var stream int64 // stream row of the row group's first row
	refined := false
	for _, g := range fr.rgs {
		n := cf.md.RowGroup(g).NumRows()
		kept, skipped, ok := cf.rowGroupPages(p, f, pir, g, n)
		if !ok {
			kept = []stripe{{0, n}}
		}
		refined = refined || ok
		cf.pagesSkipped += skipped
		var at int64 // row within the row group
		for _, s := range kept {
			if s.from > at {
				cf.dropRows(fr, c, stream+at, s.from-at)
			}
			keep = appendSpan(keep, stripe{stream + s.from, s.n})
			at = s.from + s.n
		}
		if at < n {
			cf.dropRows(fr, c, stream+at, n-at)
		}
		stream += n
	}
	if refined {
		fr.keep = keep
		if keep == nil {
			fr.keep = []stripe{}
		}
	}
}

// dropRows counts the n rows from stream row from as skipped: read, minus
// those the deletion vector deletes.
func (cf *columnarFile) dropRows(fr *fileRead, c *fileCounts, from, n int64) {
	del := deletedIn(fr, fileRow(fr.segs, from), n)
	c.rows += n - del
	c.deleted += del
	cf.rowsPageSkipped += n
}

// deletedIn is the number of file rows [start, start+n) the deletion
// vector deletes.
func deletedIn(fr *fileRead, start, n int64) int64 {
	if fr.bm == nil || n <= 0 {
		return 0
	}
	del := int64(fr.bm.Rank(uint64(start + n - 1)))
	if start > 0 {
		del -= int64(fr.bm.Rank(uint64(start - 1)))
	}
	return del
}

// appendSpan appends s to spans, merging it with the last span when they
// touch.
func appendSpan(spans []stripe, s stripe) []stripe {
	if s.n <= 0 {
		return spans
	}
	if k := len(spans) - 1; k >= 0 && spans[k].from+spans[k].n == s.from {
		spans[k].n += s.n
		return spans
	}
	return append(spans, s)
}

// rowGroupPages returns the kept intervals of row group g (n rows), in
// row-group rows, and the filter columns' pages wholly dropped; ok is
// false when no filter column has a usable page index (then nothing is
// dropped).
func (cf *columnarFile) rowGroupPages(p *Plan, f *File, pir *metadata.PageIndexReader, g int, n int64) (kept []stripe, skipped int, ok bool) {
	rgi, err := pir.RowGroup(g)
	if err != nil || rgi == nil {
		return nil, 0, false
	}
	var leaves []*pageLeaf
	p.Pred.Columns(func(bc *bind.BoundCol) {
		ri, ok := cf.statsColumn(p, bc)
		if !ok || slices.ContainsFunc(leaves, func(l *pageLeaf) bool { return l.ri == ri }) {
			return
		}
		if l := pageLeafOf(rgi, cf.cols[ri].leaf, n); l != nil {
			l.top, l.ri = bc.Top, ri
			leaves = append(leaves, l)
		}
	})
	if len(leaves) == 0 {
		return nil, 0, false
	}
	var cuts []int64
	for _, l := range leaves {
		cuts = append(cuts, l.first...)
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	part := func(bc *bind.BoundCol) any { return f.Part[p.PartSlot[bc.Top]] }
	for i := 0; i+1 < len(cuts); i++ {
		from := cuts[i]
		for _, l := range leaves {
			for l.first[l.at+1] <= from {
				l.at++
			}
		}
		bounds := func(bc *bind.BoundCol) *expr.Bounds {
			for _, l := range leaves {
				if l.top == bc.Top && !bc.Partition && len(bc.Sub) == 0 && bc.StatsPath != nil {
					return l.pageBounds(bc, cf.cols[l.ri].src)
				}
			}
			return nil
		}
		if !p.Pred.MayMatch(part, bounds) {
			continue
		}
		for _, l := range leaves {
			l.kept[l.at] = true
		}
		kept = appendSpan(kept, stripe{from, cuts[i+1] - from})
	}
	for _, l := range leaves {
		for _, k := range l.kept {
			if !k {
				skipped++
			}
		}
	}
	return kept, skipped, true
}

// pageLeafOf reads the column and offset indexes of leaf in a row group
// of n rows; nil when either is missing or inconsistent.
func pageLeafOf(rgi *metadata.RowGroupPageIndexReader, leaf int, n int64) *pageLeaf {
	ci, err := rgi.GetColumnIndex(leaf)
	if err != nil || ci == nil {
		return nil
	}
	oi, err := rgi.GetOffsetIndex(leaf)
	if err != nil || oi == nil {
		return nil
	}
	locs := oi.GetPageLocations()
	pages := len(ci.GetNullPages())
	if pages == 0 || len(locs) != pages || (ci.IsSetNullCounts() && len(ci.GetNullCounts()) != pages) {
		return nil
	}
	first := make([]int64, 0, pages+1)
	for k, loc := range locs {
		r := loc.FirstRowIndex
		if (k == 0 && r != 0) || (k > 0 && r <= first[k-1]) || r >= n {
			return nil
		}
		first = append(first, r)
	}
	first = append(first, n)
	return &pageLeaf{first: first, ci: ci, kept: make([]bool, pages)}
}

// pageBounds are the bounds page l.at gives column bc, whose file column
// has Arrow type src.
func (l *pageLeaf) pageBounds(bc *bind.BoundCol, src arrow.DataType) *expr.Bounds {
	k := l.at
	b := &expr.Bounds{Kind: bc.Kind, NullCount: -1, NumRecords: l.first[k+1] - l.first[k]}
	if l.ci.GetNullPages()[k] {
		b.NullCount = b.NumRecords
		return b
	}
	if l.ci.IsSetNullCounts() {
		b.NullCount = l.ci.GetNullCounts()[k]
	}
	switch ci := l.ci.(type) {
	case *metadata.TypedColumnIndex[int32]:
		setMinMax(b, src, ci.MinValues()[k], ci.MaxValues()[k])
	case *metadata.TypedColumnIndex[int64]:
		setMinMax(b, src, ci.MinValues()[k], ci.MaxValues()[k])
	case *metadata.TypedColumnIndex[parquet.ByteArray]:
		setMinMax(b, src, ci.MinValues()[k], ci.MaxValues()[k])
	}
	return b
}

// setMinMax sets b's Min and Max from a Parquet minimum and maximum (int32,
// int64 or parquet.ByteArray) when the file column's Arrow type src is one
// whose values compare as b.Kind's: signed integers, date32, strings.
func setMinMax(b *expr.Bounds, src arrow.DataType, lo, hi any) {
	switch b.Kind {
	case expr.KindInt:
		if !isSignedInt(src) {
			return
		}
		switch lo := lo.(type) {
		case int32:
			b.Min, b.Max = int64(lo), int64(hi.(int32))
		case int64:
			b.Min, b.Max = lo, hi.(int64)
		}
	case expr.KindDate:
		if lo, ok := lo.(int32); ok && src.ID() == arrow.DATE32 {
			b.Min, b.Max = int64(lo), int64(hi.(int32))
		}
	case expr.KindString:
		if d, ok := src.(*arrow.DictionaryType); ok {
			src = d.ValueType
		}
		if lo, ok := lo.(parquet.ByteArray); ok && src.ID() == arrow.STRING {
			b.Min, b.Max = string(lo), string(hi.(parquet.ByteArray))
		}
	}
}

// statsColumn returns the read index of the file column whose Parquet
// statistics may bound bc: a top-level data column read from the file,
// whose stats the Delta stats would also use (no type widening).
func (cf *columnarFile) statsColumn(p *Plan, bc *bind.BoundCol) (int, bool) {
	if bc.Partition || len(bc.Sub) > 0 || bc.StatsPath == nil {
		return -1, false
	}
	ri := -1
	for i, top := range p.ReadTop {
		if top == bc.Top {
			ri = i
		}
	}
	if ri < 0 || cf.cols[ri].leaf < 0 || cf.cols[ri].nested {
		return -1, false
	}
	return ri, true
}

// lateLeaves returns the leaves of the columns decoded late.
func (cf *columnarFile) lateLeaves(fr *fileRead) []int {
	var out []int
	for i, l := range fr.late {
		if l {
			out = append(out, cf.cols[i].leaves...)
		}
	}
	return out
}
