package txlog

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// decodeRowGroupRows is the row-by-row decoder (parquet-go ReadRows) that
// decodeRowGroupColumns replaced; tests compare the two.
func decodeRowGroupRows(g parquet.RowGroup, plans []columnPlan, fn func(*Action), seg *packSeg) error {
	r := g.Rows()
	defer r.Close()
	rows := make([]parquet.Row, 256)
	asm := rowAsm{seg: seg}
	var rowErr error
	emit := func(a *Action) {
		if rowErr != nil {
			return
		}
		if verr := a.validate(); verr != nil {
			rowErr = verr
			return
		}
		fn(a)
	}
	for {
		n, rerr := r.ReadRows(rows)
		for i := range n {
			asm.reset()
			for _, v := range rows[i] {
				c := v.Column()
				if c < 0 || c >= len(plans) {
					continue
				}
				p := &plans[c]
				if p.top < 0 {
					continue
				}
				if v.DefinitionLevel() >= p.topDef {
					asm.present[p.top] = true
				}
				if p.set != nil {
					p.set(&asm, v)
				}
			}
			if asm.err != nil {
				return fmt.Errorf("checkpoint column of the wrong type: %w", asm.err)
			}
			asm.emit(emit)
			if asm.err != nil {
				return fmt.Errorf("invalid checkpoint row: %w", asm.err)
			}
			if rowErr != nil {
				return fmt.Errorf("invalid checkpoint row: %w", rowErr)
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
