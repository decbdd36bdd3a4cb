package txlog

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
)

// decodeWithout decodes checkpoint data as readCheckpointParquet does, but
// with the listed add columns ("stats", "partitionValues") ignored, as if
// the writer had not written them.
func decodeWithout(t *testing.T, data []byte, ignore ...string) []Action {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	plans, err := planColumns(pf.Schema())
	if err != nil {
		t.Fatal(err)
	}
	for i, path := range pf.Schema().Columns() {
		if len(path) >= 2 && path[0] == "add" && slices.Contains(ignore, path[1]) {
			plans[i].set = nil
		}
	}
	if err := resolveParsedTimestamps(pf.RowGroups(), plans); err != nil {
		t.Fatal(err)
	}
	var out []Action
	for _, g := range pf.RowGroups() {
		if err := decodeRowGroupColumns(g, plans, func(a *Action) { out = append(out, *a) }, nil); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v in %s", err, s)
	}
	return v
}

// The stats a delta-rs checkpoint holds twice, as JSON and as stats_parsed
// (nested struct, timestamps, a date partition column), read the same from
// either: with the JSON column ignored, the JSON rebuilt from stats_parsed
// and partitionValues_parsed has the same values.
func TestStatsParsedMatchesJSON(t *testing.T) {
	dir := filepath.Join(testsupport.CorpusDir(t), "deltars__checkpoints_vacuumed", "_delta_log")
	for _, name := range []string{"00000000000000000005.checkpoint.parquet", "00000000000000000010.checkpoint.parquet"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			testsupport.Absent(t, "corpus file: %v", err)
		}
		want := decodeWithout(t, data)
		got := decodeWithout(t, data, "stats", "partitionValues")
		if len(got) != len(want) {
			t.Fatalf("%s: %d actions, want %d", name, len(got), len(want))
		}
		adds := 0
		for i := range want {
			if want[i].Add == nil {
				continue
			}
			adds++
			w, g := want[i].Add, got[i].Add
			if w.Stats == "" {
				t.Fatalf("%s: add %s has no JSON stats to compare with", name, w.Path)
			}
			if !reflect.DeepEqual(jsonValue(t, g.Stats), jsonValue(t, w.Stats)) {
				t.Errorf("%s: add %s:\nstats_parsed %s\njson         %s", name, w.Path, g.Stats, w.Stats)
			}
			if !reflect.DeepEqual(g.PartitionValues, w.PartitionValues) {
				t.Errorf("%s: add %s: partitionValues_parsed %v, json %v", name, w.Path, g.PartitionValues, w.PartitionValues)
			}
		}
		if adds == 0 {
			t.Fatalf("%s: no add actions", name)
		}
	}
}

// Each stats_parsed leaf type becomes the JSON literal Spark writes in
// stats; values JSON cannot hold are left out.
func TestParsedLeafLiterals(t *testing.T) {
	us := time.Date(2024, 3, 1, 12, 30, 45, 123_456_000, time.UTC).UnixMicro()
	int96 := func(t time.Time) parquet.Value {
		days := t.Unix()/86400 + 2440588
		nanos := uint64(t.Sub(time.Unix(t.Unix()/86400*86400, 0)).Nanoseconds())
		return parquet.Int96Value(deprecated.Int96{uint32(nanos), uint32(nanos >> 32), uint32(days)})
	}
	tests := []struct {
		name   string
		leaf   parsedLeaf
		v      parquet.Value
		want   string // "" = left out
		wantPV string // partition value form, when different from the literal
	}{
		{"int32", parsedLeaf{kind: pkInt}, parquet.Int32Value(-7), "-7", ""},
		{"int64", parsedLeaf{kind: pkInt}, parquet.Int64Value(1 << 40), "1099511627776", ""},
		{"double", parsedLeaf{kind: pkFloat}, parquet.DoubleValue(2.5), "2.5", ""},
		{"float", parsedLeaf{kind: pkFloat}, parquet.FloatValue(0.1), "0.1", ""},
		{"NaN left out", parsedLeaf{kind: pkFloat}, parquet.DoubleValue(math.NaN()), "", ""},
		{"infinity left out", parsedLeaf{kind: pkFloat}, parquet.DoubleValue(math.Inf(1)), "", ""},
		{"bool", parsedLeaf{kind: pkBool}, parquet.BooleanValue(true), "true", ""},
		{"string escaped", parsedLeaf{kind: pkString}, parquet.ByteArrayValue([]byte("a\"b\\c\n東")), `"a\"b\\c\u000a東"`, "a\"b\\c\n東"},
		{"invalid UTF-8 left out", parsedLeaf{kind: pkString}, parquet.ByteArrayValue([]byte{0xff, 'a'}), "", ""},
		{"date", parsedLeaf{kind: pkDate}, parquet.Int32Value(19783), `"2024-03-01"`, "2024-03-01"},
		{"date before 1970", parsedLeaf{kind: pkDate}, parquet.Int32Value(-1), `"1969-12-31"`, "1969-12-31"},
		{"timestamp µs", parsedLeaf{kind: pkTimestamp, unit: time.Microsecond, utc: true}, parquet.Int64Value(us),
			`"2024-03-01T12:30:45.123Z"`, "2024-03-01 12:30:45.123456"},
		{"timestamp ms", parsedLeaf{kind: pkTimestamp, unit: time.Millisecond, utc: true}, parquet.Int64Value(us / 1000),
			`"2024-03-01T12:30:45.123Z"`, "2024-03-01 12:30:45.123000"},
		{"timestamp ns", parsedLeaf{kind: pkTimestamp, unit: time.Nanosecond, utc: true}, parquet.Int64Value(us*1000 + 999),
			`"2024-03-01T12:30:45.123Z"`, "2024-03-01 12:30:45.123456"},
		{"timestamp before 1970 floors", parsedLeaf{kind: pkTimestamp, unit: time.Microsecond, utc: true}, parquet.Int64Value(-1),
			`"1969-12-31T23:59:59.999Z"`, "1969-12-31 23:59:59.999999"},
		{"timestamp_ntz", parsedLeaf{kind: pkTimestamp, unit: time.Microsecond}, parquet.Int64Value(us),
			`"2024-03-01T12:30:45.123"`, "2024-03-01 12:30:45.123456"},
		{"whole second partition", parsedLeaf{kind: pkTimestamp, unit: time.Microsecond, utc: true}, parquet.Int64Value(1_000_000),
			`"1970-01-01T00:00:01.000Z"`, "1970-01-01 00:00:01"},
		{"INT96", parsedLeaf{kind: pkInt96, utc: true}, int96(time.UnixMicro(us).UTC()), `"2024-03-01T12:30:45.123Z"`, "2024-03-01 12:30:45.123456"},
		{"INT96 out of range", parsedLeaf{kind: pkInt96, utc: true}, parquet.Int96Value(deprecated.Int96{0, 0, 1 << 31}), "", ""},
		{"decimal int64", parsedLeaf{kind: pkDecimal, scale: 2}, parquet.Int64Value(-1234), "-12.34", ""},
		{"decimal int32 scale 0", parsedLeaf{kind: pkDecimal}, parquet.Int32Value(1234), "1234", ""},
		{"decimal fixed bytes", parsedLeaf{kind: pkDecimal, scale: 3}, parquet.FixedLenByteArrayValue([]byte{0xff, 0xff, 0xfe}), "-0.002", ""},
		{"decimal 16 bytes", parsedLeaf{kind: pkDecimal, scale: 1},
			parquet.FixedLenByteArrayValue([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5}), "1844674407370955162.1", ""}, // (2^64+5)/10,
		{"no literal", parsedLeaf{kind: pkSkip}, parquet.Int64Value(1), "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.leaf.jsonLiteral(tc.v)
			if !ok {
				got = ""
			}
			if got != tc.want {
				t.Errorf("literal %q, want %q", got, tc.want)
			}
			wantPV := tc.wantPV
			if wantPV == "" {
				wantPV = tc.want
			}
			pv, ok := tc.leaf.text(tc.v, true)
			if !ok {
				pv = ""
			}
			if pv != wantPV {
				t.Errorf("partition value %q, want %q", pv, wantPV)
			}
		})
	}
}

// statsJSON nests values by their path, leaves out structs without values
// and keeps the schema order.
func TestStatsJSONShape(t *testing.T) {
	leaf := func(path ...string) *parsedLeaf { return &parsedLeaf{path: path, kind: pkInt} }
	num, a, bx, by, c := leaf("numRecords"), leaf("minValues", "a"), leaf("minValues", "b", "x"), leaf("minValues", "b", "y"), leaf("nullCount", "a")
	v := func(l *parsedLeaf, n int64) parsedVal { return parsedVal{l, parquet.Int64Value(n)} }
	for _, tc := range []struct {
		vals []parsedVal
		want string
	}{
		{nil, `{}`},
		{[]parsedVal{v(num, 3)}, `{"numRecords":3}`},
		{[]parsedVal{v(num, 3), v(a, 1), v(bx, 2), v(by, 4), v(c, 0)},
			`{"numRecords":3,"minValues":{"a":1,"b":{"x":2,"y":4}},"nullCount":{"a":0}}`},
		{[]parsedVal{v(num, 3), v(by, 4), v(c, 0)}, `{"numRecords":3,"minValues":{"b":{"y":4}},"nullCount":{"a":0}}`},
		{[]parsedVal{v(bx, 2), v(a, 1)}, `{"minValues":{"b":{"x":2},"a":1}}`},
	} {
		got := string(statsJSON(nil, tc.vals))
		if got != tc.want {
			t.Errorf("statsJSON = %s, want %s", got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s is not valid JSON", got)
		}
	}
}

// Stats paths use physical names under column mapping: the field type of a
// timestamp leaf is found by them (and by logical names without mapping).
func TestFieldTypeByPhysicalPath(t *testing.T) {
	st, err := schema.Parse(`{"type":"struct","fields":[` +
		`{"name":"ts","type":"timestamp","nullable":true,"metadata":{"delta.columnMapping.physicalName":"col-1"}},` +
		`{"name":"nest","type":{"type":"struct","fields":[{"name":"ntz","type":"timestamp_ntz","nullable":true,` +
		`"metadata":{"delta.columnMapping.physicalName":"col-3"}}]},"nullable":true,"metadata":{"delta.columnMapping.physicalName":"col-2"}},` +
		`{"name":"plain","type":"timestamp","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path []string
		want string
	}{
		{[]string{"col-1"}, "timestamp"},
		{[]string{"col-2", "col-3"}, "timestamp_ntz"},
		{[]string{"plain"}, "timestamp"},
		{[]string{"col-2", "nope"}, ""},
		{[]string{"col-1", "x"}, ""},
	} {
		got := ""
		if typ := fieldTypeByPhysicalPath(st, tc.path); typ != nil {
			got = typ.String()
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.path, got, tc.want)
		}
	}
}
