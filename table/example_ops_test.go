package table_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/deltakit/deltakit/table"
)

// Reading is one row of the examples in this file.
type Reading struct {
	ID   int64  `delta:"id"`
	City string `delta:"city"`
	Temp int64  `delta:"temp"`
}

var readings = []Reading{{1, "Oslo", 3}, {2, "Rome", 18}, {3, "Oslo", -2}, {4, "Lima", 21}}

// newReadings creates a table of readings in a new temporary directory
// (removed by the returned func) with the table options opts.
func newReadings(ctx context.Context, opts ...table.Option) (*table.Table, func()) {
	dir, err := os.MkdirTemp("", "readings")
	if err != nil {
		log.Fatal(err)
	}
	sch, err := table.SchemaOf[Reading]()
	if err != nil {
		log.Fatal(err)
	}
	tbl, err := table.Create(ctx, dir, sch, opts...)
	if err != nil {
		log.Fatal(err)
	}
	if tbl, err = table.Append(ctx, tbl, readings); err != nil {
		log.Fatal(err)
	}
	return tbl, func() { os.RemoveAll(dir) }
}

// scanReadings returns the table's rows ordered by id.
func scanReadings(ctx context.Context, tbl *table.Table) []Reading {
	var out []Reading
	for r, err := range table.ScanAs[Reading](ctx, tbl) {
		if err != nil {
			log.Fatal(err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Reading) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Scan the rows untyped, as Rows in the order of the selected columns.
func ExampleTable_Scan() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	for row, err := range tbl.Scan(ctx, table.WithColumns("city", "temp"), table.WithFilter(table.Col("temp").Gt(10))) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(row...)
	}
	// Unordered output:
	// Rome 18
	// Lima 21
}

// DELETE the rows a predicate matches.
func ExampleTable_Delete() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	tbl, res, err := tbl.Delete(ctx, table.Col("city").Eq("Oslo"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", res.Version, "deleted", res.DeletedRows)
	fmt.Println(scanReadings(ctx, tbl))
	// Output:
	// version 2 deleted 2
	// [{2 Rome 18} {4 Lima 21}]
}

// UPDATE the rows a predicate matches, with a SET of arithmetic on columns.
func ExampleTable_Update() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	tbl, res, err := tbl.Update(ctx, table.Col("city").In("Oslo", "Lima"),
		map[string]table.Value{"temp": table.Plus(table.Col("temp"), 10)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("updated", res.UpdatedRows)
	fmt.Println(scanReadings(ctx, tbl))
	// Output:
	// updated 3
	// [{1 Oslo 13} {2 Rome 18} {3 Oslo 8} {4 Lima 31}]
}

// RESTORE the table to an earlier version's data, as a new version.
func ExampleTable_Restore() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	tbl, _, err := tbl.Delete(ctx, table.Col("id").Ge(2))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tbl.Version(), scanReadings(ctx, tbl))
	tbl, _, err = tbl.Restore(ctx, table.ToVersion(1))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tbl.Version(), scanReadings(ctx, tbl))
	// Output:
	// 2 [{1 Oslo 3}]
	// 3 [{1 Oslo 3} {2 Rome 18} {3 Oslo -2} {4 Lima 21}]
}

// Read the change data feed (delta.enableChangeDataFeed=true) of an
// UPDATE: the row before and after.
func ExampleTable_Changes() {
	ctx := context.Background()
	tbl, done := newReadings(ctx, table.WithProperties(map[string]string{"delta.enableChangeDataFeed": "true"}))
	defer done()
	tbl, _, err := tbl.Update(ctx, table.Col("id").Eq(2), map[string]table.Value{"temp": table.Lit(20)})
	if err != nil {
		log.Fatal(err)
	}
	feed, err := tbl.Changes(ctx, 2, -1)
	if err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, f := range feed.Schema().Fields {
		names = append(names, f.Name)
	}
	fmt.Println(names)
	var lines []string
	for row, err := range feed.Rows(ctx) {
		if err != nil {
			log.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(fmt.Sprintln(row[:5]...)))
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// [id city temp _change_type _commit_version _commit_timestamp]
	// 2 Rome 18 update_preimage 2
	// 2 Rome 20 update_postimage 2
}

// Schema evolution: an append of rows with a new column adds the column
// (WithSchemaEvolution); the earlier rows read it as null.
func ExampleWithSchemaEvolution() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	type WindReading struct {
		ID   int64  `delta:"id"`
		City string `delta:"city"`
		Temp int64  `delta:"temp"`
		Wind *int64 `delta:"wind"`
	}
	wind := int64(7)
	tbl, err := table.Append(ctx, tbl, []WindReading{{5, "Oslo", 1, &wind}}, table.WithSchemaEvolution())
	if err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, f := range tbl.Schema().Fields {
		names = append(names, f.Name)
	}
	fmt.Println(strings.Join(names, " "))
	for row, err := range tbl.Scan(ctx, table.WithFilter(table.Col("id").In(1, 5)), table.WithColumns("id", "wind")) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(row...)
	}
	// Unordered output:
	// id city temp wind
	// 1 <nil>
	// 5 7
}

// Drop a column of a table with column mapping: metadata only, no data file
// is rewritten.
func ExampleTable_DropColumn() {
	ctx := context.Background()
	tbl, done := newReadings(ctx, table.WithProperties(map[string]string{"delta.columnMapping.mode": "name"}))
	defer done()
	tbl, err := tbl.DropColumn(ctx, "temp")
	if err != nil {
		log.Fatal(err)
	}
	for row, err := range tbl.Scan(ctx, table.WithFilter(table.Col("id").Eq(2))) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(tbl.Schema().Fields), row)
	}
	// Output:
	// 2 [2 Rome]
}

// Set a table property: with delta.appendOnly=true a DELETE is refused.
func ExampleTable_SetProperties() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	tbl, err := tbl.SetProperties(ctx, map[string]string{"delta.appendOnly": "true"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tbl.Version(), tbl.Snapshot().Metadata().Configuration["delta.appendOnly"])
	_, _, err = tbl.Delete(ctx, table.Col("id").Eq(1))
	fmt.Println(errors.Is(err, table.ErrAppendOnly))
	// Output:
	// 2 true
	// true
}

// Compact small files (OPTIMIZE), then delete the files it replaced once the
// retention has passed (VACUUM). The table's clock (WithClock) is the one
// every operation reads, here moved 8 days on for VACUUM.
func ExampleTable_Optimize() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	tbl, err := table.Append(ctx, tbl, []Reading{{5, "Rome", 17}})
	if err != nil {
		log.Fatal(err)
	}
	tbl, res, err := tbl.Optimize(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("optimize: removed", res.FilesRemoved, "added", res.FilesAdded, "rows", res.Rows)

	later, err := table.Open(ctx, tbl.URI(), table.WithClock(func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }))
	if err != nil {
		log.Fatal(err)
	}
	vres, err := later.Vacuum(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("vacuum: deleted", len(vres.Files), "files; rows left", len(scanReadings(ctx, later)))
	// Output:
	// optimize: removed 2 added 1 rows 5
	// vacuum: deleted 2 files; rows left 5
}

// Check a table's log and files for consistency.
func ExampleVerify() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	rep, err := table.Verify(ctx, tbl.Store())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("version", rep.Version, "commits", rep.Commits, "files", rep.Files, "problems", len(rep.Problems))
	// Output:
	// version 1 commits 2 files 1 problems 0
}

// The commits of a table, newest first, with Spark's operation names.
func ExampleTable_History() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	tbl, _, err := tbl.Delete(ctx, table.Col("id").Eq(1))
	if err != nil {
		log.Fatal(err)
	}
	hist, err := tbl.History(ctx, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range hist {
		fmt.Println(h.Version, h.Operation)
	}
	// Output:
	// 2 DELETE
	// 1 WRITE
	// 0 CREATE TABLE
}

// Write a checkpoint of the current version now (due ones are written in
// the background every delta.checkpointInterval commits).
func ExampleTable_Checkpoint() {
	ctx := context.Background()
	tbl, done := newReadings(ctx)
	defer done()
	if err := tbl.Checkpoint(ctx); err != nil {
		log.Fatal(err)
	}
	_, err := tbl.Store().Stat(ctx, table.CheckpointKey(tbl.Version()))
	fmt.Println(table.CheckpointKey(tbl.Version()), err == nil)
	// Output:
	// _delta_log/00000000000000000001.checkpoint.parquet true
}

// Several writers making the first write into one location: each calls
// CreateOrOpen, one creates the table and the others open it.
func ExampleCreateOrOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "readings")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sch, err := table.SchemaOf[Reading]()
	if err != nil {
		log.Fatal(err)
	}
	for range 2 {
		tbl, created, err := table.CreateOrOpen(ctx, dir, sch)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := table.Append(ctx, tbl, readings[:1]); err != nil {
			log.Fatal(err)
		}
		fmt.Println("created", created)
	}
	tbl, err := table.Open(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(scanReadings(ctx, tbl)), "rows")
	// Output:
	// created true
	// created false
	// 2 rows
}

// A draft writes the data files of a table that does not exist yet; the
// table appears, with the files, only at Commit.
func ExampleNewDraft() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "readings")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sch, err := table.SchemaOf[Reading]()
	if err != nil {
		log.Fatal(err)
	}
	d, err := table.NewDraft(ctx, dir, sch)
	if err != nil {
		log.Fatal(err)
	}
	adds, err := table.WriteFilesOf(ctx, d, readings)
	if err != nil {
		log.Fatal(err)
	}
	_, err = table.Open(ctx, dir)
	fmt.Println("before commit:", errors.Is(err, table.ErrTableNotFound))
	tbl, created, err := d.Commit(ctx, adds)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created", created, "version", tbl.Version(), "rows", len(scanReadings(ctx, tbl)))
	// Output:
	// before commit: true
	// created true version 0 rows 4
}
