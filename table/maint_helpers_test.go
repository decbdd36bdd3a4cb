package table

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// maintSchema is the schema of the maintenance tests' tables: id long not
// null, city string (the partition column when partitioned), v double.
func maintSchema() *schema.StructType {
	return schema.NewStruct(
		schema.NewField("id", schema.Primitive(schema.Long), false),
		schema.NewField("city", schema.Primitive(schema.String), true),
		schema.NewField("v", schema.Primitive(schema.Double), true),
	)
}

// maintRowsFor returns n rows with ids from start, cities cycling through
// cities.
func maintRowsFor(start, n int, cities ...string) []value.Row {
	rows := make([]value.Row, n)
	for i := range rows {
		id := int64(start + i)
		rows[i] = value.Row{id, cities[i%len(cities)], float64(id) / 4}
	}
	return rows
}

// maintTable creates a table in a fresh in-memory store.
func maintTable(t *testing.T, partitioned bool, props map[string]string) (*Table, *objectstore.Mem) {
	t.Helper()
	mem := objectstore.NewMem(t.Name())
	opts := []Option{WithStore(mem), WithTxnOptions(txlog.WithoutAutoCheckpoint())}
	if partitioned {
		opts = append(opts, WithPartitionColumns("city"))
	}
	if props != nil {
		opts = append(opts, WithProperties(props))
	}
	tbl, err := Create(context.Background(), "", maintSchema(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, mem
}

func maintAppend(t *testing.T, tbl *Table, rows []value.Row) *Table {
	t.Helper()
	nt, err := tbl.AppendRows(context.Background(), rows)
	if err != nil {
		t.Fatal(err)
	}
	return nt
}

// maintScan returns the table's rows rendered and sorted.
func maintScan(t *testing.T, tbl *Table) []string {
	t.Helper()
	var out []string
	for r, err := range tbl.Scan(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(r...))
	}
	slices.Sort(out)
	return out
}

// maintKeys lists every key in the store.
func maintKeys(t *testing.T, store objectstore.Store) []string {
	t.Helper()
	var keys []string
	for info, err := range store.List(context.Background(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	return keys
}

// maintLiveKeys returns the store keys of the live files of tbl.
func maintLiveKeys(tbl *Table) []string {
	var keys []string
	for _, f := range tbl.Snapshot().Files() {
		keys = append(keys, txlog.DecodePath(f.Path))
	}
	slices.Sort(keys)
	return keys
}

// maintAssertLive fails when a live file of tbl is missing from the store.
func maintAssertLive(t *testing.T, tbl *Table) {
	t.Helper()
	latest, err := tbl.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range maintLiveKeys(latest) {
		if _, err := latest.Store().Stat(context.Background(), k); err != nil {
			t.Errorf("live file %s: %v", k, err)
		}
	}
}

func maintAt(d time.Duration) func() time.Time {
	now := time.Now()
	return func() time.Time { return now.Add(d) }
}

// reopenAt opens tbl's store again at tbl's version with the clock now
// (WithClock), the clock Vacuum, CleanupLog and Optimize measure from.
func reopenAt(t *testing.T, tbl *Table, now func() time.Time) *Table {
	t.Helper()
	nt, err := Open(context.Background(), "", WithStore(tbl.Store()), AtVersion(tbl.Version()), WithClock(now), WithSyncCheckpoints())
	if err != nil {
		t.Fatal(err)
	}
	return nt
}
