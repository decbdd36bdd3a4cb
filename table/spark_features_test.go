package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// Writer features against tables Spark creates (issue 15, items 5, 7, 8):
// for every row of txlog.WriterFeatures, Spark creates a table with the
// feature on and five rows; deltakit then appends five rows, deletes id 2,
// updates id 3 and MERGEs (updating id 3, deleting id 4, inserting id 12). A supported feature must take every write (or refuse
// the one write documented as refused, by name) and Spark must read the
// rows the reference computes; a refused feature must be refused by name
// before any file is written under the table. For row tracking enabled,
// deltakit also optimizes (copy-on-write and with deletion vectors), and
// Spark's _metadata.row_id must stay unique and the same for every row
// (updated, merged, copied and compacted ones too), and Spark's
// _metadata.row_id/_metadata.row_commit_version must equal what the test's
// own reading of the files computes (stableIDs: updated rows at the version
// of deltakit's last change of them, the others at the version they had).
// On the changeDataFeed table, Spark's table_changes must read deltakit's
// versions to the change rows computed here. Two Spark batches: create,
// then read.

// featureCase is one Spark-created table.
type featureCase struct {
	name    string // table name: the feature, or the feature and a variant
	feature string
	ddl     string // columns and clauses after the table name; "" for the default
	props   string // TBLPROPERTIES body
	// refusedOps lists the writes refused on a supported feature, by name
	// ("update", "delete"), with the feature they are refused for.
	refusedOps map[string]string
	post       string // SQL run after CREATE, %s the table path
	rowIDs     bool   // compare _metadata.row_id before and after, and with stableIDs
	optimize   bool   // deltakit also runs OPTIMIZE (after more appends)
}

func featureCases() []featureCase {
	def := "(id BIGINT, v STRING) USING delta"
	var cases []featureCase
	for _, f := range txlog.WriterFeatures() {
		c := featureCase{name: f.Name, feature: f.Name, ddl: def, props: fmt.Sprintf("'delta.feature.%s' = 'supported'", f.Name)}
		switch f.Name {
		case txlog.FeatureAppendOnly:
			c.props = "'delta.appendOnly' = 'true'"
			c.refusedOps = map[string]string{"delete": "appendOnly", "update": "appendOnly"}
		case txlog.FeatureInvariants:
			c.ddl, c.props = "(id BIGINT NOT NULL, v STRING) USING delta", ""
		case txlog.FeatureCheckConstraints:
			c.props, c.post = "", "ALTER TABLE delta.`%s` ADD CONSTRAINT idpos CHECK (id > 0)"
		case txlog.FeatureGeneratedColumns:
			c.ddl, c.props = "(id BIGINT, v STRING, g BIGINT GENERATED ALWAYS AS (id * 2)) USING delta", ""
		case txlog.FeatureColumnDefaults:
			c.ddl = "(id BIGINT, v STRING DEFAULT 'd') USING delta"
		case txlog.FeatureIdentityColumns:
			c.ddl, c.props = "(id BIGINT, v STRING, n BIGINT GENERATED ALWAYS AS IDENTITY) USING delta", ""
		case txlog.FeatureChangeDataFeed:
			c.props = "'delta.enableChangeDataFeed' = 'true'"
		case txlog.FeatureColumnMapping:
			c.props = "'delta.columnMapping.mode' = 'name'"
		case txlog.FeatureDeletionVectors:
			c.props = "'delta.enableDeletionVectors' = 'true'"
		case txlog.FeatureV2Checkpoint:
			c.props = "'delta.checkpointPolicy' = 'v2'"
		case txlog.FeatureInCommitTimestamp:
			c.props = "'delta.enableInCommitTimestamps' = 'true'"
		case txlog.FeatureTypeWidening:
			c.props = "'delta.enableTypeWidening' = 'true'"
		case txlog.FeatureIcebergCompatV1:
			c.props = "'delta.columnMapping.mode' = 'name', 'delta.enableIcebergCompatV1' = 'true'"
		case txlog.FeatureIcebergCompatV2:
			c.props = "'delta.columnMapping.mode' = 'name', 'delta.enableIcebergCompatV2' = 'true'"
		case txlog.FeatureVariantType:
			c.ddl, c.props = "(id BIGINT, v STRING, x VARIANT) USING delta", ""
		case txlog.FeatureClustering:
			c.ddl, c.props, c.optimize = "(id BIGINT, v STRING) USING delta CLUSTER BY (id)", "", true
		case txlog.FeatureRowTracking:
			// Row tracking enabled, with deletion vectors and without
			// (copy-on-write): rewritten rows keep their ids (rowtracking.go).
			c.props = "'delta.enableRowTracking' = 'true', 'delta.enableDeletionVectors' = 'true'"
			c.rowIDs, c.optimize = true, true
			cases = append(cases,
				featureCase{name: "rowTracking-copy-on-write", feature: f.Name, ddl: def, props: "'delta.enableRowTracking' = 'true'",
					rowIDs: true, optimize: true},
				featureCase{name: "rowTracking-supported-only", feature: f.Name, ddl: def, props: "'delta.feature.rowTracking' = 'supported'"})
		}
		cases = append(cases, c)
	}
	return cases
}

// listFiles returns every file under dir (relative paths), sorted.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// rowIDsSQL selects Spark's row ids and row commit versions by id.
const rowIDsSQL = "SELECT _metadata.row_id, id, _metadata.row_commit_version FROM delta.`%s`"

// rowIDsByID maps id to Spark's _metadata.row_id and
// _metadata.row_commit_version from rowIDsSQL.
func rowIDsByID(t *testing.T, res *testsupport.SparkResult) map[int64]stableID {
	t.Helper()
	out := map[int64]stableID{}
	for _, r := range res.Rows {
		rid, err1 := r[0].(json.Number).Int64()
		id, err2 := r[1].(json.Number).Int64()
		ver, err3 := r[2].(json.Number).Int64()
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("row id row %v", r)
		}
		if _, dup := out[id]; dup {
			t.Fatalf("id %d twice", id)
		}
		out[id] = stableID{rid, ver}
	}
	return out
}

func TestFeatureTable(t *testing.T) {
	spark := testsupport.Spark(t)
	ctx := context.Background()
	root := t.TempDir()
	cases := featureCases()
	dirs := map[string]string{}
	var reqs []map[string]any
	var reqCase []string
	for _, c := range cases {
		dir := filepath.Join(root, c.name)
		dirs[c.name] = dir
		props := ""
		if c.props != "" {
			props = " TBLPROPERTIES (" + c.props + ")"
		}
		reqs = append(reqs, testsupport.SQLRequest(fmt.Sprintf("CREATE TABLE delta.`%s` %s%s", dir, c.ddl, props)))
		reqCase = append(reqCase, c.name)
		if c.post != "" {
			reqs = append(reqs, testsupport.SQLRequest(fmt.Sprintf(c.post, dir)))
			reqCase = append(reqCase, c.name)
		}
		cols := "id, v"
		if c.feature == txlog.FeatureVariantType {
			cols = "id, v, x"
		}
		vals := "(1, 's1'), (2, 's2'), (3, 's3'), (4, 's4'), (5, 's5')"
		if c.feature == txlog.FeatureVariantType {
			vals = "(1, 's1', parse_json('1')), (2, 's2', parse_json('2')), (3, 's3', parse_json('3')), (4, 's4', parse_json('4')), (5, 's5', parse_json('5'))"
		}
		reqs = append(reqs, testsupport.SQLRequest(fmt.Sprintf("INSERT INTO delta.`%s` (%s) VALUES %s", dir, cols, vals)))
		reqCase = append(reqCase, c.name)
		if c.rowIDs {
			reqs = append(reqs, testsupport.SQLRequest(fmt.Sprintf(rowIDsSQL, dir)))
			reqCase = append(reqCase, c.name+"/rowids")
		}
	}
	results, errs, err := spark.Batch(reqs)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]map[int64]stableID{}
	for i, name := range reqCase {
		if errs[i] != nil {
			t.Logf("%s: Spark refused %v: %v", name, reqs[i]["sql"], errs[i])
			continue
		}
		if base, ok := strings.CutSuffix(name, "/rowids"); ok {
			before[base] = rowIDsByID(t, results[i])
		}
	}
	// A table is usable when its CREATE and INSERT both succeeded.
	usable := map[string]bool{}
	for i := 0; i < len(reqCase); i++ {
		name := reqCase[i]
		if strings.HasSuffix(name, "/rowids") {
			continue
		}
		if _, ok := usable[name]; !ok {
			usable[name] = true
		}
		if errs[i] != nil {
			usable[name] = false
		}
	}

	supportOf := map[string]txlog.WriterFeatureSupport{}
	for _, f := range txlog.WriterFeatures() {
		supportOf[f.Name] = f.Support
	}
	// want holds the reference rows after deltakit's writes.
	type outcome struct {
		want []value.Row
		ids  map[int64]stableID // stableIDs after deltakit's writes (rowIDs cases)
		// changes are the change rows of versions from to to (deltakit's).
		changes  []value.Row
		from, to int64
	}
	outcomes := map[string]*outcome{}
	for _, c := range cases {
		t.Run(c.name+"/deltakit", func(t *testing.T) {
			if !usable[c.name] {
				t.Skipf("Spark 4.2/delta-spark 4.4 could not create a %s table (%v)", c.name, supportOf[c.feature])
			}
			dir := dirs[c.name]
			filesBefore := listFiles(t, dir)
			refusedBy := func(err error, feature string) bool {
				var fe *txlog.UnsupportedFeatureError
				return errors.As(err, &fe) && slices.Contains(fe.Features, feature)
			}
			// Only-inactive features are active in every table of featureCases.
			refused := supportOf[c.feature] != txlog.WriterSupported
			tbl, err := Open(ctx, dir)
			var nt *Table
			if err == nil {
				nt, err = tbl.AppendRows(ctx, []value.Row{{int64(6), "s6"}, {int64(7), "s7"}, {int64(8), "s8"}, {int64(9), "s9"}, {int64(10), "s10"}})
			} else if !refused {
				t.Fatalf("open: %v", err)
			}
			if refused {
				// Another helper may make the feature writable: then the
				// append must have worked and the table row say so.
				if err == nil {
					t.Fatalf("%s is %v in the table, but deltakit appended", c.feature, supportOf[c.feature])
				}
				if !refusedBy(err, c.feature) && !refusedBy(err, txlog.FeatureColumnMapping) {
					t.Fatalf("append: %v, want refused naming %s", err, c.feature)
				}
				if after := listFiles(t, dir); !slices.Equal(after, filesBefore) {
					t.Fatalf("refused append changed the files:\nbefore %v\nafter  %v", filesBefore, after)
				}
				t.Logf("refused as it should: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			want := []value.Row{{int64(1), "s1"}, {int64(2), "s2"}, {int64(3), "s3"}, {int64(4), "s4"}, {int64(5), "s5"},
				{int64(6), "s6"}, {int64(7), "s7"}, {int64(8), "s8"}, {int64(9), "s9"}, {int64(10), "s10"}}
			tbl = nt
			// changes is the change data feed of deltakit's writes (id, v,
			// _change_type, _commit_version), checked through Spark's
			// table_changes on the changeDataFeed table.
			var changes []value.Row
			for _, r := range want[5:] {
				changes = append(changes, value.Row{r[0], r[1], ChangeInsert, tbl.Version()})
			}
			firstVersion := tbl.Version()
			files := listFiles(t, dir)
			nt, _, err = tbl.Delete(ctx, Col("id").Eq(int64(2)))
			if f, ok := c.refusedOps["delete"]; ok {
				if !refusedBy(err, f) && !(f == "appendOnly" && errors.Is(err, ErrAppendOnly)) {
					t.Fatalf("delete: %v, want refused for %s", err, f)
				}
				if after := listFiles(t, dir); !slices.Equal(after, files) {
					t.Fatalf("refused delete changed the files")
				}
			} else if err != nil {
				t.Fatalf("delete: %v", err)
			} else {
				tbl = nt
				changes = append(changes, value.Row{int64(2), "s2", ChangeDelete, tbl.Version()})
				want = slices.DeleteFunc(want, func(r value.Row) bool { return r[0] == int64(2) })
			}
			files = listFiles(t, dir)
			updVersion := int64(-1)
			nt, _, err = tbl.Update(ctx, Col("id").Eq(int64(3)), map[string]Value{"v": Lit("u3")})
			if f, ok := c.refusedOps["update"]; ok {
				if !refusedBy(err, f) && !(f == "appendOnly" && errors.Is(err, ErrAppendOnly)) {
					t.Fatalf("update: %v, want refused for %s", err, f)
				}
				if after := listFiles(t, dir); !slices.Equal(after, files) {
					t.Fatalf("refused update changed the files")
				}
			} else if err != nil {
				t.Fatalf("update: %v", err)
			} else {
				tbl = nt
				updVersion = nt.Version()
				changes = append(changes, value.Row{int64(3), "s3", ChangeUpdatePreimage, tbl.Version()},
					value.Row{int64(3), "u3", ChangeUpdatePostimage, tbl.Version()})
				for _, r := range want {
					if r[0] == int64(3) {
						r[1] = "u3"
					}
				}
			}
			// MERGE: id 3 updated, id 4 deleted, id 12 inserted; refused
			// where UPDATE is (a MERGE that updates rewrites rows).
			files = listFiles(t, dir)
			msrc := MergeRows(schema.NewStruct(schema.NewField("id", schema.Primitive(schema.Long), true),
				schema.NewField("v", schema.Primitive(schema.String), true)),
				[]value.Row{{int64(3), "m3"}, {int64(4), "del"}, {int64(12), "s12"}})
			var mres *MergeResult
			nt, mres, err = tbl.Merge(ctx, NewMerge(msrc, MergeOn("id")).
				WhenMatched().If(Source("v").Eq("del")).Delete().
				WhenMatched().Update(map[string]Value{"v": Source("v")}).
				WhenNotMatched().Insert(map[string]Value{"id": Source("id"), "v": Source("v")}))
			if f, ok := c.refusedOps["update"]; ok {
				if !refusedBy(err, f) && !(f == "appendOnly" && errors.Is(err, ErrAppendOnly)) {
					t.Fatalf("merge: %v, want refused for %s", err, f)
				}
				if after := listFiles(t, dir); !slices.Equal(after, files) {
					t.Fatalf("refused merge changed the files")
				}
			} else if err != nil {
				t.Fatalf("merge: %v", err)
			} else {
				if mres.UpdatedRows != 1 || mres.DeletedRows != 1 || mres.InsertedRows != 1 {
					t.Fatalf("merge: %+v", mres)
				}
				tbl = nt
				updVersion = tbl.Version() // id 3 was updated again
				for _, r := range want {
					if r[0] == int64(3) {
						changes = append(changes, value.Row{int64(3), r[1], ChangeUpdatePreimage, tbl.Version()},
							value.Row{int64(3), "m3", ChangeUpdatePostimage, tbl.Version()})
						r[1] = "m3"
					}
				}
				changes = append(changes, value.Row{int64(4), "s4", ChangeDelete, tbl.Version()},
					value.Row{int64(12), "s12", ChangeInsert, tbl.Version()})
				want = slices.DeleteFunc(want, func(r value.Row) bool { return r[0] == int64(4) })
				want = append(want, value.Row{int64(12), "s12"})
			}
			if c.optimize {
				nt, err = tbl.AppendRows(ctx, []value.Row{{int64(11), "s11"}})
				if err != nil {
					t.Fatal(err)
				}
				tbl = nt
				want = append(want, value.Row{int64(11), "s11"})
				var ids map[int64]stableID
				if c.rowIDs {
					ids = stableIDs(t, tbl)
				}
				var ores *OptimizeResult
				nt, ores, err = tbl.Optimize(ctx)
				if err != nil {
					t.Fatalf("optimize: %v", err)
				}
				tbl = nt
				if c.rowIDs {
					if !ores.Committed {
						t.Fatalf("optimize compacted nothing: %+v", ores)
					}
					if got := stableIDs(t, tbl); !maps.Equal(got, ids) {
						t.Fatalf("optimize changed stable row ids:\n got  %v\n want %v", got, ids)
					}
				}
			}
			checkFeatureLog(t, tbl, c)
			o := &outcome{want: want, changes: changes, from: firstVersion, to: tbl.Version()}
			if c.rowIDs {
				o.ids = stableIDs(t, tbl)
				if o.ids[3].version != updVersion {
					t.Errorf("updated id 3: row commit version %d, want the last update's (the MERGE's) %d", o.ids[3].version, updVersion)
				}
				old := before[c.name]
				for id, s := range o.ids {
					if prev, ok := old[id]; ok && prev.rowID != s.rowID {
						t.Errorf("id %d: Spark's row id %d before deltakit's writes, stableIDs %d after", id, prev.rowID, s.rowID)
					}
				}
			}
			outcomes[c.name] = o
		})
	}

	var checks []sparkCheck
	for _, c := range cases {
		o := outcomes[c.name]
		if o == nil {
			continue
		}
		dir := dirs[c.name]
		checks = append(checks, sparkCheck{c.name + "/spark-reads", testsupport.SQLRequest(fmt.Sprintf("SELECT id, v FROM delta.`%s`", dir)),
			wantSparkRows(o.want, []string{"id", "v"})})
		if c.feature == txlog.FeatureChangeDataFeed {
			checks = append(checks, sparkCheck{c.name + "/table_changes", testsupport.SQLRequest(fmt.Sprintf(
				"SELECT id, v, _change_type, _commit_version FROM table_changes('delta.`%s`', %d, %d)", dir, o.from, o.to)),
				wantSparkRows(o.changes, []string{"id", "v", "_change_type", "_commit_version"})})
		}
		if c.rowIDs {
			old := before[c.name]
			checks = append(checks, sparkCheck{c.name + "/row-ids", testsupport.SQLRequest(fmt.Sprintf(rowIDsSQL, dir)),
				func(t *testing.T, res *testsupport.SparkResult) {
					now := rowIDsByID(t, res)
					seen := map[int64]int64{}
					for id, s := range now {
						if other, dup := seen[s.rowID]; dup {
							t.Errorf("row id %d of ids %d and %d", s.rowID, other, id)
						}
						seen[s.rowID] = id
						if prev, ok := old[id]; ok && prev.rowID != s.rowID {
							t.Errorf("id %d: row id %d before deltakit's writes, %d after", id, prev.rowID, s.rowID)
						}
						if id != 3 && id <= 5 {
							if prev, ok := old[id]; ok && prev.version != s.version {
								t.Errorf("id %d (not updated): row commit version %d before deltakit's writes, %d after", id, prev.version, s.version)
							}
						}
					}
					if !maps.Equal(now, o.ids) {
						t.Errorf("Spark's row ids and commit versions\n %v\nthe files' (stableIDs)\n %v", now, o.ids)
					}
					if len(now) != len(o.want) {
						t.Errorf("%d row ids, want %d", len(now), len(o.want))
					}
				}})
		}
	}
	if len(checks) > 0 {
		runSparkChecks(t, spark, checks)
	}
}

// checkFeatureLog checks what deltakit's commits wrote for the feature:
// in-commit timestamps first and increasing, row ids on every add,
// the clustering domain kept.
func checkFeatureLog(t *testing.T, tbl *Table, c featureCase) {
	t.Helper()
	ctx := context.Background()
	snap := tbl.Snapshot()
	switch c.feature {
	case txlog.FeatureInCommitTimestamp:
		prev := int64(-1)
		for v := int64(0); v <= snap.Version(); v++ {
			actions, err := txlog.ReadCommit(ctx, tbl.Store(), v)
			if err != nil {
				t.Fatal(err)
			}
			ci := actions[0].CommitInfo
			if ci == nil || ci.InCommitTimestamp == nil {
				t.Fatalf("version %d: commitInfo with inCommitTimestamp is not first", v)
			}
			if *ci.InCommitTimestamp <= prev {
				t.Errorf("version %d: inCommitTimestamp %d not after %d", v, *ci.InCommitTimestamp, prev)
			}
			prev = *ci.InCommitTimestamp
		}
		if got := snap.CommitTimestamp().UnixMilli(); got != prev {
			t.Errorf("snapshot commit time %d, want the ICT %d", got, prev)
		}
	case txlog.FeatureRowTracking:
		hwm := int64(-1)
		if d, ok := snap.DomainMetadata("delta.rowTracking"); ok {
			var conf struct {
				HWM int64 `json:"rowIdHighWaterMark"`
			}
			if err := json.Unmarshal([]byte(d.Configuration), &conf); err != nil {
				t.Fatal(err)
			}
			hwm = conf.HWM
		}
		type span struct{ lo, hi int64 }
		var spans []span
		for _, f := range snap.Files() {
			if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
				t.Fatalf("file %s without row ids", f.Path)
			}
			n, _ := f.NumRecords()
			spans = append(spans, span{*f.BaseRowID, *f.BaseRowID + n - 1})
		}
		slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
		for i, s := range spans {
			if s.hi > hwm {
				t.Errorf("row ids up to %d above the high-water mark %d", s.hi, hwm)
			}
			if i > 0 && s.lo <= spans[i-1].hi {
				t.Errorf("row id ranges overlap: %v", spans)
			}
		}
	case txlog.FeatureClustering:
		d, ok := snap.DomainMetadata("delta.clustering")
		if !ok || !strings.Contains(d.Configuration, "id") {
			t.Errorf("clustering domain lost: %+v", d)
		}
	}
}
