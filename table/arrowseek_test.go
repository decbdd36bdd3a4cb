package table

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/table/internal/scan"
)

// covidTable is the corpus table written by parquet-mr 1.10.1-databricks:
// its column chunks are dictionary-encoded with no dictionary_page_offset
// and no offset index.
const covidTable = "deltars__COVID-19_NYT"

// covidDigestScript prints, for each filter of argv[2] (a JSON list of
// conjunctions of [column, op, value]), the rows delta-rs reads from table
// argv[1] that pass it, as {"rows": n, "digest": d}: d is the sum mod 2^64
// of the FNV-1a 64 hash of each row's "date|county|state|fips|cases|deaths"
// (null as "").
const covidDigestScript = `
import sys, json, operator
import deltalake, pyarrow.compute as pc
t = deltalake.DeltaTable(sys.argv[1]).to_pyarrow_table()
ops = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
def fnv(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h
cols = ["date", "county", "state", "fips", "cases", "deaths"]
out = []
for conj in json.loads(sys.argv[2]):
    e = None
    for c, op, v in conj:
        x = ops[op](pc.field(c), v)
        e = x if e is None else e & x
    f = t.filter(e)
    d = 0
    for r in f.select(cols).to_pylist():
        d = (d + fnv("|".join("" if r[c] is None else str(r[c]) for c in cols))) & 0xffffffffffffffff
    out.append({"rows": f.num_rows, "digest": d})
print(json.dumps(out))
`

// TestScanArrowUnlistedDictionaryFilters: filtered scans of the COVID
// corpus table, whose late columns cannot seek (unlistedDictionary), give
// delta-rs's rows: same count and same digest of row values (so the late
// columns are aligned with the filter's), with default batches, small
// batches (many skips within the row group) and several workers.
func TestScanArrowUnlistedDictionaryFilters(t *testing.T) {
	dir := testsupport.CorpusDir(t)
	root := filepath.Join(dir, covidTable)
	if _, err := os.Stat(root); err != nil {
		testsupport.Absent(t, "corpus table %s absent: %v", covidTable, err)
	}
	py := testsupport.Python(t)
	requireUnlistedDictionary(t, root)
	type cond struct {
		col, op string
		val     any
	}
	cases := []struct {
		name  string
		conds []cond
	}{
		{"int equality", []cond{{"fips", "=", 1001}}},
		{"string equality", []cond{{"state", "=", "Washington"}}},
		{"int equality, many rows", []cond{{"deaths", "=", 0}}},
		{"cases one", []cond{{"cases", "=", 1}}},
		{"range", []cond{{"cases", ">=", 100}, {"cases", "<", 200}}},
		{"string and range", []cond{{"county", "=", "Autauga"}, {"deaths", ">", 2}}},
		{"date prefix range", []cond{{"date", ">=", "2020-03-01"}, {"date", "<", "2020-03-08"}}},
		// 1002 lies within every file's fips bounds (Alabama's counties
		// are odd): the files are read, no row matches.
		{"nothing", []cond{{"fips", "=", 1002}}},
		{"all", []cond{{"cases", ">=", 0}}},
	}
	var spec [][][3]any
	for _, tc := range cases {
		var conj [][3]any
		for _, c := range tc.conds {
			conj = append(conj, [3]any{c.col, c.op, c.val})
		}
		spec = append(spec, conj)
	}
	arg, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var want []struct {
		Rows   int64  `json:"rows"`
		Digest uint64 `json:"digest"`
	}
	if err := json.Unmarshal(testsupport.RunPython(t, py, covidDigestScript, root, string(arg)), &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(cases) {
		t.Fatalf("python gave %d answers for %d filters", len(want), len(cases))
	}
	if want[len(cases)-2].Rows != 0 || want[len(cases)-1].Rows == 0 || want[0].Rows == 0 {
		t.Fatalf("references do not cover nothing/all/some: %+v", want)
	}
	tbl, err := Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	tunings := []struct {
		name string
		opts []ScanOption
	}{
		{"default", nil},
		{"batch 1000, 3 workers", []ScanOption{withArrowTuning(scan.ArrowTuning{Batch: 1000, Stripe: 2, Workers: 3})}},
	}
	for i, tc := range cases {
		var sql []string
		for _, c := range tc.conds {
			v := fmt.Sprint(c.val)
			if s, ok := c.val.(string); ok {
				v = "'" + s + "'"
			}
			sql = append(sql, c.col+" "+c.op+" "+v)
		}
		where := strings.Join(sql, " AND ")
		for _, tu := range tunings {
			t.Run(tc.name+"/"+tu.name, func(t *testing.T) {
				e, err := ParsePredicate(where, tbl.Snapshot().Schema())
				if err != nil {
					t.Fatal(err)
				}
				var st ScanStats
				recs := arrowBatchList(t, tbl, append([]ScanOption{WithFilter(e), WithScanStats(&st)}, tu.opts...)...)
				defer releaseBatches(recs)
				rows, digest := covidDigest(t, recs)
				if rows != want[i].Rows || digest != want[i].Digest {
					t.Errorf("%s: %d rows, digest %#x; delta-rs %d rows, digest %#x", where, rows, digest, want[i].Rows, want[i].Digest)
				}
				if st.FilesColumnar == 0 {
					t.Errorf("%s: no file read by the columnar reader (%+v)", where, st)
				}
			})
		}
	}
}

// requireUnlistedDictionary fails t unless some column chunk of some data
// file under root has dictionary pages without dictionary_page_offset (the
// case the test is about).
func requireUnlistedDictionary(t *testing.T, root string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "*.parquet"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no data file in %s: %v", root, err)
	}
	for _, p := range paths {
		r, err := file.OpenParquetFile(p, false)
		if err != nil {
			t.Fatal(err)
		}
		md := r.MetaData()
		r.Close()
		for g := 0; g < md.NumRowGroups(); g++ {
			for c := 0; c < md.Schema.NumColumns(); c++ {
				cc, err := md.RowGroup(g).ColumnChunk(c)
				if err != nil {
					t.Fatal(err)
				}
				if scan.UnlistedDictionary(cc) {
					return
				}
			}
		}
	}
	t.Fatalf("%s: no column chunk with an unlisted dictionary page", root)
}

// covidDigest is covidDigestScript's count and digest of the rows of recs.
func covidDigest(t *testing.T, recs []arrow.RecordBatch) (int64, uint64) {
	t.Helper()
	cols := []string{"date", "county", "state", "fips", "cases", "deaths"}
	var rows int64
	var digest uint64
	for _, rec := range recs {
		arrs := make([]arrow.Array, len(cols))
		for i, name := range cols {
			idx := rec.Schema().FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("batch schema %v lacks %s", rec.Schema(), name)
			}
			arrs[i] = rec.Column(idx[0])
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			parts := make([]string, len(arrs))
			for i, a := range arrs {
				if a.IsNull(r) {
					continue
				}
				switch a := a.(type) {
				case *array.String:
					parts[i] = a.Value(r)
				case *array.Int32:
					parts[i] = fmt.Sprint(a.Value(r))
				default:
					t.Fatalf("column %s: unexpected type %s", cols[i], a.DataType())
				}
			}
			h := fnv.New64a()
			h.Write([]byte(strings.Join(parts, "|")))
			digest += h.Sum64()
		}
		rows += rec.NumRows()
	}
	return rows, digest
}
