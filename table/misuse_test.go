package table

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/deltakit/deltakit/value"
)

// noPanic runs fn and reports a panic as a test error.
func noPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	fn()
}

// wantNilTable checks that err is the error of a call given a nil *Table.
func wantNilTable(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrNilTable) || !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("%s: %v, want an error wrapping ErrNilTable and ErrInvalidArgument", what, err)
	}
}

// misuseRow is a row of the target T of the typed entry points.
type misuseRow struct {
	ID int64 `delta:"id"`
}

// TestNilTable: every exported function and method of package table that
// takes a *Table returns an error wrapping ErrNilTable (or, for the
// accessors, a zero value; Close a nil error) when the table is nil, as
// the *Table returned with the error of a failed call is: they
// dereferenced it (issue 31 item 3: Changes(ctx, nil, ...) after a failed
// Merge panicked at changes.go:87).
func TestNilTable(t *testing.T) {
	ctx := context.Background()
	var nt *Table
	errCalls := []struct {
		name string
		call func() error
	}{
		{"Scan", func() error {
			for _, err := range nt.Scan(ctx) {
				return err
			}
			return nil
		}},
		{"ScanAs", func() error {
			for _, err := range ScanAs[misuseRow](ctx, nt) {
				return err
			}
			return nil
		}},
		{"ScanArrow", func() error { _, err := nt.ScanArrow(ctx); return err }},
		{"Files", func() error { _, err := nt.Files(ctx); return err }},
		{"ScanSchema", func() error { _, err := nt.ScanSchema(); return err }},
		{"AppendRows", func() error { _, err := nt.AppendRows(ctx, []value.Row{{int64(1)}}); return err }},
		{"OverwriteRows", func() error { _, err := nt.OverwriteRows(ctx, []value.Row{{int64(1)}}); return err }},
		{"Append", func() error { _, err := Append(ctx, nt, []misuseRow{{1}}); return err }},
		{"Overwrite", func() error { _, err := Overwrite(ctx, nt, []misuseRow{{1}}); return err }},
		{"AppendArrow", func() error { _, err := nt.AppendArrow(ctx, nil); return err }},
		{"OverwriteArrow", func() error { _, err := nt.OverwriteArrow(ctx, nil); return err }},
		{"WriteFiles", func() error { _, err := nt.WriteFiles(ctx, []value.Row{{int64(1)}}); return err }},
		{"WriteFilesArrow", func() error { _, err := nt.WriteFilesArrow(ctx, []arrow.RecordBatch{}, nil); return err }},
		{"AppendFiles", func() error { _, err := nt.AppendFiles(ctx, nil); return err }},
		{"CommitFiles", func() error { _, _, err := nt.CommitFiles(ctx, nil); return err }},
		{"Commit", func() error { _, _, err := nt.Commit(ctx, nt.NewTransaction("WRITE")); return err }},
		{"NewTransaction().Commit", func() error { _, err := nt.NewTransaction("WRITE").Commit(ctx); return err }},
		{"DraftAppend", func() error { _, err := nt.DraftAppend(ctx, nil); return err }},
		{"Delete", func() error { _, _, err := nt.Delete(ctx, nil); return err }},
		{"Update", func() error { _, _, err := nt.Update(ctx, nil, map[string]Value{"id": Lit(int64(1))}); return err }},
		{"Merge", func() error {
			_, _, err := nt.Merge(ctx, NewMerge(MergeRows(nil, nil), MergeOn("id")).WhenNotMatched().InsertAll())
			return err
		}},
		{"Restore", func() error { _, _, err := nt.Restore(ctx, ToVersion(0)); return err }},
		{"Changes", func() error { _, err := nt.Changes(ctx, 0, -1); return err }},
		{"RenameColumn", func() error { _, err := nt.RenameColumn(ctx, "a", "b"); return err }},
		{"DropColumn", func() error { _, err := nt.DropColumn(ctx, "a"); return err }},
		{"SetProperties", func() error { _, err := nt.SetProperties(ctx, map[string]string{"a": "b"}); return err }},
		{"UnsetProperties", func() error { _, err := nt.UnsetProperties(ctx, true, "a"); return err }},
		{"Optimize", func() error { _, _, err := nt.Optimize(ctx); return err }},
		{"Vacuum", func() error { _, err := nt.Vacuum(ctx); return err }},
		{"Checkpoint", func() error { return nt.Checkpoint(ctx) }},
		{"CleanupLog", func() error { _, err := nt.CleanupLog(ctx); return err }},
		{"History", func() error { _, err := nt.History(ctx, 0); return err }},
		{"OldestCommit", func() error { _, err := nt.OldestCommit(ctx); return err }},
		{"ReadCommit", func() error { _, err := nt.ReadCommit(ctx, 0); return err }},
		{"Refresh", func() error { _, err := nt.Refresh(ctx); return err }},
		{"LogRetention", func() error { _, err := nt.LogRetention(); return err }},
		{"DeletedFileRetention", func() error { _, err := nt.DeletedFileRetention(); return err }},
		{"LatestCheckpoint", func() error { _, err := nt.LatestCheckpoint(ctx); return err }},
		{"Draft.CommitOn", func() error { _, _, err := (*Draft)(nil).CommitOn(ctx, nt, nil); return err }},
		{"Draft.CommitOn of a draft", func() error {
			tbl, _ := maintTable(t, false, nil)
			d, err := tbl.DraftAppend(ctx, nil)
			if err != nil {
				return err
			}
			_, _, err = d.CommitOn(ctx, nt, nil)
			return err
		}},
	}
	for _, c := range errCalls {
		noPanic(t, c.name, func() {
			if c.name == "NewTransaction().Commit" {
				// txlog's own error: a transaction of no table.
				if err := c.call(); !errors.Is(err, ErrInvalidArgument) {
					t.Errorf("%s: %v, want ErrInvalidArgument", c.name, err)
				}
				return
			}
			wantNilTable(t, c.name, c.call())
		})
	}
	// Every exported method of *Table is called above or below: a method
	// added later must be added here.
	covered := map[string]bool{"Version": true, "Snapshot": true, "Schema": true, "PartitionColumns": true, "Store": true,
		"URI": true, "CheckpointInterval": true, "CheckpointStats": true, "GroupCommitStats": true, "Close": true, "NewTransaction": true}
	for _, c := range errCalls {
		covered[c.name] = true
	}
	mt := reflect.TypeOf(nt)
	for i := range mt.NumMethod() {
		if name := mt.Method(i).Name; !covered[name] {
			t.Errorf("method (*Table).%s is not called with a nil *Table by TestNilTable", name)
		}
	}
	// Accessors: zero values; Close: nothing to wait for.
	noPanic(t, "accessors", func() {
		if v := nt.Version(); v != -1 {
			t.Errorf("Version() = %d, want -1", v)
		}
		if nt.CheckpointInterval() != 0 || nt.Snapshot() != nil || nt.Schema() != nil || nt.PartitionColumns() != nil || nt.Store() != nil || nt.URI() != "" {
			t.Errorf("accessors of a nil table: %v %v %v %v %q", nt.Snapshot(), nt.Schema(), nt.PartitionColumns(), nt.Store(), nt.URI())
		}
		if _, ok := nt.CheckpointStats(); ok {
			t.Error("CheckpointStats of a nil table: ok")
		}
		if _, ok := nt.GroupCommitStats(); ok {
			t.Error("GroupCommitStats of a nil table: ok")
		}
		if err := nt.Close(ctx); err != nil {
			t.Errorf("Close of a nil table: %v", err)
		}
	})
}

// TestNilReaders: the readers and drafts a failed call returns nil are
// safe to use: their methods return errors or zero values, and Release,
// Close and Discard do nothing.
func TestNilReaders(t *testing.T) {
	ctx := context.Background()
	noPanic(t, "nil *ChangeFeed", func() {
		var f *ChangeFeed
		if f.Schema() != nil || f.Versions() != nil {
			t.Errorf("nil feed: schema %v, versions %v", f.Schema(), f.Versions())
		}
		n := 0
		for _, err := range f.Rows(ctx) {
			n++
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("nil feed Rows: %v, want ErrInvalidArgument", err)
			}
		}
		if n != 1 {
			t.Errorf("nil feed Rows yielded %d times, want one error", n)
		}
	})
	noPanic(t, "nil *Draft", func() {
		var d *Draft
		d.Discard()
		if d.URI() != "" || d.Schema() != nil || d.ChangesSchema() {
			t.Errorf("nil draft: %q %v %v", d.URI(), d.Schema(), d.ChangesSchema())
		}
		_, err := d.WriteFiles(ctx, []value.Row{{int64(1)}})
		wantNilDraft(t, "WriteFiles", err)
		_, err = d.WriteFilesArrow(ctx, nil, nil)
		wantNilDraft(t, "WriteFilesArrow", err)
		_, _, err = d.Commit(ctx, nil)
		wantNilDraft(t, "Commit", err)
	})
	noPanic(t, "nil *MergeSource", func() {
		var s *MergeSource
		if s.Schema() != nil || s.Len() != 0 || s.Rows() != nil {
			t.Errorf("nil source: %v %d %v", s.Schema(), s.Len(), s.Rows())
		}
		if _, _, err := s.LatestPerKey("id"); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("LatestPerKey of a nil source: %v", err)
		}
	})
	noPanic(t, "Merge with a nil source or builder", func() {
		tbl, _ := maintTable(t, false, nil)
		if _, _, err := tbl.Merge(ctx, nil); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Merge(nil builder): %v", err)
		}
		if _, _, err := tbl.Merge(ctx, NewMerge(nil, MergeOn("id")).WhenNotMatched().InsertAll()); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Merge(nil source): %v", err)
		}
	})
}

func wantNilDraft(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil draft %s: %v, want ErrInvalidArgument", what, err)
	}
}

// TestMisuseAfterFailedCalls: the orders of issue 31 item 3, run as
// written. README showed `defer rr.Release()` right after ScanArrow,
// before its error is checked: on a planning error the reader was nil and
// the deferred Release panicked. A failed Merge returns a nil table, and
// Changes of it panicked. Both now return errors; the reader of a failed
// ScanArrow is empty and its Release does nothing.
func TestMisuseAfterFailedCalls(t *testing.T) {
	ctx := context.Background()
	tbl, _ := maintTable(t, false, nil)
	tbl = maintAppend(t, tbl, maintRowsFor(0, 4, "ams"))

	noPanic(t, "defer rr.Release() before the error check", func() {
		rr, err := tbl.ScanArrow(ctx, WithFilter(Col("nope").Eq(1)))
		defer rr.Release()
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("ScanArrow with a filter on a missing column: %v", err)
		}
		if rr.Next() || rr.Err() == nil || rr.RecordBatch() != nil {
			t.Errorf("the reader of a failed ScanArrow: next %v, err %v", rr.Next(), rr.Err())
		}
		rr.Retain()
		rr.Release()
	})

	noPanic(t, "Changes of the nil table a failed Merge returned", func() {
		// Two source rows for target row 1: ErrMergeMultipleMatches.
		src := MergeRows(maintSchema(), []value.Row{{int64(1), "x", 1.0}, {int64(1), "y", 2.0}})
		nt, _, err := tbl.Merge(ctx, NewMerge(src, MergeOn("id")).WhenMatched().UpdateAll())
		if !errors.Is(err, ErrMergeMultipleMatches) || nt != nil {
			t.Fatalf("Merge: table %v, %v; want nil and ErrMergeMultipleMatches", nt, err)
		}
		_, err = nt.Changes(ctx, 0, -1)
		wantNilTable(t, "nil table's Changes", err)
		if err != nil && err.Error() != fmt.Sprintf("table: changes: %v: %v", ErrInvalidArgument, ErrNilTable) {
			t.Errorf("nil table's Changes: %q", err)
		}
	})
}
