package table

import (
	"bytes"
	"cmp"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/value"
)

// The columnar path's row filter: a bound predicate evaluated on a batch's
// Arrow arrays with one typed loop per leaf, instead of boxing every value
// of every row (arrowio.Value + pred.matchRow). It computes the same truth
// as matchRow: the predicate is in negation normal form, so a row matches
// iff the tree is true with every leaf false on null; a float leaf on NaN
// takes the leaf's nanTrue.

// arrowFilter evaluates a predicate on one batch: col returns the batch's
// array of a (non-partition) column in the scan's Arrow type, or nil when
// the batch lacks it (then the leaf reads nulls); part returns a partition
// column's value.
type arrowFilter struct {
	col  func(bc *boundCol) arrow.Array
	part func(bc *boundCol) any
}

// eval clears active[k] for every row k where p is not true; rows already
// inactive are not looked at (an AND evaluates each conjunct only on the
// rows the previous ones kept).
func (f *arrowFilter) eval(p *pred, active []bool) {
	switch p.kind {
	case predTrue:
		return
	case predFalse:
		clear(active)
		return
	case predAnd:
		for _, k := range p.kids {
			f.eval(k, active)
		}
		return
	case predOr:
		union := make([]bool, len(active))
		try := make([]bool, len(active))
		for _, k := range p.kids {
			for i := range try {
				try[i] = active[i] && !union[i]
			}
			f.eval(k, try)
			for i, t := range try {
				if t {
					union[i] = true
				}
			}
		}
		copy(active, union)
		return
	}
	if p.col.partition {
		if !leafTrue(p, f.part(p.col)) {
			clear(active)
		}
		return
	}
	a := f.col(p.col)
	if a == nil || len(p.col.sub) > 0 {
		f.evalBoxed(p, a, active)
		return
	}
	switch p.kind {
	case predIsNull, predIsNotNull:
		want := p.kind == predIsNull
		for i, on := range active {
			if on && a.IsNull(i) != want {
				active[i] = false
			}
		}
		return
	case predIn:
		union := make([]bool, len(active))
		try := make([]bool, len(active))
		for _, lit := range p.lits {
			copy(try, active)
			if !evalCmp(a, p.col.kind, opEq, lit, false, try) {
				f.evalBoxed(p, a, active)
				return
			}
			for i, t := range try {
				if t {
					union[i] = true
				}
			}
		}
		copy(active, union)
		return
	case predNotIn:
		for _, lit := range p.lits {
			if !evalCmp(a, p.col.kind, opNe, lit, true, active) {
				f.evalBoxed(p, a, active)
				return
			}
		}
		return
	case predCmp:
		if !evalCmp(a, p.col.kind, p.op, p.lit, p.nanTrue, active) {
			f.evalBoxed(p, a, active)
		}
	}
}

// evalBoxed evaluates leaf p value by value through arrowio.Value (the
// types without a typed loop: decimals, struct fields).
func (f *arrowFilter) evalBoxed(p *pred, a arrow.Array, active []bool) {
	if d, ok := a.(*array.Dictionary); ok {
		g, err := gatherStrings(d, nil)
		if err != nil {
			clear(active)
			return
		}
		defer g.Release()
		a = g
	}
	for i, on := range active {
		if !on {
			continue
		}
		var v any
		if a != nil {
			var err error
			if v, err = arrowio.Value(a, i); err != nil {
				v = nil
			}
			for _, s := range p.col.sub {
				r, ok := v.(value.Row)
				if !ok || s >= len(r) {
					v = nil
					break
				}
				v = r[s]
			}
		}
		if !leafTrue(p, v) {
			active[i] = false
		}
	}
}

// evalCmp applies "a op lit" to the active rows of a; false when a's type
// has no typed loop here (nothing changed then).
func evalCmp(a arrow.Array, k valueKind, op cmpOp, lit any, nanTrue bool, active []bool) bool {
	switch a := a.(type) {
	case *array.Dictionary:
		// Each dictionary value is compared once; rows take their
		// value's result.
		dm := make([]bool, a.Dictionary().Len())
		for i := range dm {
			dm[i] = true
		}
		if !evalCmp(a.Dictionary(), k, op, lit, nanTrue, dm) {
			return false
		}
		nulls := a.NullN() > 0
		if idx, ok := a.Indices().(*array.Int32); ok {
			for i, j := range idx.Int32Values() {
				if active[i] && ((nulls && a.IsNull(i)) || j < 0 || int(j) >= len(dm) || !dm[j]) {
					active[i] = false
				}
			}
			return true
		}
		for i, on := range active {
			if !on {
				continue
			}
			if j := a.GetValueIndex(i); (nulls && a.IsNull(i)) || j < 0 || j >= len(dm) || !dm[j] {
				active[i] = false
			}
		}
		return true
	case *array.Int64:
		if l, ok := lit.(int64); ok && (k == kindInt || k == kindDate) {
			cmpOrdered(a, a.Int64Values(), op, l, active)
			return true
		}
	case *array.Int32:
		if l, ok := lit.(int64); ok && k == kindInt {
			cmpWidened(a, a.Int32Values(), op, l, active)
			return true
		}
	case *array.Int16:
		if l, ok := lit.(int64); ok && k == kindInt {
			cmpWidened(a, a.Int16Values(), op, l, active)
			return true
		}
	case *array.Int8:
		if l, ok := lit.(int64); ok && k == kindInt {
			cmpWidened(a, a.Int8Values(), op, l, active)
			return true
		}
	case *array.Date32:
		if l, ok := lit.(int64); ok && k == kindDate {
			vals := a.Date32Values()
			ints := make([]int64, len(vals))
			for i, v := range vals {
				ints[i] = int64(v)
			}
			cmpOrdered(a, ints, op, l, active)
			return true
		}
	case *array.Float64:
		if l, ok := lit.(float64); ok && (k == kindFloat64 || k == kindFloat32) {
			cmpFloats(a, a.Float64Values(), op, l, nanTrue, active)
			return true
		}
	case *array.Float32:
		if l, ok := lit.(float64); ok && (k == kindFloat64 || k == kindFloat32) {
			vals := a.Float32Values()
			fs := make([]float64, len(vals))
			for i, v := range vals {
				fs[i] = float64(v)
			}
			cmpFloats(a, fs, op, l, nanTrue, active)
			return true
		}
	case *array.String:
		if l, ok := lit.(string); ok && k == kindString {
			nulls := a.NullN() > 0
			for i, on := range active {
				if on && ((nulls && a.IsNull(i)) || !opHolds(op, strings.Compare(a.Value(i), l))) {
					active[i] = false
				}
			}
			return true
		}
	case *array.Binary:
		if l, ok := lit.([]byte); ok && k == kindBinary {
			nulls := a.NullN() > 0
			for i, on := range active {
				if on && ((nulls && a.IsNull(i)) || !opHolds(op, bytes.Compare(a.Value(i), l))) {
					active[i] = false
				}
			}
			return true
		}
	case *array.Boolean:
		if l, ok := lit.(bool); ok && k == kindBool {
			nulls := a.NullN() > 0
			for i, on := range active {
				if !on {
					continue
				}
				if nulls && a.IsNull(i) {
					active[i] = false
					continue
				}
				c := 0
				if v := a.Value(i); v != l {
					c = 1
					if l {
						c = -1
					}
				}
				if !opHolds(op, c) {
					active[i] = false
				}
			}
			return true
		}
	case *array.Timestamp:
		tt, ok := a.DataType().(*arrow.TimestampType)
		l, isTime := lit.(time.Time)
		if !ok || !isTime || tt.Unit != arrow.Microsecond || (k != kindTimestamp && k != kindTimestampNTZ) {
			return false
		}
		// The literal in microseconds (floor) and whether it has a
		// sub-microsecond remainder: then v = floor compares below it.
		us := l.UnixMicro()
		frac := l.Nanosecond()%1000 != 0
		vals := a.TimestampValues()
		nulls := a.NullN() > 0
		for i, on := range active {
			if !on {
				continue
			}
			if nulls && a.IsNull(i) {
				active[i] = false
				continue
			}
			c := cmp.Compare(int64(vals[i]), us)
			if c == 0 && frac {
				c = -1
			}
			if !opHolds(op, c) {
				active[i] = false
			}
		}
		return true
	}
	return false
}

func opHolds(op cmpOp, c int) bool { return op.Holds(c) }

// cmpOrdered clears the active rows where "vals[i] op lit" is not true or
// the value is null; one loop per operator.
func cmpOrdered[T int64 | float64](a arrow.Array, vals []T, op cmpOp, lit T, active []bool) {
	nulls := a.NullN() > 0
	var holds func(v T) bool
	switch op {
	case opEq:
		holds = func(v T) bool { return v == lit }
	case opNe:
		holds = func(v T) bool { return v != lit }
	case opLt:
		holds = func(v T) bool { return v < lit }
	case opLe:
		holds = func(v T) bool { return v <= lit }
	case opGt:
		holds = func(v T) bool { return v > lit }
	default:
		holds = func(v T) bool { return v >= lit }
	}
	for i, on := range active {
		if on && ((nulls && a.IsNull(i)) || !holds(vals[i])) {
			active[i] = false
		}
	}
}

func cmpWidened[T int32 | int16 | int8](a arrow.Array, vals []T, op cmpOp, lit int64, active []bool) {
	ints := make([]int64, len(vals))
	for i, v := range vals {
		ints[i] = int64(v)
	}
	cmpOrdered(a, ints, op, lit, active)
}

// cmpFloats is cmpOrdered for floats: a NaN value or literal gives
// nanTrue (see pred.nanTrue).
func cmpFloats(a arrow.Array, vals []float64, op cmpOp, lit float64, nanTrue bool, active []bool) {
	if math.IsNaN(lit) {
		for i, on := range active {
			if on && (!nanTrue || a.IsNull(i)) {
				active[i] = false
			}
		}
		return
	}
	nulls := a.NullN() > 0
	for i, on := range active {
		if !on {
			continue
		}
		if nulls && a.IsNull(i) {
			active[i] = false
			continue
		}
		v := vals[i]
		if math.IsNaN(v) {
			active[i] = nanTrue
			continue
		}
		if !opHolds(op, cmp.Compare(v, lit)) {
			active[i] = false
		}
	}
}
