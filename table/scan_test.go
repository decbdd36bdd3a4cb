package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/parquetio"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// regionTable is a table partitioned by region with four files:
//
//	region=__HIVE_DEFAULT_PARTITION__/part-d  ids 16..20 (region null)
//	region=eu/part-a                          ids 1..5
//	region=eu/part-b                          ids 6..10
//	region=us/part-c                          ids 11..15
//
// Scans read files in path order, so the full scan yields 16..20, 1..15.
func regionTable(t *testing.T) *Table {
	t.Helper()
	p := schema.Primitive
	sch := schema.NewStruct(
		schema.NewField("id", p(schema.Long), false),
		schema.NewField("region", p(schema.String), true),
		schema.NewField("score", p(schema.Double), true),
		schema.NewField("name", p(schema.String), true),
		schema.NewField("ts", p(schema.Timestamp), true),
	)
	f := newScanFixture(t, sch, []string{"region"}, nil, nil)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := func(region any, from, to int) []value.Row {
		var out []value.Row
		for i := from; i <= to; i++ {
			var score any = float64(i) / 2
			if i%4 == 0 {
				score = nil
			}
			out = append(out, value.Row{int64(i), region, score, fmt.Sprintf("n%02d", i), base.Add(time.Duration(i) * time.Hour)})
		}
		return out
	}
	f.commit(
		f.file("a", rows("eu", 1, 5)...),
		f.file("b", rows("eu", 6, 10)...),
		f.file("c", rows("us", 11, 15)...),
		f.file("d", rows(nil, 16, 20)...),
	)
	return f.open()
}

func ids(t *testing.T, rows []value.Row, col int) []int64 {
	t.Helper()
	out := make([]int64, len(rows))
	for i, r := range rows {
		v, ok := r[col].(int64)
		if !ok {
			t.Fatalf("row %d column %d = %#v, want int64", i, col, r[col])
		}
		out[i] = v
	}
	return out
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestScanMultiFile scans a four-file partitioned table with filters and
// checks both the rows (exactly the matching ones, in file order) and how
// many files were pruned, skipped and read, at several concurrencies.
func TestScanMultiFile(t *testing.T) {
	tbl := regionTable(t)
	all := append(seq(16, 20), seq(1, 15)...)
	tests := []struct {
		name                  string
		opts                  []ScanOption
		want                  []int64
		pruned, skipped, read int
	}{
		{"no filter", nil, all, 0, 0, 4},
		{"partition =", []ScanOption{WithFilter(Col("region").Eq("eu"))}, seq(1, 10), 2, 0, 2},
		{"partition IS NULL", []ScanOption{WithFilter(Col("region").IsNull())}, seq(16, 20), 3, 0, 1},
		{"partition != (null excluded)", []ScanOption{WithFilter(Col("region").Ne("eu"))}, seq(11, 15), 3, 0, 1},
		{"stats >", []ScanOption{WithFilter(Col("id").Gt(12))}, append(seq(16, 20), 13, 14, 15), 0, 2, 2},
		{"stats =", []ScanOption{WithFilter(Col("id").Eq(7))}, []int64{7}, 0, 3, 1},
		{"stats on timestamps", []ScanOption{WithFilter(Col("ts").Lt(time.Date(2024, 1, 1, 3, 0, 0, 0, time.UTC)))}, []int64{1, 2}, 0, 3, 1},
		{"OR across partition and stats", []ScanOption{WithFilter(Or(Col("region").Eq("us"), Col("id").Lt(3)))}, []int64{1, 2, 11, 12, 13, 14, 15}, 0, 2, 2},
		// part-a's scores are 0.5..2.5: pruned by region, part-a skipped by stats
		{"AND partition and row filter", []ScanOption{WithFilter(And(Col("region").Eq("eu"), Col("score").Ge(3.5)))}, []int64{7, 9, 10}, 2, 1, 1},
		{"two WithFilter options AND", []ScanOption{WithFilter(Col("region").Eq("eu")), WithFilter(Col("score").Ge(3.5))}, []int64{7, 9, 10}, 2, 1, 1},
		{"IS NULL on data", []ScanOption{WithFilter(Col("score").IsNull())}, []int64{16, 20, 4, 8, 12}, 0, 0, 4},
		// NOT score < 3 also matches NaN, which stats may leave out: no skipping
		{"NOT with nulls", []ScanOption{WithFilter(Not(Col("score").Lt(3)))}, []int64{17, 18, 19, 6, 7, 9, 10, 11, 13, 14, 15}, 0, 0, 4},
		{"the same without NOT", []ScanOption{WithFilter(Col("score").Ge(3))}, []int64{17, 18, 19, 6, 7, 9, 10, 11, 13, 14, 15}, 0, 1, 3},
		{"IN on strings", []ScanOption{WithFilter(Col("name").In("n03", "n12", "n99"))}, []int64{3, 12}, 0, 2, 2},
		{"nothing matches", []ScanOption{WithFilter(Col("id").Gt(100))}, nil, 0, 4, 0},
		{"limit", []ScanOption{WithLimit(7)}, append(seq(16, 20), 1, 2), 0, 0, 1},
		{"limit with filter", []ScanOption{WithFilter(Col("region").Eq("eu")), WithLimit(6)}, seq(1, 6), 2, 0, 1},
		{"limit larger than result", []ScanOption{WithFilter(Col("id").Eq(7)), WithLimit(5)}, []int64{7}, 0, 3, 1},
	}
	for _, conc := range []int{1, 2, 8} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("conc%d/%s", conc, tc.name), func(t *testing.T) {
				var st ScanStats
				opts := append(slices.Clone(tc.opts), WithScanConcurrency(conc), WithScanStats(&st))
				rows := scanAll(t, tbl, opts...)
				if got := ids(t, rows, 0); !slices.Equal(got, tc.want) {
					t.Errorf("ids %v, want %v", got, tc.want)
				}
				if st.FilesTotal != 4 || st.FilesPruned != tc.pruned || st.FilesSkipped != tc.skipped {
					t.Errorf("pruned %d skipped %d of %d, want %d and %d of 4", st.FilesPruned, st.FilesSkipped, st.FilesTotal, tc.pruned, tc.skipped)
				}
				// With a limit, concurrent readers may finish more files than the
				// sequential scan needs; without one, exactly the planned files.
				hasLimit := strings.HasPrefix(tc.name, "limit")
				if (!hasLimit || conc == 1) && st.FilesRead != tc.read {
					t.Errorf("FilesRead %d, want %d", st.FilesRead, tc.read)
				}
				if st.RowsReturned != int64(len(rows)) || st.FilesPlanned != 4-tc.pruned-tc.skipped || st.Version != 0 {
					t.Errorf("stats %+v after %d rows", st, len(rows))
				}
				for _, r := range rows {
					if len(r) != 5 {
						t.Fatalf("row %v has %d values", r, len(r))
					}
				}
			})
		}
	}
}

// TestScanRowValues checks whole rows: partition values from the log,
// nulls, projection order, counting scans.
func TestScanRowValues(t *testing.T) {
	tbl := regionTable(t)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	rows := scanAll(t, tbl, WithFilter(Col("id").In(4, 11, 17)))
	want := []value.Row{
		{int64(17), nil, 8.5, "n17", base.Add(17 * time.Hour)},
		{int64(4), "eu", nil, "n04", base.Add(4 * time.Hour)},
		{int64(11), "us", 5.5, "n11", base.Add(11 * time.Hour)},
	}
	if rowsText(rows) != rowsText(want) {
		t.Errorf("rows\n %s\nwant\n %s", rowsText(rows), rowsText(want))
	}
	// projection: any order, partition columns included
	rows = scanAll(t, tbl, WithColumns("name", "REGION", "id"), WithFilter(Col("id").In(4, 11, 17)))
	want = []value.Row{{"n17", nil, int64(17)}, {"n04", "eu", int64(4)}, {"n11", "us", int64(11)}}
	if rowsText(rows) != rowsText(want) {
		t.Errorf("projected rows %s, want %s", rowsText(rows), rowsText(want))
	}
	sch, err := tbl.ScanSchema(WithColumns("name", "REGION", "id"))
	if err != nil || len(sch.Fields) != 3 || sch.Fields[0].Name != "name" || sch.Fields[1].Name != "region" || sch.Fields[2].Name != "id" {
		t.Errorf("ScanSchema = %v, %v", sch, err)
	}
	if full, err := tbl.ScanSchema(); err != nil || full.String() != tbl.Schema().String() {
		t.Errorf("ScanSchema() = %v, %v; want the table schema", full, err)
	}
	// only partition columns: no data column is read, rows still counted
	rows = scanAll(t, tbl, WithColumns("region"), WithFilter(Col("region").IsNotNull()))
	if len(rows) != 15 || rows[0][0] != "eu" || rows[14][0] != "us" {
		t.Errorf("region-only rows: %s", rowsText(rows))
	}
	// count: empty rows
	rows = scanAll(t, tbl, WithColumns(), WithFilter(Col("score").Gt(5)))
	if len(rows) != 7 || len(rows[0]) != 0 { // ids 11, 13, 14, 15, 17, 18, 19
		t.Errorf("count rows = %d (first %v), want 7 empty rows", len(rows), rows[0])
	}
	// rows belong to the caller: changing one does not change the next scan
	rows = scanAll(t, tbl, WithFilter(Col("id").Eq(1)))
	rows[0][1] = "changed"
	if again := scanAll(t, tbl, WithFilter(Col("id").Eq(1))); again[0][1] != "eu" {
		t.Errorf("second scan sees %v", again[0][1])
	}
}

// TestScanFilesOrderAndVersion checks Files and scanning an older version.
func TestScanFilesOrderAndVersion(t *testing.T) {
	tbl := regionTable(t)
	ctx := context.Background()
	files, err := tbl.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, a := range files {
		paths = append(paths, a.Path)
	}
	want := []string{
		"region=__HIVE_DEFAULT_PARTITION__/part-d.snappy.parquet",
		"region=eu/part-a.snappy.parquet",
		"region=eu/part-b.snappy.parquet",
		"region=us/part-c.snappy.parquet",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("Files = %v, want %v", paths, want)
	}
	files, err = tbl.Files(ctx, WithFilter(Col("id").Between(6, 12)))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path != want[2] || files[1].Path != want[3] {
		t.Errorf("Files(6 <= id <= 12) = %d files", len(files))
	}
}

// TestScanDeletionVectors applies inline DVs, re-added files with a new DV
// (reconciliation by path and DV id) and time travel to the version
// before the DV.
func TestScanDeletionVectors(t *testing.T) {
	sch := schema.NewStruct(schema.NewField("value", schema.Primitive(schema.Integer), true))
	proto := &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{txlog.FeatureDeletionVectors}, WriterFeatures: []string{txlog.FeatureDeletionVectors}}
	f := newScanFixture(t, sch, nil, map[string]string{txlog.PropEnableDeletionVectors: "true"}, proto)
	var rows []value.Row
	for i := range 10 {
		rows = append(rows, value.Row{int32(i)})
	}
	a := f.file("x", rows...)
	other := f.file("y", value.Row{int32(100)}, value.Row{int32(101)})
	f.commit(a, other) // v0
	dv1 := withDV(t, a, 0, 9)
	f.commitActions(
		txlog.Action{Remove: &txlog.Remove{Path: a.Path, DeletionTimestamp: scanPtr(int64(1)), DataChange: true}},
		txlog.Action{Add: dv1},
	) // v1
	dv2 := withDV(t, a, 0, 9, 4)
	f.commitActions(
		txlog.Action{Remove: &txlog.Remove{Path: a.Path, DeletionTimestamp: scanPtr(int64(2)), DataChange: true, DeletionVector: dv1.DeletionVector}},
		txlog.Action{Add: dv2},
	) // v2
	values := func(rows []value.Row) []int64 {
		out := make([]int64, len(rows))
		for i, r := range rows {
			out[i] = int64(r[0].(int32))
		}
		return out
	}
	for _, tc := range []struct {
		version int64
		opts    []ScanOption
		want    []int64
		deleted int64
	}{
		{0, nil, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101}, 0},
		{1, nil, []int64{1, 2, 3, 4, 5, 6, 7, 8, 100, 101}, 2},
		{2, nil, []int64{1, 2, 3, 5, 6, 7, 8, 100, 101}, 3},
		{2, []ScanOption{WithFilter(Col("value").Ge(5))}, []int64{5, 6, 7, 8, 100, 101}, 3},
		{2, []ScanOption{WithFilter(Col("value").Le(0))}, nil, 0}, // file x: stats min 0 may match; all matching rows deleted
	} {
		t.Run(fmt.Sprintf("v%d%v", tc.version, tc.opts), func(t *testing.T) {
			tbl := f.open(AtVersion(tc.version))
			var st ScanStats
			got := scanAll(t, tbl, append(tc.opts, WithScanStats(&st))...)
			if g := values(got); !slices.Equal(g, tc.want) {
				t.Errorf("values %v, want %v", g, tc.want)
			}
			if tc.want != nil && st.RowsDeleted != tc.deleted {
				t.Errorf("RowsDeleted %d, want %d", st.RowsDeleted, tc.deleted)
			}
			if n, err := countRows(context.Background(), tbl); err != nil || (tc.opts == nil && n != int64(len(tc.want))) {
				t.Errorf("count scan = %d, %v", n, err)
			}
		})
	}
}

func scanPtr[T any](v T) *T { return &v }

// TestScanColumnMapping reads files whose columns have physical names (and
// field ids in id mode) through logical names, with partition values keyed
// by physical name.
func TestScanColumnMapping(t *testing.T) {
	meta := func(id int, phys string) map[string]any {
		return map[string]any{schema.MetaColumnMappingID: float64(id), schema.MetaColumnMappingName: phys}
	}
	sch := schema.NewStruct(
		&schema.StructField{Name: "Part", Type: schema.Primitive(schema.String), Nullable: true, Metadata: meta(1, "col-6f1a")},
		&schema.StructField{Name: "id", Type: schema.Primitive(schema.Long), Nullable: true, Metadata: meta(2, "col-0b3c")},
		&schema.StructField{Name: "point", Type: schema.NewStruct(
			&schema.StructField{Name: "x", Type: schema.Primitive(schema.Double), Nullable: true, Metadata: meta(4, "col-77aa")},
		), Nullable: true, Metadata: meta(3, "col-9d2e")},
	)
	for _, mode := range []string{"name", "id"} {
		t.Run(mode, func(t *testing.T) {
			f := newScanFixture(t, sch, []string{"Part"}, map[string]string{txlog.PropColumnMappingMode: mode, "delta.columnMapping.maxColumnId": "4"}, nil)
			f.commit(
				f.file("1", value.Row{"a", int64(1), value.Row{1.5}}, value.Row{"a", int64(2), nil}),
				f.file("2", value.Row{"b", int64(3), value.Row{-1.0}}),
			)
			tbl := f.open()
			files, err := tbl.Files(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := files[0].PartitionValues["col-6f1a"]; !ok || !strings.Contains(files[0].Stats, "col-0b3c") {
				t.Fatalf("fixture did not use physical names: %+v", files[0])
			}
			var st ScanStats
			rows := scanAll(t, tbl, WithScanStats(&st), WithFilter(Or(Col("point").Field("x").Lt(0), Col("Part").Eq("a"))))
			if got, want := rowsText(rows), "a,1,{1.5} | a,2,null | b,3,{-1}"; got != want {
				t.Errorf("rows %s, want %s", got, want)
			}
			rows = scanAll(t, tbl, WithScanStats(&st), WithFilter(Col("id").Gt(2)), WithColumns("point", "Part"))
			if got, want := rowsText(rows), "{-1},b"; got != want || st.FilesSkipped != 1 {
				t.Errorf("rows %s, want %s; skipped %d, want 1", got, want, st.FilesSkipped)
			}
		})
	}
}

// TestScanPartitionTypes reads typed and escaped partition values from the
// log, decoding add.path exactly once.
func TestScanPartitionTypes(t *testing.T) {
	p := schema.Primitive
	sch := schema.NewStruct(
		schema.NewField("s", p(schema.String), true),
		schema.NewField("i", p(schema.Integer), true),
		schema.NewField("d", p(schema.Date), true),
		schema.NewField("t", p(schema.Timestamp), true),
		schema.NewField("m", &schema.DecimalType{Precision: 6, Scale: 2}, true),
		schema.NewField("b", p(schema.Boolean), true),
		schema.NewField("v", p(schema.Long), true),
	)
	f := newScanFixture(t, sch, []string{"s", "i", "d", "t", "m", "b"}, nil, nil)
	day := value.DateOf(time.Date(2021, 9, 8, 0, 0, 0, 0, time.UTC))
	ts := time.Date(2021, 9, 8, 11, 11, 11, 123456000, time.UTC)
	weird := "a/b%c d=e:f+g#h?é"
	f.commit(
		f.file("1", value.Row{weird, int32(-7), day, ts, value.MustParseDecimal("1234.50"), true, int64(1)}),
		f.file("2", value.Row{"%25 literal", int32(0), nil, nil, nil, false, int64(2)}),
		f.file("3", value.Row{nil, nil, nil, nil, nil, nil, int64(3)}),
	)
	tbl := f.open()
	files, _ := tbl.Files(context.Background())
	for _, a := range files {
		if strings.Contains(a.Path, "%") && !strings.Contains(a.Path, "%25") {
			t.Errorf("add.path %q: Hive escapes should be URI-encoded as %%25", a.Path)
		}
	}
	rows := scanAll(t, tbl)
	got := map[int64]string{}
	for _, r := range rows {
		got[r[6].(int64)] = rowsText([]value.Row{r})
	}
	want := map[int64]string{
		1: weird + ",-7,2021-09-08,2021-09-08T11:11:11.123456Z,1234.50,true,1",
		2: "%25 literal,0,null,null,null,false,2",
		3: "null,null,null,null,null,null,3",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("row %d = %s, want %s", k, got[k], w)
		}
	}
	if _, ok := rows[0][1].(int32); !ok && rows[0][1] != nil {
		t.Errorf("integer partition value is %T, want int32", rows[0][1])
	}
	for _, tc := range []struct {
		e    Expr
		want int
	}{
		{Col("s").Eq(weird), 1},
		{Col("s").Eq("%25 literal"), 1},
		{Col("s").Eq("% literal"), 0},
		{Col("i").Lt(0), 1},
		{Col("d").Eq("2021-09-08"), 1},
		{Col("t").Eq(ts), 1},
		{Col("t").Eq(ts.Truncate(time.Second)), 0},
		{Col("m").Eq("1234.5"), 1},
		{Col("m").Gt(1234), 1},
		{Col("b").Eq(false), 1},
		{Col("b").IsNull(), 1},
		{Not(Col("b").Eq(true)), 1},
	} {
		var st ScanStats
		rows := scanAll(t, tbl, WithFilter(tc.e), WithScanStats(&st))
		if len(rows) != tc.want || st.FilesRead != tc.want || st.FilesPruned != 3-tc.want {
			t.Errorf("%s: %d rows, %d files read, %d pruned; want %d rows and files", tc.e, len(rows), st.FilesRead, st.FilesPruned, tc.want)
		}
	}
	// partition values of different rows do not share memory
	rows = scanAll(t, tbl, WithFilter(Col("m").IsNotNull()))
	m := rows[0][4].(value.Decimal)
	m.Unscaled.SetInt64(0)
	if again := scanAll(t, tbl, WithFilter(Col("m").IsNotNull())); again[0][4].(value.Decimal).String() != "1234.50" {
		t.Errorf("decimal partition value shared between scans")
	}
}

// TestScanAbsolutePaths reads data files named by absolute URIs inside the
// table root, refuses those elsewhere, and reads them when their root is
// allowed (WithAllowedRoots), also for a table opened WithStore.
func TestScanAbsolutePaths(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("v", schema.Primitive(schema.Long), true))
	dir := t.TempDir()
	root, other := filepath.Join(dir, "t"), filepath.Join(dir, "other")
	for _, d := range []string{root, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rootStore, err := objectstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	otherStore, err := objectstore.NewLocal(other)
	if err != nil {
		t.Fatal(err)
	}
	f := newScanFixtureIn(t, rootStore, sch, nil, nil, nil)
	inside := f.file("in", value.Row{int64(1)})
	inside.Path = rootStore.URI() + "/" + inside.Path
	elsewhere := newScanFixtureIn(t, otherStore, sch, nil, nil, nil).file("out file", value.Row{int64(2)})
	// file:/x form with the space encoded once
	elsewhere.Path = "file:" + strings.TrimPrefix(otherStore.URI(), "file://") + "/" + elsewhere.Path
	f.commit(inside, elsewhere)
	scanErr := func(tbl *Table) error {
		var last error
		for _, err := range tbl.Scan(ctx) {
			last = err
		}
		return last
	}
	tbl, err := Open(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := scanErr(tbl); !errors.Is(err, ErrPathOutsideTable) || !strings.Contains(err.Error(), "part-out file") {
		t.Errorf("scan error = %v, want ErrPathOutsideTable naming the path", err)
	}
	for _, opts := range [][]Option{
		{WithAllowedRoots(otherStore.URI())},
		{WithAllowedRoots("file://localhost" + strings.TrimPrefix(otherStore.URI(), "file://") + "/")},
		{WithStore(rootStore), WithAllowedRoots(otherStore.URI())},
	} {
		tbl, err := Open(ctx, root, opts...)
		if err != nil {
			t.Fatal(err)
		}
		rows := scanAll(t, tbl)
		if got := rowsText(rows); got != "1 | 2" && got != "2 | 1" {
			t.Errorf("rows %s, want 1 and 2", got)
		}
	}
	// An allowed root that is not a URI is an invalid argument.
	tbl, err = Open(ctx, root, WithAllowedRoots("relative/dir"))
	if err != nil {
		t.Fatal(err)
	}
	if err := scanErr(tbl); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("scan with a relative allowed root = %v", err)
	}
	// Rooted paths are absolute paths in the table's scheme and authority:
	// in a mem:// store rooted at "/", "/etc/passwd" is its key
	// "etc/passwd" (absent), not the local file.
	g := newScanFixture(t, sch, nil, nil, nil)
	g.commit(fakeAdd("/etc/passwd", nil, ""))
	if err := scanErr(g.open()); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("scan with a rooted path in a mem table = %v, want ErrNotExist", err)
	}
}

// TestScanErrors checks that read failures name the table version and the
// file and wrap the cause, and that the iterator yields the error once.
func TestScanErrors(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(schema.NewField("v", schema.Primitive(schema.Long), true))
	f := newScanFixture(t, sch, nil, nil, nil)
	good := f.file("good", value.Row{int64(1)})
	missing := fakeAdd("part-missing.parquet", nil, "")
	f.commit(good, missing)
	if err := f.store.Put(ctx, "part-corrupt.parquet", []byte("this is not parquet at all")); err != nil {
		t.Fatal(err)
	}
	f.commit(fakeAdd("part-corrupt.parquet", nil, ""))
	for _, tc := range []struct {
		name    string
		version int64
		is      error
		file    string
	}{
		{"missing file", 0, objectstore.ErrNotExist, "part-missing.parquet"},
		{"corrupt file", 1, parquetio.ErrCorrupt, "part-corrupt.parquet"},
	} {
		for _, conc := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/conc%d", tc.name, conc), func(t *testing.T) {
				tbl := f.open(AtVersion(tc.version))
				var errs []error
				n := 0
				for r, err := range tbl.Scan(ctx, WithScanConcurrency(conc)) {
					if err != nil {
						errs = append(errs, err)
					} else if r != nil {
						n++
					}
				}
				if len(errs) != 1 {
					t.Fatalf("errors %v, want one", errs)
				}
				err := errs[0]
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", tc.version)) {
					t.Errorf("error %v: want %v naming %s and the version", err, tc.is, tc.file)
				}
			})
		}
	}
	// a bad DV descriptor
	g := newScanFixture(t, sch, nil, nil, &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{txlog.FeatureDeletionVectors}, WriterFeatures: []string{txlog.FeatureDeletionVectors}})
	a := g.file("a", value.Row{int64(1)}, value.Row{int64(2)})
	a = withDV(t, a, 0)
	a.DeletionVector.Cardinality = 2
	g.commit(a)
	var scanErr error
	for _, err := range g.open().Scan(ctx) {
		scanErr = err
	}
	if !errors.Is(scanErr, txlog.ErrCorruptLog) || !strings.Contains(scanErr.Error(), "deletion vector") {
		t.Errorf("bad DV: %v", scanErr)
	}
	// a cancelled context
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, conc := range []int{1, 4} {
		scanErr = nil
		for _, err := range regionTable(t).Scan(cctx, WithScanConcurrency(conc)) {
			scanErr = err
		}
		if !errors.Is(scanErr, context.Canceled) {
			t.Errorf("conc %d: cancelled scan: %v", conc, scanErr)
		}
	}
}

// TestScanConcurrentOrder compares concurrent scans of many files with the
// sequential scan, and checks that breaking out of the loop stops every
// reader goroutine.
func TestScanConcurrentOrder(t *testing.T) {
	sch := schema.NewStruct(schema.NewField("k", schema.Primitive(schema.Long), true), schema.NewField("s", schema.Primitive(schema.String), true))
	f := newScanFixture(t, sch, nil, nil, nil)
	var adds []*txlog.Add
	for i := range 30 {
		var rows []value.Row
		for j := range 1000 + 37*i {
			rows = append(rows, value.Row{int64(i*100000 + j), strings.Repeat("x", j%7)})
		}
		adds = append(adds, f.file(fmt.Sprintf("%03d", i), rows...))
	}
	f.commit(adds...)
	tbl := f.open()
	want := ids(t, scanAll(t, tbl, WithScanConcurrency(1)), 0)
	if len(want) != 30*1000+37*435 || !slices.IsSorted(want) {
		t.Fatalf("sequential scan: %d rows, sorted %v", len(want), slices.IsSorted(want))
	}
	for _, conc := range []int{2, 4, 16, 64} {
		got := ids(t, scanAll(t, tbl, WithScanConcurrency(conc)), 0)
		if !slices.Equal(got, want) {
			t.Errorf("concurrency %d: %d rows, order differs from the sequential scan", conc, len(got))
		}
	}
	before := runtime.NumGoroutine()
	for range 5 {
		n := 0
		for _, err := range tbl.Scan(context.Background(), WithScanConcurrency(8)) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 1500 {
				break
			}
		}
	}
	// Readers exit when the scan's iterator returns. Other goroutines of the
	// test binary (timers, idle connections) come and go, so allow them a
	// moment; a leaked reader would stay blocked for good.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if after > before {
		t.Errorf("%d goroutines after breaking out of scans, %d before", after, before)
	}
}

// TestScanEmpty covers a table without files and files with no records.
func TestScanEmpty(t *testing.T) {
	sch := schema.NewStruct(schema.NewField("v", schema.Primitive(schema.Long), true))
	f := newScanFixture(t, sch, nil, nil, nil)
	f.commit()
	if rows := scanAll(t, f.open()); len(rows) != 0 {
		t.Errorf("empty table yields %d rows", len(rows))
	}
	empty := f.file("empty")
	f.commit(empty)
	var st ScanStats
	if rows := scanAll(t, f.open(), WithFilter(Col("v").IsNull()), WithScanStats(&st)); len(rows) != 0 || st.FilesSkipped != 1 {
		t.Errorf("empty file: %d rows, %+v", len(rows), st)
	}
	if rows := scanAll(t, f.open(), WithScanStats(&st)); len(rows) != 0 || st.FilesRead != 1 {
		t.Errorf("empty file without filter: %d rows, %+v", len(rows), st)
	}
}
