package table

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// skippingSchema has a column of every kind that stats can skip on, three
// partition columns, a struct and a column whose type was widened.
func skippingSchema() *schema.StructType {
	p := schema.Primitive
	return schema.NewStruct(
		schema.NewField("p_str", p(schema.String), true),
		schema.NewField("p_int", p(schema.Integer), true),
		schema.NewField("p_date", p(schema.Date), true),
		schema.NewField("id", p(schema.Long), true),
		schema.NewField("f", p(schema.Float), true),
		schema.NewField("d", p(schema.Double), true),
		schema.NewField("s", p(schema.String), true),
		schema.NewField("ts", p(schema.Timestamp), true),
		schema.NewField("ntz", p(schema.TimestampNTZ), true),
		schema.NewField("dt", p(schema.Date), true),
		schema.NewField("dec", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		schema.NewField("b", p(schema.Boolean), true),
		schema.NewField("st", schema.NewStruct(schema.NewField("x", p(schema.Integer), true)), true),
		&schema.StructField{Name: "w", Type: p(schema.Long), Nullable: true, Metadata: map[string]any{
			"delta.typeChanges": []any{map[string]any{"fromType": "integer", "toType": "long"}}}},
	)
}

const skippingStats = `{"numRecords":10,` +
	`"minValues":{"id":10,"f":1.5,"d":-2.5,"s":"bbb","ts":"2024-01-01T00:00:00.123Z","ntz":"2024-01-01T00:00:00.123","dt":"2024-01-10","dec":12.34,"st":{"x":5},"w":100},` +
	`"maxValues":{"id":20,"f":9.5,"d":7.25,"s":"ddd","ts":"2024-01-02T00:00:00.456Z","ntz":"2024-01-02T00:00:00.456","dt":"2024-01-20","dec":99.99,"st":{"x":9},"w":200},` +
	`"nullCount":{"id":0,"f":0,"d":2,"s":1,"ts":0,"ntz":0,"dt":0,"dec":0,"b":10,"st":{"x":0},"w":0}}`

// TestFileSkipping checks the keep/prune/skip decision for one file with
// known partition values and stats against many predicates: "prune" means
// the partition values exclude the file, "skip" that its stats do.
func TestFileSkipping(t *testing.T) {
	ts := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	defaultPV := map[string]string{"p_str": "x", "p_int": "5", "p_date": "2024-03-01"}
	nullPV := map[string]string{"p_str": "", "p_int": "", "p_date": ""}
	cest := time.FixedZone("CEST", 2*3600)
	tests := []struct {
		name  string
		e     Expr
		want  string // keep, prune, skip
		stats string // "" = skippingStats; "none" = no stats
		pv    map[string]string
	}{
		// integers
		{"id = inside", Col("id").Eq(15), "keep", "", nil},
		{"id = min", Col("id").Eq(10), "keep", "", nil},
		{"id = max", Col("id").Eq(int32(20)), "keep", "", nil},
		{"id = below min", Col("id").Eq(9), "skip", "", nil},
		{"id = above max", Col("id").Eq(uint8(21)), "skip", "", nil},
		{"id < min", Col("id").Lt(10), "skip", "", nil},
		{"id <= min", Col("id").Le(10), "keep", "", nil},
		{"id > max", Col("id").Gt(20), "skip", "", nil},
		{"id >= max", Col("id").Ge(20), "keep", "", nil},
		{"id > max-1", Col("id").Gt(19), "keep", "", nil},
		{"id != inside", Col("id").Ne(15), "keep", "", nil},
		{"id != the only value", Col("id").Ne(10), "skip", `{"numRecords":3,"minValues":{"id":10},"maxValues":{"id":10},"nullCount":{"id":1}}`, nil},
		{"id IN outside", Col("id").In(1, 2, 30), "skip", "", nil},
		{"id IN one inside", Col("id").In(1, 15), "keep", "", nil},
		{"id NOT IN the only value", Not(Col("id").In(10)), "skip", `{"numRecords":3,"minValues":{"id":10},"maxValues":{"id":10},"nullCount":{"id":0}}`, nil},
		{"id NOT IN both values", Not(Col("id").In(10, 11)), "keep", `{"numRecords":3,"minValues":{"id":10},"maxValues":{"id":11},"nullCount":{"id":0}}`, nil},
		{"id IS NULL, no nulls", Col("id").IsNull(), "skip", "", nil},
		{"id IS NOT NULL", Col("id").IsNotNull(), "keep", "", nil},
		{"NOT id > 5 (id <= 5)", Not(Col("id").Gt(5)), "skip", "", nil},
		{"NOT (id >= 10 AND id <= 20)", Not(And(Col("id").Ge(10), Col("id").Le(20))), "skip", "", nil},
		{"NOT (id >= 11 AND id <= 20)", Not(And(Col("id").Ge(11), Col("id").Le(20))), "keep", "", nil},
		// all-null column
		{"b IS NULL, all null", Col("b").IsNull(), "keep", "", nil},
		{"b IS NOT NULL, all null", Col("b").IsNotNull(), "skip", "", nil},
		{"b = true, all null", Col("b").Eq(true), "skip", "", nil},
		{"NOT b = true, all null", Not(Col("b").Eq(true)), "skip", "", nil},
		{"d IS NULL, some null", Col("d").IsNull(), "keep", "", nil},
		// strings: min is a prefix, max may be a truncated prefix
		{"s = below min", Col("s").Eq("aaa"), "skip", "", nil},
		{"s = min", Col("s").Eq("bbb"), "keep", "", nil},
		{"s = above max", Col("s").Eq("dde"), "skip", "", nil},
		{"s = extends max", Col("s").Eq("dddz"), "keep", "", nil},
		{"s > max", Col("s").Gt("ddd"), "keep", "", nil}, // "ddd" may be a truncated "dddx"
		{"s > beyond max", Col("s").Gt("dde"), "skip", "", nil},
		{"s > prefix of max", Col("s").Gt("dd"), "keep", "", nil},
		{"s >= extends max", Col("s").Ge("ddda"), "keep", "", nil},
		{"s < min", Col("s").Lt("bbb"), "skip", "", nil},
		{"s < after min", Col("s").Lt("bbc"), "keep", "", nil},
		{"s != only value", Col("s").Ne("bbb"), "keep", `{"numRecords":1,"minValues":{"s":"bbb"},"maxValues":{"s":"bbb"},"nullCount":{"s":0}}`, nil},
		{"s = []byte", Col("s").Eq([]byte("ccc")), "keep", "", nil},
		{"s = Spark tie-breaker max", Col("s").Eq("ddd~~"), "keep", `{"numRecords":1,"minValues":{"s":"ddd"},"maxValues":{"s":"ddd\u007f"},"nullCount":{"s":0}}`, nil},
		// timestamps: bounds are cut to ms, widened by 1 ms
		{"ts = inside", Col("ts").Eq(ts("2024-01-01T12:00:00Z")), "keep", "", nil},
		{"ts > max ms (µs may follow)", Col("ts").Gt(ts("2024-01-02T00:00:00.456Z")), "keep", "", nil},
		{"ts > max µs", Col("ts").Gt(ts("2024-01-02T00:00:00.456999Z")), "keep", "", nil},
		{"ts > max + 1 ms", Col("ts").Gt(ts("2024-01-02T00:00:00.457Z")), "skip", "", nil},
		{"ts < min - 1 ms", Col("ts").Lt(ts("2024-01-01T00:00:00.122Z")), "skip", "", nil},
		{"ts < min", Col("ts").Lt(ts("2024-01-01T00:00:00.123Z")), "keep", "", nil},
		{"ts = instant in another zone", Col("ts").Eq(ts("2024-01-02T02:00:00.300+02:00")), "keep", "", nil},
		{"ts > instant in another zone", Col("ts").Gt(time.Date(2024, 1, 2, 2, 0, 1, 0, cest)), "skip", "", nil},
		{"ts = partition-style string", Col("ts").Eq("2024-01-01 10:00:00"), "keep", "", nil},
		{"ts stats with offset", Col("ts").Gt(ts("2024-01-02T00:00:00.500Z")), "skip", `{"numRecords":1,"minValues":{"ts":"2024-01-02T01:00:00.000+01:00"},"maxValues":{"ts":"2024-01-02T01:00:00.456+01:00"},"nullCount":{"ts":0}}`, nil},
		{"ntz = wall clock in any zone", Col("ntz").Eq(time.Date(2024, 1, 1, 12, 0, 0, 0, cest)), "keep", "", nil},
		{"ntz = wall clock after max", Col("ntz").Eq(time.Date(2024, 1, 2, 1, 0, 0, 0, cest)), "skip", "", nil},
		{"ntz < min", Col("ntz").Lt(time.Date(2023, 12, 31, 0, 0, 0, 0, time.UTC)), "skip", "", nil},
		// dates
		{"dt = before min", Col("dt").Eq(value.DateOf(time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC))), "skip", "", nil},
		{"dt >= max (string)", Col("dt").Ge("2024-01-20"), "keep", "", nil},
		{"dt > max (time.Time)", Col("dt").Gt(time.Date(2024, 1, 20, 23, 0, 0, 0, time.UTC)), "skip", "", nil},
		{"dt != only value", Col("dt").Ne("2024-01-10"), "skip", `{"numRecords":1,"minValues":{"dt":"2024-01-10"},"maxValues":{"dt":"2024-01-10"},"nullCount":{"dt":0}}`, nil},
		// decimals
		{"dec = min (string)", Col("dec").Eq("12.34"), "keep", "", nil},
		{"dec < min", Col("dec").Lt("12.34"), "skip", "", nil},
		{"dec < min, other scale", Col("dec").Lt(value.MustParseDecimal("12.3400")), "skip", "", nil},
		{"dec > max", Col("dec").Gt(value.NewDecimal(9999, 2)), "skip", "", nil},
		{"dec >= max", Col("dec").Ge(value.NewDecimal(9999, 2)), "keep", "", nil},
		{"dec = integer", Col("dec").Eq(50), "keep", "", nil},
		{"dec exponent stats", Col("dec").Lt("12.34"), "skip", `{"numRecords":1,"minValues":{"dec":1.234E1},"maxValues":{"dec":1.5E+1},"nullCount":{"dec":0}}`, nil},
		{"dec exponent stats max", Col("dec").Gt(15), "skip", `{"numRecords":1,"minValues":{"dec":1.234E1},"maxValues":{"dec":1.5E+1},"nullCount":{"dec":0}}`, nil},
		// floats: float columns compare as float32; NaN and infinities
		{"f = min", Col("f").Eq(1.5), "keep", "", nil},
		{"f < min", Col("f").Lt(float32(1.5)), "skip", "", nil},
		{"f > max", Col("f").Gt(9.5), "skip", "", nil},
		{"f >= 0.1 with min 0.1", Col("f").Ge(0.1), "keep", `{"numRecords":1,"minValues":{"f":0.1},"maxValues":{"f":0.1},"nullCount":{"f":0}}`, nil},
		{"f < 0.1 with min 0.1", Col("f").Lt(0.1), "skip", `{"numRecords":1,"minValues":{"f":0.1},"maxValues":{"f":0.1},"nullCount":{"f":0}}`, nil},
		{"f > big, max NaN", Col("f").Gt(100), "keep", `{"numRecords":2,"minValues":{"f":1.0},"maxValues":{"f":"NaN"},"nullCount":{"f":0}}`, nil},
		{"f < -1e30, min -Infinity", Col("f").Lt(-1e30), "keep", `{"numRecords":2,"minValues":{"f":"-Infinity"},"maxValues":{"f":2.0},"nullCount":{"f":0}}`, nil},
		{"f > 2, max Infinity", Col("f").Gt(2), "keep", `{"numRecords":2,"minValues":{"f":"-Infinity"},"maxValues":{"f":"Infinity"},"nullCount":{"f":0}}`, nil},
		{"f > 2, max 2", Col("f").Gt(2), "skip", `{"numRecords":2,"minValues":{"f":"-Infinity"},"maxValues":{"f":2.0},"nullCount":{"f":0}}`, nil},
		{"f != only value (NaN may hide)", Col("f").Ne(1.5), "keep", `{"numRecords":2,"minValues":{"f":1.5},"maxValues":{"f":1.5},"nullCount":{"f":0}}`, nil},
		{"d < min NaN", Col("d").Lt(-100), "keep", `{"numRecords":2,"minValues":{"d":"NaN"},"maxValues":{"d":"NaN"},"nullCount":{"d":0}}`, nil},
		{"d = NaN literal", Col("d").Eq(math.NaN()), "keep", "", nil},
		// nested struct field
		{"st.x = inside", Col("st").Field("x").Eq(7), "keep", "", nil},
		{"st.x = below min", Col("st").Field("x").Eq(4), "skip", "", nil},
		{"st IS NULL (struct null count is not a number)", Col("st").IsNull(), "keep", "", nil},
		// a widened column's stats are not used
		{"w below min, widened", Col("w").Eq(5), "keep", "", nil},
		// partition values are exact
		{"p_str = value", Col("p_str").Eq("x"), "keep", "", nil},
		{"p_str = other", Col("p_str").Eq("y"), "prune", "", nil},
		{"p_int > 4", Col("p_int").Gt(4), "keep", "", nil},
		{"p_int IN", Col("p_int").In(1, 2), "prune", "", nil},
		{"p_date = string", Col("p_date").Eq("2024-03-01"), "keep", "", nil},
		{"p_date < value", Col("P_DATE").Lt("2024-03-01"), "prune", "", nil},
		{"p_str IS NULL", Col("p_str").IsNull(), "prune", "", nil},
		{"null p_str IS NULL", Col("p_str").IsNull(), "keep", "", nullPV},
		{"null p_str = x", Col("p_str").Eq("x"), "prune", "", nullPV},
		{"null p_str: NOT p_str = y", Not(Col("p_str").Eq("y")), "prune", "", nullPV},
		{"null p_int != 1", Col("p_int").Ne(1), "prune", "", nullPV},
		{"absent partition key is null", Col("p_int").IsNull(), "keep", "", map[string]string{"p_str": "x"}},
		// combinations
		{"OR partition miss, stats hit", Or(Col("p_str").Eq("y"), Col("id").Eq(15)), "keep", "", nil},
		{"OR partition miss, stats miss", Or(Col("p_str").Eq("y"), Col("id").Eq(30)), "skip", "", nil},
		{"AND partition hit, stats miss", And(Col("p_str").Eq("x"), Col("id").Eq(30)), "skip", "", nil},
		{"AND partition miss, stats hit", And(Col("p_str").Eq("y"), Col("id").Eq(15)), "prune", "", nil},
		{"IN () is false", Col("id").In(), "prune", "", nil},
		{"NOT IN () is true", Not(Col("id").In()), "keep", "", nil},
		{"AND() is true", And(), "keep", "", nil},
		{"OR() is false", Or(), "prune", "", nil},
		// missing or unusable stats: may match
		{"no stats", Col("id").Eq(99), "keep", "none", nil},
		{"malformed stats", Col("id").Eq(99), "keep", `{"numRecords":`, nil},
		{"column absent from stats", Col("id").Eq(99), "keep", `{"numRecords":10}`, nil},
		{"min only", Col("id").Gt(99), "keep", `{"numRecords":10,"minValues":{"id":1}}`, nil},
		{"min only, below", Col("id").Lt(1), "skip", `{"numRecords":10,"minValues":{"id":1}}`, nil},
		{"stat of the wrong JSON type", Col("id").Eq(99), "keep", `{"numRecords":10,"minValues":{"id":"1"},"maxValues":{"id":"2"}}`, nil},
		{"empty file", Col("id").IsNull(), "skip", `{"numRecords":0}`, nil},
		// wide bounds (deletion vectors): null counts other than 0 and numRecords say nothing
		{"wide, some nulls: IS NULL", Col("s").IsNull(), "keep", `{"numRecords":10,"tightBounds":false,"nullCount":{"s":3}}`, nil},
		{"wide, no nulls: IS NULL", Col("s").IsNull(), "skip", `{"numRecords":10,"tightBounds":false,"nullCount":{"s":0}}`, nil},
		{"wide, all null: s = c", Col("s").Eq("c"), "skip", `{"numRecords":10,"tightBounds":false,"nullCount":{"s":10}}`, nil},
		{"wide bounds still bound", Col("id").Gt(20), "skip", `{"numRecords":10,"tightBounds":false,"minValues":{"id":10},"maxValues":{"id":20},"nullCount":{"id":0}}`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newScanFixture(t, skippingSchema(), []string{"p_str", "p_int", "p_date"}, nil, nil)
			stats := tc.stats
			switch stats {
			case "":
				stats = skippingStats
			case "none":
				stats = ""
			}
			pv := tc.pv
			if pv == nil {
				pv = defaultPV
			}
			f.commit(fakeAdd("f1.parquet", pv, stats))
			tbl := f.open()
			var st ScanStats
			files, err := tbl.Files(context.Background(), WithFilter(tc.e), WithScanStats(&st))
			if err != nil {
				t.Fatalf("Files(%s): %v", tc.e, err)
			}
			got := "keep"
			switch {
			case st.FilesPruned == 1:
				got = "prune"
			case st.FilesSkipped == 1:
				got = "skip"
			}
			if got != tc.want {
				t.Errorf("%s: %s, want %s (stats %+v)", tc.e, got, tc.want, st)
			}
			if (got == "keep") != (len(files) == 1) || st.FilesTotal != 1 || st.FilesPlanned != len(files) {
				t.Errorf("%s: %d files, stats %+v", tc.e, len(files), st)
			}
		})
	}
}

// TestFileSkippingColumnMapping checks that stats and partition values are
// looked up by physical names under column mapping, while predicates name
// logical columns.
func TestFileSkippingColumnMapping(t *testing.T) {
	meta := func(id int, phys string) map[string]any {
		return map[string]any{schema.MetaColumnMappingID: float64(id), schema.MetaColumnMappingName: phys}
	}
	sch := schema.NewStruct(
		&schema.StructField{Name: "part", Type: schema.Primitive(schema.String), Nullable: true, Metadata: meta(1, "col-p")},
		&schema.StructField{Name: "id", Type: schema.Primitive(schema.Long), Nullable: true, Metadata: meta(2, "col-i")},
		&schema.StructField{Name: "nest", Type: schema.NewStruct(
			&schema.StructField{Name: "x", Type: schema.Primitive(schema.Integer), Nullable: true, Metadata: meta(4, "col-x")},
		), Nullable: true, Metadata: meta(3, "col-n")},
	)
	physical := `{"numRecords":5,"minValues":{"col-i":10,"col-n":{"col-x":1}},"maxValues":{"col-i":20,"col-n":{"col-x":2}},"nullCount":{"col-i":0}}`
	logical := `{"numRecords":5,"minValues":{"id":10},"maxValues":{"id":20},"nullCount":{"id":0}}`
	tests := []struct {
		name  string
		e     Expr
		stats string
		pv    map[string]string
		want  string
	}{
		{"physical stats used", Col("id").Eq(30), physical, map[string]string{"col-p": "a"}, "skip"},
		{"physical stats keep", Col("id").Eq(15), physical, map[string]string{"col-p": "a"}, "keep"},
		{"nested physical", Col("nest").Field("x").Gt(2), physical, map[string]string{"col-p": "a"}, "skip"},
		{"logical stats keys are not stats", Col("id").Eq(30), logical, map[string]string{"col-p": "a"}, "keep"},
		{"physical partition key", Col("part").Eq("b"), physical, map[string]string{"col-p": "a"}, "prune"},
		{"physical partition key hit", Col("part").Eq("a"), physical, map[string]string{"col-p": "a"}, "keep"},
	}
	for _, mode := range []string{"name", "id"} {
		for _, tc := range tests {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				f := newScanFixture(t, sch, []string{"part"}, map[string]string{txlog.PropColumnMappingMode: mode}, nil)
				f.commit(fakeAdd("f1.parquet", tc.pv, tc.stats))
				var st ScanStats
				if _, err := f.open().Files(context.Background(), WithFilter(tc.e), WithScanStats(&st)); err != nil {
					t.Fatal(err)
				}
				got := "keep"
				if st.FilesPruned == 1 {
					got = "prune"
				} else if st.FilesSkipped == 1 {
					got = "skip"
				}
				if got != tc.want {
					t.Errorf("%s: %s, want %s", tc.e, got, tc.want)
				}
			})
		}
	}
}

// TestFilesErrors checks that bad filters and bad partition values fail
// planning with errors that name the problem.
func TestFilesErrors(t *testing.T) {
	f := newScanFixture(t, skippingSchema(), []string{"p_str", "p_int", "p_date"}, nil, nil)
	f.commit(fakeAdd("p_int=abc/f1.parquet", map[string]string{"p_str": "x", "p_int": "abc", "p_date": "2024-03-01"}, ""))
	tbl := f.open()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []ScanOption
		is   error
		msg  string
	}{
		{"bad partition value", []ScanOption{WithFilter(Col("p_int").Eq(1))}, nil, `partition value "abc" of column p_int`},
		{"bad partition value names the file", nil, nil, "p_int=abc/f1.parquet"},
		{"unknown column", []ScanOption{WithFilter(Col("nope").Eq(1))}, ErrInvalidArgument, `no column "nope"`},
		{"unknown projected column", []ScanOption{WithColumns("id", "nope")}, ErrInvalidArgument, `no column "nope"`},
		{"repeated projected column", []ScanOption{WithColumns("id", "ID")}, ErrInvalidArgument, "projected twice"},
		{"wrong Go type", []ScanOption{WithFilter(Col("id").Eq("7"))}, ErrInvalidArgument, "does not fit column id of type long"},
		{"float for an integer column", []ScanOption{WithFilter(Col("id").Gt(2.5))}, ErrInvalidArgument, "does not fit column id"},
		{"nil value", []ScanOption{WithFilter(Col("id").Eq(nil))}, ErrInvalidArgument, "use IsNull"},
		{"nil value in IN", []ScanOption{WithFilter(Col("id").In(1, nil))}, ErrInvalidArgument, "use IsNull"},
		{"nil predicate", []ScanOption{WithFilter(And(Col("id").Eq(1), nil))}, ErrInvalidArgument, "nil predicate"},
		{"comparison on a struct", []ScanOption{WithFilter(Col("st").Eq(1))}, ErrInvalidArgument, "only IsNull and IsNotNull"},
		{"field of a non-struct", []ScanOption{WithFilter(Col("id").Field("x").Eq(1))}, ErrInvalidArgument, "has no field"},
		{"unknown struct field", []ScanOption{WithFilter(Col("st").Field("y").Eq(1))}, ErrInvalidArgument, `no column "y"`},
		{"bad date string", []ScanOption{WithFilter(Col("dt").Eq("2024-13-01"))}, ErrInvalidArgument, "does not fit column dt"},
		{"bad decimal string", []ScanOption{WithFilter(Col("dec").Eq("1e5"))}, ErrInvalidArgument, "does not fit column dec"},
		{"uint64 overflow", []ScanOption{WithFilter(Col("id").Eq(uint64(math.MaxUint64)))}, ErrInvalidArgument, "does not fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tbl.Files(ctx, tc.opts...)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not wrap %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "version 0") {
				t.Errorf("error %q does not say %q and the version", err, tc.msg)
			}
			// Scan yields the same error once.
			n := 0
			for r, err2 := range tbl.Scan(ctx, tc.opts...) {
				n++
				if r != nil || err2 == nil || err2.Error() != err.Error() {
					t.Errorf("Scan yielded %v, %v; want nil, %v", r, err2, err)
				}
			}
			if n != 1 {
				t.Errorf("Scan yielded %d times, want 1", n)
			}
		})
	}
}
