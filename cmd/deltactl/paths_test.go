package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// TestPathOutsideTableCLI: a table whose log names a file outside its root
// (issue 18 item 1) makes cat fail with the refusal (exit 1) and verify
// report it (exit 3), for a local file and for an s3:// path.
func TestPathOutsideTableCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// A readable file outside the table: cat used to print its rows.
	mustRun(t, "ingest", "testdata/people.csv", filepath.Join(dir, "other"))
	files, _ := filepath.Glob(filepath.Join(dir, "other", "*.parquet"))
	if len(files) == 0 {
		t.Fatal("no data file")
	}
	st, err := os.Stat(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"file://" + filepath.ToSlash(files[0]), "s3://other-bucket/t/part-0.parquet"} {
		tbl := filepath.Join(dir, "t"+strings.Split(path, ":")[0])
		mustRun(t, "create", tbl, "--schema", "name string, age long, city string")
		store, err := objectstore.NewLocal(tbl)
		if err != nil {
			t.Fatal(err)
		}
		data, err := txlog.EncodeCommit([]txlog.Action{{Add: &txlog.Add{Path: path, PartitionValues: map[string]string{},
			Size: st.Size(), ModificationTime: 1_700_000_000_000, DataChange: true}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(ctx, txlog.CommitKey(1), data); err != nil {
			t.Fatal(err)
		}
		out, errs, code := runCLI(t, "cat", tbl)
		if code != 1 || !strings.Contains(errs, "lies outside the table root") || !strings.Contains(errs, path) {
			t.Errorf("cat %s: exit %d, stderr %q, stdout %q; want exit 1 naming the path", path, code, errs, out)
		}
		out, _, code = runCLI(t, "verify", tbl)
		if code != 3 || !strings.Contains(out, "outside-table") || !strings.Contains(out, path) {
			t.Errorf("verify %s: exit %d, stdout %q; want exit 3 reporting outside-table", path, code, out)
		}
	}
}

// TestSnapshotRowsInvalidCounts: stats.numRecords that cannot be right
// (negative, absurd, summing past int64) do not make snapshot print a
// garbage row total: those files count as without stats (issue 18 item 5).
func TestSnapshotRowsInvalidCounts(t *testing.T) {
	ctx := context.Background()
	tbl := filepath.Join(t.TempDir(), "t")
	mustRun(t, "create", tbl, "--schema", "id long")
	store, err := objectstore.NewLocal(tbl)
	if err != nil {
		t.Fatal(err)
	}
	var actions []txlog.Action
	for i, stats := range []string{`{"numRecords":5}`, `{"numRecords":-7}`, `{"numRecords":9223372036854775807}`,
		`{"numRecords":9007199254740992}`, `{"numRecords":9007199254740992}`} {
		actions = append(actions, txlog.Action{Add: &txlog.Add{Path: fmt.Sprintf("part-%d.parquet", i), PartitionValues: map[string]string{},
			Size: 10, ModificationTime: 1_700_000_000_000, DataChange: true, Stats: stats}})
	}
	data, err := txlog.EncodeCommit(actions)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutIfAbsent(ctx, txlog.CommitKey(1), data); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "snapshot", tbl, "-o", "json")
	var v struct {
		NumRows           int64 `json:"numRows"`
		FilesWithoutStats int   `json:"filesWithoutStats"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	// 5 + 2^53 + 2^53 fits; -7 and 2^63-1 do not count.
	if v.NumRows != 5+2*(1<<53) || v.FilesWithoutStats != 2 {
		t.Errorf("numRows %d, filesWithoutStats %d; want %d and 2", v.NumRows, v.FilesWithoutStats, int64(5+2*(1<<53)))
	}
}
