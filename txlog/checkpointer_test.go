package txlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
)

// gatedWriter replaces Checkpointer.write: it records the versions written,
// per table, blocks each write until release is signalled (when gated), and
// checks that no two writes of one table overlap.
type gatedWriter struct {
	gate    chan struct{} // nil: do not block
	started chan int64    // receives each version when its write starts (buffered)
	fail    map[int64]error

	mu       sync.Mutex
	versions map[string][]int64
	inFlight map[string]int
	overlap  bool
}

func newGatedWriter(gated bool) *gatedWriter {
	w := &gatedWriter{started: make(chan int64, 100), versions: map[string][]int64{}, inFlight: map[string]int{}}
	if gated {
		w.gate = make(chan struct{})
	}
	return w
}

func (w *gatedWriter) write(ctx context.Context, snap *Snapshot) error {
	key := snap.store.URI()
	w.mu.Lock()
	w.inFlight[key]++
	if w.inFlight[key] > 1 {
		w.overlap = true
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.inFlight[key]--
		w.mu.Unlock()
	}()
	w.started <- snap.version
	if w.gate != nil {
		select {
		case <-w.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := w.fail[snap.version]; err != nil {
		return err
	}
	w.mu.Lock()
	w.versions[key] = append(w.versions[key], snap.version)
	w.mu.Unlock()
	return nil
}

func (w *gatedWriter) written(key string) []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.versions[key])
}

// fakeSnap is a snapshot of version v of the table on store, enough for a
// Checkpointer whose write is replaced.
func fakeSnap(store objectstore.Store, v int64) *Snapshot {
	return &Snapshot{store: store, version: v}
}

func TestCheckpointerQueue(t *testing.T) {
	a, b := objectstore.NewMem("cp-a"), objectstore.NewMem("cp-b")
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		// first is enqueued and its write started (and held) before rest
		// are enqueued; then the writes are released and the
		// Checkpointer closed.
		first   *Snapshot
		rest    []*Snapshot
		fail    map[int64]error
		want    map[string][]int64 // versions written per table, in order
		stats   CheckpointerStats
		wantErr error
	}{
		{
			name:  "newest due snapshot is written next",
			first: fakeSnap(a, 10),
			rest:  []*Snapshot{fakeSnap(a, 20), fakeSnap(a, 30), fakeSnap(a, 25), fakeSnap(a, 40)},
			want:  map[string][]int64{a.URI(): {10, 40}},
			stats: CheckpointerStats{Queued: 5, Written: 2, Coalesced: 3, LastVersion: 40},
		},
		{
			name:  "not newer than the one being written",
			first: fakeSnap(a, 10),
			rest:  []*Snapshot{fakeSnap(a, 10), fakeSnap(a, 5)},
			want:  map[string][]int64{a.URI(): {10}},
			stats: CheckpointerStats{Queued: 3, Written: 1, Coalesced: 2, LastVersion: 10},
		},
		{
			name:  "tables do not coalesce with each other",
			first: fakeSnap(a, 10),
			rest:  []*Snapshot{fakeSnap(b, 10), fakeSnap(a, 20), fakeSnap(b, 20), fakeSnap(b, 30)},
			want:  map[string][]int64{a.URI(): {10, 20}, b.URI(): {30}},
			stats: CheckpointerStats{Queued: 5, Written: 3, Coalesced: 2, LastVersion: 20},
		},
		{
			name:    "failure is reported and a newer snapshot is still written",
			first:   fakeSnap(a, 10),
			rest:    []*Snapshot{fakeSnap(a, 20)},
			fail:    map[int64]error{10: errBoom},
			want:    map[string][]int64{a.URI(): {20}},
			stats:   CheckpointerStats{Queued: 2, Written: 1, Failed: 1, LastVersion: 20},
			wantErr: errBoom,
		},
		{
			name:    "same version queued while it is being written",
			first:   fakeSnap(a, 10),
			rest:    []*Snapshot{fakeSnap(a, 10)},
			fail:    map[int64]error{10: errBoom},
			want:    map[string][]int64{},
			stats:   CheckpointerStats{Queued: 2, Written: 0, Coalesced: 1, Failed: 1, LastVersion: -1},
			wantErr: errBoom,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newGatedWriter(true)
			w.fail = tc.fail
			cp := NewCheckpointer()
			cp.write = w.write
			if err := cp.enqueue(tc.first); err != nil {
				t.Fatal(err)
			}
			if v := <-w.started; v != tc.first.version {
				t.Fatalf("first write of version %d, want %d", v, tc.first.version)
			}
			for _, s := range tc.rest {
				if err := cp.enqueue(s); err != nil {
					t.Fatal(err)
				}
			}
			close(w.gate)
			err := cp.Close(context.Background())
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("Close = %v, want %v", err, tc.wantErr)
			}
			for _, s := range []objectstore.Store{a, b} {
				if got, want := w.written(s.URI()), tc.want[s.URI()]; !slices.Equal(got, want) {
					t.Errorf("%s: written %v, want %v", s.URI(), got, want)
				}
			}
			st := cp.Stats()
			if !errors.Is(st.LastErr, tc.wantErr) || (tc.wantErr == nil) != (st.LastErr == nil) {
				t.Errorf("LastErr = %v, want %v", st.LastErr, tc.wantErr)
			}
			st.LastErr = nil
			if st != tc.stats {
				t.Errorf("stats %+v, want %+v", st, tc.stats)
			}
			if w.overlap {
				t.Error("two writes of one table overlapped")
			}
		})
	}
}

func TestCheckpointerCloseWaits(t *testing.T) {
	w := newGatedWriter(true)
	cp := NewCheckpointer()
	cp.write = w.write
	mem := objectstore.NewMem("cp-wait")
	if err := cp.enqueue(fakeSnap(mem, 10)); err != nil {
		t.Fatal(err)
	}
	<-w.started
	if err := cp.enqueue(fakeSnap(mem, 20)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- cp.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v while a checkpoint was being written", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := cp.enqueue(fakeSnap(mem, 30)); !errors.Is(err, ErrCheckpointerClosed) {
		t.Fatalf("enqueue after Close = %v, want ErrCheckpointerClosed", err)
	}
	close(w.gate)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := w.written(mem.URI()); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("written %v, want the queued 20 too", got)
	}
	if err := cp.Close(context.Background()); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// TestCheckpointerPanic checks that a panicking checkpoint write is a
// failure the Checkpointer reports, not a crash of the process.
func TestCheckpointerPanic(t *testing.T) {
	cp := NewCheckpointer(WithCheckpointLogger(slog.New(slog.DiscardHandler)))
	cp.write = func(context.Context, *Snapshot) error { panic("boom") }
	if err := cp.enqueue(fakeSnap(objectstore.NewMem("cp-panic"), 10)); err != nil {
		t.Fatal(err)
	}
	err := cp.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "panicked: boom") {
		t.Fatalf("Close = %v, want the panic as an error", err)
	}
	if st := cp.Stats(); st.Failed != 1 || st.Written != 0 {
		t.Errorf("stats %+v, want 1 failed, 0 written", st)
	}
}

// TestCheckpointerRecreatedTable checks that a table created again at the
// same URI (a new table id) is checkpointed from its first due version, not
// coalesced behind the old table's higher versions.
func TestCheckpointerRecreatedTable(t *testing.T) {
	w := newGatedWriter(false)
	cp := NewCheckpointer()
	cp.write = w.write
	mem := objectstore.NewMem("cp-recreated")
	old, recreated := fakeSnap(mem, 770), fakeSnap(mem, 10)
	old.metadata, recreated.metadata = &Metadata{ID: "old-table"}, &Metadata{ID: "new-table"}
	for _, s := range []*Snapshot{old, recreated} {
		if err := cp.enqueue(s); err != nil {
			t.Fatal(err)
		}
		if err := cp.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := cp.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := w.written(mem.URI()); !slices.Equal(got, []int64{770, 10}) {
		t.Errorf("checkpoints written %v, want [770 10]", got)
	}
}

func TestCheckpointerCloseCancels(t *testing.T) {
	w := newGatedWriter(true) // never released: only cancellation ends the write
	cp := NewCheckpointer()
	cp.write = w.write
	mem := objectstore.NewMem("cp-cancel")
	if err := cp.enqueue(fakeSnap(mem, 10)); err != nil {
		t.Fatal(err)
	}
	<-w.started
	if err := cp.enqueue(fakeSnap(mem, 20)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := cp.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, context.Canceled) {
		// DeadlineExceeded from Close's ctx, Canceled from the aborted write.
		t.Fatalf("Close = %v, want the deadline and the cancelled write", err)
	}
	st := cp.Stats()
	if st.Dropped != 1 || st.Failed != 1 || st.Written != 0 {
		t.Fatalf("stats %+v, want 1 dropped, 1 failed", st)
	}
	if got := w.written(mem.URI()); len(got) != 0 {
		t.Fatalf("written %v", got)
	}
}

// noURIStore is a store without a URI.
type noURIStore struct{ objectstore.Store }

func (noURIStore) URI() string { return "" }

// TestCheckpointerStoresWithoutURI: snapshots of stores without a URI have
// no table identity, so none replaces another.
func TestCheckpointerStoresWithoutURI(t *testing.T) {
	w := newGatedWriter(true)
	cp := NewCheckpointer()
	cp.write = w.write
	for i, s := range []objectstore.Store{noURIStore{objectstore.NewMem("nu-a")}, noURIStore{objectstore.NewMem("nu-b")}, noURIStore{objectstore.NewMem("nu-c")}} {
		if err := cp.enqueue(fakeSnap(s, int64(30-10*i))); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-w.started
		}
	}
	close(w.gate)
	if err := cp.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := w.written(""); !slices.Equal(got, []int64{30, 20, 10}) {
		t.Fatalf("written %v, want all three in order", got)
	}
	if st := cp.Stats(); st.Written != 3 || st.Coalesced != 0 || len(cp.written) != 0 {
		t.Fatalf("stats %+v, %d tables remembered", st, len(cp.written))
	}
}

// TestCheckpointerConcurrentEnqueue enqueues from many goroutines: every
// table's newest version is written, and never two writes of one table at
// once (run with -race).
func TestCheckpointerConcurrentEnqueue(t *testing.T) {
	w := newGatedWriter(false)
	w.started = make(chan int64, 10_000)
	cp := NewCheckpointer()
	cp.write = w.write
	stores := []objectstore.Store{objectstore.NewMem("cc-a"), objectstore.NewMem("cc-b"), objectstore.NewMem("cc-c")}
	var wg sync.WaitGroup
	var queued atomic.Int64
	var mu sync.Mutex
	newest := map[string]int64{}
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				s := stores[(g+i)%len(stores)]
				v := int64(i*10 + g)
				if err := cp.enqueue(fakeSnap(s, v)); err != nil {
					t.Error(err)
				}
				queued.Add(1)
				mu.Lock()
				newest[s.URI()] = max(newest[s.URI()], v)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := cp.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := cp.Stats()
	if st.Queued != queued.Load() || st.Written+st.Coalesced != st.Queued || st.Failed != 0 {
		t.Fatalf("stats %+v: written + coalesced must be the %d queued", st, queued.Load())
	}
	for _, s := range stores {
		got := w.written(s.URI())
		increasing := len(got) > 0
		for i := 1; i < len(got); i++ {
			increasing = increasing && got[i] > got[i-1]
		}
		if !increasing || got[len(got)-1] != newest[s.URI()] {
			t.Fatalf("%s: written %v, want increasing versions up to %d", s.URI(), got, newest[s.URI()])
		}
	}
	if w.overlap {
		t.Fatal("two writes of one table overlapped")
	}
}

// commitN commits n one-file appends on snap with opts and returns the
// results.
func commitN(t *testing.T, snap *Snapshot, n int, opts ...TxnOption) []*CommitResult {
	t.Helper()
	var out []*CommitResult
	for range n {
		tx := NewTransaction(snap, "WRITE", opts...)
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", snap.Version()+1), "a"))
		res, err := tx.Commit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res)
		snap = res.Snapshot
	}
	return out
}

// TestCommitWithCheckpointer commits through a Checkpointer: due
// checkpoints are queued, not written by Commit, and the table loads the
// same snapshot from the checkpoint written in the background.
func TestCommitWithCheckpointer(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("cp-commit")
	snap := createTestTable(t, mem, map[string]string{"delta.checkpointInterval": "5"})
	cp := NewCheckpointer()
	results := commitN(t, snap, 12, WithCheckpointer(cp))
	for _, res := range results {
		if want := res.Version%5 == 0; res.CheckpointQueued != want || res.Checkpointed || res.CheckpointErr != nil {
			t.Fatalf("version %d: queued %v, checkpointed %v (%v), want queued %v", res.Version,
				res.CheckpointQueued, res.Checkpointed, res.CheckpointErr, want)
		}
	}
	if err := cp.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := cp.Stats(); st.Written+st.Coalesced != 2 || st.LastVersion != 10 {
		t.Fatalf("stats %+v, want checkpoint 10 written last", st)
	}
	hint, err := readLastCheckpoint(ctx, mem)
	if err != nil || hint == nil || hint.Version != 10 {
		t.Fatalf("_last_checkpoint %+v (%v), want version 10", hint, err)
	}
	last := results[len(results)-1].Snapshot
	loaded, err := Load(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.CheckpointVersion() != 10 || loaded.Version() != last.Version() {
		t.Fatalf("loaded version %d from checkpoint %d, want %d from 10", loaded.Version(), loaded.CheckpointVersion(), last.Version())
	}
	atTen, err := Load(ctx, mem, AtVersion(10))
	if err != nil {
		t.Fatal(err)
	}
	if atTen.CheckpointVersion() != 10 {
		t.Fatalf("version 10 loaded from checkpoint %d", atTen.CheckpointVersion())
	}
	if got, want := paths(loaded.Files()), paths(last.Files()); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	if got := paths(atTen.Files()); len(got) != 10 {
		t.Fatalf("version 10 has files %v", got)
	}

	// A closed Checkpointer: the commit succeeds, the checkpoint is not
	// queued and CheckpointErr says why.
	results = commitN(t, last, 3, WithCheckpointer(cp))
	res := results[2]
	if res.Version != 15 || res.CheckpointQueued || !errors.Is(res.CheckpointErr, ErrCheckpointerClosed) {
		t.Fatalf("version %d: queued %v, err %v; want 15 not queued with ErrCheckpointerClosed", res.Version, res.CheckpointQueued, res.CheckpointErr)
	}
	// WithoutAutoCheckpoint wins over a Checkpointer.
	res = commitN(t, res.Snapshot, 5, WithCheckpointer(NewCheckpointer()), WithoutAutoCheckpoint())[4]
	if res.Version != 20 || res.CheckpointQueued || res.CheckpointErr != nil {
		t.Fatalf("version %d: queued %v, err %v", res.Version, res.CheckpointQueued, res.CheckpointErr)
	}
}

func paths(files []*Add) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// TestBackgroundCheckpointCrash: a writer that dies or is stopped while its
// background checkpoint is being written leaves a valid table, whatever
// step the checkpoint reached.
func TestBackgroundCheckpointCrash(t *testing.T) {
	tests := []struct {
		name      string
		fault     faultstore.Fault
		closeWait time.Duration // Close's deadline; 0: none
		wantErr   error
		wantCP    int64 // checkpoint the reloaded table uses
	}{
		{
			name:    "crash before the checkpoint file",
			fault:   faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: CheckpointKey(10), Nth: 1, Phase: faultstore.Before, Kind: faultstore.Crash},
			wantErr: faultstore.ErrCrashed,
			wantCP:  5,
		},
		{
			name:    "crash after the checkpoint file, before _last_checkpoint",
			fault:   faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: LastCheckpointKey, Nth: 2, Phase: faultstore.Before, Kind: faultstore.Crash},
			wantErr: faultstore.ErrCrashed,
			wantCP:  10,
		},
		{
			name:    "reply of _last_checkpoint lost",
			fault:   faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: LastCheckpointKey, Nth: 2, Phase: faultstore.After, Kind: faultstore.DropReply},
			wantErr: faultstore.ErrReplyLost,
			wantCP:  10,
		},
		{
			name:      "stopped while writing the checkpoint file",
			fault:     faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: CheckpointKey(10), Nth: 1, Phase: faultstore.Before, Kind: faultstore.Latency, Latency: time.Minute},
			closeWait: 20 * time.Millisecond,
			wantErr:   context.DeadlineExceeded,
			wantCP:    5,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := objectstore.NewMem("cp-crash")
			createTestTable(t, mem, map[string]string{"delta.checkpointInterval": "5"})
			store := faultstore.New(mem)
			snap, err := Load(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			store.Inject(tc.fault)
			cp := NewCheckpointer()
			results := commitN(t, snap, 5, WithCheckpointer(cp))
			// Checkpoint 5 is written before 10 is due: no coalescing.
			if err := cp.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			commitN(t, results[4].Snapshot, 5, WithCheckpointer(cp))
			cctx := ctx
			if tc.closeWait > 0 {
				var cancel context.CancelFunc
				cctx, cancel = context.WithTimeout(ctx, tc.closeWait)
				defer cancel()
			}
			if err := cp.Close(cctx); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Close = %v, want %v", err, tc.wantErr)
			}
			loaded, err := Load(ctx, mem)
			if err != nil {
				t.Fatal(err)
			}
			if loaded.Version() != 10 || loaded.NumFiles() != 10 || loaded.CheckpointVersion() != tc.wantCP {
				t.Fatalf("loaded version %d, %d files, checkpoint %d; want 10, 10, %d",
					loaded.Version(), loaded.NumFiles(), loaded.CheckpointVersion(), tc.wantCP)
			}
		})
	}
}
