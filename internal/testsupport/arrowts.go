package testsupport

import (
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TimestampCase is one Arrow timestamp input of the write tests: Value in
// Unit in column Col ("ts", with the UTC zone, for a timestamp column;
// "ntz", without a zone, for timestamp_ntz), and Want the instant it
// stores (zero: refused, a nanosecond remainder Delta cannot store).
type TimestampCase struct {
	Name  string
	Col   string
	Unit  arrow.TimeUnit
	Value int64
	Want  time.Time
}

// TimestampCases are ns with whole microseconds, ns with a remainder, ms
// and s, with and without a zone; 1700000000123456 us is
// 2023-11-14T22:13:20.123456Z.
func TimestampCases() []TimestampCase {
	exact := time.Date(2023, 11, 14, 22, 13, 20, 123456000, time.UTC)
	return []TimestampCase{
		{"ns exact", "ts", arrow.Nanosecond, 1700000000123456000, exact},
		{"ns lossy", "ts", arrow.Nanosecond, 1700000000123456789, time.Time{}},
		{"ms", "ts", arrow.Millisecond, 1700000000123, exact.Truncate(time.Millisecond)},
		{"s", "ts", arrow.Second, 1700000000, exact.Truncate(time.Second)},
		{"ntz ns exact", "ntz", arrow.Nanosecond, 1700000000123456000, exact},
		{"ntz ns lossy", "ntz", arrow.Nanosecond, 1700000000123456789, time.Time{}},
		{"ntz ms", "ntz", arrow.Millisecond, 1700000000123, exact.Truncate(time.Millisecond)},
		{"ntz s", "ntz", arrow.Second, 1700000000, exact.Truncate(time.Second)},
	}
}

// Batches returns the case's Arrow schema (id int64, then Col) and two
// batches of two rows, ids 0 to 3: ids 0-2 at the Unix epoch, id 3 (row 3
// of the stream, row 1 of the second batch) holding Value. The caller
// releases the batches.
func (c TimestampCase) Batches() (*arrow.Schema, []arrow.RecordBatch) {
	typ := &arrow.TimestampType{Unit: c.Unit}
	if c.Col == "ts" {
		typ.TimeZone = "UTC"
	}
	in := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: c.Col, Type: typ, Nullable: true}}, nil)
	var recs []arrow.RecordBatch
	for bi, vals := range [][]int64{{0, 0}, {0, c.Value}} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, in)
		for j, v := range vals {
			b.Field(0).(*array.Int64Builder).Append(int64(2*bi + j))
			b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(v))
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	return in, recs
}
