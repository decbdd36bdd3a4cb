package table

import (
	"context"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// TestOneCommitFunction is the proof that a reader of table/ finds one
// commit function: no production code of table/ or streamsink/ creates or
// commits a txlog transaction outside table/commit.go (txlog.NewTransaction,
// txlog.CreateTransaction, a Commit call, Table.NewTransaction), and
// streamsink assembles no txlog actions.
func TestOneCommitFunction(t *testing.T) {
	dirs := map[string]string{".": "table", "../streamsink": "streamsink"}
	// The engines beneath table (internal/...) commit through table too.
	internal, err := filepath.Glob(filepath.Join("internal", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range internal {
		dirs[d] = "table/" + filepath.ToSlash(d)
	}
	found := 0
	for dir, pkg := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") || pkg == "table" && filepath.Base(path) == "commit.go" {
				continue
			}
			found++
			for _, v := range commitViolations(t, path, pkg == "streamsink") {
				t.Errorf("%s/%s: %s: writes must build an operation and commit it with commitOperation (table/commit.go)", pkg, filepath.Base(path), v)
			}
		}
	}
	if found < 10 {
		t.Fatalf("only %d source files found: the test does not see the packages", found)
	}
}

// commitViolations lists the forbidden calls and references in one file.
func commitViolations(t *testing.T, path string, noActions bool) []string {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Draft.Commit is table's API (it commits through commit.go): a
	// Commit call on a parameter or field of type *table.Draft is allowed.
	drafts := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if fld, ok := n.(*ast.Field); ok {
			if st, ok := fld.Type.(*ast.StarExpr); ok {
				if ts, ok := st.X.(*ast.SelectorExpr); ok && ts.Sel.Name == "Draft" {
					if x, ok := ts.X.(*ast.Ident); ok && x.Name == "table" {
						for _, id := range fld.Names {
							drafts[id.Name] = true
						}
					}
				}
			}
		}
		return true
	})
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && sel.Sel.Name == "Commit" && drafts[x.Name] {
					return true
				}
				switch name := sel.Sel.Name; name {
				case "NewTransaction", "CreateTransaction", "Commit":
					out = append(out, fset.Position(sel.Pos()).String()+": a call of "+name)
				case "RemoveAt":
					if noActions {
						out = append(out, fset.Position(sel.Pos()).String()+": RemoveAt (remove action assembly)")
					}
				}
			}
			return true
		}
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || !noActions {
			return true
		}
		x, _ := sel.X.(*ast.Ident)
		if x == nil || x.Name != "txlog" {
			return true
		}
		switch name := sel.Sel.Name; name {
		case "Action", "Remove", "CommitInfo", "Metadata", "Protocol", "NewTransaction", "CreateTransaction", "Transaction":
			out = append(out, fset.Position(sel.Pos()).String()+": txlog."+name)
		case "Txn":
			if !isTypeUse(f, sel) {
				out = append(out, fset.Position(sel.Pos()).String()+": a txlog.Txn literal")
			}
		}
		return true
	})
	return out
}

// isTypeUse reports whether sel appears only as a type (a parameter or
// variable type), not in a composite literal.
func isTypeUse(f *ast.File, sel *ast.SelectorExpr) bool {
	lit := false
	ast.Inspect(f, func(n ast.Node) bool {
		if cl, ok := n.(*ast.CompositeLit); ok && cl.Type == sel {
			lit = true
		}
		return !lit
	})
	return !lit
}

// TestOperationCommitInfo checks that every operation commits Spark's
// commitInfo.operation name and exactly Spark's operationMetrics keys
// (DeltaOperationMetrics), and that WithClock alone sets
// commitInfo.timestamp.
func TestOperationCommitInfo(t *testing.T) {
	ctx := context.Background()
	sch := schema.NewStruct(field("p", prim(schema.String), true), field("v", prim(schema.Long), true))
	clock := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	rows := []value.Row{{"a", int64(1)}, {"a", int64(2)}, {"b", int64(3)}}
	dml := []string{"numAddedFiles", "numRemovedFiles", "numAddedChangeFiles", "numCopiedRows",
		"numDeletionVectorsAdded", "numDeletionVectorsRemoved", "numDeletionVectorsUpdated",
		"executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numRemovedBytes", "numAddedBytes"}
	write := []string{"numFiles", "numOutputRows", "numOutputBytes"}
	streaming := []string{"numAddedFiles", "numRemovedFiles", "numOutputRows", "numOutputBytes"}
	for _, tc := range []struct {
		name     string
		props    map[string]string
		op       func(*Table) (*Table, error)
		wantOp   string
		wantKeys []string
		want     map[string]string // some values
	}{
		{"append", nil, func(t *Table) (*Table, error) { return t.AppendRows(ctx, rows) },
			"WRITE", write, map[string]string{"numFiles": "2", "numOutputRows": "3"}},
		{"overwrite", nil, func(t *Table) (*Table, error) { return t.OverwriteRows(ctx, rows[:1]) },
			"WRITE", write, map[string]string{"numFiles": "1", "numOutputRows": "1"}},
		{"replaceWhere", nil, func(t *Table) (*Table, error) {
			return t.OverwriteRows(ctx, rows[:1], WithReplaceWhere(Col("p").Eq("a")))
		}, "WRITE", append(slices.Clone(write), "numRemovedFiles", "numRemovedBytes"), map[string]string{"numRemovedFiles": "1"}},
		{"optimize", nil, func(t *Table) (*Table, error) {
			t, err := t.AppendRows(ctx, rows[:1])
			if err != nil {
				return nil, err
			}
			nt, _, err := t.Optimize(ctx)
			return nt, err
		}, "OPTIMIZE", []string{"numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes",
			"minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize", "numDeletionVectorsRemoved"},
			map[string]string{"numAddedFiles": "1", "numRemovedFiles": "2", "numDeletionVectorsRemoved": "0"}},
		{"streaming epoch", nil, func(t *Table) (*Table, error) {
			u := StreamingUpdate{QueryID: "q", EpochID: 0, OutputMode: "Append"}
			adds, err := t.WriteFiles(ctx, rows, WithStreamingUpdate(u))
			if err != nil {
				return nil, err
			}
			nt, _, err := t.CommitFiles(ctx, adds, WithStreamingUpdate(u))
			return nt, err
		}, "STREAMING UPDATE", streaming, map[string]string{"numAddedFiles": "2", "numRemovedFiles": "0", "numOutputRows": "3"}},
		{"streaming epoch, Complete", nil, func(t *Table) (*Table, error) {
			u := StreamingUpdate{QueryID: "q", EpochID: 0, OutputMode: "Complete"}
			adds, err := t.WriteFiles(ctx, rows[:1], WithStreamingUpdate(u))
			if err != nil {
				return nil, err
			}
			nt, _, err := t.CommitFiles(ctx, adds, WithStreamingUpdate(u))
			return nt, err
		}, "STREAMING UPDATE", streaming, map[string]string{"numAddedFiles": "1", "numRemovedFiles": "2", "numOutputRows": "1"}},
		{"delete", nil, func(t *Table) (*Table, error) {
			nt, _, err := t.Delete(ctx, Col("v").Eq(int64(1)))
			return nt, err
		}, "DELETE", append(slices.Clone(dml), "numDeletedRows"), map[string]string{"numDeletedRows": "1", "numCopiedRows": "1"}},
		{"delete with deletion vectors", map[string]string{"delta.enableDeletionVectors": "true"}, func(t *Table) (*Table, error) {
			nt, _, err := t.Delete(ctx, Col("v").Eq(int64(1)))
			return nt, err
		}, "DELETE", append(slices.Clone(dml), "numDeletedRows"), map[string]string{"numDeletedRows": "1", "numDeletionVectorsAdded": "1"}},
		{"update", nil, func(t *Table) (*Table, error) {
			nt, _, err := t.Update(ctx, Col("v").Eq(int64(3)), map[string]Value{"v": Lit(int64(30))})
			return nt, err
		}, "UPDATE", append(slices.Clone(dml), "numUpdatedRows"), map[string]string{"numUpdatedRows": "1"}},
		{"restore", nil, func(t *Table) (*Table, error) {
			nt, _, err := t.Restore(ctx, ToVersion(0))
			return nt, err
		}, "RESTORE", []string{"tableSizeAfterRestore", "numOfFilesAfterRestore", "numRemovedFiles", "numRestoredFiles",
			"removedFilesSize", "restoredFilesSize"}, map[string]string{"numRemovedFiles": "2", "numRestoredFiles": "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := newMemTable(t, sch, WithPartitionColumns("p"), WithClock(now), WithProperties(tc.props))
			tbl, err := tbl.AppendRows(ctx, rows)
			if err != nil {
				t.Fatal(err)
			}
			nt, err := tc.op(tbl)
			if err != nil {
				t.Fatal(err)
			}
			if nt.Version() <= tbl.Version() {
				t.Fatalf("nothing committed: version %d", nt.Version())
			}
			ci := nt.Snapshot().CommitInfo()
			if ci == nil {
				t.Fatal("no commitInfo")
			}
			if ci.Operation != tc.wantOp {
				t.Errorf("operation %q, want %q", ci.Operation, tc.wantOp)
			}
			var keys []string
			for k := range ci.OperationMetrics {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			want := slices.Sorted(slices.Values(tc.wantKeys))
			if !slices.Equal(keys, want) {
				t.Errorf("metric keys\n got %v\nwant %v (Spark's)", keys, want)
			}
			for k, v := range tc.want {
				if got := ci.OperationMetrics[k]; got != v {
					t.Errorf("metric %s = %v, want %s", k, got, v)
				}
			}
			if ci.Timestamp != clock.UnixMilli() {
				t.Errorf("commitInfo.timestamp %d, want WithClock's %d", ci.Timestamp, clock.UnixMilli())
			}
		})
	}
}
