package table

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

type Address struct {
	City string `delta:"city,notnull"`
	Zip  *int32 `delta:"zip"`
}

type Base struct {
	ID int64 `delta:"id,notnull"`
}

type Status string

// Everything is a struct with a field of every supported kind.
type Everything struct {
	Base                                        // promoted: column "id"
	I        int32                              `delta:"i"`
	S        int16                              `delta:"s"`
	B        int8                               `delta:"b"`
	N        int                                `delta:"n"`
	F        float32                            `delta:"f"`
	D        float64                            `delta:"d"`
	OK       bool                               `delta:"ok"`
	Str      string                             `delta:"str"`
	Status   Status                             `delta:"status"`
	Bin      []byte                             `delta:"bin"`
	TS       time.Time                          `delta:"ts"`
	NTZ      time.Time                          `delta:"ntz,timestamp_ntz"`
	Day      time.Time                          `delta:"day,date"`
	Date     value.Date                         `delta:"date2"`
	D52      value.Decimal                      `delta:"d52,decimal(5,2)"`
	D3810    *value.Decimal                     `delta:"d3810,decimal(38, 10)"`
	Ptr      *int64                             `delta:"ptr"`
	PtrStr   *string                            `delta:"ptr_str"`
	Addr     Address                            `delta:"addr"`
	AddrPtr  *Address                           `delta:"addr_ptr"`
	Tags     []string                           `delta:"tags"`
	Opt      []*int64                           `delta:"opt"`
	Addrs    []Address                          `delta:"addrs"`
	Scores   map[string]float64                 `delta:"scores"`
	Nested   map[int32][]string                 `delta:"nested"`
	Days     []time.Time                        `delta:"days,date"`
	ByDay    map[string]value.Decimal           `delta:"by_day,decimal(10,2)"`
	Untagged string                             // column "Untagged"
	Skipped  string                             `delta:"-"`
	private  int                                // not a column
	Matrix   [][]int64                          `delta:"matrix"`
	Deep     map[string]map[string]*Address     `delta:"deep"`
	Wide     map[string]*value.Decimal          `delta:"wide,decimal(20,4)"`
	TSs      map[string]time.Time               `delta:"tss,timestamp_ntz"`
	Bools    []bool                             `delta:"bools"`
	Bytes    [][]byte                           `delta:"bytes"`
	Empty    struct{ X *int64 }                 `delta:"empty"`
	Dates    map[value.Date]value.Date          `delta:"dates"`
	Floats   map[float64]float32                `delta:"floats"`
	Statuses map[Status]Status                  `delta:"statuses"`
	PtrMap   *map[string]int64                  `delta:"ptr_map"`
	PtrSlice *[]int64                           `delta:"ptr_slice"`
	TimePtr  *time.Time                         `delta:"time_ptr,timestamp_ntz"`
	DatePtr  *value.Date                        `delta:"date_ptr"`
	AnyTime  map[string][]map[string]*time.Time `delta:"any_time"`
}

func TestSchemaOf(t *testing.T) {
	_ = Everything{private: 1} // unexported fields are not columns
	sch, err := SchemaOf[Everything]()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"id": "long!", "i": "integer", "s": "short", "b": "byte", "n": "long", "f": "float", "d": "double", "ok": "boolean",
		"str": "string", "status": "string", "bin": "binary", "ts": "timestamp", "ntz": "timestamp_ntz", "day": "date",
		"date2": "date", "d52": "decimal(5,2)", "d3810": "decimal(38,10)", "ptr": "long", "ptr_str": "string",
		"addr": "struct<city:string,zip:integer>", "addr_ptr": "struct<city:string,zip:integer>", "tags": "array<string>",
		"opt": "array<long>", "addrs": "array<struct<city:string,zip:integer>>", "scores": "map<string,double>",
		"nested": "map<integer,array<string>>", "days": "array<date>", "by_day": "map<string,decimal(10,2)>",
		"Untagged": "string", "matrix": "array<array<long>>", "deep": "map<string,map<string,struct<city:string,zip:integer>>>",
		"wide": "map<string,decimal(20,4)>", "tss": "map<string,timestamp_ntz>", "bools": "array<boolean>",
		"bytes": "array<binary>", "empty": "struct<X:long>", "dates": "map<date,date>", "floats": "map<double,float>",
		"statuses": "map<string,string>", "ptr_map": "map<string,long>", "ptr_slice": "array<long>",
		"time_ptr": "timestamp_ntz", "date_ptr": "date", "any_time": "map<string,array<map<string,timestamp>>>",
	}
	if len(sch.Fields) != len(want) {
		t.Errorf("%d fields, want %d: %s", len(sch.Fields), len(want), sch)
	}
	if sch.Fields[0].Name != "id" || sch.Fields[len(sch.Fields)-1].Name != "any_time" {
		t.Errorf("field order: %s", sch)
	}
	for _, f := range sch.Fields {
		got := f.Type.String()
		if !f.Nullable {
			got += "!"
		}
		if want[f.Name] != got {
			t.Errorf("column %s: %s, want %s", f.Name, got, want[f.Name])
		}
	}
	// Nested nullability: notnull inside structs, array elements and map
	// values nullable only for pointers.
	addr := sch.Field("addr").Type.(*schema.StructType)
	if addr.Fields[0].Nullable || !addr.Fields[1].Nullable {
		t.Errorf("addr fields: %+v %+v", addr.Fields[0], addr.Fields[1])
	}
	if sch.Field("tags").Type.(*schema.ArrayType).ContainsNull || !sch.Field("opt").Type.(*schema.ArrayType).ContainsNull {
		t.Error("array containsNull")
	}
	if !sch.Field("bytes").Type.(*schema.ArrayType).ContainsNull {
		t.Error("[][]byte elements can be nil")
	}
	if sch.Field("scores").Type.(*schema.MapType).ValueContainsNull || !sch.Field("wide").Type.(*schema.MapType).ValueContainsNull {
		t.Error("map valueContainsNull")
	}
	// *T works as T.
	if p, err := SchemaOf[*Everything](); err != nil || p.String() != sch.String() {
		t.Errorf("SchemaOf[*Everything] = %v, %v", p, err)
	}
}

func TestSchemaOfErrors(t *testing.T) {
	type node struct {
		Kids []node
	}
	type ptrNode struct {
		Next *ptrNode
	}
	cases := []struct {
		name string
		fn   func() error
		want string
	}{
		{"chan", func() error { _, err := SchemaOf[struct{ C chan int }](); return err }, "field .C: Go type chan int"},
		{"func", func() error { _, err := SchemaOf[struct{ F func() }](); return err }, ".F"},
		{"complex", func() error { _, err := SchemaOf[struct{ Z complex128 }](); return err }, "complex128"},
		{"uint64", func() error { _, err := SchemaOf[struct{ U uint64 }](); return err }, "unsigned"},
		{"uint8", func() error { _, err := SchemaOf[struct{ U uint8 }](); return err }, "unsigned"},
		{"interface", func() error { _, err := SchemaOf[struct{ A any }](); return err }, ".A"},
		{"array", func() error { _, err := SchemaOf[struct{ A [4]byte }](); return err }, ".A"},
		{"nested chan", func() error { _, err := SchemaOf[struct{ M map[string][]chan int }](); return err }, ".M"},
		{"decimal without tag", func() error { _, err := SchemaOf[struct{ D value.Decimal }](); return err }, "decimal(p,s)"},
		{"bad tag", func() error {
			_, err := SchemaOf[struct {
				X int64 `delta:"x,frobnicate"`
			}]()
			return err
		}, "frobnicate"},
		{"bad decimal", func() error {
			_, err := SchemaOf[struct {
				D value.Decimal `delta:"d,decimal(40,2)"`
			}]()
			return err
		}, "decimal(40,2)"},
		{"date on int", func() error {
			_, err := SchemaOf[struct {
				X int64 `delta:"x,date"`
			}]()
			return err
		}, "does not apply"},
		{"duplicate column", func() error {
			_, err := SchemaOf[struct {
				A int64 `delta:"x"`
				B int64 `delta:"X"`
			}]()
			return err
		}, "both map to column"},
		{"recursive slice", func() error { _, err := SchemaOf[node](); return err }, "recursive"},
		{"recursive pointer", func() error { _, err := SchemaOf[ptrNode](); return err }, "recursive"},
		{"not a struct", func() error { _, err := SchemaOf[int](); return err }, "struct type"},
		{"time is not a row", func() error { _, err := SchemaOf[time.Time](); return err }, "struct type"},
		{"double pointer", func() error { _, err := SchemaOf[struct{ P **int64 }](); return err }, "pointer to pointer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.fn()
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want ErrInvalidArgument containing %q", err, c.want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func everythingRows() []Everything {
	ts := time.Date(2024, 3, 10, 12, 30, 45, 123456000, time.UTC)
	zip := int32(1011)
	full := Everything{
		Base: Base{ID: 1}, I: math.MinInt32, S: 12, B: -3, N: 1 << 40, F: 0.25, D: math.Pi, OK: true,
		Str: "straße", Status: "active", Bin: []byte{0xde, 0xad}, TS: ts, NTZ: ts, Day: time.Date(2024, 3, 10, 0, 0, 0, 0, time.UTC),
		Date: value.DateOf(ts), D52: value.MustParseDecimal("-123.45"),
		D3810: ptrTo(value.MustParseDecimal("1234567890123456789012345678.0123456789")), Ptr: ptrTo(int64(7)), PtrStr: ptrTo(""),
		Addr: Address{City: "Amsterdam", Zip: &zip}, AddrPtr: &Address{City: "Utrecht"}, Tags: []string{"a", "b"},
		Opt: []*int64{ptrTo(int64(1)), nil}, Addrs: []Address{{City: "x"}, {City: "y", Zip: &zip}},
		Scores: map[string]float64{"b": 2, "a": 1}, Nested: map[int32][]string{2: {"two"}, 1: nil},
		Days:  []time.Time{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		ByDay: map[string]value.Decimal{"mon": value.MustParseDecimal("1.50")}, Untagged: "u", Skipped: "not written",
		Matrix: [][]int64{{1, 2}, {}, nil}, Deep: map[string]map[string]*Address{"k": {"inner": {City: "z"}, "nil": nil}},
		Wide: map[string]*value.Decimal{"w": ptrTo(value.MustParseDecimal("9999999999999999.9999")), "n": nil},
		TSs:  map[string]time.Time{"t": ts}, Bools: []bool{true, false}, Bytes: [][]byte{{1}, nil, {}},
		Empty: struct{ X *int64 }{X: ptrTo(int64(3))}, Dates: map[value.Date]value.Date{1: 2},
		Floats: map[float64]float32{1.5: 2.5}, Statuses: map[Status]Status{"a": "b"}, PtrMap: &map[string]int64{"x": 1},
		PtrSlice: &[]int64{5}, TimePtr: &ts, DatePtr: ptrTo(value.Date(19000)),
		AnyTime: map[string][]map[string]*time.Time{"a": {{"b": &ts, "c": nil}, nil}},
	}
	return []Everything{full, {Base: Base{ID: 2}, D52: value.MustParseDecimal("0.00")}}
}

func TestTypedRoundTrip(t *testing.T) {
	ctx := context.Background()
	sch, err := SchemaOf[Everything]()
	if err != nil {
		t.Fatal(err)
	}
	tbl := newMemTable(t, sch)
	rows := everythingRows()
	t1, err := Append(ctx, tbl, rows)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := rowDecoder[Everything](t1.Schema())
	if err != nil {
		t.Fatal(err)
	}
	got := readAllRows(t, t1)
	if len(got) != 2 {
		t.Fatalf("%d rows", len(got))
	}
	// readAllRows sorts by rendering; id 1 sorts first.
	for i, r := range got {
		v, err := dec(r)
		if err != nil {
			t.Fatal(err)
		}
		want := rows[i]
		want.Skipped = ""
		normalizeEverything(&want)
		normalizeEverything(&v)
		if !reflect.DeepEqual(v, want) {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, v, want)
		}
	}
	// []*T works too, and a nil element is an error naming the row.
	if _, err := Append(ctx, t1, []*Everything{&rows[0]}); err != nil {
		t.Fatal(err)
	}
	var re *RowError
	if _, err := Append(ctx, t1, []*Everything{&rows[0], nil}); !errors.As(err, &re) || re.Row != 1 {
		t.Fatalf("nil *T: %v", err)
	}
	// *T decoder.
	pdec, err := rowDecoder[*Everything](t1.Schema())
	if err != nil {
		t.Fatal(err)
	}
	if p, err := pdec(got[1]); err != nil || p.ID != 2 {
		t.Fatalf("*T decode: %+v %v", p, err)
	}
}

// normalizeEverything makes values that read back in an equivalent form
// comparable: times in UTC, decimals at the column scale, empty vs nil.
func normalizeEverything(e *Everything) {
	e.D52, _ = e.D52.Rescale(2)
	if e.Nested != nil && e.Nested[1] == nil {
		e.Nested[1] = nil
	}
	if e.ByDay != nil {
		for k, v := range e.ByDay {
			e.ByDay[k], _ = v.Rescale(2)
		}
	}
	for i, m := range e.Matrix {
		if m != nil && len(m) == 0 {
			e.Matrix[i] = []int64{}
		}
	}
	for i, b := range e.Bytes {
		if b != nil && len(b) == 0 {
			e.Bytes[i] = []byte{}
		}
	}
	if e.Bin != nil && len(e.Bin) == 0 {
		e.Bin = nil
	}
}

func TestTypedAgainstTable(t *testing.T) {
	ctx := context.Background()
	// A table created untyped, with types wider/narrower than the Go fields.
	sch := schema.NewStruct(
		field("id", prim(schema.Integer), false),
		field("amount", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		field("when", prim(schema.TimestampNTZ), true),
		field("day", prim(schema.Date), true),
		field("ratio", prim(schema.Float), true),
		field("note", prim(schema.String), true),
		field("p", prim(schema.String), false),
	)
	tbl := newMemTable(t, sch, WithPartitionColumns("p"))

	type Good struct {
		ID     int64     `delta:"ID"` // case-insensitive match, narrowed with a range check
		Amount int64     `delta:"amount"`
		When   time.Time `delta:"when"`
		Day    time.Time `delta:"day"`
		Ratio  float64   `delta:"ratio"`
		P      string    `delta:"p"`
	}
	when := time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 7200))
	t1, err := Append(ctx, tbl, []Good{{ID: 1, Amount: 5, When: when, Day: when, Ratio: 0.5, P: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	assertRows(t, readAllRows(t, t1), []value.Row{{int32(1), value.MustParseDecimal("5.00"),
		time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), value.DateOf(when), float32(0.5), nil, "x"}})

	type Extra struct {
		ID    int32  `delta:"id"`
		P     string `delta:"p"`
		Added *int64 `delta:"added"`
	}
	type MissingNotNull struct {
		Note string `delta:"note"`
		P    string `delta:"p"`
	}
	type WrongType struct {
		ID string `delta:"id"`
		P  string `delta:"p"`
	}
	type NilNotNull struct {
		ID *int32 `delta:"id"`
		P  string `delta:"p"`
	}
	cases := []struct {
		name    string
		write   func() error
		wantErr error
		want    string
	}{
		{"extra field", func() error { _, err := Append(ctx, t1, []Extra{{ID: 1, P: "x"}}); return err }, ErrSchemaMismatch, `"added"`},
		{"missing NOT NULL", func() error { _, err := Append(ctx, t1, []MissingNotNull{{P: "x"}}); return err }, ErrSchemaMismatch, `NOT NULL column "id"`},
		{"wrong type", func() error { _, err := Append(ctx, t1, []WrongType{{ID: "1", P: "x"}}); return err }, ErrSchemaMismatch, "WrongType.ID"},
		{"nil in NOT NULL", func() error {
			_, err := Append(ctx, t1, []NilNotNull{{ID: ptrTo(int32(1)), P: "x"}, {P: "x"}})
			return err
		}, ErrInvalidArgument, `row 1: column "id"`},
		{"out of range", func() error {
			_, err := Append(ctx, t1, []Good{{ID: math.MaxInt32 + 1, P: "x"}})
			return err
		}, ErrInvalidArgument, `column "id"`},
		{"empty partition NOT NULL", func() error { _, err := Append(ctx, t1, []Good{{ID: 1}}); return err }, ErrInvalidArgument, `column "p"`},
		{"unsupported type", func() error {
			_, err := Append(ctx, t1, []struct{ C chan int }{{}})
			return err
		}, ErrInvalidArgument, "chan int"},
		{"decimal scale", func() error {
			type D struct {
				ID     int32         `delta:"id"`
				P      string        `delta:"p"`
				Amount value.Decimal `delta:"amount,decimal(10,3)"`
			}
			_, err := Append(ctx, t1, []D{{ID: 1, P: "x", Amount: value.MustParseDecimal("1.005")}})
			return err
		}, ErrInvalidArgument, `column "amount"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.write()
			if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %v containing %q", err, c.wantErr, c.want)
			}
		})
	}
	if n := len(dataKeys(t, t1.Store())); n != 1 {
		t.Fatalf("failed typed writes left files: %d data files", n)
	}
	// With evolution the extra field becomes a nullable column.
	t2, err := Append(ctx, t1, []Extra{{ID: 2, P: "y", Added: ptrTo(int64(9))}}, WithSchemaEvolution())
	if err != nil {
		t.Fatal(err)
	}
	if f := t2.Schema().Field("added"); f == nil || !f.Nullable || f.Type.String() != "long" {
		t.Fatalf("added column: %+v", f)
	}
	if f := t2.Schema().Field("id"); f.Nullable {
		t.Fatal("non-pointer field relaxed NOT NULL")
	}
	// A pointer field relaxes NOT NULL under evolution.
	t3, err := Append(ctx, t2, []NilNotNull{{P: "z"}}, WithSchemaEvolution())
	if err != nil {
		t.Fatal(err)
	}
	if !t3.Schema().Field("id").Nullable {
		t.Fatal("NOT NULL not relaxed")
	}

	// Typed overwrite with replaceWhere.
	t4, err := Overwrite(ctx, t3, []Extra{{ID: 3, P: "x"}}, WithReplaceWhere(Col("p").Eq("x")))
	if err != nil {
		t.Fatal(err)
	}
	type Back struct {
		ID    *int32 `delta:"id"`
		P     string `delta:"p"`
		Added *int64 `delta:"added"`
	}
	dec, err := rowDecoder[Back](t4.Schema())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range readAllRows(t, t4) {
		b, err := dec(r)
		if err != nil {
			t.Fatal(err)
		}
		id := "null"
		if b.ID != nil {
			id = string(rune('0' + *b.ID))
		}
		ids = append(ids, b.P+id)
	}
	slices.Sort(ids)
	if strings.Join(ids, ",") != "x3,y2,znull" {
		t.Fatalf("rows after overwrite: %v", ids)
	}

	// Decoder errors: a field without a column, an incompatible type.
	if _, err := rowDecoder[struct{ Nope int64 }](t4.Schema()); !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "Nope") {
		t.Fatalf("decoder with unknown field: %v", err)
	}
	if _, err := rowDecoder[struct {
		P int64 `delta:"p"`
	}](t4.Schema()); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("decoder with wrong type: %v", err)
	}
	// Decoding a value that overflows the field errors, never panics.
	d8, err := rowDecoder[struct {
		ID int8 `delta:"id"`
	}](t4.Schema())
	if err != nil {
		t.Fatal(err)
	}
	row := make(value.Row, len(t4.Schema().Fields))
	row[0] = int32(1000)
	if _, err := d8(row); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("overflow decode: %v", err)
	}
	if _, err := d8(value.Row{1}); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("short row decode: %v", err)
	}
	row[0] = "not an int"
	if _, err := d8(row); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("bad value decode: %v", err)
	}
}

// BenchmarkTypedCodec measures the struct codec alone, without files:
// encoding 10,000 flat rows (integers, pointers, strings, times) and 2,000
// rows of Everything (every supported kind) into Rows, and decoding them
// back.
func BenchmarkTypedCodec(b *testing.B) {
	type flat struct {
		ID    int64     `delta:"id,notnull"`
		Small int32     `delta:"small"`
		Delay *int64    `delta:"delay"`
		Price float64   `delta:"price"`
		Name  string    `delta:"name"`
		When  time.Time `delta:"when"`
		Code  *string   `delta:"code"`
	}
	const n = 10_000
	flats := make([]flat, n)
	ts := time.Date(2024, 3, 10, 12, 30, 45, 0, time.UTC)
	for i := range flats {
		flats[i] = flat{ID: int64(i), Small: int32(i % 1000), Price: float64(i) / 7, Name: "row", When: ts.Add(time.Duration(i) * time.Second)}
		if i%3 != 0 {
			flats[i].Delay, flats[i].Code = ptrTo(int64(i%97)), ptrTo("AB")
		}
	}
	every := make([]Everything, 0, n/5)
	for len(every) < n/5 {
		every = append(every, everythingRows()...)
	}
	b.Run("flat", func(b *testing.B) { benchCodec(b, flats) })
	b.Run("everything", func(b *testing.B) { benchCodec(b, every) })
}

func benchCodec[T any](b *testing.B, rows []T) {
	ctx := context.Background()
	info, err := planOf(reflect.TypeFor[T]())
	if err != nil {
		b.Fatal(err)
	}
	sch := info.schema(false)
	enc, err := bindStructEncoder(info, sch, "")
	if err != nil {
		b.Fatal(err)
	}
	encoded, err := encodeRows(ctx, reflect.ValueOf(rows), enc)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := rowDecoder[T](sch)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		c0 := cpuTime()
		defer func() { b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			if _, err := encodeRows(ctx, reflect.ValueOf(rows), enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		c0 := cpuTime()
		defer func() { b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			for _, r := range encoded {
				if _, err := dec(r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
