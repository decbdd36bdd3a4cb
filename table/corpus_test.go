package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// openCorpus opens a corpus table (read-only: nothing is written).
func openCorpus(t *testing.T, name string, opts ...Option) *Table {
	t.Helper()
	dir := filepath.Join(testsupport.CorpusDir(t), name)
	if _, err := os.Stat(dir); err != nil {
		testsupport.Absent(t, "corpus table %s is absent: %v", name, err)
	}
	tbl, err := Open(context.Background(), dir, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	return tbl
}

// scanAll collects every row of a scan, failing t on an error.
func scanAll(t *testing.T, tbl *Table, opts ...ScanOption) []value.Row {
	t.Helper()
	var rows []value.Row
	for r, err := range tbl.Scan(context.Background(), opts...) {
		if err != nil {
			t.Fatalf("scan %s v%d: %v", tbl.URI(), tbl.Version(), err)
		}
		rows = append(rows, r)
	}
	return rows
}

// countRows counts a scan's rows without reading column data.
func countRows(ctx context.Context, tbl *Table) (int64, error) {
	var n int64
	for _, err := range tbl.Scan(ctx, WithColumns()) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// logOnly reports whether a table folder holds no data files at all (the
// source kept only its _delta_log).
func logOnly(t *testing.T, root string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "_delta_log" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".parquet") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return !found
}

// dvPrefixStore serves "deletion_vector_*.bin" keys from files that carry a
// test-only name prefix, for corpus tables written by Spark's test suite.
type dvPrefixStore struct {
	objectstore.Store
	prefix string
}

func (s *dvPrefixStore) alias(key string) string {
	dir, base := path.Split(key)
	if strings.HasPrefix(base, "deletion_vector_") {
		return dir + s.prefix + base
	}
	return key
}

func (s *dvPrefixStore) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	b, err := s.Store.Get(ctx, key, r)
	if errors.Is(err, objectstore.ErrNotExist) {
		return s.Store.Get(ctx, s.alias(key), r)
	}
	return b, err
}

// TestCorpusScan reads every table of the conformance corpus through Scan:
// row counts at the latest version (all columns decoded, and again as a
// count) and at every version of rows_by_version (time travel), expected
// refusals and errors.
func TestCorpusScan(t *testing.T) {
	dir := testsupport.CorpusDir(t)
	tables := testsupport.CorpusTables(t, dir)
	var mu sync.Mutex
	var read, refused, failed, logOnlyTables []string
	for _, exp := range tables {
		t.Run(exp.Table, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			root := filepath.Join(dir, exp.Table, exp.Root)
			var openOpts []Option
			if exp.Table == "spark__table-with-dv-large" {
				// Its DV files carry Spark's test-only file name prefix
				// (DeltaSQLConf.TEST_DV_NAME_PREFIX, "test%dv%prefix-"),
				// which the descriptors do not name: the spec's path
				// <root>/deletion_vector_<uuid>.bin is absent. Only Spark
				// under DELTA_TESTING reads it as is; we read it through an
				// alias store to check the DV logic (see dvPrefixStore).
				store, err := objectstore.NewLocal(root)
				if err != nil {
					t.Fatal(err)
				}
				openOpts = append(openOpts, WithStore(&dvPrefixStore{Store: store, prefix: "test%dv%prefix-"}))
			}
			tbl, err := Open(ctx, root, openOpts...)
			switch exp.Expect {
			case "error", "refuse":
				if err == nil {
					t.Fatalf("Open succeeded at version %d, want an error", tbl.Version())
				}
				if exp.Expect == "refuse" && !errors.Is(err, txlog.ErrUnsupportedFeature) {
					t.Fatalf("Open = %v, want ErrUnsupportedFeature", err)
				}
				t.Logf("fails as expected: %v", err)
				mu.Lock()
				failed = append(failed, exp.Table)
				mu.Unlock()
				return
			}
			if err != nil {
				var fe *txlog.UnsupportedFeatureError
				if errors.As(err, &fe) && fe.Reader {
					for _, f := range fe.Features {
						if !slices.Contains(exp.Protocol.ReaderFeatures, f) {
							t.Fatalf("refused for feature %q, which the table's readerFeatures %v do not name", f, exp.Protocol.ReaderFeatures)
						}
						if slices.Contains(txlog.SupportedReaderFeatures(), f) {
							t.Fatalf("refused for feature %q, which deltakit supports", f)
						}
					}
					mu.Lock()
					refused = append(refused, exp.Table+" ("+strings.Join(fe.Features, ", ")+")")
					mu.Unlock()
					return
				}
				t.Fatalf("Open: %v", err)
			}
			if tbl.Version() != exp.LatestVersion {
				t.Errorf("Version() = %d, want %d", tbl.Version(), exp.LatestVersion)
			}
			if tbl.Snapshot().NumFiles() > 0 && logOnly(t, root) {
				// The source repository keeps only _delta_log for this
				// table: a scan must fail, naming the missing file.
				_, err := countRows(ctx, tbl)
				if !errors.Is(err, objectstore.ErrNotExist) || !strings.Contains(err.Error(), "data file ") {
					t.Errorf("scan of a table without data files = %v, want ErrNotExist naming the data file", err)
				}
				mu.Lock()
				logOnlyTables = append(logOnlyTables, exp.Table)
				mu.Unlock()
				return
			}
			var st ScanStats
			var n int64
			for r, err := range tbl.Scan(ctx, WithScanStats(&st)) {
				if err != nil {
					t.Fatalf("Scan: %v", err)
				}
				if len(r) != len(tbl.Schema().Fields) {
					t.Fatalf("row has %d values, schema %d columns", len(r), len(tbl.Schema().Fields))
				}
				n++
			}
			if exp.RowsLatest != nil && n != *exp.RowsLatest {
				t.Errorf("Scan yields %d rows at version %d, expected.json says %d (%s)", n, tbl.Version(), *exp.RowsLatest, exp.RowsSource)
			}
			if st.RowsReturned != n || st.FilesRead != st.FilesPlanned || st.FilesPlanned != st.FilesTotal {
				t.Errorf("ScanStats = %+v after %d rows", st, n)
			}
			if c, err := countRows(ctx, tbl); err != nil || c != n {
				t.Errorf("count scan = %d, %v; full scan %d", c, err, n)
			}
			versions := make([]int64, 0, len(exp.RowsByVersion))
			for k := range exp.RowsByVersion {
				v, err := strconv.ParseInt(k, 10, 64)
				if err != nil {
					t.Fatalf("rows_by_version key %q", k)
				}
				versions = append(versions, v)
			}
			slices.Sort(versions)
			for _, v := range versions {
				tv, err := Open(ctx, root, append(openOpts, AtVersion(v))...)
				if err != nil {
					t.Errorf("Open(AtVersion(%d)): %v", v, err)
					continue
				}
				c, err := countRows(ctx, tv)
				if err != nil {
					t.Errorf("scan at version %d: %v", v, err)
					continue
				}
				if want := exp.RowsByVersion[strconv.FormatInt(v, 10)]; c != want {
					t.Errorf("Scan at version %d yields %d rows, rows_by_version says %d", v, c, want)
				}
			}
			mu.Lock()
			read = append(read, fmt.Sprintf("%s (%d rows, %d versions)", exp.Table, n, len(versions)))
			mu.Unlock()
		})
	}
	t.Cleanup(func() {
		sort.Strings(read)
		sort.Strings(refused)
		sort.Strings(failed)
		fmt.Printf("corpus scan: %d tables: %d read, %d refused, %d errors as expected, %d log-only (data files absent from the source, scan fails with ErrNotExist)\n",
			len(read)+len(refused)+len(failed)+len(logOnlyTables), len(read), len(refused), len(failed), len(logOnlyTables))
		for _, r := range refused {
			fmt.Printf("corpus scan: REFUSED %s\n", r)
		}
	})
}

// corpusCheck is a value check on one corpus table, from its expected.md.
type corpusCheck struct {
	table string
	check func(t *testing.T, tbl *Table)
}

// rowSet renders rows sorted, for order-independent comparisons.
func rowSet(rows []value.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = rowsText([]value.Row{r})
	}
	slices.Sort(out)
	return out
}

func wantRowSet(t *testing.T, got []value.Row, want ...string) {
	t.Helper()
	slices.Sort(want)
	if g := rowSet(got); !slices.Equal(g, want) {
		t.Errorf("rows:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

// scanCount returns the number of rows a filtered scan yields and its stats.
func scanCount(t *testing.T, tbl *Table, opts ...ScanOption) (int, ScanStats) {
	t.Helper()
	var st ScanStats
	rows := scanAll(t, tbl, append(opts, WithScanStats(&st))...)
	return len(rows), st
}

// TestCorpusValues compares values read through Scan with the values the
// source projects' own tests state (expected.md of each table): primitive
// types, partition values of every type incl. null and escaped characters,
// decimals, timestamps (INT96, timestamp_ntz, year 9999), column mapping,
// deletion vectors, schema evolution and type widening.
func TestCorpusValues(t *testing.T) {
	checks := []corpusCheck{
		{"golden__data-reader-primitives", func(t *testing.T, tbl *Table) {
			rows := scanAll(t, tbl)
			want := []string{"null,null,null,null,null,null,null,null,null,null"}
			for i := range 10 {
				want = append(want, fmt.Sprintf("%d,%d,%d,%d,%v,%d,%d,%d,0x%02x%02x,%d", i, i, i, i, i%2 == 0, i, i, i, i, i, i))
			}
			wantRowSet(t, rows, want...)
			for _, r := range rows {
				if r[0] == nil {
					continue
				}
				if _, ok := r[2].(int8); !ok {
					t.Fatalf("as_byte is %T, want int8", r[2])
				}
				if _, ok := r[4].(bool); !ok {
					t.Fatalf("as_boolean is %T", r[4])
				}
				if d, ok := r[9].(value.Decimal); !ok || d.Scale != 0 {
					t.Fatalf("as_big_decimal is %#v", r[9])
				}
			}
			if n, _ := scanCount(t, tbl, WithFilter(Col("as_int").Ge(5))); n != 5 {
				t.Errorf("as_int >= 5: %d rows, want 5", n)
			}
			if n, _ := scanCount(t, tbl, WithFilter(Col("as_binary").Eq([]byte{3, 3}))); n != 1 {
				t.Errorf("as_binary = 0x0303: %d rows, want 1", n)
			}
			if n, _ := scanCount(t, tbl, WithFilter(Col("as_float").IsNull())); n != 1 {
				t.Errorf("as_float IS NULL: %d rows, want 1", n)
			}
		}},
		{"golden__data-reader-partition-values", func(t *testing.T, tbl *Table) {
			rows := scanAll(t, tbl)
			row := func(i int) string {
				return fmt.Sprintf("%d,%d,%d,%d,%v,%d,%d,%d,null,2021-09-08,2021-09-08T11:11:11Z,%d,{{%d},{%d},{%d}},{%d,%d,{%d,%d}},%d",
					i, i, i, i, i%2 == 0, i, i, i, i, i, i, i, i, i, i, i, i)
			}
			// as_string_lit_null renders as null but is the string "null" (checked below)
			wantRowSet(t, rows, row(0), row(1),
				"null,null,null,null,null,null,null,null,null,null,null,null,{{2},{2},{2}},{2,2,{2,2}},2")
			// as_string_lit_null holds the 4-character string "null", not a null
			lit, st := scanCount(t, tbl, WithFilter(Col("as_string_lit_null").Eq("null")))
			if lit != 2 || st.FilesPruned != 1 {
				t.Errorf(`as_string_lit_null = 'null': %d rows, %d pruned; want 2 and 1`, lit, st.FilesPruned)
			}
			for _, tc := range []struct {
				e    Expr
				want int
			}{
				{Col("as_string_lit_null").IsNull(), 1},
				{Col("as_int").Eq(1), 1},
				{Col("as_long").Lt(int64(1)), 1},
				{Col("as_byte").In(0, 1), 2},
				{Col("as_boolean").Eq(false), 1},
				{Col("as_float").Eq(1.0), 1},
				{Col("as_double").Gt(0.5), 1},
				{Col("as_date").Eq("2021-09-08"), 2},
				{Col("as_timestamp").Eq(time.Date(2021, 9, 8, 11, 11, 11, 0, time.UTC)), 2},
				{Col("as_big_decimal").Eq(value.NewDecimal(1, 0)), 1},
				{Col("as_nested_struct").Field("ac").Field("acb").Eq(2), 1},
				{Col("value").Eq("0"), 1},
			} {
				n, st := scanCount(t, tbl, WithFilter(tc.e))
				if n != tc.want {
					t.Errorf("%s: %d rows, want %d", tc.e, n, tc.want)
				}
				if st.FilesRead > st.FilesPlanned || st.FilesPlanned+st.FilesPruned+st.FilesSkipped != 3 {
					t.Errorf("%s: stats %+v", tc.e, st)
				}
			}
		}},
		{"golden__data-reader-escaped-chars", func(t *testing.T, tbl *Table) {
			wantRowSet(t, scanAll(t, tbl), "foo1,bar+%21", "foo2,bar+%22", "foo3,bar+%23")
			n, st := scanCount(t, tbl, WithFilter(Col("_2").Eq("bar+%22")))
			if n != 1 || st.FilesRead != 1 || st.FilesPruned != 2 {
				t.Errorf("_2 = 'bar+%%22': %d rows, stats %+v", n, st)
			}
		}},
		{"deltars__delta-0.8.0-special-partition", func(t *testing.T, tbl *Table) {
			rows := scanAll(t, tbl, WithColumns("x"))
			wantRowSet(t, rows, "A/A", "B B")
			if files, err := tbl.Files(context.Background(), WithFilter(Col("x").Eq("c"))); err != nil || len(files) != 0 {
				t.Errorf("x = 'c': %d files, %v; want none", len(files), err)
			}
		}},
		{"deltars__delta-0.8.0-null-partition", func(t *testing.T, tbl *Table) {
			wantRowSet(t, scanAll(t, tbl, WithColumns("k")), "A", "null")
			if n, st := scanCount(t, tbl, WithFilter(Col("k").IsNull())); n != 1 || st.FilesPruned != 1 {
				t.Errorf("k IS NULL: %d rows, stats %+v", n, st)
			}
		}},
		{"deltars__partition-type-primitives", func(t *testing.T, tbl *Table) {
			for _, e := range []Expr{Col("year").Eq("2020"), Col("year").Eq("2021.0"), Col("is_active").Eq("true"),
				Col("event_date").Eq("2023-01-01"), Col("category").Eq("A")} {
				if n, st := scanCount(t, tbl, WithFilter(e)); n != 8 || st.FilesPruned == 0 {
					t.Errorf("%s: %d rows (stats %+v), want 8 with pruning", e, n, st)
				}
			}
		}},
		{"golden__basic-decimal-table", func(t *testing.T, tbl *Table) {
			wantRowSet(t, scanAll(t, tbl),
				"234.00000,1.00,2.00000,3.0000000000",
				"2342222.23454,111.11,22222.22222,3333333333.3333333333",
				"0.00004,0.00,0.00000,0.0000000000",
				"-2342342.23423,-999.99,-99999.99999,-9999999999.9999999999")
			if n, _ := scanCount(t, tbl, WithFilter(Col("part").Gt(0))); n != 3 {
				t.Errorf("part > 0: %d rows, want 3", n)
			}
			if n, _ := scanCount(t, tbl, WithFilter(Col("col3").Lt("-9999999999.9999999998"))); n != 1 {
				t.Errorf("col3 < ...: %d rows, want 1", n)
			}
		}},
		{"golden__124-decimal-decode-bug", func(t *testing.T, tbl *Table) {
			wantRowSet(t, scanAll(t, tbl), "1000000")
		}},
		{"golden__data-reader-timestamp_ntz", func(t *testing.T, tbl *Table) {
			a, b := "2021-11-18T02:30:00.123456Z", "2013-07-05T17:01:00.123456Z"
			wantRowSet(t, scanAll(t, tbl),
				"0,"+a+","+a, "1,"+b+","+a, "2,null,"+a,
				"3,"+a+","+b, "4,"+b+","+b, "5,null,"+b,
				"6,"+a+",null", "7,"+b+",null", "8,null,null")
			for _, tc := range []struct {
				e    Expr
				want []int64
			}{
				{Col("tsNtz").IsNull(), []int64{2, 5, 8}},
				{Col("tsNtzPartition").Eq(time.Date(2021, 11, 18, 2, 30, 0, 123456000, time.UTC)), []int64{0, 1, 2}},
				{Col("tsNtz").Gt(time.Date(2021, 1, 1, 0, 0, 0, 0, time.FixedZone("X", -5*3600))), []int64{0, 3, 6}},
				{Col("tsNtz").Eq(time.Date(2013, 7, 5, 17, 1, 0, 123456000, time.UTC)), []int64{1, 4, 7}},
			} {
				rows := scanAll(t, tbl, WithFilter(tc.e), WithColumns("id"))
				var got []int64
				for _, r := range rows {
					got = append(got, int64(r[0].(int32)))
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s: ids %v, want %v", tc.e, got, tc.want)
				}
			}
		}},
		{"golden__kernel-timestamp-INT96", func(t *testing.T, tbl *Table) {
			us := func(n int64) string { return time.UnixMicro(n).UTC().Format("2006-01-02T15:04:05.999999Z") }
			wantRowSet(t, scanAll(t, tbl),
				"0,"+us(1577866150001000)+","+us(1580544550000000),
				"1,"+us(1633075760000000)+","+us(915181200000000),
				"2,"+us(1633075760000000)+","+us(946717200000000),
				"3,"+us(-31536000000000)+","+us(-31536000000000),
				"4,null,null")
			if n, _ := scanCount(t, tbl, WithFilter(Col("time").Lt(time.UnixMicro(0)))); n != 1 {
				t.Errorf("time < epoch: %d rows, want 1", n)
			}
		}},
		{"deltars__table_with_edge_timestamps", func(t *testing.T, tbl *Table) {
			wantRowSet(t, scanAll(t, tbl),
				"9999-12-31T00:00:00Z,2022-01-01T00:00:00Z,1",
				"9999-12-30T00:00:00Z,2022-02-01T00:00:00Z,2")
			if n, _ := scanCount(t, tbl, WithFilter(Col("BIG_DATE").Ge(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)))); n != 1 {
				t.Errorf("BIG_DATE >= 9999-12-31: %d rows, want 1", n)
			}
		}},
		{"golden__table-with-columnmapping-mode-name", func(t *testing.T, tbl *Table) {
			rows := scanAll(t, tbl, WithColumns("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType",
				"decimal", "BooleanType", "StringType", "BinaryType", "DateType", "TimestampType", "nested_struct", "array_of_prims", "map_of_prims"))
			want := []string{"null,null,null,null,null,null,null,null,null,null,null,null,null,null,null"}
			for i := range 5 {
				ts := time.UnixMilli(int64(i)).UTC().Format("2006-01-02T15:04:05.999999Z")
				want = append(want, fmt.Sprintf("%d,%d,%d,%d,%d,%d,%d.00,%v,%d,0x%x,%s,%s,{%d,{%d}},{%d,%d},[{%d %d} {%d %d}]",
					i, i, i, i, i, i, i, i%2 == 0, i, fmt.Sprint(i), "2021-11-18", ts, i, i, i, i+1, i, i+1, i+2, i+3))
			}
			wantRowSet(t, rows, want...)
			if n, st := scanCount(t, tbl, WithFilter(Col("IntegerType").Ge(3))); n != 2 {
				t.Errorf("IntegerType >= 3: %d rows (stats %+v), want 2", n, st)
			}
			if n, st := scanCount(t, tbl, WithFilter(Col("LongType").Gt(100))); n != 0 || st.FilesSkipped != st.FilesTotal {
				t.Errorf("LongType > 100: %d rows, stats %+v; want every file skipped by physical-name stats", n, st)
			}
			if n, _ := scanCount(t, tbl, WithFilter(Col("nested_struct").Field("ac").Field("aca").Eq(3))); n != 1 {
				t.Errorf("nested_struct.ac.aca = 3: %d rows, want 1", n)
			}
		}},
		{"deltars__table-with-dv-small", func(t *testing.T, tbl *Table) {
			wantRowSet(t, scanAll(t, tbl), "1", "2", "3", "4", "5", "6", "7", "8")
		}},
		{"kernel__basic-dv-no-checkpoint", func(t *testing.T, tbl *Table) {
			wantRowSet(t, scanAll(t, tbl), "2", "3", "4", "5", "6", "7", "8", "9")
		}},
		{"golden__log-replay-dv-key-cases", func(t *testing.T, tbl *Table) {
			var want []string
			for i := range 50 {
				if i != 0 && i != 7 && i != 14 {
					want = append(want, strconv.Itoa(i))
				}
			}
			wantRowSet(t, scanAll(t, tbl), want...)
		}},
		{"golden__time-travel-schema-changes-b", func(t *testing.T, tbl *Table) {
			var want []string
			for i := range 20 {
				if i < 10 {
					want = append(want, fmt.Sprintf("%d,null", i))
				} else {
					want = append(want, fmt.Sprintf("%d,%d", i, i))
				}
			}
			wantRowSet(t, scanAll(t, tbl), want...)
			v0, err := Open(context.Background(), tbl.URI(), AtVersion(0))
			if err != nil {
				t.Fatal(err)
			}
			rows := scanAll(t, v0)
			if len(rows) != 10 || len(rows[0]) != 1 {
				t.Errorf("version 0: %d rows of %d columns, want 10 of 1", len(rows), len(rows[0]))
			}
		}},
		{"golden__type-widening", func(t *testing.T, tbl *Table) {
			rows := scanAll(t, tbl, WithColumns("byte_long", "int_long", "byte_double", "short_double", "int_double",
				"decimal_decimal_same_scale", "decimal_decimal_greater_scale", "byte_decimal", "short_decimal", "int_decimal", "long_decimal", "date_timestamp_ntz"))
			wantRowSet(t, rows,
				"1,2,5,6,7,123.45,67.89000,1.0,2.0,3.0,4.0,2024-09-09T00:00:00Z",
				"9223372036854775807,9223372036854775807,1.234567890123,1.234567890123,1.234567890123,12345678901234.56,12345678901.23456,123.4,12345.6,1234567890.1,123456789012345678.9,2024-09-09T12:34:56.123456Z")
			// a widened column's stats are not used for skipping
			if n, st := scanCount(t, tbl, WithFilter(Col("int_long").Eq(2))); n != 1 || st.FilesSkipped != 0 {
				t.Errorf("int_long = 2: %d rows, stats %+v", n, st)
			}
		}},
	}
	for _, c := range checks {
		t.Run(c.table, func(t *testing.T) {
			c.check(t, openCorpus(t, c.table))
		})
	}
	t.Run("spark__table-with-dv-large", func(t *testing.T) {
		root := filepath.Join(testsupport.CorpusDir(t), "spark__table-with-dv-large")
		if _, err := os.Stat(root); err != nil {
			testsupport.Absent(t, "corpus table: %v", err)
		}
		store, err := objectstore.NewLocal(root)
		if err != nil {
			t.Fatal(err)
		}
		live := map[int]bool{}
		for i := range 2000 {
			live[i] = true
		}
		steps := [][2][]int{
			{nil, nil},
			{{0, 180, 300, 700, 1800}, nil},
			{nil, {300, 700}},
			{{300, 250, 350, 900, 1353, 1567, 1800}, nil},
			{nil, {900, 1567}},
		}
		for v, step := range steps {
			for _, d := range step[0] {
				delete(live, d)
			}
			for _, a := range step[1] {
				live[a] = true
			}
			tbl, err := Open(context.Background(), "", WithStore(&dvPrefixStore{Store: store, prefix: "test%dv%prefix-"}), AtVersion(int64(v)))
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, r := range scanAll(t, tbl) {
				got = append(got, int(r[0].(int32)))
			}
			slices.Sort(got)
			want := slices.Sorted(maps.Keys(live))
			if !slices.Equal(got, want) {
				t.Errorf("version %d: %d values, want %d", v, len(got), len(want))
			}
		}
	})
}
