package parquetio

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Flight is the row of the flights sample (vega-datasets flights-3m.parquet,
// written by Polars), as a plain Go struct for parquet-go's generic writer.
type Flight struct {
	Date        int64  `parquet:"date,optional,timestamp(microsecond)"`
	Delay       int64  `parquet:"delay,optional"`
	Distance    int64  `parquet:"distance,optional"`
	Origin      string `parquet:"origin,optional,dict"`
	Destination string `parquet:"destination,optional,dict"`
}

func flightsSchema() *schema.StructType {
	return schema.NewStruct(
		field("date", prim(schema.TimestampNTZ), true),
		field("delay", prim(schema.Long), true),
		field("distance", prim(schema.Long), true),
		field("origin", prim(schema.String), true),
		field("destination", prim(schema.String), true),
	)
}

// flights returns n deterministic flights as structs and as rows.
func flights(n int) ([]Flight, []value.Row) {
	rng := rand.New(rand.NewPCG(42, 7))
	airports := make([]string, 300)
	for i := range airports {
		airports[i] = fmt.Sprintf("%c%c%c", 'A'+i%26, 'A'+(i/26)%26, 'A'+(i*7)%26)
	}
	start := time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC)
	fs := make([]Flight, n)
	rows := make([]value.Row, n)
	for i := range fs {
		t := start.Add(time.Duration(i) * 30 * time.Second)
		f := Flight{
			Date:        t.UnixMicro(),
			Delay:       int64(rng.IntN(320) - 20),
			Distance:    int64(100 + rng.IntN(2900)),
			Origin:      airports[rng.IntN(len(airports))],
			Destination: airports[rng.IntN(len(airports))],
		}
		fs[i] = f
		rows[i] = value.Row{t, f.Delay, f.Distance, f.Origin, f.Destination}
	}
	return fs, rows
}

const benchFlights = 1_000_000

// BenchmarkWriteFlights writes 1,000,000 flights with this package's Writer
// (rows of any, stats computed) and with parquet-go's GenericWriter of a Go
// struct, both snappy, data page v1, dictionary-encoded strings.
func BenchmarkWriteFlights(b *testing.B) {
	fs, rows := flights(benchFlights)
	sch := flightsSchema()
	var buf bytes.Buffer
	b.Run("deltakit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			w, err := NewWriter(&buf, sch)
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Write(rows); err != nil {
				b.Fatal(err)
			}
			if _, err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "bytes/file")
	})
	b.Run("parquet-go-generic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			w := parquet.NewGenericWriter[Flight](&buf, parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(1), parquet.PageBufferSize(1<<20))
			if _, err := w.Write(fs); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len()), "bytes/file")
	})
}

// TestWriteFlightsLarge writes and reads back 1,000,000 flights and checks
// values, stats and speed.
func TestWriteFlightsLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000,000 rows")
	}
	fs, rows := flights(benchFlights)
	sch := flightsSchema()
	t0 := time.Now()
	data, st := writeToBytes(t, sch, rows, WithRowGroupRows(300_000))
	wt := time.Since(t0)
	t0 = time.Now()
	f, err := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "flights", sch)
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRowGroups() != 4 {
		t.Errorf("%d row groups, want 4", f.NumRowGroups())
	}
	n := 0
	var minDelay, maxDelay int64 = 1 << 62, -1 << 62
	for ir, err := range f.IndexedRows(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		want := value.Row{time.UnixMicro(fs[ir.Index].Date).UTC(), fs[ir.Index].Delay, fs[ir.Index].Distance, fs[ir.Index].Origin, fs[ir.Index].Destination}
		if !valuesEqual(ir.Row, want) {
			t.Fatalf("row %d = %s, want %s", ir.Index, show(ir.Row), show(want))
		}
		minDelay, maxDelay = min(minDelay, fs[n].Delay), max(maxDelay, fs[n].Delay)
		n++
	}
	rt := time.Since(t0)
	if n != benchFlights {
		t.Fatalf("%d rows", n)
	}
	if v, _ := st.Lookup("minValues", "delay"); fmt.Sprint(v) != fmt.Sprint(minDelay) {
		t.Errorf("min delay %v, want %d", v, minDelay)
	}
	if v, _ := st.Lookup("maxValues", "delay"); fmt.Sprint(v) != fmt.Sprint(maxDelay) {
		t.Errorf("max delay %v, want %d", v, maxDelay)
	}
	if v, _ := st.Lookup("minValues", "date"); v != "2006-01-01T00:00:00.000" {
		t.Errorf("min date %v", v)
	}
	t.Logf("1,000,000 flights: %d bytes, write %v, read %v", len(data), wt, rt)
	if wt > 20*time.Second {
		t.Errorf("write took %v", wt)
	}
}
