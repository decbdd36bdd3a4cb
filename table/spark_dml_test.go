package table

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/value"
)

// Spark read-back of DELETE, UPDATE and RESTORE (issue 12): the tables of
// writeDMLInteropTables (local filesystem; the oracle's Spark has no S3A
// jars, so the MinIO tables are read by delta-rs only) and DML on deletion
// vector tables Spark wrote (the corpus) are read by Spark, at the latest
// version and by time travel, to the reference rows computed in Go from the
// inputs; Spark's DESCRIBE HISTORY reads our commitInfo. All requests of a
// test go to the package's one Spark session in one batch.

// sparkRefRow renders one row's values for comparison with Spark's: integers
// and floating point values print alike whatever their width.
func sparkRefRow(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		parts[i] = fmt.Sprintf("%v", v)
	}
	return strings.Join(parts, "|")
}

func sparkRefRows(rows []value.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = sparkRefRow(r)
	}
	slices.Sort(out)
	return out
}

// sparkRendered renders Spark's rows as sparkRefRows does deltakit's:
// integer columns as int64, floating point columns as float64 (Spark's
// "10.0" and Go's 10 are the same double).
func sparkRendered(t *testing.T, res *testsupport.SparkResult) []string {
	t.Helper()
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		vals := make([]any, len(r))
		for j, v := range r {
			n, ok := v.(json.Number)
			if !ok || j >= len(res.Schema) {
				vals[j] = v
				continue
			}
			var err error
			switch res.Schema[j].Type {
			case "tinyint", "smallint", "int", "bigint":
				vals[j], err = n.Int64()
			case "float", "double":
				vals[j], err = n.Float64()
			default:
				vals[j] = v
			}
			if err != nil {
				t.Fatalf("Spark value %q of column %s: %v", n, res.Schema[j].Name, err)
			}
		}
		out[i] = sparkRefRow(vals)
	}
	slices.Sort(out)
	return out
}

// sparkColumnNames returns the names of Spark's result columns.
func sparkColumnNames(res *testsupport.SparkResult) []string {
	var names []string
	for _, c := range res.Schema {
		names = append(names, c.Name)
	}
	return names
}

// sparkHistoryEntry is one row of Spark's DESCRIBE HISTORY.
type sparkHistoryEntry struct {
	operation string
	params    map[string]string
	metrics   map[string]string
}

// sparkHistory indexes Spark's DESCRIBE HISTORY rows by version; maps come
// as [key, value] lists (spark_oracle.py).
func sparkHistory(t *testing.T, res *testsupport.SparkResult) map[int64]sparkHistoryEntry {
	t.Helper()
	col := map[string]int{}
	for i, c := range res.Schema {
		col[c.Name] = i
	}
	for _, c := range []string{"version", "operation", "operationParameters", "operationMetrics"} {
		if _, ok := col[c]; !ok {
			t.Fatalf("DESCRIBE HISTORY has no column %s: %v", c, sparkColumnNames(res))
		}
	}
	asMap := func(v any) map[string]string {
		m := map[string]string{}
		pairs, _ := v.([]any)
		for _, p := range pairs {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				t.Fatalf("DESCRIBE HISTORY map entry %v", p)
			}
			m[fmt.Sprint(kv[0])] = fmt.Sprint(kv[1])
		}
		return m
	}
	out := map[int64]sparkHistoryEntry{}
	for _, r := range res.Rows {
		n, ok := r[col["version"]].(json.Number)
		if !ok {
			t.Fatalf("DESCRIBE HISTORY version %v", r[col["version"]])
		}
		v, err := n.Int64()
		if err != nil {
			t.Fatal(err)
		}
		op, _ := r[col["operation"]].(string)
		out[v] = sparkHistoryEntry{op, asMap(r[col["operationParameters"]]), asMap(r[col["operationMetrics"]])}
	}
	return out
}

// checkSparkHistory checks that Spark's history of a table at version
// latest has every DML commit with its operation, predicate and metrics.
func checkSparkHistory(t *testing.T, res *testsupport.SparkResult, latest int64, commits []dmlCommit) {
	t.Helper()
	h := sparkHistory(t, res)
	if len(h) != int(latest)+1 {
		t.Errorf("DESCRIBE HISTORY has %d versions, want %d", len(h), latest+1)
	}
	for _, c := range commits {
		e, ok := h[c.res.Version]
		if !ok {
			t.Errorf("DESCRIBE HISTORY has no version %d (%s)", c.res.Version, c.op)
			continue
		}
		if e.operation != c.op {
			t.Errorf("version %d: Spark's operation %q, want %q", c.res.Version, e.operation, c.op)
		}
		if c.op == "DELETE" || c.op == "UPDATE" {
			if _, ok := e.params["predicate"]; !ok {
				t.Errorf("version %d (%s): operationParameters %v without predicate", c.res.Version, c.op, e.params)
			}
		}
		if len(c.res.Metrics) == 0 {
			t.Errorf("version %d (%s): no metrics returned", c.res.Version, c.op)
		}
		for k, want := range c.res.Metrics {
			if got, ok := e.metrics[k]; !ok || got != want {
				t.Errorf("version %d (%s): Spark's operationMetrics[%s] = %q (present %v), want %q", c.res.Version, c.op, k, got, ok, want)
			}
		}
	}
}

// sparkCheck is one request of a batch and what its answer must be.
type sparkCheck struct {
	name  string
	req   map[string]any
	check func(t *testing.T, res *testsupport.SparkResult)
}

// wantSparkRows checks Spark's rows against want, and the column names.
func wantSparkRows(want []value.Row, cols []string) func(*testing.T, *testsupport.SparkResult) {
	return func(t *testing.T, res *testsupport.SparkResult) {
		t.Helper()
		if got := sparkColumnNames(res); !slices.Equal(got, cols) {
			t.Errorf("Spark's columns %v, want %v", got, cols)
		}
		got, w := sparkRendered(t, res), sparkRefRows(want)
		if !slices.Equal(got, w) {
			t.Errorf("Spark read %d rows, want %d:\n got %v\nwant %v", len(got), len(w), got, w)
		}
	}
}

// runSparkChecks sends every check's request in one batch and checks the
// answers, each in a subtest.
func runSparkChecks(t *testing.T, spark *testsupport.SparkOracle, checks []sparkCheck) {
	t.Helper()
	reqs := make([]map[string]any, len(checks))
	for i, c := range checks {
		reqs[i] = c.req
	}
	start := time.Now()
	results, errs, err := spark.Batch(reqs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Spark answered %d requests in %v", len(reqs), time.Since(start).Round(time.Millisecond))
	for i, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("Spark: %v", errs[i])
			}
			t.Logf("Spark took %d ms", results[i].Millis)
			c.check(t, results[i])
		})
	}
}

// scanAt reads tbl's store at version v with deltakit.
func scanAt(t *testing.T, tbl *Table, v int64) []string {
	t.Helper()
	old, err := Open(context.Background(), "", WithStore(tbl.Store()), AtVersion(v))
	if err != nil {
		t.Fatal(err)
	}
	return sparkRefRows(scanAll(t, old))
}

// TestSparkReadsDML: Spark reads every DELETE/UPDATE/RESTORE table of
// writeDMLInteropTables (deletion vectors on and off, partitioned or not)
// to the reference rows, at the latest version and at the version before
// the last DML commit (versionAsOf; deltakit reads every earlier version),
// and its DESCRIBE HISTORY returns our operations, predicates and metrics.
func TestSparkReadsDML(t *testing.T) {
	spark := testsupport.Spark(t)
	root := t.TempDir()
	dirs := map[string]string{}
	tables := writeDMLInteropTables(t, func(name string) objectstore.Store {
		dir := filepath.Join(root, name)
		s, err := objectstore.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		dirs[name] = dir
		return s
	})
	cols := []string{"id", "city", "v"}
	var checks []sparkCheck
	for _, it := range tables {
		dir := dirs[it.name]
		// deltakit reads the same rows, now and by time travel.
		if got, want := sparkRefRows(scanAll(t, it.tbl)), sparkRefRows(it.want); !slices.Equal(got, want) {
			t.Errorf("%s: deltakit read %v, want %v", it.name, got, want)
		}
		checks = append(checks, sparkCheck{it.name + "/latest", testsupport.ReadRequest(dir, nil), wantSparkRows(it.want, cols)})
		versions := slices.Sorted(maps.Keys(it.at))
		for _, v := range versions {
			if got, want := scanAt(t, it.tbl, v), sparkRefRows(it.at[v]); !slices.Equal(got, want) {
				t.Errorf("%s: deltakit read version %d as %v, want %v", it.name, v, got, want)
			}
		}
		// Spark reads one earlier version, the last one before the latest
		// commit, when a DML commit made it (each read costs Spark seconds;
		// the versions before are plain appends): the first DELETE's
		// deletion vectors before the second merges them, the DELETE and
		// UPDATE that the RESTORE undoes.
		if v := versions[len(versions)-1]; v >= it.commits[0].res.Version {
			checks = append(checks, sparkCheck{fmt.Sprintf("%s/versionAsOf=%d", it.name, v), testsupport.ReadRequest(dir, &v), wantSparkRows(it.at[v], cols)})
		}
		checks = append(checks, sparkCheck{it.name + "/history", testsupport.SQLRequest(fmt.Sprintf("DESCRIBE HISTORY delta.`%s`", dir)),
			func(t *testing.T, res *testsupport.SparkResult) {
				checkSparkHistory(t, res, it.tbl.Version(), it.commits)
			}})
	}
	runSparkChecks(t, spark, checks)
}

// copyCorpusTable copies the corpus table name into a new temp dir (the
// corpus is read-only) and returns the copy's root. Files named with
// Spark's test-only deletion vector prefix (spark__table-with-dv-large,
// see TestCorpusScan) get the spec's name deletion_vector_<uuid>.bin, the
// one their descriptors name, so that Spark and deltakit read the copy as
// any table.
func copyCorpusTable(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join(testsupport.CorpusDir(t), name)
	if _, err := os.Stat(src); err != nil {
		testsupport.Absent(t, "corpus table %s: %v", name, err)
	}
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if rel == "expected.json" || rel == "expected.md" {
			return nil
		}
		target := filepath.Join(dst, filepath.Dir(rel), strings.TrimPrefix(d.Name(), "test%dv%prefix-"))
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSparkCorpusDVDML: deletion vector tables that Spark wrote (corpus)
// are copied, get a DELETE whose predicate hits rows of files that already
// have a deletion vector (the vectors merge) and an UPDATE, and are read
// back by deltakit and Spark to the reference: the rows the corpus's
// expected.md states (count cross-checked with expected.json), minus and
// updated per the predicates in Go. Spark also reads the version between
// our DELETE and UPDATE (versionAsOf) and our commits in DESCRIBE HISTORY.
func TestSparkCorpusDVDML(t *testing.T) {
	spark := testsupport.Spark(t)
	ctx := context.Background()
	exps := map[string]testsupport.CorpusExpected{}
	for _, e := range testsupport.CorpusTables(t, testsupport.CorpusDir(t)) {
		exps[e.Table] = e
	}
	ints := func(from, to int, except ...int) []int64 {
		var out []int64
		for i := from; i <= to; i++ {
			if !slices.Contains(except, i) {
				out = append(out, int64(i))
			}
		}
		return out
	}
	cases := []struct {
		table string
		col   string
		int32 bool    // the column is integer, else long
		live  []int64 // the rows at the corpus's latest version (expected.md)
		where Expr
		drop  func(int64) bool
		// the UPDATE: rows where upd holds get set(value)
		upd Expr
		set map[string]Value
		// updRef: the reference's new value of a row the UPDATE matches, ok
		// false when it does not match
		updRef func(int64) (int64, bool)
		// the same DELETE and UPDATE in Spark SQL
		deleteSQL, updateSQL string
	}{
		{
			// v1 removes 0, 180, 300, 700, 1800; v2 re-inserts 300, 700; v3
			// removes 300, 250, 350, 900, 1353, 1567, 1800; v4 re-inserts
			// 900, 1567. Every one of its 22 files spans most of 0..1999, so
			// value < 400 hits the files with DVs.
			table: "spark__table-with-dv-large", col: "value", int32: true,
			live:  ints(0, 1999, 0, 180, 250, 300, 350, 1353, 1800),
			where: Or(Col("value").Lt(400), Col("value").In(1000, 1500)),
			drop:  func(v int64) bool { return v < 400 || v == 1000 || v == 1500 },
			upd:   Col("value").Between(1700, 1750),
			set:   map[string]Value{"value": Plus(Col("value"), 10000)},
			updRef: func(v int64) (int64, bool) {
				return v + 10000, v >= 1700 && v <= 1750
			},
			deleteSQL: "value < 400 OR value IN (1000, 1500)",
			updateSQL: "SET value = value + 10000 WHERE value BETWEEN 1700 AND 1750",
		},
		{
			// ids 0..9 in two files (0..4, 5..9); v1 deleted 0 and 1 by DV.
			table: "kernel__basic-dv-no-checkpoint", col: "id",
			live:      ints(2, 9),
			where:     Col("id").In(3, 7),
			drop:      func(v int64) bool { return v == 3 || v == 7 },
			upd:       Col("id").Ge(8),
			set:       map[string]Value{"id": Times(Col("id"), 10)},
			updRef:    func(v int64) (int64, bool) { return v * 10, v >= 8 },
			deleteSQL: "id IN (3, 7)",
			updateSQL: "SET id = id * 10 WHERE id >= 8",
		},
		{
			// ids 0..49 in one file; v1..v3 deleted 0, 7, 14, each a new DV.
			table: "golden__log-replay-dv-key-cases", col: "id",
			live:      ints(0, 49, 0, 7, 14),
			where:     Or(Col("id").Eq(21), Col("id").Gt(45)),
			drop:      func(v int64) bool { return v == 21 || v > 45 },
			upd:       Col("id").Lt(5),
			set:       map[string]Value{"id": Plus(Col("id"), 100)},
			updRef:    func(v int64) (int64, bool) { return v + 100, v < 5 },
			deleteSQL: "id = 21 OR id > 45",
			updateSQL: "SET id = id + 100 WHERE id < 5",
		},
	}
	row := func(int32col bool, v int64) value.Row {
		if int32col {
			return value.Row{int32(v)}
		}
		return value.Row{v}
	}
	var checks []sparkCheck
	for _, c := range cases {
		exp, ok := exps[c.table]
		if !ok {
			testsupport.Absent(t, "corpus table %s has no expected.json", c.table)
		}
		if exp.RowsLatest == nil || *exp.RowsLatest != int64(len(c.live)) {
			t.Fatalf("%s: expected.json rows_latest %v, the reference has %d rows", c.table, exp.RowsLatest, len(c.live))
		}
		dir := copyCorpusTable(t, c.table)
		tbl, err := Open(ctx, dir)
		if err != nil {
			t.Fatalf("%s: %v", c.table, err)
		}
		var before, afterDelete, after []value.Row
		for _, v := range c.live {
			before = append(before, row(c.int32, v))
			if c.drop(v) {
				continue
			}
			afterDelete = append(afterDelete, row(c.int32, v))
			if nv, ok := c.updRef(v); ok {
				v = nv
			}
			after = append(after, row(c.int32, v))
		}
		if got, want := sparkRefRows(scanAll(t, tbl)), sparkRefRows(before); !slices.Equal(got, want) {
			t.Fatalf("%s: deltakit read the copy as %v, want %v", c.table, got, want)
		}
		base := tbl.Version()
		tbl, dres, err := tbl.Delete(ctx, c.where)
		if err != nil {
			t.Fatalf("%s: delete: %v", c.table, err)
		}
		if dres.DeletionVectorsUpdated == 0 {
			t.Errorf("%s: delete merged no deletion vector: %+v", c.table, dres)
		}
		if want := int64(len(before) - len(afterDelete)); dres.DeletedRows != want {
			t.Errorf("%s: DeletedRows %d, want %d", c.table, dres.DeletedRows, want)
		}
		tbl, ures, err := tbl.Update(ctx, c.upd, c.set)
		if err != nil {
			t.Fatalf("%s: update: %v", c.table, err)
		}
		if !ures.Committed || ures.UpdatedRows == 0 {
			t.Errorf("%s: update: %+v", c.table, ures)
		}
		if got, want := sparkRefRows(scanAll(t, tbl)), sparkRefRows(after); !slices.Equal(got, want) {
			t.Errorf("%s: deltakit read %v after DELETE and UPDATE, want %v", c.table, got, want)
		}
		if got, want := scanAt(t, tbl, base+1), sparkRefRows(afterDelete); !slices.Equal(got, want) {
			t.Errorf("%s: deltakit read version %d as %v, want %v", c.table, base+1, got, want)
		}
		cols := []string{c.col}
		commits := []dmlCommit{{"DELETE", dres}, {"UPDATE", ures}}
		latest := tbl.Version()
		// Spark runs the same DELETE and UPDATE on another copy: its rows
		// confirm the reference, its metrics are the ones ours must match.
		sdir := copyCorpusTable(t, c.table)
		checks = append(checks,
			sparkCheck{c.table + "/spark-delete", testsupport.SQLRequest(fmt.Sprintf("DELETE FROM delta.`%s` WHERE %s", sdir, c.deleteSQL)), func(*testing.T, *testsupport.SparkResult) {}},
			sparkCheck{c.table + "/spark-update", testsupport.SQLRequest(fmt.Sprintf("UPDATE delta.`%s` %s", sdir, c.updateSQL)), func(*testing.T, *testsupport.SparkResult) {}},
			sparkCheck{c.table + "/spark-dml-rows", testsupport.ReadRequest(sdir, nil), wantSparkRows(after, cols)},
			sparkCheck{c.table + "/spark-dml-metrics", testsupport.SQLRequest(fmt.Sprintf("DESCRIBE HISTORY delta.`%s`", sdir)),
				func(t *testing.T, res *testsupport.SparkResult) {
					compareSparkDMLMetrics(t, sparkHistory(t, res), base, commits)
				}},
		)
		checks = append(checks,
			sparkCheck{c.table + "/latest", testsupport.ReadRequest(dir, nil), wantSparkRows(after, cols)},
			sparkCheck{fmt.Sprintf("%s/versionAsOf=%d", c.table, base+1), testsupport.ReadRequest(dir, ptr(base+1)), wantSparkRows(afterDelete, cols)},
			sparkCheck{c.table + "/history", testsupport.SQLRequest(fmt.Sprintf("DESCRIBE HISTORY delta.`%s`", dir)),
				func(t *testing.T, res *testsupport.SparkResult) { checkSparkHistory(t, res, latest, commits) }},
		)
	}
	runSparkChecks(t, spark, checks)
}

// compareSparkDMLMetrics compares the metrics of our DML commits with those
// of Spark's own DELETE and UPDATE of the same rows (spark: Spark's history
// of its copy, whose commits follow version base in the same order): row
// counts, files removed and deletion vector counts. Added files are
// compared for DELETE only (an UPDATE's new files follow Spark's task
// split); bytes and times are not compared.
func compareSparkDMLMetrics(t *testing.T, spark map[int64]sparkHistoryEntry, base int64, commits []dmlCommit) {
	t.Helper()
	for i, c := range commits {
		e, ok := spark[base+1+int64(i)]
		if !ok || e.operation != c.op {
			t.Fatalf("Spark's version %d: %+v, want its %s", base+1+int64(i), e, c.op)
		}
		keys := []string{"numDeletedRows", "numUpdatedRows", "numCopiedRows", "numRemovedFiles",
			"numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated"}
		if c.op == "DELETE" {
			keys = append(keys, "numAddedFiles")
		}
		for _, k := range keys {
			want, inSpark := e.metrics[k]
			got, inOurs := c.res.Metrics[k]
			if inSpark != inOurs || got != want {
				t.Errorf("%s operationMetrics[%s]: ours %q (present %v), Spark's %q (present %v)", c.op, k, got, inOurs, want, inSpark)
			}
		}
		t.Logf("%s: ours %v\nSpark's %v", c.op, c.res.Metrics, e.metrics)
	}
}
