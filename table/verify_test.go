package table

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// verifyTable builds a table with versions 0 (create) to 5 (appends of one
// file each) and a checkpoint at version 3.
func verifyTable(t *testing.T) (*Table, *objectstore.Mem) {
	t.Helper()
	tbl, mem := maintTable(t, false, nil)
	for i := range 5 {
		tbl = maintAppend(t, tbl, maintRowsFor(i*10, 10, "ams"))
		if tbl.Version() == 3 {
			if err := txlog.WriteCheckpoint(context.Background(), tbl.Snapshot()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return tbl, mem
}

func problemKinds(rep *VerifyReport) []VerifyProblemKind {
	var kinds []VerifyProblemKind
	for _, p := range rep.Problems {
		if !slices.Contains(kinds, p.Kind) {
			kinds = append(kinds, p.Kind)
		}
	}
	return kinds
}

func TestVerify(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		break_  func(t *testing.T, tbl *Table, mem *objectstore.Mem)
		want    []VerifyProblemKind
		checked int // checkpoints compared
	}{
		{name: "clean", break_: func(*testing.T, *Table, *objectstore.Mem) {}, checked: 1},
		{name: "missing data file", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			if err := mem.Delete(ctx, maintLiveKeys(tbl)[2]); err != nil {
				t.Fatal(err)
			}
		}, want: []VerifyProblemKind{ProblemMissingFile}, checked: 1},
		{name: "wrong size", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			k := maintLiveKeys(tbl)[0]
			data, err := mem.Get(ctx, k, objectstore.FullObject)
			if err != nil {
				t.Fatal(err)
			}
			if err := mem.Put(ctx, k, append(data, 0)); err != nil {
				t.Fatal(err)
			}
		}, want: []VerifyProblemKind{ProblemSizeMismatch}, checked: 1},
		{name: "gap in the commits", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			if err := mem.Delete(ctx, txlog.CommitKey(4)); err != nil {
				t.Fatal(err)
			}
		}, want: []VerifyProblemKind{ProblemLogGap, ProblemLoad}, checked: 1},
		{name: "corrupt commit", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			if err := mem.Put(ctx, txlog.CommitKey(2), []byte("{\"add\": {\"path\": ")); err != nil {
				t.Fatal(err)
			}
		}, want: []VerifyProblemKind{ProblemCorruptCommit, ProblemCheckpoint}, checked: 0},
		{name: "checkpoint holds another version's state", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			v2, err := txlog.Load(ctx, mem, txlog.AtVersion(2))
			if err != nil {
				t.Fatal(err)
			}
			data, _, err := txlog.EncodeCheckpoint(v2)
			if err != nil {
				t.Fatal(err)
			}
			if err := mem.Put(ctx, txlog.CheckpointKey(3), data); err != nil {
				t.Fatal(err)
			}
		}, want: []VerifyProblemKind{ProblemCheckpoint}, checked: 1},
		{name: "checkpoint with another table's metadata and txns", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			other, otherMem := maintTable(t, false, map[string]string{"delta.appendOnly": "false"})
			tx := other.NewTransaction("WRITE")
			tx.Add(txlog.Action{Txn: &txlog.Txn{AppID: "q", Version: 7}})
			other, _, err := other.Commit(ctx, tx)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				other = maintAppend(t, other, maintRowsFor(0, 1, "x"))
			}
			data, _, err := txlog.EncodeCheckpoint(other.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			_ = otherMem
			if err := mem.Put(ctx, txlog.CheckpointKey(3), data); err != nil {
				t.Fatal(err)
			}
			// The latest snapshot replays from the bad checkpoint: its files
			// are not in this table.
		}, want: []VerifyProblemKind{ProblemCheckpoint, ProblemMissingFile}, checked: 1},
		{name: "unreadable checkpoint", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			if err := mem.Put(ctx, txlog.CheckpointKey(3), []byte("not parquet")); err != nil {
				t.Fatal(err)
			}
		}, want: []VerifyProblemKind{ProblemCheckpoint}, checked: 0}, // the table loads around it
		{name: "unreadable checkpoint, log cleaned up before it", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			if err := mem.Put(ctx, txlog.CheckpointKey(3), nil); err != nil {
				t.Fatal(err)
			}
			for v := range int64(3) {
				if err := mem.Delete(ctx, txlog.CommitKey(v)); err != nil {
					t.Fatal(err)
				}
			}
		}, want: []VerifyProblemKind{ProblemCheckpoint, ProblemLoad}, checked: 0},
		{name: "unreadable checkpoint, log cleaned up before an older one", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			// checkpoint 1 is good, commit 0 is gone; checkpoint 3 cannot be read
			snap1, err := txlog.Load(ctx, mem, txlog.AtVersion(1))
			if err != nil {
				t.Fatal(err)
			}
			if err := txlog.WriteCheckpoint(ctx, snap1); err != nil {
				t.Fatal(err)
			}
			if err := mem.Put(ctx, txlog.CheckpointKey(3), []byte("PAR1 not really PAR1")); err != nil {
				t.Fatal(err)
			}
			if err := mem.Delete(ctx, txlog.CommitKey(0)); err != nil {
				t.Fatal(err)
			}
		}, want: []VerifyProblemKind{ProblemCheckpoint}, checked: 0},
		{name: "log cleaned up before the checkpoint", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			for v := range int64(3) {
				if err := mem.Delete(ctx, txlog.CommitKey(v)); err != nil {
					t.Fatal(err)
				}
			}
		}, checked: 0},
		{name: "log starts without a checkpoint", break_: func(t *testing.T, tbl *Table, mem *objectstore.Mem) {
			for _, k := range []string{txlog.CommitKey(0), txlog.CheckpointKey(3), txlog.LastCheckpointKey} {
				if err := mem.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
		}, want: []VerifyProblemKind{ProblemLogGap, ProblemLoad}, checked: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tbl, mem := verifyTable(t)
			tc.break_(t, tbl, mem)
			rep, err := Verify(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			if got := problemKinds(rep); !slices.Equal(got, tc.want) {
				t.Errorf("problem kinds = %v, want %v; problems:\n%v", got, tc.want, rep.Problems)
			}
			if rep.OK() != (len(tc.want) == 0) {
				t.Errorf("OK = %v with problems %v", rep.OK(), rep.Problems)
			}
			if rep.Checkpoints != tc.checked {
				t.Errorf("checked %d checkpoints, want %d", rep.Checkpoints, tc.checked)
			}
			if len(tc.want) == 0 && (rep.Version != 5 || rep.Files != 5 || rep.Commits == 0) {
				t.Errorf("report: version %d, %d files, %d commits", rep.Version, rep.Files, rep.Commits)
			}
			for _, p := range rep.Problems {
				if p.Detail == "" || p.String() == "" {
					t.Errorf("problem without detail: %+v", p)
				}
			}
		})
	}
}

func TestVerifyNotATable(t *testing.T) {
	_, err := Verify(context.Background(), objectstore.NewMem("empty"))
	if err == nil {
		t.Fatal("no error for an empty store")
	}
	if _, err := VerifyExactlyOnce(context.Background(), objectstore.NewMem("empty")); err == nil {
		t.Fatal("no error for an empty store")
	}
}

// epochCommit commits one streaming epoch the way the sink does: a file,
// a txn action {query, txnVersion} and a STREAMING UPDATE commitInfo naming
// epoch (which the tests make disagree with txnVersion on purpose).
func epochCommit(t *testing.T, tbl *Table, query string, epoch, txnVersion int64, withTxn bool) *Table {
	t.Helper()
	ctx := context.Background()
	adds, err := tbl.WriteFiles(ctx, maintRowsFor(int(epoch)*10, 2, "ams"))
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction("STREAMING UPDATE")
	for _, a := range adds {
		tx.Add(txlog.Action{Add: a})
	}
	if withTxn {
		tx.Add(txlog.Action{Txn: &txlog.Txn{AppID: query, Version: txnVersion}})
	}
	tx.SetOperationParameters(map[string]string{"outputMode": "Append", "queryId": query, "epochId": strconv.FormatInt(epoch, 10)})
	nt, _, err := tbl.Commit(ctx, tx)
	if err != nil {
		t.Fatal(err)
	}
	return nt
}

func TestVerifyExactlyOnce(t *testing.T) {
	type ep struct {
		query      string
		epoch, txn int64
		noTxn      bool
	}
	e := func(q string, epochs ...int64) []ep {
		var out []ep
		for _, x := range epochs {
			out = append(out, ep{query: q, epoch: x, txn: x})
		}
		return out
	}
	cat := func(parts ...[]ep) []ep { return slices.Concat(parts...) }
	cases := []struct {
		name string
		eps  []ep
		// want per query: committed ranges, gaps, repeated epochs, backwards epochs, mismatches, ok
		want map[string]string
	}{
		{name: "clean", eps: e("q", 0, 1, 2, 3), want: map[string]string{"q": "ok committed=[0-3] gaps=[] repeats=[] backwards=[] mismatches=0"}},
		{name: "gap", eps: e("q", 0, 1, 3, 4), want: map[string]string{"q": "FAIL committed=[0-1 3-4] gaps=[2] repeats=[] backwards=[] mismatches=0"}},
		{name: "repeat", eps: e("q", 0, 1, 1, 2), want: map[string]string{"q": "FAIL committed=[0-2] gaps=[] repeats=[1] backwards=[] mismatches=0"}},
		{name: "backwards", eps: e("q", 0, 1, 3, 2), want: map[string]string{"q": "FAIL committed=[0-3] gaps=[] repeats=[] backwards=[2] mismatches=0"}},
		{name: "backwards repeat", eps: e("q", 0, 1, 2, 0), want: map[string]string{"q": "FAIL committed=[0-2] gaps=[] repeats=[0] backwards=[0] mismatches=0"}},
		{name: "commitInfo disagrees with txn", eps: []ep{{query: "q", epoch: 0, txn: 0}, {query: "q", epoch: 5, txn: 1}}, want: map[string]string{"q": "FAIL committed=[0-1] gaps=[] repeats=[] backwards=[] mismatches=1"}},
		{name: "streaming commit without txn", eps: []ep{{query: "q", epoch: 0, txn: 0}, {query: "q", epoch: 1, noTxn: true}}, want: map[string]string{"q": "FAIL committed=[0-1] gaps=[] repeats=[] backwards=[] mismatches=1"}},
		{name: "two queries", eps: cat(e("a", 0, 1), e("b", 5, 7), e("a", 2)), want: map[string]string{
			"a": "ok committed=[0-2] gaps=[] repeats=[] backwards=[] mismatches=0",
			"b": "FAIL committed=[5 7] gaps=[6] repeats=[] backwards=[] mismatches=0"}},
		{name: "no streaming query", eps: nil, want: map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tbl, mem := maintTable(t, false, nil)
			for _, x := range tc.eps {
				tbl = epochCommit(t, tbl, x.query, x.epoch, x.txn, !x.noTxn)
			}
			rep, err := VerifyExactlyOnce(context.Background(), mem)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			allOK := true
			for _, q := range rep.Queries {
				got[q.AppID] = describeQuery(q)
				allOK = allOK && q.OK()
			}
			for q, want := range tc.want {
				if got[q] != want {
					t.Errorf("query %s: got  %s\n                 want %s", q, got[q], want)
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("queries %v, want %v", got, tc.want)
			}
			if rep.OK() != allOK || rep.Version != tbl.Version() {
				t.Errorf("OK %v, version %d (table %d)", rep.OK(), rep.Version, tbl.Version())
			}
		})
	}
}

func describeQuery(q *QueryEpochs) string {
	status := "ok"
	if !q.OK() {
		status = "FAIL"
	}
	var rep, back []int64
	for _, r := range q.Repeats {
		rep = append(rep, r.Epoch)
	}
	for _, b := range q.Backwards {
		back = append(back, b.Epoch)
	}
	ranges := func(rs []EpochRange) string {
		s := make([]string, len(rs))
		for i, r := range rs {
			s[i] = r.String()
		}
		return fmt.Sprint(s)
	}
	return fmt.Sprintf("%s committed=%s gaps=%s repeats=%v backwards=%v mismatches=%d",
		status, ranges(q.Committed), ranges(q.Gaps), fmtInts(rep), fmtInts(back), len(q.Mismatches))
}

func fmtInts(s []int64) string {
	if s == nil {
		return "[]"
	}
	return fmt.Sprint(s)
}

// TestVerifyExactlyOnceCleanedLog: after log cleanup the checkpoint's txn
// version is the base; later epochs continue from it, and an epoch at or
// below it is a repeat.
func TestVerifyExactlyOnceCleanedLog(t *testing.T) {
	ctx := context.Background()
	tbl, mem := maintTable(t, false, nil)
	for x := range int64(4) {
		tbl = epochCommit(t, tbl, "q", x, x, true) // versions 1..4
	}
	if err := txlog.WriteCheckpoint(ctx, tbl.Snapshot()); err != nil {
		t.Fatal(err)
	}
	for v := range tbl.Version() {
		if err := mem.Delete(ctx, txlog.CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	tbl = epochCommit(t, tbl, "q", 4, 4, true)
	rep, err := VerifyExactlyOnce(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Queries) != 1 || rep.Queries[0].Base != 3 || rep.FromVersion != 5 {
		t.Fatalf("report %+v, query %+v", rep, rep.Queries[0])
	}
	if got := describeQuery(rep.Queries[0]); got != "ok committed=[4] gaps=[] repeats=[] backwards=[] mismatches=0" {
		t.Errorf("got %s", got)
	}
	epochCommit(t, tbl, "q", 2, 2, true)
	rep, err = VerifyExactlyOnce(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := describeQuery(rep.Queries[0]); got != "FAIL committed=[2 4] gaps=[] repeats=[2] backwards=[2] mismatches=0" {
		t.Errorf("got %s", got)
	}
}
