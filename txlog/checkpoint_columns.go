package txlog

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// This file decodes a checkpoint row group column by column: each leaf
// column the reader knows is read page by page into the rows of a small
// window, then the window's rows are assembled and emitted in order. A page
// whose values are all null (in a checkpoint most columns are, in most rows:
// an add row leaves every remove, metaData, protocol and txn column null) is
// read from its definition and repetition levels alone, without
// materialising its values; parquet-go's ReadRows materialises every leaf of
// every row.

// windowRows is how many rows are assembled at a time.
const windowRows = 256

// colCursor reads one leaf column of a row group, value by value.
type colCursor struct {
	plan  *columnPlan
	col   int // leaf column index
	pages parquet.Pages
	// vr reads the current page when it holds non-null values; buf[bi:bn]
	// are the values read from it and not consumed yet.
	vr     parquet.ValueReader
	buf    []parquet.Value
	bi, bn int
	// levels is set while the current page is all null: defs[li:] and
	// reps[li:] are its levels not consumed yet (reps nil: not repeated).
	levels     bool
	defs, reps []byte
	li         int
	eof        bool // no page left
	// page is the current page; spent are the pages whose values were all
	// applied, released (their buffers reused by parquet-go) once the
	// window holding their values is emitted.
	page  parquet.Page
	spent []parquet.Page
}

// releaseSpent releases the pages whose values the emitted rows held.
func (c *colCursor) releaseSpent() {
	for i, p := range c.spent {
		parquet.Release(p)
		c.spent[i] = nil
	}
	c.spent = c.spent[:0]
}

// ready makes the next value of the column available, in buf or in the
// levels of an all-null page; false at the end of the column chunk.
func (c *colCursor) ready() (bool, error) {
	for {
		switch {
		case c.bi < c.bn:
			return true, nil
		case c.levels && c.li < len(c.defs):
			return true, nil
		case c.levels:
			c.levels = false
		case c.vr != nil:
			if c.buf == nil {
				c.buf = make([]parquet.Value, windowRows)
			}
			n, err := c.vr.ReadValues(c.buf)
			c.bi, c.bn = 0, n
			switch {
			case errors.Is(err, io.EOF):
				c.vr = nil
			case err != nil:
				return false, err
			case n == 0:
				return false, fmt.Errorf("column %d: page reader made no progress", c.col)
			}
		case c.eof:
			return false, nil
		default:
			if c.page != nil {
				c.spent = append(c.spent, c.page)
				c.page = nil
			}
			p, err := c.pages.ReadPage()
			if errors.Is(err, io.EOF) {
				c.eof = true
				continue
			}
			if err != nil {
				return false, err
			}
			c.page = p
			if p.NumNulls() < p.NumValues() {
				c.vr = p.Values()
				continue
			}
			c.levels, c.defs, c.reps, c.li = true, p.DefinitionLevels(), p.RepetitionLevels(), 0
			if int64(len(c.defs)) != p.NumValues() || (c.reps != nil && len(c.reps) != len(c.defs)) {
				return false, fmt.Errorf("column %d: page of %d values with %d definition and %d repetition levels",
					c.col, p.NumValues(), len(c.defs), len(c.reps))
			}
		}
	}
}

// feed applies the column's values of the next len(asms) rows to asms.
func (c *colCursor) feed(asms []rowAsm) error {
	r, last := -1, len(asms)-1
	// next moves r to the row of a value with repetition level rep; false
	// when the value starts the row after the window.
	next := func(rep int) (bool, error) {
		if rep == 0 {
			if r == last {
				return false, nil
			}
			r++
		} else if r < 0 {
			return false, fmt.Errorf("column %d: a row starts with repetition level %d", c.col, rep)
		}
		return true, nil
	}
	for {
		ok, err := c.ready()
		if err != nil {
			return err
		}
		if !ok {
			if r < last {
				return fmt.Errorf("column %d ends %d rows early", c.col, last-r)
			}
			return nil
		}
		for ; c.bi < c.bn; c.bi++ {
			v := c.buf[c.bi]
			if in, err := next(v.RepetitionLevel()); !in || err != nil {
				return err
			}
			c.apply(&asms[r], v)
		}
		// An all-null page: only levels that reach the action matter.
		if c.levels && c.reps == nil {
			// Not repeated: one level per row.
			n := min(len(c.defs)-c.li, last-r)
			c.nullLevels(asms[r+1:r+1+n], c.defs[c.li:c.li+n])
			r += n
			c.li += n
			if c.li < len(c.defs) {
				return nil // the window is full
			}
			continue
		}
		for ; c.levels && c.li < len(c.defs); c.li++ {
			rep := 0
			if c.reps != nil {
				rep = int(c.reps[c.li])
			}
			if in, err := next(rep); !in || err != nil {
				return err
			}
			if d := int(c.defs[c.li]); d >= c.plan.topDef {
				c.apply(&asms[r], parquet.Value{}.Level(rep, d, c.col))
			}
		}
	}
}

// nullLevels applies the null values of definition levels defs, one per
// row, to rows.
func (c *colCursor) nullLevels(rows []rowAsm, defs []byte) {
	topDef, setDef := c.plan.topDef, c.plan.setDef
	for i, d8 := range defs {
		d := int(d8)
		if d < topDef {
			continue
		}
		rows[i].present[c.plan.top] = true
		if d >= setDef && c.plan.set != nil {
			c.plan.set(&rows[i], parquet.Value{}.Level(0, d, c.col))
		}
	}
}

// apply marks v's action present in a and sets the field v belongs to.
func (c *colCursor) apply(a *rowAsm, v parquet.Value) {
	d := v.DefinitionLevel()
	if d < c.plan.topDef {
		return // setters ignore a value below setDef, which is at least topDef
	}
	a.present[c.plan.top] = true
	if d >= c.plan.setDef && c.plan.set != nil {
		c.plan.set(a, v)
	}
}

// decodeRowGroupColumns assembles the actions of every row of g, column by
// column, and calls fn for each in row order (fn must not keep the *Action);
// with seg set, add actions are packed into seg instead.
func decodeRowGroupColumns(g parquet.RowGroup, plans []columnPlan, fn func(*Action), seg *packSeg) error {
	chunks := g.ColumnChunks()
	if len(chunks) != len(plans) {
		return fmt.Errorf("row group has %d columns, the schema %d", len(chunks), len(plans))
	}
	var cursors []*colCursor
	defer func() {
		for _, c := range cursors {
			c.pages.Close()
		}
	}()
	for i := range plans {
		if plans[i].top < 0 {
			continue
		}
		cursors = append(cursors, &colCursor{plan: &plans[i], col: i, pages: chunks[i].Pages()})
	}
	v := &validator{fn: fn}
	// The window's rows share the interning tables.
	intern, maps := map[string]string{}, map[string]map[string]string{}
	asms := make([]rowAsm, windowRows)
	for done, total := int64(0), g.NumRows(); done < total; {
		w := asms[:min(int64(len(asms)), total-done)]
		for i := range w {
			w[i].reset()
			w[i].intern, w[i].maps, w[i].seg = intern, maps, seg
		}
		for _, c := range cursors {
			if err := c.feed(w); err != nil {
				return err
			}
		}
		for i := range w {
			if err := w[i].finishRow(v); err != nil {
				return err
			}
		}
		// emit copied what the rows kept of the pages' bytes
		for _, c := range cursors {
			c.releaseSpent()
		}
		done += int64(len(w))
	}
	for _, c := range cursors {
		if more, err := c.ready(); err != nil {
			return err
		} else if more {
			return fmt.Errorf("column %d has values beyond the row group's %d rows", c.col, g.NumRows())
		}
	}
	return nil
}
