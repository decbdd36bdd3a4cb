package scan

import (
	"bytes"
	"cmp"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/deltakit/deltakit/arrowio"
	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/table/internal/bind"
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
	col  func(bc *bind.BoundCol) arrow.Array
	part func(bc *bind.BoundCol) any
}

// eval clears active[k] for every row k where p is not true; rows already
// inactive are not looked at (an AND evaluates each conjunct only on the
// rows the previous ones kept).
func (f *arrowFilter) eval(p *bind.Pred, active []bool) {
	switch p.Kind {
	case bind.PredTrue:
		return
	case bind.PredFalse:
		clear(active)
		return
	case bind.PredAnd:
		for _, k := range p.Kids {
			f.eval(k, active)
		}
		return
	case bind.PredOr:
		union := make([]bool, len(active))
		try := make([]bool, len(active))
		for _, k := range p.Kids {
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
	if p.Col.Partition {
		if !bind.LeafTrue(p, f.part(p.Col)) {
			clear(active)
		}
		return
	}
	a := f.col(p.Col)
	if a == nil || len(p.Col.Sub) > 0 {
		f.evalBoxed(p, a, active)
		return
	}
	switch p.Kind {
	case bind.PredIsNull, bind.PredIsNotNull:
		want := p.Kind == bind.PredIsNull
		for i, on := range active {
			if on && a.IsNull(i) != want {
				active[i] = false
			}
		}
		return
	case bind.PredIn:
		union := make([]bool, len(active))
		try := make([]bool, len(active))
		for _, lit := range p.Lits {
			copy(try, active)
			if !evalCmp(a, p.Col.Kind, expr.OpEq, lit, false, try) {
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
	case bind.PredNotIn:
		for _, lit := range p.Lits {
			if !evalCmp(a, p.Col.Kind, expr.OpNe, lit, true, active) {
				f.evalBoxed(p, a, active)
				return
			}
		}
		return
	case bind.PredCmp:
		if !evalCmp(a, p.Col.Kind, p.Op, p.Lit, p.NaNTrue, active) {
			f.evalBoxed(p, a, active)
		}
	}
}

// evalBoxed evaluates leaf p value by value through arrowio.Value (the
// types without a typed loop: decimals, struct fields).
func (f *arrowFilter) evalBoxed(p *bind.Pred, a arrow.Array, active []bool) {
	if d, ok := a.(*array.Dictionary); ok {
		g, err := GatherStrings(d, nil)
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
			for _, s := range p.Col.Sub {
				r, ok := v.(value.Row)
				if !ok || s >= len(r) {
					v = nil
					break
				}
				v = r[s]
			}
		}
		if !bind.LeafTrue(p, v) {
			active[i] = false
		}
	}
}

// evalCmp applies "a op lit" to the active rows of a; false when a's type
// has no typed loop here (nothing changed then).
func evalCmp(a arrow.Array, k expr.Kind, op expr.Op, lit any, nanTrue bool, active []bool) bool {
	switch a := a.(type) {
	case *array.Dictionary:
		return evalDictCmp(a, k, op, lit, nanTrue, active)
	case *array.Int64:
		return intCmp(a, a.Int64Values(), k == expr.KindInt || k == expr.KindDate, op, lit, active)
	case *array.Int32:
		return intCmp(a, a.Int32Values(), k == expr.KindInt, op, lit, active)
	case *array.Int16:
		return intCmp(a, a.Int16Values(), k == expr.KindInt, op, lit, active)
	case *array.Int8:
		return intCmp(a, a.Int8Values(), k == expr.KindInt, op, lit, active)
	case *array.Date32:
		return intCmp(a, a.Date32Values(), k == expr.KindDate, op, lit, active)
	case *array.Float64:
		return floatCmp(a, a.Float64Values(), k, op, lit, nanTrue, active)
	case *array.Float32:
		return floatCmp(a, a.Float32Values(), k, op, lit, nanTrue, active)
	case *array.String:
		l, ok := lit.(string)
		if ok && k == expr.KindString {
			cmpValues(a, a.Value, func(v string) int { return strings.Compare(v, l) }, op, active)
		}
		return ok && k == expr.KindString
	case *array.Binary:
		l, ok := lit.([]byte)
		if ok && k == expr.KindBinary {
			cmpValues(a, a.Value, func(v []byte) int { return bytes.Compare(v, l) }, op, active)
		}
		return ok && k == expr.KindBinary
	case *array.Boolean:
		l, ok := lit.(bool)
		if ok && k == expr.KindBool {
			cmpValues(a, a.Value, func(v bool) int {
				switch {
				case v == l:
					return 0
				case l:
					return -1
				}
				return 1
			}, op, active)
		}
		return ok && k == expr.KindBool
	case *array.Timestamp:
		return evalTimestampCmp(a, k, op, lit, active)
	}
	return false
}

// evalDictCmp is evalCmp on a dictionary array: each dictionary value is
// compared once; rows take their value's result.
func evalDictCmp(a *array.Dictionary, k expr.Kind, op expr.Op, lit any, nanTrue bool, active []bool) bool {
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
}

// evalTimestampCmp is evalCmp on microsecond timestamps.
func evalTimestampCmp(a *array.Timestamp, k expr.Kind, op expr.Op, lit any, active []bool) bool {
	tt, ok := a.DataType().(*arrow.TimestampType)
	l, isTime := lit.(time.Time)
	if !ok || !isTime || tt.Unit != arrow.Microsecond || (k != expr.KindTimestamp && k != expr.KindTimestampNTZ) {
		return false
	}
	// The literal in microseconds (floor) and whether it has a
	// sub-microsecond remainder: then v = floor compares below it.
	us := l.UnixMicro()
	frac := l.Nanosecond()%1000 != 0
	cmpValues(a, func(i int) int64 { return int64(a.Value(i)) }, func(v int64) int {
		c := cmp.Compare(v, us)
		if c == 0 && frac {
			c = -1
		}
		return c
	}, op, active)
	return true
}

// cmpValues clears the active rows of a that are null or where
// opHolds(op, compare(value(i))) is false.
func cmpValues[T any](a arrow.Array, value func(int) T, compare func(T) int, op expr.Op, active []bool) {
	nulls := a.NullN() > 0
	for i, on := range active {
		if on && ((nulls && a.IsNull(i)) || !opHolds(op, compare(value(i)))) {
			active[i] = false
		}
	}
}

// intCmp applies "vals op lit" for an int64 literal when ok (the column's
// kind takes integers), comparing the values widened to int64 in place:
// no copy of the batch's values.
func intCmp[T ~int8 | ~int16 | ~int32 | ~int64](a arrow.Array, vals []T, ok bool, op expr.Op, lit any, active []bool) bool {
	l, isInt := lit.(int64)
	if !ok || !isInt {
		return false
	}
	cmpOrdered(a, vals, op, l, active)
	return true
}

// floatCmp is intCmp for floats (kinds float and double, a float64
// literal).
func floatCmp[T ~float32 | ~float64](a arrow.Array, vals []T, k expr.Kind, op expr.Op, lit any, nanTrue bool, active []bool) bool {
	l, ok := lit.(float64)
	if !ok || (k != expr.KindFloat64 && k != expr.KindFloat32) {
		return false
	}
	cmpFloats(a, vals, op, l, nanTrue, active)
	return true
}

func opHolds(op expr.Op, c int) bool { return op.Holds(c) }

// cmpOrdered clears the active rows where "int64(vals[i]) op lit" is not
// true or the value is null; one loop per operator, values widened in
// place.
func cmpOrdered[T ~int8 | ~int16 | ~int32 | ~int64](a arrow.Array, vals []T, op expr.Op, lit int64, active []bool) {
	if a.NullN() > 0 {
		for i, on := range active {
			if on && a.IsNull(i) {
				active[i] = false
			}
		}
	}
	switch op {
	case expr.OpEq:
		clearUnless(vals, active, func(v int64) bool { return v == lit })
	case expr.OpNe:
		clearUnless(vals, active, func(v int64) bool { return v != lit })
	case expr.OpLt:
		clearUnless(vals, active, func(v int64) bool { return v < lit })
	case expr.OpLe:
		clearUnless(vals, active, func(v int64) bool { return v <= lit })
	case expr.OpGt:
		clearUnless(vals, active, func(v int64) bool { return v > lit })
	default:
		clearUnless(vals, active, func(v int64) bool { return v >= lit })
	}
}

// clearUnless clears active[i] where holds(int64(vals[i])) is false.
func clearUnless[T ~int8 | ~int16 | ~int32 | ~int64](vals []T, active []bool, holds func(int64) bool) {
	for i, on := range active {
		if on && !holds(int64(vals[i])) {
			active[i] = false
		}
	}
}

// cmpFloats is cmpOrdered for floats: a NaN value or literal gives
// nanTrue (see pred.nanTrue).
func cmpFloats[T ~float32 | ~float64](a arrow.Array, vals []T, op expr.Op, lit float64, nanTrue bool, active []bool) {
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
		v := float64(vals[i])
		if math.IsNaN(v) {
			active[i] = nanTrue
			continue
		}
		if !opHolds(op, cmp.Compare(v, lit)) {
			active[i] = false
		}
	}
}
