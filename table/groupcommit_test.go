package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/value"
)

// holdStore holds the first commit PutIfAbsent after arm() until release
// is closed (entered is closed when it is held), and sleeps delay in every
// commit PutIfAbsent, so that appends queue up behind a commit in flight.
type holdStore struct {
	objectstore.Store
	delay   time.Duration
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	commits atomic.Int64 // commit PutIfAbsent calls
}

func newHoldStore(name string, delay time.Duration) *holdStore {
	return &holdStore{Store: objectstore.NewMem(name), delay: delay, entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdStore) arm() { h.armed.Store(true) }

func (h *holdStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, txlog.LogPrefix) && strings.HasSuffix(key, ".json") {
		h.commits.Add(1)
		if h.armed.CompareAndSwap(true, false) {
			close(h.entered)
			<-h.release
		}
		time.Sleep(h.delay)
	}
	return h.Store.PutIfAbsent(ctx, key, data)
}

var groupSchema = schema.NewStruct(field("w", prim(schema.Long), false), field("i", prim(schema.Long), false))

// groupRows returns writer w's n rows.
func groupRows(w, n int) []value.Row {
	rows := make([]value.Row, n)
	for i := range rows {
		rows[i] = value.Row{int64(w), int64(i)}
	}
	return rows
}

// waitAppends waits until the table's group committer has n appends queued
// or committed.
func waitAppends(t *testing.T, tbl *Table, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, _ := tbl.GroupCommitStats()
		if st.Appends >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d appends queued, want %d", st.Appends, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// addedIn returns the paths added by the commit of version v.
func addedIn(t *testing.T, tbl *Table, v int64) []string {
	t.Helper()
	acts, err := tbl.ReadCommit(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range acts {
		if a.Add != nil {
			out = append(out, a.Add.Path)
		}
	}
	return out
}

// TestGroupCommitBatches: concurrent appends (with and without a txn) on
// one table WithGroupCommit share versions; each caller's rows are in the
// version it was told, exactly once, with its txn; the log uses fewer
// versions than appends; a table without the option commits each alone.
func TestGroupCommitBatches(t *testing.T) {
	ctx := context.Background()
	const writers, rowsEach = 24, 50
	for _, tc := range []struct {
		name  string
		group bool
		txn   bool
	}{
		{"group, blind appends", true, false},
		{"group, appends with txn", true, true},
		{"no group", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newHoldStore(t.Name(), 5*time.Millisecond)
			opts := []Option{WithStore(store)}
			if tc.group {
				opts = append(opts, WithGroupCommit())
			}
			tbl, err := Create(ctx, "", groupSchema, opts...)
			if err != nil {
				t.Fatal(err)
			}
			type out struct {
				version int64
				files   []string
			}
			outs := make([]out, writers)
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Go(func() {
					var wo []WriteOption
					if tc.txn {
						wo = append(wo, WithTxn(fmt.Sprintf("app-%d", w), 7))
					}
					adds, err := tbl.WriteFiles(ctx, groupRows(w, rowsEach))
					if err != nil {
						errs <- err
						return
					}
					nt, res, err := tbl.CommitFiles(ctx, adds, wo...)
					if err != nil {
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
					if nt.Version() != res.Version {
						errs <- fmt.Errorf("writer %d: table at %d, result %d", w, nt.Version(), res.Version)
					}
					for _, a := range adds {
						outs[w].files = append(outs[w].files, a.Path)
					}
					outs[w].version = res.Version
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			latest, err := tbl.Refresh(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for w, o := range outs {
				in := addedIn(t, latest, o.version)
				for _, f := range o.files {
					if !slices.Contains(in, f) {
						t.Fatalf("writer %d told version %d, which does not add its file %s", w, o.version, f)
					}
				}
				if tc.txn && latest.Snapshot().TxnVersion(fmt.Sprintf("app-%d", w)) != 7 {
					t.Fatalf("writer %d: txn not committed", w)
				}
			}
			rows := readAllRows(t, latest)
			seen := map[[2]int64]int{}
			for _, r := range rows {
				seen[[2]int64{r[0].(int64), r[1].(int64)}]++
			}
			if len(rows) != writers*rowsEach || len(seen) != writers*rowsEach {
				t.Fatalf("%d rows (%d distinct), want %d each once", len(rows), len(seen), writers*rowsEach)
			}
			st, ok := latest.GroupCommitStats()
			if ok != tc.group {
				t.Fatalf("group stats ok %v", ok)
			}
			if !tc.group {
				if latest.Version() != writers {
					t.Fatalf("version %d, want one per append", latest.Version())
				}
				return
			}
			if st.Appends != writers || st.Versions != latest.Version() || st.Versions >= writers || st.Batches == 0 {
				t.Fatalf("stats %+v at version %d: want %d appends in fewer versions", st, latest.Version(), writers)
			}
			t.Logf("%d appends in %d versions (%+v)", writers, latest.Version(), st)
		})
	}
}

// TestGroupCommitSeparates: what cannot share a version commits alone: an
// overwrite (not queued), a second append with an appId already in the
// batch (it then conflicts with the batch: ErrConcurrentTransaction), and
// an append whose batch conflicted because another writer committed its
// appId first (the batch is retried one by one: only that append fails,
// and its files are deleted).
func TestGroupCommitSeparates(t *testing.T) {
	ctx := context.Background()
	store := newHoldStore(t.Name(), 0)
	tbl, err := Create(ctx, "", groupSchema, WithStore(store), WithGroupCommit())
	if err != nil {
		t.Fatal(err)
	}
	// Another writer (no group commit) commits app "taken" at version 1;
	// tbl stays at version 0.
	other, err := Open(ctx, "", WithStore(store.Store))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AppendRows(ctx, groupRows(100, 1), WithTxn("taken", 1)); err != nil {
		t.Fatal(err)
	}
	store.arm()
	type result struct {
		name    string
		version int64
		err     error
	}
	results := make(chan result, 5)
	start := func(name string, w int, opts ...WriteOption) {
		go func() {
			nt, err := tbl.AppendRows(ctx, groupRows(w, 3), opts...)
			r := result{name: name, err: err}
			if nt != nil {
				r.version = nt.Version()
			}
			results <- r
		}()
	}
	start("first", 1, WithTxn("first", 1)) // held in its PUT
	<-store.entered
	start("a", 2, WithTxn("a", 1))
	waitAppends(t, tbl, 2)
	start("taken", 3, WithTxn("taken", 2))
	waitAppends(t, tbl, 3)
	start("a again", 4, WithTxn("a", 2))
	waitAppends(t, tbl, 4)
	start("b", 5)
	waitAppends(t, tbl, 5)
	close(store.release)
	got := map[string]result{}
	for range 5 {
		r := <-results
		got[r.name] = r
	}
	for _, name := range []string{"first", "a", "b"} {
		if got[name].err != nil {
			t.Fatalf("%s: %v", name, got[name].err)
		}
	}
	for _, name := range []string{"taken", "a again"} {
		if !errors.Is(got[name].err, ErrConcurrentTransaction) {
			t.Fatalf("%s: err %v, want ErrConcurrentTransaction", name, got[name].err)
		}
	}
	if got["first"].version != 2 || got["a"].version != 3 || got["b"].version != 4 {
		t.Fatalf("versions: first %d, a %d, b %d", got["first"].version, got["a"].version, got["b"].version)
	}
	latest, err := tbl.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readAllRows(t, latest)); n != 1+3*3 {
		t.Fatalf("%d rows, want 10", n)
	}
	checkNoOrphans(t, latest) // the failed appends' files are deleted
	st, _ := latest.GroupCommitStats()
	if st.Retried != 3 || st.Appends != 5 {
		t.Fatalf("stats %+v: want the batch {a, taken, b} retried alone", st)
	}
	// An overwrite is not queued: it commits alone, removing everything.
	ow, err := latest.OverwriteRows(ctx, groupRows(9, 2))
	if err != nil {
		t.Fatal(err)
	}
	if st2, _ := ow.GroupCommitStats(); st2.Appends != st.Appends {
		t.Fatalf("the overwrite went through the group committer: %+v", st2)
	}
	if n := len(readAllRows(t, ow)); n != 2 {
		t.Fatalf("%d rows after the overwrite", n)
	}
}

// TestGroupCommitCancel: a caller cancelled while its append waits in the
// queue gets context.Canceled and its files are deleted; the appends
// queued with it are committed, in one version.
func TestGroupCommitCancel(t *testing.T) {
	ctx := context.Background()
	store := newHoldStore(t.Name(), 0)
	tbl, err := Create(ctx, "", groupSchema, WithStore(store), WithGroupCommit())
	if err != nil {
		t.Fatal(err)
	}
	store.arm()
	type result struct {
		w   int
		v   int64
		err error
	}
	results := make(chan result, 4)
	cctx, cancel := context.WithCancel(ctx)
	start := func(ctx context.Context, w int) {
		go func() {
			nt, err := tbl.AppendRows(ctx, groupRows(w, 4), WithTxn(fmt.Sprint("q", w), 0))
			r := result{w: w, err: err}
			if nt != nil {
				r.v = nt.Version()
			}
			results <- r
		}()
	}
	start(ctx, 0)
	<-store.entered
	start(ctx, 1)
	waitAppends(t, tbl, 2)
	start(cctx, 2)
	waitAppends(t, tbl, 3)
	start(ctx, 3)
	waitAppends(t, tbl, 4)
	cancel()
	r := <-results
	if r.w != 2 || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("first result: writer %d, %v; want writer 2 cancelled", r.w, r.err)
	}
	close(store.release)
	versions := map[int]int64{}
	for range 3 {
		r := <-results
		if r.err != nil {
			t.Fatalf("writer %d: %v", r.w, r.err)
		}
		versions[r.w] = r.v
	}
	if versions[0] != 1 || versions[1] != 2 || versions[3] != 2 {
		t.Fatalf("versions %v, want writer 0 at 1, writers 1 and 3 sharing 2", versions)
	}
	latest, err := tbl.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readAllRows(t, latest)); n != 12 || latest.Snapshot().TxnVersion("q2") != -1 {
		t.Fatalf("%d rows, q2 txn %d; want 12 rows and no q2", n, latest.Snapshot().TxnVersion("q2"))
	}
	checkNoOrphans(t, latest) // the cancelled append's files are deleted
}

// checkNoOrphans fails when the store holds a data file that tbl does not
// reference.
func checkNoOrphans(t *testing.T, tbl *Table) {
	t.Helper()
	live := map[string]bool{}
	for _, f := range tbl.Snapshot().Files() {
		live[f.Path] = true
	}
	for info, err := range tbl.Store().List(context.Background(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(info.Key, txlog.LogPrefix) && !live[info.Key] {
			t.Fatalf("orphan data file %s", info.Key)
		}
	}
}
