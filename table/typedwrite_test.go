package table

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// Row types of TestTypedColumnarMatchesRowPath.

type colFlight struct {
	Date        int64  `delta:"date,timestamp_ntz"`
	Delay       int64  `delta:"delay"`
	Distance    int64  `delta:"distance"`
	Origin      string `delta:"origin"`
	Destination string `delta:"destination"`
}

type colPointers struct {
	ID   int64      `delta:"id,notnull"`
	L    *int64     `delta:"l"`
	I    *int32     `delta:"i"`
	S    *string    `delta:"s"`
	D    *float64   `delta:"d"`
	F    *float32   `delta:"f"`
	B    *bool      `delta:"b"`
	TS   *time.Time `delta:"ts"`
	NTZ  *int64     `delta:"ntz,timestamp_ntz"`
	Day  *time.Time `delta:"day,date"`
	Bin  []byte     `delta:"bin"`
	Text []byte     `delta:"text"` // into a string column
}

type colConversions struct {
	Base          // promoted "id"
	I     int64   `delta:"i"` // integer column
	S     int     `delta:"s"` // short column
	B     int32   `delta:"b"` // byte column
	N     int     `delta:"n"` // long
	Small int8    `delta:"small"`
	F     float64 `delta:"f"` // float column
	D     float32 `delta:"d"` // double column
	OK    bool    `delta:"ok"`
	Bin   string  `delta:"bin"` // binary column
	TS    time.Time
	NTZ   time.Time  `delta:"ntz,timestamp_ntz"`
	Day   time.Time  `delta:"day,date"`
	Date  value.Date `delta:"date2"`
	Micro int64      `delta:"micro,timestamp"`
	Named Status     `delta:"named"`
}

type colNested struct {
	ID   int64   `delta:"id"`
	Addr Address `delta:"addr"`
}

type colRequired struct {
	ID   int64   `delta:"id,notnull"`
	Name *string `delta:"name,notnull"`
	Big  int64   `delta:"big"`
}

func conversionsSchema() *schema.StructType {
	return schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("i", prim(schema.Integer), true),
		field("s", prim(schema.Short), true),
		field("b", prim(schema.Byte), true),
		field("n", prim(schema.Long), true),
		field("small", prim(schema.Byte), true),
		field("f", prim(schema.Float), true),
		field("d", prim(schema.Double), true),
		field("ok", prim(schema.Boolean), true),
		field("bin", prim(schema.Binary), true),
		field("TS", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("day", prim(schema.Date), true),
		field("date2", prim(schema.Date), true),
		field("micro", prim(schema.Timestamp), true),
		field("named", prim(schema.String), true),
		field("extra", prim(schema.String), true), // no Go field: null
	)
}

func requiredSchema() *schema.StructType {
	return schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("name", prim(schema.String), false),
		field("big", prim(schema.Integer), true),
	)
}

// writeOutcome appends rows with the columnar path (columnar true; it
// fails the test when the columnar path would not be taken and wantColumnar
// is set) or the row path, to a fresh table of sch, and renders what
// lands: per data file its bytes' hash, size, rows and stats JSON, in
// write order, the commit's operation metrics and the table schema; or
// the error.
func writeOutcome[T any](t *testing.T, name string, sch *schema.StructType, rows []T, columnar bool, opts ...WriteOption) string {
	t.Helper()
	return writeOutcomeMode(t, name, sch, rows, columnar, modeAppend, opts...)
}

// writeOutcomeMode is writeOutcome for an append or (after a first append
// of the first row on the row path) an overwrite.
func writeOutcomeMode[T any](t *testing.T, name string, sch *schema.StructType, rows []T, columnar bool, mode writeMode, opts ...WriteOption) string {
	t.Helper()
	ctx := context.Background()
	store := &putCounter{Store: objectstore.NewMem(fmt.Sprintf("%s_%s_%v", strings.ReplaceAll(t.Name(), "/", "_"), name, columnar))}
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	tbl, err := Create(ctx, "", sch, WithStore(store), WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	if mode == modeOverwrite && len(rows) > 0 {
		if tbl, err = writeTypedPath(ctx, tbl, rows[:1], modeAppend, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	nt, err := writeTypedPath(ctx, tbl, rows, mode, opts, columnar)
	if err != nil {
		return "error: " + err.Error() + fmt.Sprintf(" (data files stored: %d, left: %d)", store.dataPuts, len(dataKeys(t, store)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "version %d schema %s\n", nt.Version(), nt.Schema())
	for _, a := range nt.Snapshot().Files() {
		data, err := store.Get(ctx, a.Path, objectstore.FullObject)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := a.NumRecords()
		fmt.Fprintf(&b, "file %x size %d rows %d pv %v stats %s\n", sha256.Sum256(data), a.Size, n, a.PartitionValues, a.Stats)
	}
	ci := nt.Snapshot().CommitInfo()
	fmt.Fprintf(&b, "metrics %v", ci.OperationMetrics)
	return b.String()
}

// putCounter counts the data files stored (Put outside _delta_log/).
type putCounter struct {
	objectstore.Store
	dataPuts int
}

func (p *putCounter) Put(ctx context.Context, key string, data []byte) error {
	if !strings.HasPrefix(key, "_delta_log/") {
		p.dataPuts++
	}
	return p.Store.Put(ctx, key, data)
}

// columnarTaken reports whether Append[T] of rows to a table of sch takes
// the columnar path.
func columnarTaken[T any](t *testing.T, sch *schema.StructType, rows []T, partitioned bool, opts ...WriteOption) bool {
	t.Helper()
	var topts []Option
	if partitioned {
		topts = append(topts, WithPartitionColumns(sch.Fields[0].Name))
	}
	tbl := newMemTable(t, sch, topts...)
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	target, _, err := mergeSchemas(tbl.Schema(), info.schema(true), newWriteConfig(opts).evolve)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := bindStructEncoder(info, target, "")
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.PartitionColumns()) == 0 && newTypedRows(reflect.ValueOf(rows), info, enc) != nil
}

func TestTypedColumnarMatchesRowPath(t *testing.T) {
	loc := time.FixedZone("UTC+5:30", 5*3600+1800)
	longText := strings.Repeat("日本語テキスト😀", 10) // over 32 UTF-16 units, with surrogate pairs
	flights := make([]colFlight, 5000)
	start := time.Date(2006, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	airports := []string{"ATL", "ORD", "Zürich", "東京", "", "DFW"}
	for i := range flights {
		flights[i] = colFlight{Date: start + int64(i)*30e6, Delay: int64(i%97) - 8, Distance: int64(100 + i*7%2700),
			Origin: airports[i%len(airports)], Destination: airports[(i*5+1)%len(airports)]}
	}
	pointers := make([]colPointers, 3000)
	for i := range pointers {
		p := colPointers{ID: int64(i)}
		if i%3 != 0 {
			ts := time.Date(2020, 2, 29, 23, 59, 59, 999_999_000, loc).Add(time.Duration(i) * time.Hour)
			p.L, p.I = ptrTo(int64(i)*1e15), ptrTo(int32(-i))
			p.S, p.D, p.F = ptrTo(fmt.Sprintf("s%05d", i)), ptrTo(float64(i)/7), ptrTo(float32(i)/3)
			p.B, p.TS, p.NTZ, p.Day = ptrTo(i%2 == 0), &ts, ptrTo(ts.UnixMicro()), &ts
			p.Bin, p.Text = []byte{byte(i), 0, 255}, []byte(longText[:i%len(longText)])
		}
		if i%5 == 0 {
			p.Bin = []byte{} // empty, not null
		}
		pointers[i] = p
	}
	onlyNulls := make([]colPointers, 700)
	for i := range onlyNulls {
		onlyNulls[i].ID = int64(i)
	}
	conv := []colConversions{
		{Base: Base{ID: 1}, I: math.MaxInt32, S: math.MinInt16, B: 127, N: math.MaxInt64, Small: -128,
			F: math.MaxFloat64, D: float32(math.Inf(-1)), OK: true, Bin: "\x00\xff",
			TS: time.Date(2024, 3, 10, 2, 30, 0, 123_456_789, loc), NTZ: time.Date(2024, 3, 10, 2, 30, 0, 123_456_789, loc),
			Day: time.Date(1969, 12, 31, 23, 0, 0, 0, loc), Date: -1, Micro: -1, Named: Status(longText)},
		{Base: Base{ID: math.MinInt64}, I: math.MinInt32, S: math.MaxInt16, B: -128, N: math.MinInt64, Small: 127,
			F: math.NaN(), D: 1.5, Bin: "", TS: time.Unix(0, 0).UTC(), NTZ: time.Unix(0, 0).In(loc),
			Day: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), Date: math.MaxInt32, Micro: 253402300799999999, Named: "ä"},
		{Base: Base{ID: math.MaxInt64}, I: 0, F: math.Copysign(0, -1), D: float32(math.Inf(1)), Named: Status(longText[:31])},
	}
	nested := []colNested{{ID: 1, Addr: Address{City: "a"}}}
	name := "x"
	required := []colRequired{{ID: 1, Name: &name, Big: 5}, {ID: 2, Name: &name, Big: -5}}
	ptrRows := make([]*colFlight, 600)
	for i := range ptrRows {
		ptrRows[i] = &flights[i]
	}

	type tc struct {
		name     string
		columnar bool // the columnar path is expected
		run      func(columnar bool) string
		taken    func() bool
	}
	cases := []tc{}
	add := func(name string, columnar bool, run func(bool) string, taken func() bool) {
		cases = append(cases, tc{name, columnar, run, taken})
	}
	flightsSch, _ := SchemaOf[colFlight]()
	pointersSch, _ := SchemaOf[colPointers]()
	pointersSch.Fields[len(pointersSch.Fields)-1].Type = prim(schema.String)
	pointersSch.Fields = append(pointersSch.Fields, field("absent", prim(schema.Double), true))
	nestedSch, _ := SchemaOf[colNested]()

	add("flights", true,
		func(c bool) string { return writeOutcome(t, "flights", flightsSch, flights, c) },
		func() bool { return columnarTaken(t, flightsSch, flights, false) })
	add("pointers with nulls, absent column", true,
		func(c bool) string { return writeOutcome(t, "pointers", pointersSch, pointers, c) },
		func() bool { return columnarTaken(t, pointersSch, pointers, false) })
	add("only nulls", true,
		func(c bool) string { return writeOutcome(t, "nulls", pointersSch, onlyNulls, c) },
		func() bool { return columnarTaken(t, pointersSch, onlyNulls, false) })
	add("conversions and edge values", true,
		func(c bool) string { return writeOutcome(t, "conv", conversionsSchema(), conv, c) },
		func() bool { return columnarTaken(t, conversionsSchema(), conv, false) })
	add("empty input", true,
		func(c bool) string { return writeOutcome(t, "empty", flightsSch, []colFlight{}, c) },
		func() bool { return columnarTaken(t, flightsSch, []colFlight{}, false) })
	add("pointer rows", true,
		func(c bool) string { return writeOutcome(t, "ptrrows", flightsSch, ptrRows, c) },
		func() bool { return columnarTaken(t, flightsSch, ptrRows, false) })
	add("several files and row groups", true,
		func(c bool) string {
			return writeOutcome(t, "split", flightsSch, flights, c, WithTargetFileSize(40_000),
				WithParquetOptions(parquetio.WithRowGroupRows(700), parquetio.WithPageSize(4096)))
		},
		func() bool { return columnarTaken(t, flightsSch, flights, false) })
	add("tight bounds off, 2 indexed columns", true,
		func(c bool) string {
			return writeOutcome(t, "indexed", pointersSch, pointers, c,
				WithParquetOptions(parquetio.WithNumIndexedCols(2), parquetio.WithTightBounds(false)))
		},
		func() bool { return columnarTaken(t, pointersSch, pointers, false) })
	add("overwrite", true,
		func(c bool) string { return writeOutcomeMode(t, "overwrite", pointersSch, pointers, c, modeOverwrite) },
		func() bool { return columnarTaken(t, pointersSch, pointers, false) })
	add("overwrite with nothing", true,
		func(c bool) string {
			return writeOutcomeMode(t, "overwrite0", pointersSch, pointers[:0], c, modeOverwrite)
		},
		func() bool { return columnarTaken(t, pointersSch, pointers[:0], false) })
	add("schema evolution", true,
		func(c bool) string {
			return writeOutcome(t, "evolve", schema.NewStruct(field("delay", prim(schema.Long), true)), flights[:100], c, WithSchemaEvolution())
		},
		func() bool {
			return columnarTaken(t, schema.NewStruct(field("delay", prim(schema.Long), true)), flights[:100], false, WithSchemaEvolution())
		})
	add("required columns", true,
		func(c bool) string { return writeOutcome(t, "required", requiredSchema(), required, c) },
		func() bool { return columnarTaken(t, requiredSchema(), required, false) })
	// Errors: the same error, and nothing written.
	add("error: null in NOT NULL column", true,
		func(c bool) string {
			rows := append([]colRequired{}, required...)
			rows = append(rows, colRequired{ID: 3})
			return writeOutcome(t, "notnull", requiredSchema(), rows, c)
		},
		func() bool { return columnarTaken(t, requiredSchema(), required, false) })
	add("error: value out of range", true,
		func(c bool) string {
			rows := append([]colRequired{}, required...)
			rows = append(rows, colRequired{ID: 3, Name: &name, Big: math.MaxInt32 + 1})
			return writeOutcome(t, "range", requiredSchema(), rows, c)
		},
		func() bool { return columnarTaken(t, requiredSchema(), required, false) })
	add("error: timestamp out of range", true,
		func(c bool) string {
			rows := append([]colFlight{}, flights[:3000]...)
			rows[2500].Date = math.MaxInt64
			return writeOutcome(t, "tsrange", flightsSch, rows, c, WithTargetFileSize(40_000))
		},
		func() bool { return columnarTaken(t, flightsSch, flights, false) })
	add("error: timestamp out of range in the first of several files", true,
		func(c bool) string {
			rows := append([]colFlight{}, flights[:3000]...)
			rows[10].Date = math.MinInt64
			return writeOutcome(t, "tsrange1", flightsSch, rows, c, WithTargetFileSize(40_000))
		},
		func() bool { return columnarTaken(t, flightsSch, flights, false) })
	add("error: nil row in a later file", true,
		func(c bool) string {
			rows := append([]*colFlight{}, ptrRows...)
			rows[590] = nil
			return writeOutcome(t, "nilrow2", flightsSch, rows, c, WithTargetFileSize(5_000))
		},
		func() bool { return columnarTaken(t, flightsSch, ptrRows, false) })
	add("error: nil row", true,
		func(c bool) string {
			rows := append([]*colFlight{}, ptrRows...)
			rows[599] = nil
			return writeOutcome(t, "nilrow", flightsSch, rows, c)
		},
		func() bool { return columnarTaken(t, flightsSch, ptrRows, false) })
	// Shapes the columnar path leaves to the row path.
	add("nested struct", false,
		func(c bool) string { return writeOutcome(t, "nested", nestedSch, nested, c) },
		func() bool { return columnarTaken(t, nestedSch, nested, false) })
	add("partitioned", false,
		func(c bool) string { return "" },
		func() bool { return columnarTaken(t, flightsSch, flights, true) })

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.taken(); got != c.columnar {
				t.Fatalf("columnar path taken = %v, want %v", got, c.columnar)
			}
			got, want := c.run(true), c.run(false)
			if got != want {
				t.Errorf("columnar path:\n%s\nrow path:\n%s", got, want)
			}
			if strings.HasPrefix(c.name, "several") && strings.Count(want, "file ") < 2 {
				t.Errorf("one file:\n%s", want)
			}
			if strings.HasPrefix(c.name, "error") != strings.HasPrefix(want, "error") {
				t.Errorf("outcome %s", want)
			}
		})
	}
}

// BenchmarkAppendColumnar appends 200,000 flights rows to an in-memory
// table: Append[T] on the columnar path, Append[T] on the row path,
// AppendRows of prebuilt rows, and parquet-go's GenericWriter + Put of the
// same rows (the floor). Compare allocations and, on a quiet machine, time.
func BenchmarkAppendColumnar(b *testing.B) {
	const n = 200_000
	ctx := context.Background()
	fs, rows := benchFlightRows(n)
	typed := make([]colFlight, n)
	for i, f := range fs {
		typed[i] = colFlight(f)
	}
	newTable := func(b *testing.B) *Table {
		tbl, err := Create(ctx, "", benchFlightsSchema(), WithStore(objectstore.NewMem(b.Name())))
		if err != nil {
			b.Fatal(err)
		}
		return tbl
	}
	for _, columnar := range []bool{true, false} {
		b.Run(fmt.Sprintf("Append[T]/columnar=%v", columnar), func(b *testing.B) {
			tbl := newTable(b)
			b.ReportAllocs()
			for b.Loop() {
				next, err := writeTypedPath(ctx, tbl, typed, modeAppend, nil, columnar)
				if err != nil {
					b.Fatal(err)
				}
				tbl = next
			}
		})
	}
	b.Run("AppendRows", func(b *testing.B) {
		tbl := newTable(b)
		b.ReportAllocs()
		for b.Loop() {
			next, err := tbl.AppendRows(ctx, rows)
			if err != nil {
				b.Fatal(err)
			}
			tbl = next
		}
	})
	b.Run("parquet-go", func(b *testing.B) {
		store := objectstore.NewMem(b.Name())
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			w := parquet.NewGenericWriter[benchFlight](&buf, parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(1), parquet.PageBufferSize(1<<20))
			if _, err := w.Write(fs); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			if err := store.Put(ctx, "part-"+uuid.NewString()+".snappy.parquet", buf.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestTypedMicrosRoundTrip checks int64 fields tagged timestamp or
// timestamp_ntz: their schema, a write and a typed read back, and the tag
// refused on other integer types.
func TestTypedMicrosRoundTrip(t *testing.T) {
	type micros struct {
		NTZ int64  `delta:"ntz,timestamp_ntz"`
		TS  *int64 `delta:"ts,timestamp"`
		N   int    `delta:"n,timestamp"`
	}
	sch, err := SchemaOf[micros]()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sch.String(), "struct<ntz:timestamp_ntz,ts:timestamp,n:timestamp>"; got != want {
		t.Errorf("schema %s, want %s", got, want)
	}
	ts := int64(-1)
	rows := []micros{{NTZ: 1_700_000_000_123_456, TS: &ts, N: 0}, {NTZ: -62135596800000000, N: 253402300799999999}}
	tbl, err := Append(context.Background(), newMemTable(t, sch), rows)
	if err != nil {
		t.Fatal(err)
	}
	var got []micros
	for r, err := range ScanAs[micros](context.Background(), tbl) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if len(got) != 2 || got[0].NTZ != rows[0].NTZ || got[0].TS == nil || *got[0].TS != -1 || got[1] != rows[1] {
		t.Errorf("read back %+v, want %+v", got, rows)
	}
	for r, err := range tbl.Scan(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r[0].(time.Time); !ok {
			t.Errorf("ntz read as %T", r[0])
		}
	}
	type bad struct {
		X int32 `delta:"x,timestamp"`
	}
	if _, err := SchemaOf[bad](); err == nil || !strings.Contains(err.Error(), "does not apply") {
		t.Errorf("int32 tagged timestamp: %v", err)
	}
}

// TestMicrosInRange checks the microsecond bounds against timestampInRange
// of the same instant, at and around both ends.
func TestMicrosInRange(t *testing.T) {
	lo, hi := (minTimestampUnix+86400)*1e6, (maxTimestampUnix-86400+1)*1e6-1
	for _, us := range []int64{math.MinInt64, lo - 1e6, lo - 1, lo, lo + 1, -1, 0, 1, hi - 1, hi, hi + 1, hi + 1e6, math.MaxInt64} {
		if got, want := microsInRange(us), timestampInRange(time.UnixMicro(us)); got != want {
			t.Errorf("microsInRange(%d) = %v, timestampInRange says %v", us, got, want)
		}
	}
	if !microsInRange(lo) || microsInRange(lo-1) || !microsInRange(hi) || microsInRange(hi+1) {
		t.Error("bounds are not where timestampInRange puts them")
	}
}
