package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// TestDraftCreatesWithDataInOneCommit: a NewDraft's Commit writes version
// 0 with protocol, metaData, its txns, the adds and commitInfo (CREATE TABLE
// AS SELECT with Spark's WRITE metrics, or the epoch's STREAMING UPDATE),
// and the table reads back exactly the rows written.
func TestDraftCreatesWithDataInOneCommit(t *testing.T) {
	sch := schema.NewStruct(field("id", prim(schema.Long), true), field("p", prim(schema.String), true))
	rows := []value.Row{{int64(1), "a"}, {int64(2), "b"}, {int64(3), "a"}, {int64(4), nil}}
	tests := []struct {
		name     string
		opts     []Option
		wopts    []WriteOption
		op       string
		txns     map[string]int64
		params   map[string]string
		metrics  []string // keys besides numOutputRows and numOutputBytes
		numFiles string   // the file count metric's value
	}{
		{name: "plain", op: CreateTableAsSelectOperation,
			wopts:   []WriteOption{WithOperationParameters(map[string]string{"source": "in.csv"})},
			params:  map[string]string{"isManaged": "false", "description": "", "partitionBy": "[]", "properties": "{}", "source": "in.csv"},
			metrics: []string{"numFiles"}, numFiles: "1"},
		{name: "partitioned", op: CreateTableAsSelectOperation, opts: []Option{WithPartitionColumns("p")},
			params:  map[string]string{"isManaged": "false", "description": "", "partitionBy": `["p"]`, "properties": "{}"},
			metrics: []string{"numFiles"}, numFiles: "3"},
		{name: "txn", op: CreateTableAsSelectOperation, wopts: []WriteOption{WithTxn("app", 7)},
			txns:    map[string]int64{"app": 7},
			params:  map[string]string{"isManaged": "false", "description": "", "partitionBy": "[]", "properties": "{}"},
			metrics: []string{"numFiles"}, numFiles: "1"},
		{name: "streaming epoch", op: StreamingUpdateOperation,
			wopts:   []WriteOption{WithStreamingUpdate(StreamingUpdate{QueryID: "q", EpochID: 0, OutputMode: "Append"})},
			txns:    map[string]int64{"q": 0},
			params:  map[string]string{"outputMode": "Append", "queryId": "q", "epochId": "0"},
			metrics: []string{"numAddedFiles", "numRemovedFiles"}, numFiles: "1"},
		{name: "column mapping", op: CreateTableAsSelectOperation,
			opts:    []Option{WithProperties(map[string]string{"delta.columnMapping.mode": "name"})},
			params:  map[string]string{"isManaged": "false", "description": "", "partitionBy": "[]", "properties": `{"delta.columnMapping.maxColumnId":"2","delta.columnMapping.mode":"name"}`},
			metrics: []string{"numFiles"}, numFiles: "1"},
		{name: "row tracking", op: CreateTableAsSelectOperation,
			opts:    []Option{WithProperties(map[string]string{"delta.enableRowTracking": "true"})},
			metrics: []string{"numFiles"}, numFiles: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := objectstore.NewMem(t.Name())
			d, err := NewDraft(ctx, "", sch, append([]Option{WithStore(store)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			adds, err := d.WriteFiles(ctx, rows)
			if err != nil {
				t.Fatal(err)
			}
			var bytes int64
			for _, a := range adds {
				bytes += a.Size
			}
			tbl, created, err := d.Commit(ctx, adds, tc.wopts...)
			if err != nil {
				t.Fatal(err)
			}
			if !created || tbl.Version() != 0 {
				t.Fatalf("created %v at version %d, want true at 0", created, tbl.Version())
			}
			acts, err := tbl.ReadCommit(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var ci *txlog.CommitInfo
			txns := map[string]int64{}
			for _, a := range acts {
				switch {
				case a.CommitInfo != nil:
					kinds, ci = append(kinds, "commitInfo"), a.CommitInfo
				case a.Protocol != nil:
					kinds = append(kinds, "protocol")
				case a.Metadata != nil:
					kinds = append(kinds, "metaData")
				case a.Txn != nil:
					kinds, txns[a.Txn.AppID] = append(kinds, "txn"), a.Txn.Version
				case a.Add != nil:
					kinds = append(kinds, "add")
				case a.DomainMetadata != nil:
					kinds = append(kinds, "domainMetadata")
				}
			}
			if n := strings.Count(strings.Join(kinds, ","), "add"); n != len(adds) {
				t.Fatalf("version 0 has %d adds (%v), want %d", n, kinds, len(adds))
			}
			for _, k := range []string{"commitInfo", "protocol", "metaData"} {
				if !slices.Contains(kinds, k) {
					t.Fatalf("version 0 has no %s: %v", k, kinds)
				}
			}
			if tc.txns == nil {
				tc.txns = map[string]int64{}
			}
			if fmt.Sprint(txns) != fmt.Sprint(tc.txns) {
				t.Fatalf("txns %v, want %v", txns, tc.txns)
			}
			if ci.Operation != tc.op {
				t.Fatalf("operation %q, want %q", ci.Operation, tc.op)
			}
			for k, v := range tc.params {
				if got := ci.OperationParameters[k]; got != v {
					t.Errorf("operationParameters[%s] = %v, want %q", k, got, v)
				}
			}
			wantMetrics := map[string]string{"numOutputRows": "4", "numOutputBytes": fmt.Sprint(bytes)}
			for _, k := range tc.metrics {
				wantMetrics[k] = tc.numFiles
			}
			if k := "numRemovedFiles"; slices.Contains(tc.metrics, k) {
				wantMetrics[k] = "0"
			}
			if len(ci.OperationMetrics) != len(wantMetrics) {
				t.Errorf("operationMetrics %v, want %v", ci.OperationMetrics, wantMetrics)
			}
			for k, v := range wantMetrics {
				if got := ci.OperationMetrics[k]; got != v {
					t.Errorf("operationMetrics[%s] = %v, want %s", k, got, v)
				}
			}
			reopened, err := Open(ctx, "", WithStore(store))
			if err != nil {
				t.Fatal(err)
			}
			got := scanAll(t, reopened)
			slices.SortFunc(got, func(a, b value.Row) int { return int(a[0].(int64) - b[0].(int64)) })
			if fmt.Sprint(got) != fmt.Sprint(rows) {
				t.Fatalf("rows %v, want %v", got, rows)
			}
			if reopened.Version() != 0 || reopened.Snapshot().NumFiles() != len(adds) {
				t.Fatalf("version %d with %d files, want 0 with %d", reopened.Version(), reopened.Snapshot().NumFiles(), len(adds))
			}
		})
	}
}

// TestDraftCreateRaceTwoWriters: two drafts of the same new table commit at
// once; the put-if-absent of version 0 picks one, the other appends its rows
// as version 1, and each writer's rows are in the table exactly once.
func TestDraftCreateRaceTwoWriters(t *testing.T) {
	sch := schema.NewStruct(field("id", prim(schema.Long), true))
	for name, newStore := range raceStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			store := newStore()
			drafts := make([]*Draft, 2)
			adds := make([][]*txlog.Add, 2)
			for w := range drafts {
				d, err := NewDraft(ctx, "", sch, WithStore(store))
				if err != nil {
					t.Fatal(err)
				}
				if adds[w], err = d.WriteFiles(ctx, []value.Row{{int64(10 * w)}, {int64(10*w + 1)}}); err != nil {
					t.Fatal(err)
				}
				drafts[w] = d
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			versions, created, errs := make([]int64, 2), make([]bool, 2), make([]error, 2)
			for w, d := range drafts {
				wg.Go(func() {
					<-start
					var tbl *Table
					tbl, created[w], errs[w] = d.Commit(ctx, adds[w], WithTxn(fmt.Sprint("writer", w), 0))
					if tbl != nil {
						versions[w] = tbl.Version()
					}
				})
			}
			close(start)
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if countTrue(created) != 1 {
				t.Fatalf("created %v, want one winner", created)
			}
			slices.Sort(versions)
			if !slices.Equal(versions, []int64{0, 1}) {
				t.Fatalf("versions %v, want [0 1]", versions)
			}
			tbl, err := Open(ctx, "", WithStore(store))
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range readAllRows(t, tbl) {
				ids = append(ids, r[0].(int64))
			}
			slices.Sort(ids)
			if !slices.Equal(ids, []int64{0, 1, 10, 11}) {
				t.Fatalf("ids %v, want [0 1 10 11]", ids)
			}
			ops := map[string]int{}
			for v := range int64(2) {
				acts, err := tbl.ReadCommit(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range acts {
					if a.CommitInfo != nil {
						ops[a.CommitInfo.Operation]++
					}
				}
			}
			if ops[CreateTableAsSelectOperation] != 1 || ops["WRITE"] != 1 {
				t.Fatalf("operations %v, want one CREATE TABLE AS SELECT and one WRITE", ops)
			}
			for w := range 2 {
				if v := tbl.Snapshot().TxnVersion(fmt.Sprint("writer", w)); v != 0 {
					t.Fatalf("txn writer%d at %d, want 0", w, v)
				}
			}
		})
	}
}

// TestDraftCreateRaceLoserMismatch: a draft that loses the create to a
// table its files do not fit fails naming the table and the difference,
// commits nothing and deletes its files.
func TestDraftCreateRaceLoserMismatch(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		winner *schema.StructType
		opts   []Option
		wopts  []Option // the winner's only
		want   string
	}{
		{name: "NOT NULL in the winner", winner: schema.NewStruct(field("id", prim(schema.Long), false)), want: "id is NOT NULL in the table"},
		{name: "CHECK constraint in the winner", winner: schema.NewStruct(field("id", prim(schema.Long), true)),
			wopts: []Option{WithProperties(map[string]string{"delta.constraints.pos": "id > 0"})}, want: "CHECK constraint pos (id > 0)"},
		{name: "type", winner: schema.NewStruct(field("id", prim(schema.String), true)), want: `column "id"`},
		{name: "column mapping", winner: schema.NewStruct(field("id", prim(schema.Long), true)),
			opts: []Option{WithProperties(map[string]string{"delta.columnMapping.mode": "name"})}, want: "column mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := objectstore.NewMem(t.Name())
			sch := schema.NewStruct(field("id", prim(schema.Long), true))
			d, err := NewDraft(ctx, "", sch, append([]Option{WithStore(store)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			adds, err := d.WriteFiles(ctx, []value.Row{{int64(1)}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Create(ctx, "", tc.winner, append(append([]Option{WithStore(store)}, tc.opts...), tc.wopts...)...); err != nil {
				t.Fatal(err)
			}
			_, _, err = d.Commit(ctx, adds)
			const lost = "(lost the create: version 0 was committed by another writer)"
			if !errors.Is(err, ErrTableExists) || !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), store.URI()) || !strings.HasSuffix(err.Error(), lost) {
				t.Fatalf("commit after losing: %v, want ErrTableExists and ErrSchemaMismatch naming %s, %s and ending %s", err, store.URI(), tc.want, lost)
			}
			tbl, err := Open(ctx, "", WithStore(store))
			if err != nil {
				t.Fatal(err)
			}
			if tbl.Version() != 0 || tbl.Snapshot().NumFiles() != 0 {
				t.Fatalf("winner's table at version %d with %d files, want 0 and 0", tbl.Version(), tbl.Snapshot().NumFiles())
			}
			for _, a := range adds {
				if _, err := store.Get(ctx, a.Path, objectstore.Range{}); !errors.Is(err, objectstore.ErrNotExist) {
					t.Fatalf("data file %s after a failed commit: %v, want deleted", a.Path, err)
				}
			}
		})
	}
}

// TestDraftCreateRaceSameTxn: two runs of one query create the table with
// the same txn version; the loser's files are not appended (exactly once):
// its Commit is ErrConcurrentTransaction and deletes them.
func TestDraftCreateRaceSameTxn(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem(t.Name())
	sch := schema.NewStruct(field("id", prim(schema.Long), true))
	var drafts [2]*Draft
	var adds [2][]*txlog.Add
	for w := range drafts {
		d, err := NewDraft(ctx, "", sch, WithStore(store))
		if err != nil {
			t.Fatal(err)
		}
		if adds[w], err = d.WriteFiles(ctx, []value.Row{{int64(w)}}); err != nil {
			t.Fatal(err)
		}
		drafts[w] = d
	}
	opt := WithStreamingUpdate(StreamingUpdate{QueryID: "q", EpochID: 0, OutputMode: "Append"})
	if _, created, err := drafts[0].Commit(ctx, adds[0], opt); err != nil || !created {
		t.Fatalf("first commit: created %v, %v", created, err)
	}
	if _, _, err := drafts[1].Commit(ctx, adds[1], opt); !errors.Is(err, ErrConcurrentTransaction) {
		t.Fatalf("second run of the epoch: %v, want ErrConcurrentTransaction", err)
	}
	tbl, err := Open(ctx, "", WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAllRows(t, tbl); tbl.Version() != 0 || fmt.Sprint(got) != "[[0]]" {
		t.Fatalf("version %d rows %v, want 0 and [[0]]", tbl.Version(), got)
	}
	if _, err := store.Get(ctx, adds[1][0].Path, objectstore.Range{}); !errors.Is(err, objectstore.ErrNotExist) {
		t.Fatalf("loser's file: %v, want deleted", err)
	}
}

// TestDraftCreateRaceLoserSameConstraint: a loser whose draft has the
// winner's CHECK constraint (its files were checked against it) appends its
// files as version 1.
func TestDraftCreateRaceLoserSameConstraint(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem(t.Name())
	sch := schema.NewStruct(field("id", prim(schema.Long), false))
	props := WithProperties(map[string]string{"delta.constraints.pos": "id > 0"})
	d, err := NewDraft(ctx, "", sch, WithStore(store), props)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteFiles(ctx, []value.Row{{int64(-1)}}); !errors.Is(err, ErrConstraintViolation) {
		t.Fatalf("draft write of -1: %v, want ErrConstraintViolation", err)
	}
	adds, err := d.WriteFiles(ctx, []value.Row{{int64(3)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(ctx, "", sch, WithStore(store), props); err != nil {
		t.Fatal(err)
	}
	tbl, _, err := d.Commit(ctx, adds)
	if err != nil || tbl.Version() != 1 || tbl.Snapshot().NumFiles() != 1 {
		t.Fatalf("commit after losing: %v, want version 1 with the loser's file", err)
	}
}
