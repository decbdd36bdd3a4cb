package table

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/txlog"
)

func TestOptimize(t *testing.T) {
	cases := []struct {
		name        string
		partitioned bool
		appends     int // appends of 10 rows each (one file per partition each)
		cities      []string
		target      func(maxFile int64) int64
		wantFiles   int // live files after optimize
		wantCommit  bool
	}{
		{name: "unpartitioned, all into one", appends: 6, cities: []string{"ams"}, wantFiles: 1, wantCommit: true},
		{name: "partitioned, one file per partition", partitioned: true, appends: 3, cities: []string{"ams", "ber"}, wantFiles: 2, wantCommit: true},
		{name: "small target, bins of two files", appends: 6, cities: []string{"ams"}, target: func(m int64) int64 { return 2*m + m/2 }, wantFiles: 3, wantCommit: true},
		{name: "single file: nothing to do", appends: 1, cities: []string{"ams", "ber"}, wantFiles: 1, wantCommit: false},
		{name: "one file per partition: nothing to do", partitioned: true, appends: 1, cities: []string{"ams", "ber"}, wantFiles: 2, wantCommit: false},
		{name: "files at the target are left alone", appends: 4, cities: []string{"ams"}, target: func(m int64) int64 { return 1 }, wantFiles: 4, wantCommit: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tbl, mem := maintTable(t, tc.partitioned, nil)
			for i := range tc.appends {
				tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, tc.cities...))
			}
			before := maintScan(t, tbl)
			var maxFile int64
			for _, f := range tbl.Snapshot().Files() {
				maxFile = max(maxFile, f.Size)
			}
			var opts []OptimizeOption
			if tc.target != nil {
				opts = append(opts, WithOptimizeTargetSize(tc.target(maxFile)))
			}
			filesBefore := tbl.Snapshot().NumFiles()
			var progressed int64
			opts = append(opts, WithOptimizeProgress(func(done, total int64) { progressed = done }))
			nt, res, err := tbl.Optimize(ctx, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Committed != tc.wantCommit {
				t.Fatalf("Committed = %v, want %v", res.Committed, tc.wantCommit)
			}
			if got := nt.Snapshot().NumFiles(); got != tc.wantFiles {
				t.Errorf("files after optimize = %d, want %d", got, tc.wantFiles)
			}
			if rows := maintScan(t, nt); !slices.Equal(rows, before) {
				t.Errorf("rows changed:\n got %v\nwant %v", rows, before)
			}
			if !tc.wantCommit {
				if nt.Version() != tbl.Version() || res.Version != tbl.Version() {
					t.Errorf("version %d (result %d), want unchanged %d", nt.Version(), res.Version, tbl.Version())
				}
				return
			}
			if nt.Version() != tbl.Version()+1 || res.Version != nt.Version() {
				t.Errorf("version %d (result %d), want %d", nt.Version(), res.Version, tbl.Version()+1)
			}
			if res.FilesRemoved != filesBefore-tc.wantFiles+res.FilesAdded || res.FilesAdded >= res.FilesRemoved {
				t.Errorf("removed %d, added %d files (before %d, after %d)", res.FilesRemoved, res.FilesAdded, filesBefore, tc.wantFiles)
			}
			if res.Rows != int64(len(before)) && tc.target == nil {
				t.Errorf("rewrote %d rows, want %d", res.Rows, len(before))
			}
			if progressed != res.BytesRemoved {
				t.Errorf("progress ended at %d bytes, want %d", progressed, res.BytesRemoved)
			}
			// The commit: OPTIMIZE, every add and remove with dataChange false.
			actions, err := txlog.ReadCommit(ctx, mem, nt.Version())
			if err != nil {
				t.Fatal(err)
			}
			var adds, removes int
			for _, a := range actions {
				switch {
				case a.CommitInfo != nil:
					if a.CommitInfo.Operation != OptimizeOperation {
						t.Errorf("operation %q", a.CommitInfo.Operation)
					}
				case a.Add != nil:
					adds++
					if a.Add.DataChange {
						t.Errorf("add %s has dataChange true", a.Add.Path)
					}
					if n, ok := a.Add.NumRecords(); !ok || n == 0 {
						t.Errorf("add %s without numRecords", a.Add.Path)
					}
				case a.Remove != nil:
					removes++
					if a.Remove.DataChange {
						t.Errorf("remove %s has dataChange true", a.Remove.Path)
					}
				}
			}
			if adds != res.FilesAdded || removes != res.FilesRemoved {
				t.Errorf("commit has %d adds and %d removes, result says %d and %d", adds, removes, res.FilesAdded, res.FilesRemoved)
			}
			// Each partition's files stay in their partition.
			for _, f := range nt.Snapshot().Files() {
				if tc.partitioned && f.PartitionValues["city"] == "" {
					t.Errorf("%s lost its partition value", f.Path)
				}
			}
			rep, err := Verify(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Errorf("verify after optimize: %v", rep.Problems)
			}
		})
	}
}

// TestOptimizeConcurrent: a concurrent overwrite removes the files optimize
// read, so optimize fails with a conflict and leaves no file behind; a
// concurrent blind append does not conflict.
func TestOptimizeConcurrent(t *testing.T) {
	ctx := context.Background()
	t.Run("overwrite conflicts", func(t *testing.T) {
		tbl, mem := maintTable(t, false, nil)
		for i := range 3 {
			tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, "ams"))
		}
		winner, err := tbl.OverwriteRows(ctx, maintRowsFor(100, 3, "ams"))
		if err != nil {
			t.Fatal(err)
		}
		keys := maintKeys(t, mem)
		_, _, err = tbl.Optimize(ctx)
		if !errors.Is(err, txlog.ErrConcurrentDeleteRead) {
			t.Fatalf("err = %v, want ErrConcurrentDeleteRead", err)
		}
		if got := maintKeys(t, mem); !slices.Equal(got, keys) {
			t.Errorf("optimize left files behind: %v", slices.DeleteFunc(got, func(k string) bool { return slices.Contains(keys, k) }))
		}
		latest, err := winner.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if latest.Version() != winner.Version() {
			t.Errorf("version %d after the failed optimize, want %d", latest.Version(), winner.Version())
		}
	})
	t.Run("blind append does not conflict", func(t *testing.T) {
		tbl, _ := maintTable(t, false, nil)
		for i := range 3 {
			tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, "ams"))
		}
		winner := maintAppend(t, tbl, maintRowsFor(500, 5, "ams"))
		nt, res, err := tbl.Optimize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Committed || nt.Version() != winner.Version()+1 {
			t.Fatalf("committed %v at version %d, want version %d", res.Committed, nt.Version(), winner.Version()+1)
		}
		if got, want := maintScan(t, nt), maintScan(t, winner); !slices.Equal(got, want) {
			t.Errorf("rows after optimize = %d, want %d", len(got), len(want))
		}
		if nt.Snapshot().NumFiles() != 2 {
			t.Errorf("%d files, want 2 (the compacted one and the concurrent append)", nt.Snapshot().NumFiles())
		}
	})
}

// TestOptimizeStreams: Optimize writes the rows of a bin's files as it
// reads them (one input row group, a few hundred rows, at a time) instead
// of reading every file of the bin first: when the first input file is
// done, the new file's upload has started. The rows and their count are
// unchanged.
func TestOptimizeStreams(t *testing.T) {
	ctx := context.Background()
	tbl, mem := maintTable(t, false, nil)
	const files, per = 3, 2 * 256 // two batches of optimizeBatch rows per file
	for i := range files {
		tbl = maintAppend(t, tbl, maintRowsFor(i*per, per, "ams", "ber"))
	}
	before := maintScan(t, tbl)
	fs := faultstore.New(mem)
	ftbl, err := Open(ctx, "", WithStore(fs), WithTxnOptions(txlog.WithoutAutoCheckpoint()))
	if err != nil {
		t.Fatal(err)
	}
	uploads := func() int {
		n := 0
		for _, c := range fs.Calls() {
			if c.Op == faultstore.OpUpload && !strings.HasPrefix(c.Key, txlog.LogPrefix) {
				n++
			}
		}
		return n
	}
	var atFirst []int // uploads started when each input file was read
	nt, res, err := ftbl.Optimize(ctx, WithOptimizeProgress(func(done, total int64) { atFirst = append(atFirst, uploads()) }))
	if err != nil {
		t.Fatal(err)
	}
	if len(atFirst) != files || atFirst[0] != 1 {
		t.Errorf("uploads started as each input file was read: %v, want the first already at the first file", atFirst)
	}
	if res.Rows != files*per || res.FilesAdded != 1 || res.FilesRemoved != files {
		t.Errorf("result: %d rows, %d files added, %d removed; want %d, 1, %d", res.Rows, res.FilesAdded, res.FilesRemoved, files*per, files)
	}
	if rows := maintScan(t, nt); !slices.Equal(rows, before) {
		t.Errorf("rows changed: %d rows, want %d", len(rows), len(before))
	}
}
