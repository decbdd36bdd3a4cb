package table

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// benchFlight is a flights row for parquet-go's generic writer.
type benchFlight struct {
	Date        int64  `parquet:"date,optional,timestamp(microsecond)"`
	Delay       int64  `parquet:"delay,optional"`
	Distance    int64  `parquet:"distance,optional"`
	Origin      string `parquet:"origin,optional,dict"`
	Destination string `parquet:"destination,optional,dict"`
}

func benchFlightsSchema() *schema.StructType {
	return schema.NewStruct(
		field("date", prim(schema.TimestampNTZ), true),
		field("delay", prim(schema.Long), true),
		field("distance", prim(schema.Long), true),
		field("origin", prim(schema.String), true),
		field("destination", prim(schema.String), true),
	)
}

// benchFlightRows returns n deterministic flights as structs and as rows.
func benchFlightRows(n int) ([]benchFlight, []value.Row) {
	rng := rand.New(rand.NewPCG(42, 7))
	airports := make([]string, 300)
	for i := range airports {
		airports[i] = fmt.Sprintf("%c%c%c", 'A'+i%26, 'A'+(i/26)%26, 'A'+(i*7)%26)
	}
	start := time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC)
	fs := make([]benchFlight, n)
	rows := make([]value.Row, n)
	for i := range fs {
		t := start.Add(time.Duration(i) * 30 * time.Second)
		f := benchFlight{
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

// BenchmarkAppendFlights appends 1,000,000 flights rows {date
// timestamp_ntz, delay long, distance long, origin string, destination
// string} to a table on the local filesystem with AppendRows (validation,
// Parquet with Delta stats, Put, commit) and, in the same iteration, writes
// the same rows with parquet-go's GenericWriter of a Go struct (snappy) and
// stores them with Put. It reports both times and their ratio
// (deltakit/raw).
func BenchmarkAppendFlights(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	fs, rows := benchFlightRows(n)
	dir := b.TempDir()
	tbl, err := Create(ctx, dir+"/table", benchFlightsSchema())
	if err != nil {
		b.Fatal(err)
	}
	raw, err := objectstore.NewLocal(dir + "/raw")
	if err != nil {
		b.Fatal(err)
	}
	var dk, pq time.Duration
	var dkBytes, pqBytes int64
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		next, err := tbl.AppendRows(ctx, rows)
		if err != nil {
			b.Fatal(err)
		}
		dk += time.Since(t0)
		for _, f := range next.Snapshot().Files() {
			dkBytes = f.Size
		}
		tbl = next

		t0 = time.Now()
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[benchFlight](&buf, parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(1))
		if _, err := w.Write(fs); err != nil {
			b.Fatal(err)
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		if err := raw.Put(ctx, "part-"+uuid.NewString()+".snappy.parquet", buf.Bytes()); err != nil {
			b.Fatal(err)
		}
		pq += time.Since(t0)
		pqBytes = int64(buf.Len())
	}
	iters := float64(b.N)
	b.ReportMetric(float64(dk.Milliseconds())/iters, "deltakit-ms/op")
	b.ReportMetric(float64(pq.Milliseconds())/iters, "parquet-go-ms/op")
	b.ReportMetric(float64(dk)/float64(pq), "deltakit/parquet-go")
	b.ReportMetric(float64(dkBytes), "deltakit-bytes")
	b.ReportMetric(float64(pqBytes), "parquet-go-bytes")
}
