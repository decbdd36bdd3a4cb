package parquetio

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// BenchmarkWriteDictionaryMode writes 1,000,000 rows with the default
// DictionaryMode and with DictionaryStrings (the defaults before issue
// 30): the synthetic flights (few distinct numbers), and a worst case for
// dictionaries on numbers, a long id and a double of distinct values
// (each column's dictionary fills 1 MiB and falls back to PLAIN). It
// reports the file's bytes; BENCHMARKS.md (S1) quotes the CPU.
func BenchmarkWriteDictionaryMode(b *testing.B) {
	_, fl := flights(benchFlights)
	distinctSch := schema.NewStruct(field("id", prim(schema.Long), false), field("x", prim(schema.Double), true))
	rng := rand.New(rand.NewPCG(3, 4))
	distinct := make([]value.Row, benchFlights)
	for i := range distinct {
		distinct[i] = value.Row{int64(i)*2654435761 + 17, rng.Float64()}
	}
	for _, data := range []struct {
		name string
		sch  *schema.StructType
		rows []value.Row
	}{{"flights", flightsSchema(), fl}, {"distinct", distinctSch, distinct}} {
		for _, mode := range []struct {
			name string
			m    DictionaryMode
		}{{"default", DictionaryDefault}, {"strings", DictionaryStrings}} {
			b.Run(data.name+"/"+mode.name, func(b *testing.B) {
				var buf bytes.Buffer
				for b.Loop() {
					buf.Reset()
					w, err := NewWriter(&buf, data.sch, WithDictionaryMode(mode.m))
					if err != nil {
						b.Fatal(err)
					}
					if err := w.Write(data.rows); err != nil {
						b.Fatal(err)
					}
					if _, err := w.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(buf.Len()), "bytes/file")
			})
		}
	}
}
