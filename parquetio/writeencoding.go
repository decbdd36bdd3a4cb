package parquetio

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/value"
)

// A number column whose values are nearly all distinct gains nothing from
// a dictionary: its dictionary fills dictMaxBytes and the chunk falls back
// to PLAIN, after paying for the hashing and for a dictionary page and
// indexes as large as the values they replace (+40% write CPU and +7%
// bytes for 1,000,000 distinct longs and doubles, BENCHMARKS.md S1). So the
// first values a Writer gets decide: a top-level number column (long,
// integer, short, byte, float, double, date) whose first sampleValues
// values (at least sampleMin of them) are more than plainDistinct
// distinct is written PLAIN for the whole file. A first Write of fewer
// rows keeps the dictionary, whose fallback bounds the cost.
const (
	sampleValues  = 1 << 16
	sampleMin     = 1 << 13
	plainDistinct = 0.9
)

// sampler returns, for the top-level field j of the plan, up to
// sampleValues non-null values of the first batch as their bits, or nil
// when it has none to give.
type sampler func(j int, f *wnode) []uint64

// open creates the parquet-go writer, once, before the first values reach
// it: the top-level number columns whose sample (from sample, nil for
// none) is too distinct for a dictionary are rebuilt PLAIN.
func (w *Writer) open(sample sampler) error {
	plain := map[string]bool{}
	if sample != nil && w.cfg.dictionary == DictionaryDefault {
		for j, f := range w.plan.fields {
			if !isNumberKind(f.fast) || !w.dictCols[f.col] {
				continue
			}
			if bits := sample(j, f); tooDistinct(bits) {
				plain[w.sch.Fields[j].PhysicalName(w.cfg.mappingMode)] = true
			}
		}
	}
	pcfg := w.pcfg
	if len(plain) > 0 {
		cfg := w.cfg
		cfg.plainFields = plain
		plan, err := buildWritePlan(w.sch, cfg, w.sel)
		if err != nil {
			return err
		}
		c := *w.pcfg
		c.Schema = parquet.NewSchema("spark_schema", plan.root)
		pcfg = &c
		w.plan, w.stats, w.cfg = plan, plan.stats, cfg
		w.dictCols = dictionaryColumns(plan.root, plan.numCols)
	}
	w.pw = newParquetWriter(w.out, pcfg)
	return nil
}

// isNumberKind reports whether k is a column kind whose dictionary open
// may turn down.
func isNumberKind(k fastKind) bool {
	switch k {
	case fastLong, fastInteger, fastShort, fastByte, fastDate, fastFloat, fastDouble:
		return true
	}
	return false
}

// tooDistinct reports whether a sample of at least sampleMin values has
// more than plainDistinct of them distinct.
func tooDistinct(bits []uint64) bool {
	if len(bits) < sampleMin {
		return false
	}
	return float64(countDistinct(bits)) > plainDistinct*float64(len(bits))
}

// countDistinct counts the distinct values of vals (at most sampleValues
// of them) in an open-addressing set of at least twice their number, a few times
// cheaper than a Go map.
func countDistinct(vals []uint64) int {
	size := 1 << bits.Len64(uint64(2*len(vals)-1)) // load at most 1/2
	table := make([]uint64, size)
	used := make([]bool, size)
	mask := uint64(size - 1)
	n := 0
	for _, b := range vals {
		i := (b * 0x9e3779b97f4a7c15) >> 32 & mask
		for used[i] && table[i] != b {
			i = (i + 1) & mask
		}
		if !used[i] {
			used[i], table[i] = true, b
			n++
		}
	}
	return n
}

// rowSampler samples the values of rows (Write's first batch).
func (w *Writer) rowSampler(rows []value.Row) sampler {
	return func(j int, f *wnode) []uint64 {
		if len(rows) < sampleMin {
			return nil
		}
		bits := make([]uint64, 0, min(len(rows), sampleValues))
		for _, row := range rows {
			if len(bits) == sampleValues {
				break
			}
			if j >= len(row) || row[j] == nil {
				continue
			}
			v := row[j]
			switch f.fast {
			case fastFloat, fastDouble:
				x, ok := value.ToFloat64(v)
				if !ok {
					continue // Write reports it
				}
				if f.fast == fastFloat {
					bits = append(bits, uint64(math.Float32bits(float32(x))))
				} else {
					bits = append(bits, math.Float64bits(x))
				}
			case fastDate:
				if d, ok := v.(value.Date); ok {
					bits = append(bits, uint64(d)) // a time.Time is left out of the sample
				}
			default:
				x, ok := value.ToInt64(v)
				if !ok {
					continue
				}
				bits = append(bits, uint64(x))
			}
		}
		return bits
	}
}

// columnSampler samples the first n rows of cols (WriteColumns' first
// call).
func columnSampler(n int, cols []Column) sampler {
	return func(j int, f *wnode) []uint64 {
		if n < sampleMin || j >= len(cols) {
			return nil
		}
		c := &cols[j]
		m := min(n, sampleValues)
		bits := make([]uint64, 0, m)
		for i := range n {
			if len(bits) == m {
				break
			}
			if len(c.Null) > i && c.Null[i] {
				continue
			}
			switch {
			case c.Int64 != nil && i < len(c.Int64):
				bits = append(bits, uint64(c.Int64[i]))
			case c.Int32 != nil && i < len(c.Int32):
				bits = append(bits, uint64(uint32(c.Int32[i])))
			case c.Float64 != nil && i < len(c.Float64):
				bits = append(bits, math.Float64bits(c.Float64[i]))
			case c.Float32 != nil && i < len(c.Float32):
				bits = append(bits, uint64(math.Float32bits(c.Float32[i])))
			default:
				return bits
			}
		}
		return bits
	}
}

// String describes the mode, for errors and notes.
func (m DictionaryMode) String() string {
	switch m {
	case DictionaryDefault:
		return "DictionaryDefault"
	case DictionaryStrings:
		return "DictionaryStrings"
	case DictionaryOff:
		return "DictionaryOff"
	}
	return fmt.Sprintf("DictionaryMode(%d)", uint8(m))
}
