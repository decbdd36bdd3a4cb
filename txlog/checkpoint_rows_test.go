package txlog

import (
	"errors"
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
	val := &validator{fn: fn}
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
			if err := asm.finishRow(val); err != nil {
				return err
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
