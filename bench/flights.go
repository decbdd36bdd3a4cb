package bench

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Flight is one row of the flights schema as a plain Go struct, the input of
// parquet-go's GenericWriter (the raw floor of P2, P6 and P7) and of
// table.Append[Flight] (P2). The parquet tags give the layout deltakit
// writes: optional columns, microsecond timestamps, dictionary-encoded
// strings; the delta tags map the fields to FlightsSchema (Date holds
// microseconds since the epoch of a timestamp_ntz).
type Flight struct {
	Date        int64  `parquet:"date,optional,timestamp(microsecond)" delta:"date,timestamp_ntz"`
	Delay       int64  `parquet:"delay,optional" delta:"delay"`
	Distance    int64  `parquet:"distance,optional" delta:"distance"`
	Origin      string `parquet:"origin,optional,dict" delta:"origin"`
	Destination string `parquet:"destination,optional,dict" delta:"destination"`
}

// row is f as a row of FlightsSchema (date a time.Time in UTC).
func (f Flight) row() value.Row {
	return value.Row{time.UnixMicro(f.Date).UTC(), f.Delay, f.Distance, f.Origin, f.Destination}
}

// FlightsSchema returns the Delta schema of the flights table: {date
// timestamp_ntz, delay long, distance long, origin string, destination
// string}, all nullable.
func FlightsSchema() *schema.StructType {
	return schema.NewStruct(
		schema.NewField("date", schema.Primitive(schema.TimestampNTZ), true),
		schema.NewField("delay", schema.Primitive(schema.Long), true),
		schema.NewField("distance", schema.Primitive(schema.Long), true),
		schema.NewField("origin", schema.Primitive(schema.String), true),
		schema.NewField("destination", schema.Primitive(schema.String), true),
	)
}

// airports are the origins and destinations, busiest first; rows pick them
// with a skewed distribution, as real traffic is.
var airports = [...]string{
	"ATL", "ORD", "DFW", "DEN", "LAX", "PHX", "IAH", "LAS", "DTW", "SFO",
	"SLC", "MSP", "EWR", "MCO", "BOS", "CLT", "LGA", "JFK", "SEA", "BWI",
	"PHL", "MDW", "SAN", "DCA", "TPA", "FLL", "IAD", "MIA", "STL", "OAK",
	"CVG", "MCI", "MEM", "BNA", "HOU", "CLE", "PDX", "SJC", "SMF", "RDU",
	"AUS", "MSY", "SAT", "IND", "DAL", "PIT", "SNA", "ABQ", "BUR", "ONT",
	"MKE", "CMH", "JAX", "OGG", "HNL", "BDL", "RSW", "TUS", "OMA", "ELP",
}

// flightsStart is the departure time of row 0.
var flightsStart = time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC)

// GenerateFlights returns rows [first, first+n) of the deterministic
// synthetic flights data set, both as structs and as parquetio rows holding
// the same values: departures every 30 s from 2006-01-01, delays in minutes
// mostly small with a long tail (early departures negative), distances fixed
// per airport pair, airports drawn with a skew towards the busiest. The same
// row index always gives the same row.
func GenerateFlights(first, n int) ([]Flight, []value.Row) {
	fs := make([]Flight, n)
	rows := make([]value.Row, n)
	var p rand.PCG
	for i := range n {
		idx := first + i
		p.Seed(0xf119475, uint64(idx)) // one stream per row: any range is reproducible
		t := flightsStart.Add(time.Duration(idx) * 30 * time.Second)
		u := (float64(p.Uint64()>>11) + 0.5) / (1 << 53) // uniform in (0, 1)
		delay := min(int64(-math.Log(u)*18)-8, 900)      // exponential tail
		o := airport(p.Uint64())
		d := airport(p.Uint64())
		if d == o {
			d = (d + 1) % len(airports)
		}
		f := Flight{
			Date:        t.UnixMicro(),
			Delay:       delay,
			Distance:    distance(o, d),
			Origin:      airports[o],
			Destination: airports[d],
		}
		fs[i] = f
		rows[i] = f.row()
	}
	return fs, rows
}

// airport maps a random number to an airport index, busiest more often: the
// minimum of two uniform draws skews towards 0.
func airport(r uint64) int {
	a, b := int(r%uint64(len(airports))), int((r>>32)%uint64(len(airports)))
	return min(a, b)
}

// distance is a fixed pseudo-distance in miles of an airport pair, 100 to
// 2,800, symmetric.
func distance(o, d int) int64 {
	lo, hi := min(o, d), max(o, d)
	h := uint64(lo*131+hi*7919) * 0x9e3779b97f4a7c15
	return 100 + int64(h>>40)%2700
}
