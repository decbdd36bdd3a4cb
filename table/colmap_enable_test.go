package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// enableSchema has a struct column and structs inside an array and a map:
// every field at any depth gets an id and its name as physical name.
func enableSchema() *schema.StructType {
	long, str := prim(schema.Long), prim(schema.String)
	return schema.NewStruct(
		field("id", long, false),
		field("city", str, true),
		field("v", prim(schema.Double), true),
		field("s", schema.NewStruct(field("a", long, true), field("b", str, true)), true),
		field("tags", &schema.ArrayType{ElementType: schema.NewStruct(field("k", str, true)), ContainsNull: true}, true),
		field("m", &schema.MapType{KeyType: str, ValueType: schema.NewStruct(field("n", long, true)), ValueContainsNull: true}, true),
	)
}

func enableRows(from, to int) []value.Row {
	var rows []value.Row
	for i := from; i < to; i++ {
		id := int64(i)
		rows = append(rows, value.Row{id, []string{"ams", "ber"}[i%2], float64(i) / 4,
			value.Row{id * 10, fmt.Sprint("b", i)},
			[]any{value.Row{fmt.Sprint("k", i)}},
			[]value.MapEntry{{Key: fmt.Sprint("m", i), Value: value.Row{id}}}})
	}
	return rows
}

// TestEnableColumnMapping: SET TBLPROPERTIES delta.columnMapping.mode=name
// on a table without column mapping is one metaData+protocol commit that
// gives every field a fresh id and its name as physical name; the rows
// written before read back unchanged (from the same files), and an append,
// a rename and a drop work afterwards.
func TestEnableColumnMapping(t *testing.T) {
	ctx := context.Background()
	// Ids in the order fields are assigned (children before their parent).
	wantIDs := map[string]int64{"id": 1, "city": 2, "v": 3, "a": 4, "b": 5, "s": 6, "k": 7, "tags": 8, "n": 9, "m": 10}
	tests := []struct {
		name        string
		partitioned bool
		props       map[string]string
		want        txlog.Protocol
	}{
		// (1,2) plus columnMapping: reader 2, and writer 7 listing
		// exactly the three features ((2,5) would imply more).
		{"legacy (1,2) to (2,7)", false, nil, txlog.Protocol{MinReaderVersion: 2, MinWriterVersion: 7,
			WriterFeatures: []string{"appendOnly", "columnMapping", "invariants"}}},
		{"partitioned, (1,7) with change data feed", true, map[string]string{"delta.enableChangeDataFeed": "true"},
			txlog.Protocol{MinReaderVersion: 2, MinWriterVersion: 7, WriterFeatures: []string{"appendOnly", "changeDataFeed", "columnMapping", "invariants"}}},
		{"table features: columnMapping added to both lists", false, map[string]string{"delta.enableDeletionVectors": "true"},
			txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping", "deletionVectors"},
				WriterFeatures: []string{"appendOnly", "columnMapping", "deletionVectors", "invariants"}}},
		{"partitioned, table features, checkpoints before and after", true, map[string]string{"delta.enableDeletionVectors": "true",
			"delta.enableChangeDataFeed": "true", "delta.checkpointInterval": "2", "delta.checkpoint.writeStatsAsStruct": "true"},
			txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"columnMapping", "deletionVectors"},
				WriterFeatures: []string{"appendOnly", "changeDataFeed", "columnMapping", "deletionVectors", "invariants"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []Option{WithStore(objectstore.NewMem(t.Name())), WithProperties(tc.props), WithSyncCheckpoints()}
			if tc.partitioned {
				opts = append(opts, WithPartitionColumns("city"))
			}
			tbl, err := Create(ctx, "", enableSchema(), opts...)
			if err != nil {
				t.Fatal(err)
			}
			rows := enableRows(0, 6)
			if tbl, err = tbl.AppendRows(ctx, rows[:3]); err != nil {
				t.Fatal(err)
			}
			if tbl, err = tbl.AppendRows(ctx, rows[3:]); err != nil {
				t.Fatal(err)
			}
			files := livePathSet(tbl)
			before := tbl.Version()
			if tbl, err = tbl.SetProperties(ctx, map[string]string{txlog.PropColumnMappingMode: "name"}); err != nil {
				t.Fatal(err)
			}
			if tbl.Version() != before+1 {
				t.Fatalf("version %d, want %d", tbl.Version(), before+1)
			}
			// The commit: metaData, protocol, commitInfo; nothing else.
			var kinds []string
			for _, a := range commitActions(t, tbl.Store(), tbl.Version()) {
				switch {
				case a.Metadata != nil:
					kinds = append(kinds, "metaData")
				case a.Protocol != nil:
					kinds = append(kinds, "protocol")
				case a.CommitInfo != nil:
					kinds = append(kinds, "commitInfo")
					if a.CommitInfo.Operation != SetPropertiesOperation ||
						a.CommitInfo.OperationParameters["properties"] != `{"delta.columnMapping.mode":"name"}` {
						t.Errorf("commitInfo %s %v", a.CommitInfo.Operation, a.CommitInfo.OperationParameters)
					}
				default:
					kinds = append(kinds, fmt.Sprintf("%+v", a))
				}
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, []string{"commitInfo", "metaData", "protocol"}) {
				t.Errorf("commit actions %v", kinds)
			}
			p := tbl.Snapshot().Protocol()
			if p.MinReaderVersion != tc.want.MinReaderVersion || p.MinWriterVersion != tc.want.MinWriterVersion ||
				!slices.Equal(p.ReaderFeatures, tc.want.ReaderFeatures) || !slices.Equal(p.WriterFeatures, tc.want.WriterFeatures) {
				t.Errorf("protocol %+v, want %+v", *p, tc.want)
			}
			got := map[string]int64{}
			walkFields(tbl.Schema(), func(f *schema.StructField) {
				id, _ := f.FieldID()
				got[f.Name] = id
				if pn := f.Metadata[schema.MetaColumnMappingName]; pn != f.Name {
					t.Errorf("field %s: physical name %v, want its name", f.Name, pn)
				}
			})
			if !maps.Equal(got, wantIDs) {
				t.Errorf("ids %v, want %v", got, wantIDs)
			}
			conf := tbl.Snapshot().Metadata().Configuration
			if conf[PropColumnMappingMaxColumnID] != "10" || conf[txlog.PropColumnMappingMode] != "name" {
				t.Errorf("configuration %v", conf)
			}
			for k, v := range tc.props {
				if conf[k] != v {
					t.Errorf("property %s=%q lost (%q)", k, v, conf[k])
				}
			}
			// The rows written before, from the same files, read back
			// unchanged (also by a fresh Open, and with a filter that
			// skips files by their stats).
			if now := livePathSet(tbl); !maps.Equal(now, files) {
				t.Errorf("files %v, want %v (no rewrite)", now, files)
			}
			assertRows(t, scanAll(t, tbl), rows)
			reopened, err := Open(ctx, "", WithStore(tbl.Store()))
			if err != nil {
				t.Fatal(err)
			}
			if tc.props["delta.checkpointInterval"] != "" && len(listKeys(t, tbl.Store(), txlog.LogPrefix+"00000000000000000002.checkpoint")) == 0 {
				t.Errorf("no checkpoint at version 2 (before enabling, read by the reopened table)")
			}
			assertRows(t, scanAll(t, reopened), rows)
			assertRows(t, scanAll(t, reopened, WithFilter(Col("id").Ge(int64(4)))), rows[4:])
			// An append, a rename (partition column and nested field too),
			// a drop.
			more := enableRows(6, 9)
			if tbl, err = tbl.AppendRows(ctx, more); err != nil {
				t.Fatal(err)
			}
			all := append(slices.Clone(rows), more...)
			assertRows(t, scanAll(t, tbl), all)
			for _, r := range [][2]string{{"v", "value"}, {"city", "town"}, {"s.b", "bee"}} {
				if tbl, err = tbl.RenameColumn(ctx, r[0], r[1]); err != nil {
					t.Fatal(err)
				}
			}
			if f := tbl.Schema().Field("town"); f == nil || f.PhysicalName("name") != "city" {
				t.Errorf("renamed town: %+v, want physical name city", f)
			}
			if tc.partitioned && !slices.Equal(tbl.PartitionColumns(), []string{"town"}) {
				t.Errorf("partition columns %v", tbl.PartitionColumns())
			}
			assertRows(t, scanAll(t, tbl), all)
			assertRows(t, scanAll(t, tbl, WithFilter(And(Col("town").Eq("ber"), Col("value").Gt(1.0)))),
				[]value.Row{all[5], all[7]})
			if tbl, err = tbl.DropColumn(ctx, "tags"); err != nil {
				t.Fatal(err)
			}
			var want []value.Row
			for _, r := range all {
				want = append(want, slices.Delete(slices.Clone(r), 4, 5))
			}
			assertRows(t, scanAll(t, tbl), want)
		})
	}
}

// livePathSet returns the table's live file paths as a set.
func livePathSet(tbl *Table) map[string]bool {
	out := map[string]bool{}
	for _, a := range tbl.Snapshot().Files() {
		out[a.Path] = true
	}
	return out
}

// TestColumnMappingModeChangeRefused: the mode changes Spark refuses on an
// existing table (none to id, name or id to none, name to id, id to name)
// are a *ColumnMappingModeChangeError naming the table, version and
// reason, and commit nothing; so is a RESTORE to a version before column
// mapping was enabled (it would set mode none again).
func TestColumnMappingModeChangeRefused(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, from, to string
		reason         string
	}{
		{"none to id", "", "id", "no Parquet field ids"},
		{"none (explicit) to id", "none", "ID", "no Parquet field ids"},
		{"name to none", "name", "none", "cannot leave column mapping"},
		{"id to none", "id", "none", "cannot leave column mapping"},
		{"name to id", "name", "id", "physical name in one mode"},
		{"id to name", "id", "name", "physical name in one mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var props map[string]string
			if tc.from != "" {
				props = map[string]string{txlog.PropColumnMappingMode: tc.from}
			}
			tbl, mem := maintTable(t, false, props)
			tbl = maintAppend(t, tbl, maintRowsFor(0, 4, "ams"))
			before := listKeys(t, mem, "")
			_, err := tbl.SetProperties(ctx, map[string]string{txlog.PropColumnMappingMode: tc.to})
			var me *ColumnMappingModeChangeError
			if !errors.Is(err, ErrColumnMappingModeChange) || !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &me) {
				t.Fatalf("error %v, want a *ColumnMappingModeChangeError", err)
			}
			from := tc.from
			if from == "" {
				from = "none"
			}
			if me.From != from || me.To != strings.ToLower(tc.to) || me.Version != 1 || me.Table != tbl.URI() ||
				!strings.Contains(me.Reason, tc.reason) {
				t.Errorf("error %+v", *me)
			}
			if msg := err.Error(); !strings.Contains(msg, tbl.URI()) || !strings.Contains(msg, "at version 1") || !strings.Contains(msg, tc.reason) {
				t.Errorf("message %q does not name the table, version and reason", msg)
			}
			if after := listKeys(t, mem, ""); !slices.Equal(after, before) {
				t.Errorf("store changed: %v -> %v", before, after)
			}
		})
	}
	t.Run("restore to before enabling", func(t *testing.T) {
		tbl, mem := maintTable(t, false, nil)
		tbl = maintAppend(t, tbl, maintRowsFor(0, 4, "ams"))
		tbl, err := tbl.SetProperties(ctx, map[string]string{txlog.PropColumnMappingMode: "name"})
		if err != nil {
			t.Fatal(err)
		}
		tbl = maintAppend(t, tbl, maintRowsFor(4, 2, "ber"))
		before := listKeys(t, mem, "")
		_, _, err = tbl.Restore(ctx, ToVersion(1))
		var me *ColumnMappingModeChangeError
		if !errors.As(err, &me) || me.From != "name" || me.To != "none" || me.Version != 3 {
			t.Fatalf("restore: %v, want a *ColumnMappingModeChangeError from name to none at version 3", err)
		}
		if after := listKeys(t, mem, ""); !slices.Equal(after, before) {
			t.Errorf("store changed: %v -> %v", before, after)
		}
	})
	t.Run("setting the mode it has, or none on a table without it", func(t *testing.T) {
		for _, c := range [][2]string{{"", "none"}, {"name", "Name"}, {"id", "id"}} {
			var props map[string]string
			if c[0] != "" {
				props = map[string]string{txlog.PropColumnMappingMode: c[0]}
			}
			tbl, _ := maintTable(t, false, props)
			sch := tbl.Snapshot().Metadata().SchemaString
			nt, err := tbl.SetProperties(ctx, map[string]string{txlog.PropColumnMappingMode: c[1]})
			if err != nil {
				t.Fatalf("%s -> %s: %v", c[0], c[1], err)
			}
			if nt.Snapshot().Metadata().SchemaString != sch {
				t.Errorf("%s -> %s changed the schema", c[0], c[1])
			}
		}
	})
}
