package structcodec

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

type inner struct {
	City string `delta:"city"`
}

type sample struct {
	ID     int64              `delta:"id,notnull"`
	Small  int16              `delta:"small"`
	Ptr    *int32             `delta:"ptr"`
	When   time.Time          `delta:"when,timestamp_ntz"`
	Micros int64              `delta:"micros,timestamp"`
	Day    value.Date         `delta:"day"`
	Price  value.Decimal      `delta:"price,decimal(10,2)"`
	Tags   []*string          `delta:"tags"`
	Scores map[string]*int64  `delta:"scores"`
	Addr   *inner             `delta:"addr"`
	Bin    []byte             `delta:"bin"`
	Flags  map[bool]float32   `delta:"flags"`
	Nested map[int8][]float64 `delta:"nested"`
}

func TestPlanCached(t *testing.T) {
	a, err := PlanOf(reflect.TypeFor[sample]())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PlanOf(reflect.TypeFor[*sample]())
	if a != b {
		t.Fatal("plan not cached")
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = PlanOf(reflect.TypeFor[sample]()) })
	if allocs > 0 {
		t.Fatalf("cached plan lookup allocates %v times", allocs)
	}
}

// TestBindersCoverEveryKind: each Kind has an encoder and a decoder binder
// (a Kind added without one would panic on binding).
func TestBindersCoverEveryKind(t *testing.T) {
	for k := Int; k < numKinds; k++ {
		if kinds[k].encoder == nil || kinds[k].decoder == nil {
			t.Errorf("kind %d: encoder binder %v, decoder binder %v", k, kinds[k].encoder != nil, kinds[k].decoder != nil)
		}
	}
}

func TestNarrowInt(t *testing.T) {
	type ints struct {
		I int64 `delta:"i"`
	}
	p, err := PlanOf(reflect.TypeFor[ints]())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		col    string
		x      int64
		want   any
		errMsg string
	}{
		{schema.Integer, math.MaxInt32, int32(math.MaxInt32), ""},
		{schema.Integer, math.MinInt32, int32(math.MinInt32), ""},
		{schema.Integer, math.MaxInt32 + 1, nil, `column "i": invalid argument: 2147483648 does not fit integer`},
		{schema.Short, -1 << 15, int16(-1 << 15), ""},
		{schema.Short, 1 << 15, nil, `column "i": invalid argument: 32768 does not fit short`},
		{schema.Byte, 127, int8(127), ""},
		{schema.Byte, -129, nil, `column "i": invalid argument: -129 does not fit byte`},
		{schema.Long, math.MinInt64, int64(math.MinInt64), ""},
	} {
		e, err := BindEncoder(p, schema.NewStruct(schema.NewField("i", schema.Primitive(tc.col), true)), "")
		if err != nil {
			t.Fatal(err)
		}
		row, err := e.Encode(reflect.ValueOf(ints{I: tc.x}), nil)
		if tc.errMsg != "" {
			if !errors.Is(err, ErrInvalidArgument) || err.Error() != tc.errMsg {
				t.Errorf("%s %d: error %v, want %q", tc.col, tc.x, err, tc.errMsg)
			}
			continue
		}
		if err != nil || row[0] != tc.want {
			t.Errorf("%s %d: got %#v, %v; want %#v", tc.col, tc.x, row, err, tc.want)
		}
	}
}

// TestRoundTrip encodes and decodes every kind without a table, nulls
// inside slices and maps included.
func TestRoundTrip(t *testing.T) {
	p, err := PlanOf(reflect.TypeFor[sample]())
	if err != nil {
		t.Fatal(err)
	}
	sch := p.Schema()
	enc, err := BindEncoder(p, sch, "")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := RowDecoder[*sample](sch)
	if err != nil {
		t.Fatal(err)
	}
	s, n := "a", int64(5)
	in := sample{ID: 1, Small: -7, Ptr: new(int32), When: time.Date(2024, 3, 10, 1, 2, 3, 4000, time.UTC),
		Micros: 1_700_000_000_123_456, Day: 19000, Price: value.MustParseDecimal("12.34"),
		Tags: []*string{&s, nil}, Scores: map[string]*int64{"n": &n, "nil": nil}, Addr: &inner{City: "x"},
		Bin: []byte{0, 1}, Flags: map[bool]float32{true: 1.5, false: -1}, Nested: map[int8][]float64{3: {1}, -1: nil}}
	row, err := enc.Encode(reflect.ValueOf(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := row[11].([]value.MapEntry); got[0].Key != false || got[1].Key != true {
		t.Errorf("bool map keys not sorted: %v", got)
	}
	out, err := dec(row)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*out, in) {
		t.Errorf("round trip:\n got %+v\nwant %+v", *out, in)
	}
	// All nulls: zero values, pointers nil.
	nulls := make(value.Row, len(sch.Fields))
	if out, err = dec(nulls); err != nil || !reflect.DeepEqual(*out, sample{}) {
		t.Errorf("nulls: %+v %v", out, err)
	}
}

func TestBindErrorsNameFieldAndColumn(t *testing.T) {
	p, err := PlanOf(reflect.TypeFor[sample]())
	if err != nil {
		t.Fatal(err)
	}
	sch := p.Schema()
	sch.Fields[9] = schema.NewField("addr", schema.Primitive(schema.String), true)
	want := `table: schema mismatch: field sample.Addr of Go type structcodec.inner cannot be written to column "addr" of type string`
	if _, err := BindEncoder(p, sch, ""); !errors.Is(err, ErrSchemaMismatch) || err.Error() != want {
		t.Errorf("encoder: %v", err)
	}
	want = `table: schema mismatch: column "addr" of type string cannot be read into field sample.Addr of Go type structcodec.inner`
	if _, err := BindDecoder(p, sch, ""); !errors.Is(err, ErrSchemaMismatch) || err.Error() != want {
		t.Errorf("decoder: %v", err)
	}
	d, err := BindDecoder(p, p.Schema(), "")
	if err != nil {
		t.Fatal(err)
	}
	row := make(value.Row, len(sch.Fields))
	row[12] = []value.MapEntry{{Key: int8(1), Value: []any{"x"}}}
	var out sample
	err = d.Decode(row, reflect.ValueOf(&out).Elem())
	if !errors.Is(err, ErrSchemaMismatch) || !strings.HasPrefix(err.Error(), `column "nested": value of key 1: element 0: table: schema mismatch: value x of Go type string`) {
		t.Errorf("decode: %v", err)
	}
}
