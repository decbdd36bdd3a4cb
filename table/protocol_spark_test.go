package table

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// protocolsByVersion returns the protocol in force at each version of the
// table at dir, read from its JSON commits (the latest protocol action at
// or before the version), independently of deltakit's log replay.
func protocolsByVersion(t *testing.T, dir string) []txlog.Protocol {
	t.Helper()
	var out []txlog.Protocol
	var cur txlog.Protocol
	for v := 0; ; v++ {
		f, err := os.Open(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
		if os.IsNotExist(err) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var a struct {
				Protocol *txlog.Protocol `json:"protocol"`
			}
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("version %d: %v", v, err)
			}
			if a.Protocol != nil {
				cur = *a.Protocol
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, cur)
	}
}

// interopStepsScript reads the table at argv's path at each of its
// versions with delta-rs (its DataFusion reader: 1.6.6's to_pyarrow_table
// reads column-mapped columns as null) and with pyarrow.parquet (each live
// file delta-rs lists, its columns found by the physical names of the
// schema), and prints per version the logical columns and the rows as
// values joined by "|" (None as "<nil>", as sparkRefRow prints nil).
const interopStepsScript = `
import sys, json, deltalake, pyarrow as pa, pyarrow.parquet as pq
args = json.loads(sys.argv[1])
def cell(v):
    return "<nil>" if v is None else str(v)
out = {}
for v in args["versions"]:
    res = {}
    try:
        dt = deltalake.DeltaTable(args["path"], version=v)
        names = [f.name for f in dt.schema().fields]
        res["columns"] = names
        t = pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t").read_all())
        res["deltars_columns"] = t.column_names
        res["deltars"] = sorted("|".join(cell(r[c]) for c in names) for r in t.to_pylist())
        phys = {f.name: f.metadata.get("delta.columnMapping.physicalName", f.name) for f in dt.schema().fields}
        rows = []
        for uri in dt.file_uris():
            for r in pq.read_table(uri).to_pylist():
                rows.append("|".join(cell(r.get(phys[c])) for c in names))
        res["pyarrow"] = sorted(rows)
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {e}"
    out[str(v)] = res
print(json.dumps(out))
`

// TestSparkColumnMappingProtocolTwin (issue 38): on a table Spark created
// with delta.columnMapping.mode = name (protocol (2,7) listing
// appendOnly, columnMapping and invariants: reader version 2 covers column
// mapping without reader features), deltakit renames a column, drops one,
// turns on two writer-only features (change data feed, in-commit
// timestamps), DELETEs, UPDATEs, MERGEs and ingests (the Draft append
// deltactl ingest commits), and Spark runs the same statements on a twin
// table Spark created alike. After each step the protocol of our table is
// Spark's: reader version 2 stays 2. Then both enable deletion vectors and
// are at (3,7) with the same features (columnMapping now in readerFeatures
// too). Spark (time travel), delta-rs and pyarrow read every version our
// steps wrote to the rows the test computes from the inputs. Two Spark
// batches: the two creates, then the twin's steps and the reads.
func TestSparkColumnMappingProtocolTwin(t *testing.T) {
	spark := testsupport.Spark(t)
	py := testsupport.Python(t)
	ctx := context.Background()
	root := t.TempDir()
	ours, twin := filepath.Join(root, "ours"), filepath.Join(root, "twin")

	// The rows, as id, s, n, extra.
	var rows []value.Row
	var vals []string
	for i := int64(1); i <= 6; i++ {
		rows = append(rows, value.Row{i, fmt.Sprint("s", i), i * 100, fmt.Sprint("x", i)})
		vals = append(vals, fmt.Sprintf("(%dL, 's%d', %dL, 'x%d')", i, i, i*100, i))
	}
	var setup []map[string]any
	for _, dir := range []string{ours, twin} {
		setup = append(setup,
			testsupport.SQLRequest(fmt.Sprintf("CREATE TABLE delta.`%s` (id BIGINT, s STRING, n BIGINT, extra STRING) USING delta "+
				"TBLPROPERTIES ('delta.columnMapping.mode' = 'name')", dir)),
			testsupport.SQLRequest(fmt.Sprintf("INSERT INTO delta.`%s` VALUES %s", dir, strings.Join(vals, ", "))))
	}
	if _, errs, err := spark.Batch(setup); err != nil {
		t.Fatal(err)
	} else {
		for i, e := range errs {
			if e != nil {
				t.Fatalf("Spark %v: %v", setup[i]["sql"], e)
			}
		}
	}
	// The premise: Spark's column-mapping table is at reader version 2.
	start := protocolsByVersion(t, ours)
	if want := "(2,7) reader [] writer [appendOnly columnMapping invariants]"; len(start) != 2 || sparkProtocol(&start[1]) != want {
		t.Fatalf("Spark created %d versions, protocol %v; want 2 versions at %s", len(start), start, want)
	}

	tbl, err := Open(ctx, ours, WithSyncCheckpoints())
	if err != nil {
		t.Fatal(err)
	}
	long, str := schema.Primitive(schema.Long), schema.Primitive(schema.String)
	rowSchema := schema.NewStruct(schema.NewField("id", long, true), schema.NewField("s2", str, true), schema.NewField("n", long, true))
	// cols are the logical columns after each step; the model rows keep
	// id, s, n, extra and are projected to them.
	type step struct {
		name string
		sql  string // the twin's statement, %s its path
		do   func(*Table) (*Table, error)
		cols []string
		// model changes the reference rows (nil: no data change).
		model func([]value.Row) []value.Row
	}
	afterDrop := []string{"id", "s2", "n"}
	steps := []step{
		{"rename-column", "ALTER TABLE delta.`%s` RENAME COLUMN s TO s2",
			func(t *Table) (*Table, error) { return t.RenameColumn(ctx, "s", "s2") }, []string{"id", "s2", "n", "extra"}, nil},
		{"drop-column", "ALTER TABLE delta.`%s` DROP COLUMN extra",
			func(t *Table) (*Table, error) { return t.DropColumn(ctx, "extra") }, afterDrop, nil},
		{"set-properties delta.enableChangeDataFeed", "ALTER TABLE delta.`%s` SET TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')",
			func(t *Table) (*Table, error) {
				return t.SetProperties(ctx, map[string]string{txlog.PropEnableChangeDataFeed: "true"})
			}, afterDrop, nil},
		{"set-properties delta.enableInCommitTimestamps", "ALTER TABLE delta.`%s` SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')",
			func(t *Table) (*Table, error) {
				return t.SetProperties(ctx, map[string]string{txlog.PropEnableInCommitTimestamps: "true"})
			}, afterDrop, nil},
		{"DELETE", "DELETE FROM delta.`%s` WHERE id = 2",
			func(t *Table) (*Table, error) { nt, _, err := t.Delete(ctx, Col("id").Eq(int64(2))); return nt, err }, afterDrop,
			func(rs []value.Row) []value.Row {
				return slices.DeleteFunc(rs, func(r value.Row) bool { return r[0] == int64(2) })
			}},
		{"UPDATE", "UPDATE delta.`%s` SET n = n + 1000 WHERE id = 3",
			func(t *Table) (*Table, error) {
				nt, _, err := t.Update(ctx, Col("id").Eq(int64(3)), map[string]Value{"n": Plus(Col("n"), int64(1000))})
				return nt, err
			}, afterDrop,
			func(rs []value.Row) []value.Row {
				for _, r := range rs {
					if r[0] == int64(3) {
						r[2] = r[2].(int64) + 1000
					}
				}
				return rs
			}},
		{"MERGE", "MERGE INTO delta.`%s` t USING (SELECT * FROM VALUES (4L, 'm4', 4000L), (10L, 'm10', 10L) AS s(id, s2, n)) s " +
			"ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
			func(t *Table) (*Table, error) {
				src := MergeRows(rowSchema, []value.Row{{int64(4), "m4", int64(4000)}, {int64(10), "m10", int64(10)}})
				nt, _, err := t.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll().WhenNotMatched().InsertAll())
				return nt, err
			}, afterDrop,
			func(rs []value.Row) []value.Row {
				for _, r := range rs {
					if r[0] == int64(4) {
						r[1], r[2] = "m4", int64(4000)
					}
				}
				return append(rs, value.Row{int64(10), "m10", int64(10), nil})
			}},
		{"ingest", "INSERT INTO delta.`%s` VALUES (20L, 'i20', 20L), (21L, 'i21', 21L)",
			func(t *Table) (*Table, error) {
				// What deltactl ingest commits on an existing table.
				d, err := t.DraftAppend(ctx, rowSchema)
				if err != nil {
					return nil, err
				}
				adds, err := d.WriteFiles(ctx, []value.Row{{int64(20), "i20", int64(20)}, {int64(21), "i21", int64(21)}})
				if err != nil {
					return nil, err
				}
				nt, _, err := d.Commit(ctx, adds)
				return nt, err
			}, afterDrop,
			func(rs []value.Row) []value.Row {
				return append(rs, value.Row{int64(20), "i20", int64(20), nil}, value.Row{int64(21), "i21", int64(21), nil})
			}},
		{"set-properties delta.enableDeletionVectors", "ALTER TABLE delta.`%s` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')",
			func(t *Table) (*Table, error) {
				return t.SetProperties(ctx, map[string]string{txlog.PropEnableDeletionVectors: "true"})
			}, afterDrop, nil},
	}

	// Our steps, each one commit; the reference rows after each.
	model := rows
	versions := make([]int64, len(steps))
	want := make([][]value.Row, len(steps))
	var twinSQL []map[string]any
	for i, s := range steps {
		before := tbl.Version()
		if tbl, err = s.do(tbl); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if tbl.Version() != before+1 {
			t.Fatalf("%s: version %d, want %d (one commit)", s.name, tbl.Version(), before+1)
		}
		versions[i] = tbl.Version()
		if s.model != nil {
			model = s.model(model)
		}
		for _, r := range model {
			pr := value.Row{r[0], r[1], r[2]}
			if len(s.cols) == 4 {
				pr = append(pr, r[3])
			}
			want[i] = append(want[i], pr)
		}
		twinSQL = append(twinSQL, testsupport.SQLRequest(fmt.Sprintf(s.sql, twin)))
	}

	// Spark: the twin's steps, then reads of every version of ours and of
	// the twin's result, in one batch.
	var reqs []map[string]any
	reqs = append(reqs, twinSQL...)
	for _, v := range versions {
		reqs = append(reqs, testsupport.ReadRequest(ours, &v))
	}
	reqs = append(reqs, testsupport.ReadRequest(twin, nil))
	results, errs, err := spark.Batch(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if e != nil {
			t.Fatalf("Spark %v: %v", reqs[i], e)
		}
	}

	// delta-rs and pyarrow read every version of ours.
	argJSON, _ := json.Marshal(map[string]any{"path": ours, "versions": versions})
	var rs map[string]struct {
		Error          string   `json:"error"`
		Columns        []string `json:"columns"`
		DeltaRSColumns []string `json:"deltars_columns"`
		DeltaRS        []string `json:"deltars"`
		PyArrow        []string `json:"pyarrow"`
	}
	if out := testsupport.RunPython(t, py, interopStepsScript, string(argJSON)); json.Unmarshal(out, &rs) != nil {
		t.Fatalf("delta-rs/pyarrow output %s", out)
	}

	oursP, twinP := protocolsByVersion(t, ours), protocolsByVersion(t, twin)
	if len(twinP) != len(start)+len(steps) {
		t.Fatalf("Spark's twin has %d versions, want %d (one commit per step)", len(twinP), len(start)+len(steps))
	}
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			v := versions[i]
			got, spk := sparkProtocol(&oursP[v]), sparkProtocol(&twinP[len(start)+i])
			if got != spk {
				t.Errorf("deltakit's protocol %s, Spark's %s", got, spk)
			}
			if s.name != "set-properties delta.enableDeletionVectors" && oursP[v].MinReaderVersion != 2 {
				t.Errorf("deltakit's reader version %d, want 2 (no reader feature added)", oursP[v].MinReaderVersion)
			}
			wantRows := sparkRefRows(want[i])
			wantSparkRows(want[i], s.cols)(t, results[len(twinSQL)+i])
			r := rs[fmt.Sprint(v)]
			if r.Error != "" {
				t.Fatalf("delta-rs/pyarrow at version %d: %s", v, r.Error)
			}
			if !slices.Equal(r.Columns, s.cols) || !slices.Equal(r.DeltaRSColumns, s.cols) {
				t.Errorf("delta-rs columns %v / %v, want %v", r.Columns, r.DeltaRSColumns, s.cols)
			}
			if !slices.Equal(r.DeltaRS, wantRows) {
				t.Errorf("delta-rs read\n %v\nwant\n %v", r.DeltaRS, wantRows)
			}
			if !slices.Equal(r.PyArrow, wantRows) {
				t.Errorf("pyarrow read\n %v\nwant\n %v", r.PyArrow, wantRows)
			}
		})
	}
	// Deletion vectors on both: (3,7), the same features, columnMapping a
	// reader feature now.
	last := oursP[versions[len(versions)-1]]
	if last.MinReaderVersion != 3 || last.MinWriterVersion != 7 ||
		!slices.Equal(sortedFeatureNames(last.ReaderFeatures), []string{"columnMapping", "deletionVectors"}) {
		t.Errorf("after enabling deletion vectors: %s, want (3,7) with reader features columnMapping, deletionVectors", sparkProtocol(&last))
	}
	// Spark's twin ends with the rows ours has.
	t.Run("Spark's twin", func(t *testing.T) {
		wantSparkRows(want[len(want)-1], afterDrop)(t, results[len(results)-1])
	})
}

func sortedFeatureNames(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
