package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/internal/testsupport"
	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// sparkValue encodes a parquetio value as the Spark oracle does (see
// internal/testsupport/spark_oracle.py), for the types these tests use.
func sparkValue(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case int64:
		return json.Number(fmt.Sprint(x))
	case time.Time:
		return x.UTC().Format("2006-01-02T15:04:05.000000")
	}
	return v
}

func sparkRows(rows []value.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		vals := make([]any, len(r))
		for j, v := range r {
			vals[j] = sparkValue(v)
		}
		b, _ := json.Marshal(vals)
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

func sparkResultRows(res *testsupport.SparkResult) []string {
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		b, _ := json.Marshal(r)
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

// loadProtocol returns the protocol of the table at dir.
func loadProtocol(t *testing.T, dir string) *txlog.Protocol {
	t.Helper()
	return loadSnapshot(t, dir).Protocol()
}

// loadSnapshot returns the latest snapshot of the table at dir.
func loadSnapshot(t *testing.T, dir string) *txlog.Snapshot {
	t.Helper()
	store, err := objectstore.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := txlog.Load(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func sparkProtocol(p *txlog.Protocol) string {
	r, w := slices.Clone(p.ReaderFeatures), slices.Clone(p.WriterFeatures)
	slices.Sort(r)
	slices.Sort(w)
	if p.MinReaderVersion < 3 {
		r = nil
	}
	return fmt.Sprintf("(%d,%d) reader %v writer %v", p.MinReaderVersion, p.MinWriterVersion, r, w)
}

// TestSparkReadsDeltakitTables (issue 18 item 0): tables deltakit creates
// with NOT NULL columns plus each (3,7) feature it writes are read by
// Spark to the rows written, and their protocol is the one Spark's own
// CREATE TABLE writes for the same schema and properties.
func TestSparkReadsDeltakitTables(t *testing.T) {
	spark := testsupport.Spark(t)
	ctx := context.Background()
	long, str, ntz := prim(schema.Long), prim(schema.String), prim(schema.TimestampNTZ)
	t0 := time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)
	cases := []struct {
		name  string
		sch   *schema.StructType
		ddl   string
		props map[string]string
		rows  []value.Row
		ctas  bool // created with its rows in one commit (a draft), not Create + AppendRows
		// alter is set after the rows by SetProperties, and on Spark's
		// table by ALTER TABLE SET TBLPROPERTIES.
		alter map[string]string
	}{
		{"NOT NULL + timestamp_ntz", schema.NewStruct(field("id", long, false), field("t", ntz, true)), "id BIGINT NOT NULL, t TIMESTAMP_NTZ", nil,
			[]value.Row{{int64(1), t0}, {int64(2), nil}}, false, nil},
		{"CREATE TABLE AS SELECT: NOT NULL + timestamp_ntz + deletion vectors", schema.NewStruct(field("id", long, false), field("t", ntz, true)), "id BIGINT NOT NULL, t TIMESTAMP_NTZ",
			map[string]string{"delta.enableDeletionVectors": "true"}, []value.Row{{int64(1), t0}, {int64(2), nil}, {int64(3), t0.Add(time.Minute)}}, true, nil},
		{"NOT NULL + deletion vectors", schema.NewStruct(field("id", long, false), field("s", str, true)), "id BIGINT NOT NULL, s STRING",
			map[string]string{"delta.enableDeletionVectors": "true"}, []value.Row{{int64(1), "a"}, {int64(2), nil}}, false, nil},
		{"NOT NULL + appendOnly", schema.NewStruct(field("id", long, false), field("s", str, true)), "id BIGINT NOT NULL, s STRING",
			map[string]string{"delta.appendOnly": "true"}, []value.Row{{int64(3), "c"}}, false, nil},
		{"NOT NULL + appendOnly + deletion vectors + timestamp_ntz", schema.NewStruct(field("id", long, false), field("t", ntz, true)),
			"id BIGINT NOT NULL, t TIMESTAMP_NTZ", map[string]string{"delta.appendOnly": "true", "delta.enableDeletionVectors": "true"},
			[]value.Row{{int64(4), t0.Add(time.Hour)}}, false, nil},
		{"CHECK constraint + deletion vectors", schema.NewStruct(field("id", long, false), field("s", str, true)), "id BIGINT NOT NULL, s STRING",
			map[string]string{"delta.enableDeletionVectors": "true", "delta.constraints.idpos": "id > 0"}, []value.Row{{int64(5), "e"}}, false, nil},
		{"column mapping enabled by SET TBLPROPERTIES", schema.NewStruct(field("id", long, false), field("s", str, true)), "id BIGINT NOT NULL, s STRING",
			nil, []value.Row{{int64(6), "f"}, {int64(7), nil}}, false, map[string]string{"delta.columnMapping.mode": "name"}},
		{"column mapping enabled by SET TBLPROPERTIES + deletion vectors", schema.NewStruct(field("id", long, false), field("s", str, true)), "id BIGINT NOT NULL, s STRING",
			map[string]string{"delta.enableDeletionVectors": "true"}, []value.Row{{int64(8), "g"}}, false, map[string]string{"delta.columnMapping.mode": "name"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var tbl *Table
			if tc.ctas {
				d, err := NewDraft(ctx, dir, tc.sch, WithProperties(tc.props))
				if err != nil {
					t.Fatal(err)
				}
				adds, err := d.WriteFiles(ctx, tc.rows)
				if err != nil {
					t.Fatal(err)
				}
				if tbl, _, err = d.Commit(ctx, adds); err != nil || tbl.Version() != 0 {
					t.Fatalf("create with rows: %v, %v; want version 0", tbl, err)
				}
			} else {
				var err error
				if tbl, err = Create(ctx, dir, tc.sch, WithProperties(tc.props)); err != nil {
					t.Fatal(err)
				}
				if tbl, err = tbl.AppendRows(ctx, tc.rows); err != nil {
					t.Fatal(err)
				}
			}
			if tc.alter != nil {
				var err error
				if tbl, err = tbl.SetProperties(ctx, tc.alter); err != nil {
					t.Fatal(err)
				}
			}
			res, err := spark.Read(dir, nil)
			if err != nil {
				t.Fatalf("Spark read of deltakit's table (protocol %s): %v", sparkProtocol(tbl.Snapshot().Protocol()), err)
			}
			if got, want := sparkResultRows(res), sparkRows(tc.rows); !slices.Equal(got, want) {
				t.Errorf("Spark read %v, want %v", got, want)
			}

			// Spark's own CREATE TABLE for the same schema and properties.
			// CHECK constraints are added with ALTER TABLE, as Spark wants.
			sdir := t.TempDir() + "/spark"
			var props, checks []string
			for _, k := range slices.Sorted(func(yield func(string) bool) {
				for k := range tc.props {
					if !yield(k) {
						return
					}
				}
			}) {
				if name, ok := strings.CutPrefix(k, "delta.constraints."); ok {
					checks = append(checks, fmt.Sprintf("ALTER TABLE delta.`%s` ADD CONSTRAINT %s CHECK (%s)", sdir, name, tc.props[k]))
					continue
				}
				props = append(props, fmt.Sprintf("'%s' = '%s'", k, tc.props[k]))
			}
			stmt := fmt.Sprintf("CREATE TABLE delta.`%s` (%s) USING delta", sdir, tc.ddl)
			if len(props) > 0 {
				stmt += " TBLPROPERTIES (" + strings.Join(props, ", ") + ")"
			}
			if tc.alter != nil {
				var kv []string
				for _, k := range slices.Sorted(maps.Keys(tc.alter)) {
					kv = append(kv, fmt.Sprintf("'%s' = '%s'", k, tc.alter[k]))
				}
				checks = append(checks, fmt.Sprintf("ALTER TABLE delta.`%s` SET TBLPROPERTIES (%s)", sdir, strings.Join(kv, ", ")))
			}
			for _, s := range append([]string{stmt}, checks...) {
				if _, err := spark.SQL(s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			// The same protocol as Spark's CREATE TABLE (and ALTER TABLE
			// SET TBLPROPERTIES): one protocol decision,
			// txlog.UpgradeProtocol, for both.
			ours, theirs := tbl.Snapshot().Protocol(), loadProtocol(t, sdir)
			if got, want := sparkProtocol(ours), sparkProtocol(theirs); got != want {
				t.Errorf("deltakit protocol %s, Spark's %s", got, want)
			}
			if tc.alter != nil {
				// Column mapping enabled: Spark keeps the names as physical
				// names too, and sets the same maxColumnId.
				sm := loadSnapshot(t, sdir).Metadata()
				ss, err := schema.Parse(sm.SchemaString)
				if err != nil {
					t.Fatal(err)
				}
				walkFields(ss, func(f *schema.StructField) {
					if pn := f.Metadata[schema.MetaColumnMappingName]; pn != f.Name {
						t.Errorf("Spark's field %s: physical name %v", f.Name, pn)
					}
				})
				k := PropColumnMappingMaxColumnID
				if got, want := tbl.Snapshot().Metadata().Configuration[k], sm.Configuration[k]; got != want {
					t.Errorf("deltakit %s=%s, Spark's %s", k, got, want)
				}
			}
		})
	}
}

// TestSparkCheckConstraintAgreement (issue 18 item 0b): on a table with a
// CHECK constraint, Spark and deltakit refuse the same violating rows
// (including a NULL, which Spark treats as a violation), and a valid row
// written by deltakit is read back by Spark.
func TestSparkCheckConstraintAgreement(t *testing.T) {
	spark := testsupport.Spark(t)
	ctx := context.Background()
	dir := t.TempDir()
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("s", prim(schema.String), true))
	tbl, err := Create(ctx, dir, sch, WithProperties(map[string]string{"delta.constraints.idpos": "id > 0"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		sql string
		row value.Row
	}{{"-5", value.Row{int64(-5), "a"}}, {"0", value.Row{int64(0), "b"}}, {"NULL", value.Row{nil, "c"}}} {
		_, serr := spark.SQL(fmt.Sprintf("INSERT INTO delta.`%s` VALUES (%s, 'x')", dir, bad.sql))
		var se *testsupport.SparkError
		if !errors.As(serr, &se) || se.Condition != "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES" {
			t.Errorf("Spark insert of id %s: %v, want DELTA_VIOLATE_CONSTRAINT_WITH_VALUES", bad.sql, serr)
		}
		_, err := tbl.AppendRows(ctx, []value.Row{bad.row})
		var cv *ConstraintViolationError
		if !errors.As(err, &cv) || cv.Name != "idpos" {
			t.Errorf("deltakit append of id %s: %v, want idpos violated", bad.sql, err)
		}
	}
	nt, err := tbl.AppendRows(ctx, []value.Row{{int64(7), "ok"}})
	if err != nil {
		t.Fatal(err)
	}
	if nt.Version() != 1 {
		t.Errorf("version %d after one valid append, want 1 (refused writes committed nothing)", nt.Version())
	}
	res, err := spark.Read(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sparkResultRows(res), sparkRows([]value.Row{{int64(7), "ok"}}); !slices.Equal(got, want) {
		t.Errorf("Spark read %v, want %v", got, want)
	}
}
