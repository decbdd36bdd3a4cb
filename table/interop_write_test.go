package table

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/expr"
	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/testenv"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Interop, write direction: tables written by deltakit are read by delta-rs
// (Python deltalake) and every data file by pyarrow, on the local
// filesystem and on MinIO. The interop venv comes from
// scripts/install-interop.sh ($DELTAKIT_VENV, default <repo>/.venv).

// interopReadScript reads a Delta table with delta-rs and prints its rows
// normalized to JSON: integers as strings, floats as numbers (non-finite as
// "NaN"/"Infinity"/"-Infinity"), timestamps as ISO strings in UTC with
// microseconds and "Z" (timestamp_ntz without "Z"), dates "YYYY-MM-DD",
// decimals as plain strings at the column scale, binary as hex, structs as
// objects, arrays as lists, maps as lists of [key, value]. It also opens
// every data file with pyarrow.parquet, recording any warning or error, and
// reports delta-rs's view of the add actions.
const interopReadScript = interopNormPy + `
import datetime, decimal, json, math, sys, urllib.parse, warnings
import deltalake, pyarrow as pa, pyarrow.parquet as pq, pyarrow.fs as pafs

args = json.loads(sys.argv[1])
opts = args.get("storage_options") or None

out = {"tables": {}}
for name, uri in args["tables"].items():
    res = {}
    try:
        dt = deltalake.DeltaTable(uri, storage_options=opts)
        res["version"] = dt.version()
        tbl = dt.to_pyarrow_table()
        res["columns"] = tbl.column_names
        res["rows"] = [json.dumps(norm(r), sort_keys=True) for r in tbl.to_pylist()]
        adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
        res["num_records"] = str(sum(a["num_records"] for a in adds))
        res["files_with_min"] = sum(1 for a in adds if any(k.startswith("min.") and a[k] is not None for k in a))
        res["nfiles"] = len(adds)
        if "old_version" in args:
            old = deltalake.DeltaTable(uri, storage_options=opts, version=args["old_version"])
            res["old_rows"] = old.to_pyarrow_table().num_rows
        fs = None
        if uri.startswith("s3://"):
            fs = pafs.S3FileSystem(access_key=opts["AWS_ACCESS_KEY_ID"], secret_key=opts["AWS_SECRET_ACCESS_KEY"],
                                   region=opts["AWS_REGION"], endpoint_override=opts["AWS_ENDPOINT_URL"], scheme="http")
        problems = []
        nrows = 0
        # file_uris() percent-encodes the table root but not the decoded
        # relative path; build the paths from add.path (decoded once).
        for a in adds:
            rel = urllib.parse.unquote(a["path"])
            f = uri.rstrip("/") + "/" + rel
            path = f[len("s3://"):] if fs is not None else f
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                try:
                    t = pq.read_table(path, filesystem=fs)
                    nrows += t.num_rows
                    md = pq.ParquetFile(path, filesystem=fs).metadata if fs is None else None
                    if md is not None and md.num_rows != t.num_rows:
                        problems.append(f"{f}: footer says {md.num_rows} rows, read {t.num_rows}")
                except Exception as e:
                    problems.append(f"{f}: {type(e).__name__}: {e}")
            for x in w:
                problems.append(f"{f}: warning: {x.message}")
        res["pyarrow_rows"] = str(nrows)
        res["problems"] = problems
    except Exception as e:
        import traceback
        res["error"] = traceback.format_exc()
    out["tables"][name] = res
print(json.dumps(out))
`

// interopNormPy is the Python norm(v) that interop scripts apply to the
// values delta-rs and Spark return (see interopReadScript).
const interopNormPy = `
import datetime, decimal, json, math
` + "\n" + `
def norm(v):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v): return "NaN"
        if math.isinf(v): return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            return v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        return v.isoformat(timespec="microseconds")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    return "UNKNOWN:" + repr(type(v))

`

// interopValue normalizes a parquetio value of Delta type t the way
// interopReadScript normalizes what delta-rs returns.
func interopValue(t schema.Type, v any) any {
	if v == nil {
		return nil
	}
	switch t := t.(type) {
	case *schema.DecimalType:
		d := v.(value.Decimal)
		r, _ := d.Rescale(int32(t.Scale))
		return r.String()
	case *schema.StructType:
		row := v.(value.Row)
		m := map[string]any{}
		for i, f := range t.Fields {
			m[f.Name] = interopValue(f.Type, row[i])
		}
		return m
	case *schema.ArrayType:
		list := v.([]any)
		out := make([]any, len(list))
		for i, e := range list {
			out[i] = interopValue(t.ElementType, e)
		}
		return out
	case *schema.MapType:
		entries := v.([]value.MapEntry)
		out := make([]any, len(entries))
		for i, e := range entries {
			out[i] = []any{interopValue(t.KeyType, e.Key), interopValue(t.ValueType, e.Value)}
		}
		return out
	case *schema.PrimitiveType:
		switch t.Name {
		case schema.Long, schema.Integer, schema.Short, schema.Byte:
			n, _ := value.ToInt64(v)
			return strconv.FormatInt(n, 10)
		case schema.Float, schema.Double:
			f, _ := value.ToFloat64(v)
			switch {
			case math.IsNaN(f):
				return "NaN"
			case math.IsInf(f, 1):
				return "Infinity"
			case math.IsInf(f, -1):
				return "-Infinity"
			}
			return f
		case schema.Binary:
			return hex.EncodeToString(v.([]byte))
		case schema.Date:
			switch d := v.(type) {
			case value.Date:
				return d.String()
			case time.Time:
				return value.DateOf(d).String()
			}
		case schema.Timestamp:
			return v.(time.Time).UTC().Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000") + "Z"
		case schema.TimestampNTZ:
			return expr.WallClockUTC(v.(time.Time)).Truncate(time.Microsecond).Format("2006-01-02T15:04:05.000000")
		case schema.String:
			if s, ok := v.(string); ok && s == "" {
				return s
			}
		}
	}
	return v
}

// interopRow is the canonical JSON of one row.
func interopRow(t *testing.T, sch *schema.StructType, row value.Row) string {
	m := map[string]any{}
	for i, f := range sch.Fields {
		m[f.Name] = interopValue(f.Type, row[i])
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// canonicalJSON re-encodes a JSON document so both sides format alike.
func canonicalJSON(t *testing.T, s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// interopTable is one table to write and its expected content.
type interopTable struct {
	name      string
	tbl       *Table
	want      []value.Row // rows in schema order, partition "" as null
	oldRows   int
	wantFiles int
	// anyCheckpoint: the background checkpointer may have coalesced the
	// checkpoint due at version 2 into a later one (group commit reaches
	// several due versions at once); some checkpoint must exist.
	anyCheckpoint bool
}

func interopTypesSchema() *schema.StructType {
	return schema.NewStruct(
		field("id", prim(schema.Long), false),
		field("i", prim(schema.Integer), true),
		field("s", prim(schema.Short), true),
		field("b", prim(schema.Byte), true),
		field("f", prim(schema.Float), true),
		field("d", prim(schema.Double), true),
		field("ok", prim(schema.Boolean), true),
		field("str", prim(schema.String), true),
		field("bin", prim(schema.Binary), true),
		field("day", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("d52", &schema.DecimalType{Precision: 5, Scale: 2}, true),
		field("d204", &schema.DecimalType{Precision: 20, Scale: 4}, true),
		field("d3810", &schema.DecimalType{Precision: 38, Scale: 10}, true),
		field("st", schema.NewStruct(
			field("x", prim(schema.Long), true),
			field("y", prim(schema.String), true),
			field("inner", schema.NewStruct(field("z", prim(schema.Double), true)), true),
		), true),
		field("arr", &schema.ArrayType{ElementType: prim(schema.Long), ContainsNull: true}, true),
		field("arr_st", &schema.ArrayType{ElementType: schema.NewStruct(field("k", prim(schema.String), true)), ContainsNull: true}, true),
		field("m", &schema.MapType{KeyType: prim(schema.String), ValueType: prim(schema.Long), ValueContainsNull: true}, true),
		field("m_arr", &schema.MapType{KeyType: prim(schema.Integer), ValueType: &schema.ArrayType{ElementType: prim(schema.String), ContainsNull: true}, ValueContainsNull: true}, true),
	)
}

// interopTypesRows returns n rows of every type, with nulls and edge values.
func interopTypesRows(start, n int) []value.Row {
	base := time.Date(2024, 2, 29, 23, 59, 58, 123456000, time.UTC)
	var rows []value.Row
	for k := start; k < start+n; k++ {
		i := int64(k)
		if k%5 == 4 {
			rows = append(rows, value.Row{i, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil})
			continue
		}
		ts := base.Add(time.Duration(k) * 36 * time.Hour)
		f := float32(k) / 4
		d := float64(k) * math.Pi
		switch k % 7 {
		case 1:
			f, d = float32(math.Inf(-1)), math.NaN()
		case 2:
			f, d = -0.5, math.Inf(1)
		}
		rows = append(rows, value.Row{
			i, int32(k*1000 - 1<<31 + 5), int16(k - 300), int8(k%256 - 128), f, d, k%2 == 0,
			fmt.Sprintf("s-%d-ünïcödé-日本-%s", k, strings.Repeat("x", k%40)), []byte{byte(k), 0, 0xff},
			value.DateOf(ts), ts, time.Date(1900+k, 1, 2, 3, 4, 5, 6000, time.FixedZone("Z+5", 5*3600)),
			value.NewDecimal(int64(k*101-99999), 2), value.NewDecimal(int64(k)*1234567890123, 4),
			value.MustParseDecimal(fmt.Sprintf("%s%d%027d.%010d", []string{"", "-"}[k%2], k%9+1, k*7919, k)),
			value.Row{i * 10, fmt.Sprintf("y%d", k), value.Row{float64(k) / 3}},
			[]any{i, nil, -i},
			[]any{value.Row{"a"}, nil, value.Row{nil}},
			[]value.MapEntry{{Key: "one", Value: i}, {Key: "null", Value: nil}},
			[]value.MapEntry{{Key: int32(k), Value: []any{"v", nil}}},
		})
	}
	return rows
}

func interopPartSchema() *schema.StructType {
	return schema.NewStruct(
		field("p", prim(schema.String), true),
		field("day", prim(schema.Date), true),
		field("ts", prim(schema.Timestamp), true),
		field("ntz", prim(schema.TimestampNTZ), true),
		field("n", prim(schema.Integer), true),
		field("dec", &schema.DecimalType{Precision: 10, Scale: 2}, true),
		field("flag", prim(schema.Boolean), true),
		field("v", prim(schema.Long), false),
		field("note", prim(schema.String), true),
	)
}

var interopPartValues = []any{"plain", "a b", "x/y", "50%", "k=v", "ünï©ødé 日本", "a:b?c#d*e", "tab\there", nil, ""}

func interopPartRows(start int) []value.Row {
	var rows []value.Row
	for i, p := range interopPartValues {
		k := start + i
		var day, ts, ntz, n, dec, flag any
		if k%4 != 3 {
			day = value.DateOf(time.Date(2024, 1, 1+k%3, 0, 0, 0, 0, time.UTC))
			ts = time.Date(2024, 1, 1, 10, k%2, 30, 123456000, time.UTC)
			ntz = time.Date(2023, 12, 31, 23, 59, k%2, 500000000, time.UTC)
			n = int32(k % 3)
			// Positive only: delta-rs 1.6.6 formats a negative decimal
			// partition value "-12.34" as "-12.-34" and fails (it fails on
			// tables it writes itself too); deltakit writes "-12.34".
			dec = value.NewDecimal(int64(k%3)*617+5, 2)
			flag = k%2 == 0
		}
		rows = append(rows, value.Row{p, day, ts, ntz, n, dec, flag, int64(k), fmt.Sprintf("note %d", k)})
	}
	return rows
}

// emptyAsNull turns "" partition strings into nil, as they read back.
func emptyAsNull(rows []value.Row, col int) []value.Row {
	out := make([]value.Row, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
		if out[i][col] == "" {
			out[i][col] = nil
		}
	}
	return out
}

// writeInteropTables writes the interop tables through newStore and
// returns them with the expected rows.
func writeInteropTables(t *testing.T, newStore func(name string) objectstore.Store) []interopTable {
	ctx := context.Background()
	props := map[string]string{"delta.checkpointInterval": "2"}
	var out []interopTable

	// 1. Every type, several commits, an overwrite, checkpoints at 2 and 4.
	typesTbl, err := Create(ctx, "", interopTypesSchema(), WithStore(newStore("types")), WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	cur := typesTbl
	var want []value.Row
	for v := range 4 {
		rows := interopTypesRows(v*20, 20)
		if v == 2 {
			if cur, err = cur.OverwriteRows(ctx, rows); err != nil {
				t.Fatal(err)
			}
			want = rows
			continue
		}
		if cur, err = cur.AppendRows(ctx, rows); err != nil {
			t.Fatal(err)
		}
		want = append(want, rows...)
	}
	out = append(out, interopTable{name: "types", tbl: cur, want: want, oldRows: 20, wantFiles: 2})

	// 2. Partitions with special characters, null and empty values, dates
	// and timestamps; a replaceWhere overwrite; a rolled partition.
	partTbl, err := Create(ctx, "", interopPartSchema(), WithStore(newStore("parts")), WithProperties(props),
		WithPartitionColumns("p", "day", "ts", "ntz", "n", "dec", "flag"))
	if err != nil {
		t.Fatal(err)
	}
	cur = partTbl
	want = nil
	for v := range 3 {
		rows := interopPartRows(v * 10)
		if cur, err = cur.AppendRows(ctx, rows); err != nil {
			t.Fatal(err)
		}
		want = append(want, emptyAsNull(rows, 0)...)
	}
	repl := []value.Row{{"x/y", nil, nil, nil, nil, nil, nil, int64(1000), "replaced"}}
	if cur, err = cur.OverwriteRows(ctx, repl, WithReplaceWhere(Col("p").Eq("x/y"))); err != nil {
		t.Fatal(err)
	}
	kept := want[:0:0]
	for _, r := range want {
		if r[0] != "x/y" {
			kept = append(kept, r)
		}
	}
	want = append(kept, repl...)
	out = append(out, interopTable{name: "parts", tbl: cur, want: want, oldRows: 10, wantFiles: -1})

	// 3. Typed rows from Go structs, rolled into several files.
	type Flight struct {
		Date        time.Time      `delta:"date,timestamp_ntz"`
		Delay       int64          `delta:"delay,notnull"`
		Distance    *int64         `delta:"distance"`
		Origin      string         `delta:"origin"`
		Destination string         `delta:"destination"`
		Fare        *value.Decimal `delta:"fare,decimal(20,4)"`
		Legs        []string       `delta:"legs"`
	}
	sch, err := SchemaOf[Flight]()
	if err != nil {
		t.Fatal(err)
	}
	flights, err := Create(ctx, "", sch, WithStore(newStore("flights")), WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	var frows []Flight
	for i := range 5000 {
		var dist *int64
		if i%3 != 0 {
			d := int64(i * 7)
			dist = &d
		}
		fare := value.NewDecimal(int64(i)*12345, 4)
		frows = append(frows, Flight{Date: time.Date(2024, 6, 1, 0, i%60, 0, 0, time.UTC), Delay: int64(i%90 - 10),
			Distance: dist, Origin: []string{"AMS", "SFO", "NRT"}[i%3], Destination: "JFK", Fare: &fare,
			Legs: []string{"a", fmt.Sprint(i)}})
	}
	cur = flights
	for c := range 2 {
		if cur, err = Append(ctx, cur, frows[c*2500:(c+1)*2500], WithTargetFileSize(16<<10)); err != nil {
			t.Fatal(err)
		}
	}
	want = nil
	for _, f := range frows {
		var dist any
		if f.Distance != nil {
			dist = *f.Distance
		}
		want = append(want, value.Row{f.Date, f.Delay, dist, f.Origin, f.Destination, *f.Fare, []any{f.Legs[0], f.Legs[1]}})
	}
	out = append(out, interopTable{name: "flights", tbl: cur, want: want, oldRows: 2500, wantFiles: -1})

	// 4. Typed rows of primitive fields: Append's columnar path.
	type Reading struct {
		At      int64     `delta:"at,timestamp_ntz"` // microseconds
		Seen    time.Time `delta:"seen"`
		Day     time.Time `delta:"day,date"`
		Sensor  string    `delta:"sensor,notnull"`
		Value   *float64  `delta:"value"`
		Gain    float32   `delta:"gain"`
		Count   *int64    `delta:"count"`
		Small   int16     `delta:"small"`
		Tiny    int8      `delta:"tiny"`
		Mid     int32     `delta:"mid"`
		OK      bool      `delta:"ok"`
		Payload []byte    `delta:"payload"`
		Note    *string   `delta:"note"`
	}
	rsch, err := SchemaOf[Reading]()
	if err != nil {
		t.Fatal(err)
	}
	readings, err := Create(ctx, "", rsch, WithStore(newStore("readings")), WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	zone := time.FixedZone("Z-3", -3*3600)
	var rrows []Reading
	for i := range 4000 {
		at := time.Date(2024, 2, 29, 23, 0, 0, 0, time.UTC).Add(time.Duration(i) * 1234567 * time.Microsecond)
		r := Reading{At: at.UnixMicro(), Seen: at.In(zone), Day: at.In(zone), Sensor: fmt.Sprintf("sensor-ü-%d", i%17),
			Gain: float32(i) / 8, Small: int16(i - 2000), Tiny: int8(i), Mid: int32(i) * 1e5, OK: i%3 == 0}
		if i%4 != 0 {
			v, c, n := float64(i)*math.Pi, int64(i)<<40, strings.Repeat("日本", i%20)
			r.Value, r.Count, r.Note, r.Payload = &v, &c, &n, []byte{byte(i), 0, 0xff}
		}
		rrows = append(rrows, r)
	}
	if !columnarTaken(t, rsch, rrows, false) {
		t.Fatal("Append of Reading does not take the columnar path")
	}
	cur = readings
	for c := range 2 {
		if cur, err = Append(ctx, cur, rrows[c*2000:(c+1)*2000], WithTargetFileSize(16<<10)); err != nil {
			t.Fatal(err)
		}
	}
	info, err := planOf(reflect.TypeFor[Reading]())
	if err != nil {
		t.Fatal(err)
	}
	enc, err := bindStructEncoder(info, rsch, "")
	if err != nil {
		t.Fatal(err)
	}
	if want, err = encodeRows(context.Background(), reflect.ValueOf(rrows), enc); err != nil {
		t.Fatal(err)
	}
	out = append(out, interopTable{name: "readings", tbl: cur, want: want, oldRows: 2000, wantFiles: -1})

	// 5. Created with its rows in one commit (a draft: CREATE TABLE AS
	// SELECT at version 0), then two appends (checkpoint at 2).
	d, err := NewDraft(ctx, "", interopTypesSchema(), WithStore(newStore("ctas")), WithProperties(props))
	if err != nil {
		t.Fatal(err)
	}
	want = interopTypesRows(0, 20)
	adds, err := d.WriteFiles(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if cur, _, err = d.Commit(ctx, adds); err != nil || cur.Version() != 0 {
		t.Fatalf("ctas: version %v, %v; want version 0", cur, err)
	}
	for v := 1; v <= 2; v++ {
		rows := interopTypesRows(v*20, 20)
		if cur, err = cur.AppendRows(ctx, rows); err != nil {
			t.Fatal(err)
		}
		want = append(want, rows...)
	}
	out = append(out, interopTable{name: "ctas", tbl: cur, want: want, oldRows: 40, wantFiles: 3})

	// 6. Group commit: one append alone (version 1), then 8 goroutines
	// appending at once, batched into as few versions as the group
	// committer makes (checkpoint at 2), then SetProperties.
	gt, err := Create(ctx, "", interopTypesSchema(), WithStore(newStore("grouped")), WithProperties(props), WithGroupCommit())
	if err != nil {
		t.Fatal(err)
	}
	want = interopTypesRows(0, 20)
	if gt, err = gt.AppendRows(ctx, want); err != nil || gt.Version() != 1 {
		t.Fatalf("grouped: first append: %v, %v; want version 1", gt, err)
	}
	var wg sync.WaitGroup
	results := make([]*Table, 8)
	errs := make([]error, 8)
	for i := range 8 {
		rows := interopTypesRows(20+i*10, 10)
		want = append(want, rows...)
		wg.Go(func() { results[i], errs[i] = gt.AppendRows(ctx, rows) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	cur = slices.MaxFunc(results, func(a, b *Table) int { return cmp.Compare(a.Version(), b.Version()) })
	if cur.Version() < 2 {
		t.Fatalf("grouped: newest version %d after 8 appends, want >= 2", cur.Version())
	}
	if cur, err = cur.SetProperties(ctx, map[string]string{"deltakit.interop": "grouped"}); err != nil {
		t.Fatal(err)
	}
	out = append(out, interopTable{name: "grouped", tbl: cur, want: want, oldRows: 20, wantFiles: 9, anyCheckpoint: true})

	// 7. Created by the first epoch of a stream (version 0: protocol,
	// metaData, txn, adds, STREAMING UPDATE, as streamsink.CreateOrOpen's
	// first epoch commits it), then two more epochs.
	epoch := func(e int64) WriteOption {
		return WithStreamingUpdate(StreamingUpdate{QueryID: "interop-query", EpochID: e, OutputMode: "Append"})
	}
	if d, err = NewDraft(ctx, "", interopTypesSchema(), WithStore(newStore("stream")), WithProperties(props)); err != nil {
		t.Fatal(err)
	}
	want = interopTypesRows(0, 20)
	if adds, err = d.WriteFiles(ctx, want, epoch(0)); err != nil {
		t.Fatal(err)
	}
	if cur, _, err = d.Commit(ctx, adds, epoch(0)); err != nil || cur.Version() != 0 || cur.Snapshot().TxnVersion("interop-query") != 0 {
		t.Fatalf("stream: version %v, %v; want version 0 with the epoch's txn", cur, err)
	}
	for e := int64(1); e <= 2; e++ {
		rows := interopTypesRows(int(e)*20, 20)
		adds, err := cur.WriteFiles(ctx, rows, epoch(e))
		if err != nil {
			t.Fatal(err)
		}
		if cur, _, err = cur.CommitFiles(ctx, adds, epoch(e)); err != nil {
			t.Fatal(err)
		}
		want = append(want, rows...)
	}
	out = append(out, interopTable{name: "stream", tbl: cur, want: want, oldRows: 40, wantFiles: 3})
	return out
}

// checkInterop runs the Python reader over the tables and compares.
func checkInterop(t *testing.T, py string, tables []interopTable, uris map[string]string, storageOptions map[string]string) {
	ctx := context.Background()
	for _, it := range tables {
		if err := it.tbl.Close(ctx); err != nil { // the background checkpoints
			t.Fatalf("%s: %v", it.name, err)
		}
		if it.anyCheckpoint {
			if _, err := it.tbl.Store().Stat(ctx, txlog.LogPrefix+"_last_checkpoint"); err != nil {
				t.Errorf("%s: no checkpoint: %v", it.name, err)
			}
		} else if _, err := it.tbl.Store().Stat(ctx, txlog.CheckpointKey(2)); err != nil {
			t.Errorf("%s: no checkpoint at version 2: %v", it.name, err)
		}
	}
	args := map[string]any{"tables": uris, "old_version": 1}
	if storageOptions != nil {
		args["storage_options"] = storageOptions
	}
	argJSON, _ := json.Marshal(args)
	out := testsupport.RunPython(t, py, interopReadScript, string(argJSON))
	var res struct {
		Tables map[string]struct {
			Error        string   `json:"error"`
			Version      int64    `json:"version"`
			Columns      []string `json:"columns"`
			Rows         []string `json:"rows"`
			NumRecords   string   `json:"num_records"`
			FilesWithMin int      `json:"files_with_min"`
			NFiles       int      `json:"nfiles"`
			OldRows      int      `json:"old_rows"`
			PyarrowRows  string   `json:"pyarrow_rows"`
			Problems     []string `json:"problems"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, it := range tables {
		t.Run(it.name, func(t *testing.T) {
			r, ok := res.Tables[it.name]
			if !ok || r.Error != "" {
				t.Fatalf("delta-rs could not read %s: %s", it.name, r.Error)
			}
			sch := it.tbl.Schema()
			var names []string
			for _, f := range sch.Fields {
				names = append(names, f.Name)
			}
			if r.Version != it.tbl.Version() {
				t.Errorf("delta-rs version %d, deltakit %d", r.Version, it.tbl.Version())
			}
			if !slices.Equal(sortedStrings(r.Columns), sortedStrings(names)) {
				t.Errorf("columns %v, want %v", r.Columns, names)
			}
			got := make([]string, len(r.Rows))
			for i, row := range r.Rows {
				got[i] = canonicalJSON(t, row)
			}
			want := make([]string, len(it.want))
			for i, row := range it.want {
				want[i] = canonicalJSON(t, interopRow(t, sch, row))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				n := 0
				for i := 0; i < max(len(got), len(want)) && n < 5; i++ {
					var g, w string
					if i < len(got) {
						g = got[i]
					}
					if i < len(want) {
						w = want[i]
					}
					if g != w {
						t.Errorf("row %d differs:\n delta-rs: %s\n deltakit: %s", i, g, w)
						n++
					}
				}
				t.Fatalf("delta-rs read %d rows, want %d", len(got), len(want))
			}
			if r.NumRecords != strconv.Itoa(len(it.want)) || r.PyarrowRows != strconv.Itoa(len(it.want)) {
				t.Errorf("stats num_records %s, pyarrow rows %s, want %d", r.NumRecords, r.PyarrowRows, len(it.want))
			}
			if r.FilesWithMin != r.NFiles {
				t.Errorf("delta-rs found min stats in %d of %d files", r.FilesWithMin, r.NFiles)
			}
			if it.wantFiles > 0 && r.NFiles != it.wantFiles {
				t.Errorf("%d files, want %d", r.NFiles, it.wantFiles)
			}
			if r.OldRows != it.oldRows {
				t.Errorf("version 1 has %d rows for delta-rs, want %d", r.OldRows, it.oldRows)
			}
			for _, p := range r.Problems {
				t.Errorf("pyarrow: %s", p)
			}
		})
	}
}

func sortedStrings(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestInteropWriteLocal(t *testing.T) {
	py := testsupport.Python(t)
	root := t.TempDir()
	uris := map[string]string{}
	tables := writeInteropTables(t, func(name string) objectstore.Store {
		dir := filepath.Join(root, name+" dir") // a space in the table path too
		s, err := objectstore.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		uris[name] = dir
		return s
	})
	checkInterop(t, py, tables, uris, nil)
}

func TestInteropWriteMinIO(t *testing.T) {
	py := testsupport.Python(t)
	m := testenv.StartMinIO(t)
	uris := map[string]string{}
	tables := writeInteropTables(t, func(name string) objectstore.Store {
		s := m.NewStore(t)
		uris[name] = s.URI()
		return s
	})
	checkInterop(t, py, tables, uris, map[string]string{
		"AWS_ENDPOINT_URL":      m.Endpoint,
		"AWS_ACCESS_KEY_ID":     m.AccessKey,
		"AWS_SECRET_ACCESS_KEY": m.SecretKey,
		"AWS_REGION":            m.Region,
		"AWS_ALLOW_HTTP":        "true",
	})
}
