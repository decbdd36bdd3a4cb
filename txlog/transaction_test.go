package txlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
)

const testSchema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"part","type":"string","nullable":true,"metadata":{}}]}`

// createTestTable commits version 0 of a table partitioned by "part".
func createTestTable(t testing.TB, store objectstore.Store, conf map[string]string) *Snapshot {
	t.Helper()
	ctx := context.Background()
	created := int64(1700000000000)
	m := &Metadata{ID: "11111111-2222-3333-4444-555555555555", Format: Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString: testSchema, PartitionColumns: []string{"part"}, Configuration: conf, CreatedTime: &created}
	res, err := CreateTransaction(store, &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, m).Commit(ctx)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if res.Version != 0 {
		t.Fatalf("create: version %d, want 0", res.Version)
	}
	snap, err := Load(ctx, store)
	if err != nil {
		t.Fatalf("load after create: %v", err)
	}
	return snap
}

func addFile(path, part string) Action {
	return Action{Add: &Add{Path: path, PartitionValues: map[string]string{"part": part}, Size: 100,
		ModificationTime: 1700000000000, DataChange: true, Stats: `{"numRecords":1}`}}
}

func removeFile(path, part string) Action {
	ts := int64(1700000000000)
	return Action{Remove: &Remove{Path: path, PartitionValues: map[string]string{"part": part}, DeletionTimestamp: &ts, DataChange: true}}
}

func partIs(v string) PartitionPredicate {
	return func(pv map[string]string) bool { return pv["part"] == v }
}

func TestCommitCreatesVersionsInOrder(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	snap := createTestTable(t, store, nil)
	for i := 1; i <= 3; i++ {
		tx := NewTransaction(snap, "WRITE")
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", i), "a"))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Version != int64(i) || res.Attempts != 1 {
			t.Fatalf("commit %d: version %d attempts %d", i, res.Version, res.Attempts)
		}
		if res.Snapshot.NumFiles() != i {
			t.Fatalf("post-commit snapshot has %d files, want %d", res.Snapshot.NumFiles(), i)
		}
		snap = res.Snapshot
	}
	// commitInfo is the first line, with the fields the spec and Spark expect.
	data, err := store.Get(ctx, CommitKey(2), objectstore.FullObject)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	for _, want := range []string{`"commitInfo"`, `"operation":"WRITE"`, `"isBlindAppend":true`, `"txnId":"`, `"engineInfo":"deltakit/`, `"readVersion":1`} {
		if !strings.Contains(first, want) {
			t.Errorf("first line %s lacks %s", first, want)
		}
	}
	loaded, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Version() != 3 || loaded.NumFiles() != 3 {
		t.Fatalf("loaded version %d with %d files", loaded.Version(), loaded.NumFiles())
	}
}

func TestCommitTwiceFails(t *testing.T) {
	snap := createTestTable(t, objectstore.NewMem("t"), nil)
	tx := NewTransaction(snap, "WRITE")
	tx.Add(addFile("a.parquet", "a"))
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); !errors.Is(err, ErrTransactionDone) {
		t.Fatalf("second Commit: %v, want ErrTransactionDone", err)
	}
}

func TestCommitRejectsDuplicateActions(t *testing.T) {
	snap := createTestTable(t, objectstore.NewMem("t"), nil)
	tests := []struct {
		name    string
		actions []Action
	}{
		{"add twice", []Action{addFile("a.parquet", "a"), addFile("a.parquet", "a")}},
		{"add and remove", []Action{addFile("a.parquet", "a"), removeFile("a.parquet", "a")}},
		{"two txns", []Action{{Txn: &Txn{AppID: "q", Version: 1}}, {Txn: &Txn{AppID: "q", Version: 2}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tx := NewTransaction(snap, "WRITE")
			tx.Add(tc.actions...)
			if _, err := tx.Commit(context.Background()); err == nil {
				t.Fatal("commit succeeded, want an error")
			}
		})
	}
}

// TestConflicts runs pairs of transactions from one snapshot: the winner
// commits first, then the loser must fail with the listed kinds or, when none
// are listed, succeed at the next version.
func TestConflicts(t *testing.T) {
	tests := []struct {
		name   string
		winner func(tx *Transaction)
		loser  func(tx *Transaction)
		want   []error
	}{
		{
			name:   "blind append vs blind append",
			winner: func(tx *Transaction) { tx.Add(addFile("w.parquet", "a")) },
			loser:  func(tx *Transaction) { tx.Add(addFile("l.parquet", "a")) },
		},
		{
			name:   "blind append into a partition another overwrite read",
			winner: func(tx *Transaction) { tx.Add(addFile("w.parquet", "a")) },
			loser: func(tx *Transaction) {
				for _, f := range tx.ReadFiles(partIs("a")) {
					tx.Add(removeFile(f.Path, "a"))
				}
				tx.Add(addFile("l.parquet", "a"))
			},
			// A blind append of the winner is ignored (WriteSerializable).
		},
		{
			name:   "blind append into what a serializable transaction read",
			winner: func(tx *Transaction) { tx.Add(addFile("w.parquet", "a")) },
			loser: func(tx *Transaction) {
				tx.RequireSerializable()
				tx.ReadWholeTable()
				tx.Add(removeFile("a0.parquet", "a"))
			},
			want: []error{ErrConcurrentAppend},
		},
		{
			name:   "blind append outside what a serializable transaction read",
			winner: func(tx *Transaction) { tx.Add(addFile("w.parquet", "b")) },
			loser: func(tx *Transaction) {
				tx.RequireSerializable()
				for _, f := range tx.ReadFiles(partIs("a")) {
					tx.Add(removeFile(f.Path, "a"))
				}
			},
		},
		{
			name: "overwrite of the same partition",
			winner: func(tx *Transaction) {
				for _, f := range tx.ReadFiles(partIs("a")) {
					tx.Add(removeFile(f.Path, "a"))
				}
				tx.Add(addFile("w.parquet", "a"))
			},
			loser: func(tx *Transaction) {
				for _, f := range tx.ReadFiles(partIs("a")) {
					tx.Add(removeFile(f.Path, "a"))
				}
				tx.Add(addFile("l.parquet", "a"))
			},
			want: []error{ErrConcurrentAppend, ErrConcurrentDeleteRead, ErrConcurrentDeleteDelete},
		},
		{
			name: "overwrites of different partitions",
			winner: func(tx *Transaction) {
				for _, f := range tx.ReadFiles(partIs("a")) {
					tx.Add(removeFile(f.Path, "a"))
				}
				tx.Add(addFile("w.parquet", "a"))
			},
			loser: func(tx *Transaction) {
				for _, f := range tx.ReadFiles(partIs("b")) {
					tx.Add(removeFile(f.Path, "b"))
				}
				tx.Add(addFile("l.parquet", "b"))
			},
		},
		{
			name:   "delete of a file the loser read",
			winner: func(tx *Transaction) { tx.Add(removeFile("a0.parquet", "a")) },
			loser: func(tx *Transaction) {
				tx.ReadFiles(partIs("a"))
				tx.Add(addFile("l.parquet", "b"))
			},
			want: []error{ErrConcurrentDeleteRead},
		},
		{
			name: "metadata change",
			winner: func(tx *Transaction) {
				m := tx.snap.Metadata().Clone()
				m.Description = "x"
				tx.UpdateMetadata(m)
			},
			loser: func(tx *Transaction) { tx.Add(addFile("l.parquet", "a")) },
			want:  []error{ErrMetadataChanged},
		},
		{
			name:   "protocol change",
			winner: func(tx *Transaction) { tx.UpdateProtocol(&Protocol{MinReaderVersion: 1, MinWriterVersion: 3}) },
			loser:  func(tx *Transaction) { tx.Add(addFile("l.parquet", "a")) },
			want:   []error{ErrProtocolChanged},
		},
		{
			name: "same streaming query twice",
			winner: func(tx *Transaction) {
				tx.TxnVersion("query-1")
				tx.Add(addFile("w.parquet", "a"), Action{Txn: &Txn{AppID: "query-1", Version: 1}})
			},
			loser: func(tx *Transaction) {
				tx.TxnVersion("query-1")
				tx.Add(addFile("l.parquet", "a"), Action{Txn: &Txn{AppID: "query-1", Version: 1}})
			},
			want: []error{ErrConcurrentTransaction},
		},
		{
			name: "two streaming queries",
			winner: func(tx *Transaction) {
				tx.TxnVersion("query-1")
				tx.Add(addFile("w.parquet", "a"), Action{Txn: &Txn{AppID: "query-1", Version: 1}})
			},
			loser: func(tx *Transaction) {
				tx.TxnVersion("query-2")
				tx.Add(addFile("l.parquet", "a"), Action{Txn: &Txn{AppID: "query-2", Version: 1}})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := objectstore.NewMem("t")
			snap := createTestTable(t, store, nil)
			seed := NewTransaction(snap, "WRITE")
			seed.Add(addFile("a0.parquet", "a"), addFile("b0.parquet", "b"))
			res, err := seed.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			snap = res.Snapshot
			w, l := NewTransaction(snap, "W"), NewTransaction(snap, "L")
			tc.winner(w)
			tc.loser(l)
			if _, err := w.Commit(ctx); err != nil {
				t.Fatalf("winner: %v", err)
			}
			res, err = l.Commit(ctx)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("loser: %v, want success", err)
				}
				if res.Version != 3 || res.Attempts != 2 {
					t.Fatalf("loser committed version %d in %d attempts, want 3 in 2", res.Version, res.Attempts)
				}
				return
			}
			if !errors.Is(err, ErrConcurrentModification) {
				t.Fatalf("loser: %v, want ErrConcurrentModification", err)
			}
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.WinnerVersion != 2 || ce.ReadVersion != 1 {
				t.Fatalf("loser: %#v, want a *ConflictError for winner 2, read 1", err)
			}
			for _, k := range tc.want {
				if !errors.Is(err, k) {
					t.Errorf("loser: %v, want it to match %v", err, k)
				}
			}
			if len(ce.Kinds) != len(tc.want) {
				t.Errorf("loser kinds %v, want %v", ce.Kinds, tc.want)
			}
			if _, err := store.Stat(ctx, CommitKey(3)); !errors.Is(err, objectstore.ErrNotExist) {
				t.Errorf("version 3 exists after a conflict: %v", err)
			}
		})
	}
}

func TestCreateTwiceConflicts(t *testing.T) {
	store := objectstore.NewMem("t")
	createTestTable(t, store, nil)
	m := &Metadata{ID: "x", Format: Format{Provider: "parquet"}, SchemaString: testSchema}
	_, err := CreateTransaction(store, &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, m).Commit(context.Background())
	if !errors.Is(err, ErrMetadataChanged) || !errors.Is(err, ErrProtocolChanged) {
		t.Fatalf("second create: %v, want metadata and protocol conflicts", err)
	}
}

// TestCommitUnknownOutcome covers replies lost after the PUT landed, and
// errors (409, 503) after which the PUT did not land: both end with exactly
// one commit and success.
func TestCommitUnknownOutcome(t *testing.T) {
	tests := []struct {
		name  string
		fault faultstore.Fault
	}{
		{"reply lost after the PUT landed", faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 1, Phase: faultstore.After, Kind: faultstore.DropReply}},
		{"409 conflict in flight", faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 1, Kind: faultstore.Status, Status: 409}},
		{"503 before the PUT", faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: 1, Kind: faultstore.Status, Status: 503}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := objectstore.NewMem("t")
			createTestTable(t, mem, nil)
			store := faultstore.New(mem)
			snap, err := Load(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			store.Inject(tc.fault)
			tx := NewTransaction(snap, "WRITE", WithBackoff(time.Millisecond, time.Millisecond))
			tx.Add(addFile("a.parquet", "a"))
			res, err := tx.Commit(ctx)
			if err != nil {
				t.Fatalf("commit: %v", err)
			}
			if res.Version != 1 || res.Attempts != 2 {
				t.Fatalf("version %d attempts %d, want 1 and 2", res.Version, res.Attempts)
			}
			if _, err := mem.Stat(ctx, CommitKey(2)); !errors.Is(err, objectstore.ErrNotExist) {
				t.Fatalf("a second commit was written: %v", err)
			}
			loaded, err := Load(ctx, mem)
			if err != nil || loaded.Version() != 1 || loaded.NumFiles() != 1 {
				t.Fatalf("reload: %v, version %d", err, loaded.Version())
			}
		})
	}
}

func TestCommitGivesUp(t *testing.T) {
	mem := objectstore.NewMem("t")
	createTestTable(t, mem, nil)
	store := faultstore.New(mem, faultstore.WithRandomFaults(1, 1.0))
	snap, err := Load(context.Background(), mem)
	if err != nil {
		t.Fatal(err)
	}
	snap.store = store
	tx := NewTransaction(snap, "WRITE", withMaxAttempts(3), WithBackoff(time.Millisecond, time.Millisecond))
	tx.Add(addFile("a.parquet", "a"))
	_, err = tx.Commit(context.Background())
	if !errors.Is(err, ErrCommitFailed) || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("commit: %v, want ErrCommitFailed after 3 attempts", err)
	}
}

func TestAutoCheckpoint(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("t")
	snap := createTestTable(t, store, map[string]string{"delta.checkpointInterval": "3"})
	for i := 1; i <= 7; i++ {
		tx := NewTransaction(snap, "WRITE")
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", i), "a"))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := i%3 == 0; res.Checkpointed != want || res.CheckpointErr != nil {
			t.Fatalf("version %d: checkpointed %v (%v), want %v", i, res.Checkpointed, res.CheckpointErr, want)
		}
		snap = res.Snapshot
	}
	for _, v := range []int64{3, 6} {
		if _, err := store.Stat(ctx, CheckpointKey(v)); err != nil {
			t.Errorf("checkpoint %d: %v", v, err)
		}
	}
	loaded, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.CheckpointVersion() != 6 || loaded.NumFiles() != 7 || loaded.Version() != 7 {
		t.Fatalf("loaded: checkpoint %d, %d files, version %d", loaded.CheckpointVersion(), loaded.NumFiles(), loaded.Version())
	}
}

// contend runs writers × commits blind appends from stale snapshots against
// newStore() stores (one per writer) and checks the log has no gap and every
// commit exactly once.
func contend(t *testing.T, newStore func() objectstore.Store, writers, commits int) {
	t.Helper()
	ctx := context.Background()
	base := createTestTable(t, newStore(), nil)
	var wg sync.WaitGroup
	txnIDs := make([][]string, writers)
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			store := newStore()
			snap, err := Load(ctx, store)
			if err != nil {
				errs <- err
				return
			}
			for c := range commits {
				tx := NewTransaction(snap, "WRITE", withMaxAttempts(10*writers), WithBackoff(time.Millisecond, 50*time.Millisecond), WithoutAutoCheckpoint())
				tx.Add(addFile(fmt.Sprintf("w%d-c%d.parquet", w, c), "a"))
				res, err := tx.Commit(ctx)
				if err != nil {
					errs <- fmt.Errorf("writer %d commit %d: %w", w, c, err)
					return
				}
				txnIDs[w] = append(txnIDs[w], res.TxnID)
				snap = res.Snapshot
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	_ = base
	store := newStore()
	want := int64(writers * commits)
	seen := map[string]int{}
	var last int64 = -1
	for c, err := range Commits(ctx, store, 1, want) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Version != last+1 && last >= 0 {
			t.Fatalf("gap: version %d after %d", c.Version, last)
		}
		last = c.Version
		seen[c.CommitInfo().TxnID]++
	}
	if last != want {
		t.Fatalf("log ends at %d, want %d", last, want)
	}
	for w, ids := range txnIDs {
		if len(ids) != commits {
			t.Fatalf("writer %d made %d commits", w, len(ids))
		}
		for _, id := range ids {
			if seen[id] != 1 {
				t.Fatalf("writer %d txnId %s appears %d times", w, id, seen[id])
			}
		}
	}
	snap, err := Load(ctx, store)
	if err != nil || snap.Version() != want || snap.NumFiles() != int(want) {
		t.Fatalf("final snapshot: %v (version %d, %d files)", err, snap.Version(), snap.NumFiles())
	}
}

func TestContendingBlindAppendsMem(t *testing.T) {
	mem := objectstore.NewMem("t")
	contend(t, func() objectstore.Store { return mem }, 8, 20)
}

// Commits whose last attempts have unknown outcomes are settled by reading
// the version back: success when it is ours, ErrCommitOutcomeUnknown when
// that cannot be learned.
func TestCommitSettlesUnknownOutcome(t *testing.T) {
	putFault := func(nth int, kind faultstore.Kind, phase faultstore.Phase) faultstore.Fault {
		return faultstore.Fault{Op: faultstore.OpPutIfAbsent, KeyPrefix: LogPrefix, Nth: nth, Phase: phase, Kind: kind, Status: 503}
	}
	getFault := func(nth int) faultstore.Fault {
		// The read-backs of version 1 (a lost race also reads the
		// versions after it, in parallel: those do not count).
		return faultstore.Fault{Op: faultstore.OpGet, KeyPrefix: CommitKey(1), Nth: nth, Kind: faultstore.Status, Status: 503}
	}
	tests := []struct {
		name    string
		faults  []faultstore.Fault
		wantErr error // nil: success at version 1
		landed  bool
	}{
		{"503, 503, then the last attempt lands but its reply is lost",
			[]faultstore.Fault{putFault(1, faultstore.Status, faultstore.Before), putFault(1, faultstore.Status, faultstore.Before),
				putFault(1, faultstore.DropReply, faultstore.After)}, nil, true},
		{"reply lost, then the read-back fails once",
			[]faultstore.Fault{putFault(1, faultstore.DropReply, faultstore.After), getFault(1)}, nil, true},
		{"reply lost, every read-back fails",
			[]faultstore.Fault{putFault(1, faultstore.DropReply, faultstore.After), getFault(1), getFault(1), getFault(1), getFault(1)},
			ErrCommitOutcomeUnknown, true},
		{"three attempts fail before reaching the store",
			[]faultstore.Fault{putFault(1, faultstore.Status, faultstore.Before), putFault(1, faultstore.Status, faultstore.Before),
				putFault(1, faultstore.Status, faultstore.Before)}, ErrCommitFailed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := objectstore.NewMem("t")
			createTestTable(t, mem, nil)
			store := faultstore.New(mem)
			snap, err := Load(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			// Faults strike in order: each is armed after the previous one.
			for _, f := range tc.faults {
				store.Inject(f)
			}
			tx := NewTransaction(snap, "WRITE", withMaxAttempts(3), WithBackoff(time.Millisecond, time.Millisecond))
			tx.Add(addFile("a.parquet", "a"))
			res, err := tx.Commit(ctx)
			if tc.wantErr == nil {
				if err != nil || res.Version != 1 {
					t.Fatalf("commit: %v %+v, want success at version 1", err, res)
				}
			} else if !errors.Is(err, tc.wantErr) {
				t.Fatalf("commit: %v, want %v", err, tc.wantErr)
			}
			_, statErr := mem.Stat(ctx, CommitKey(1))
			if landed := statErr == nil; landed != tc.landed {
				t.Fatalf("version 1 exists: %v, want %v", landed, tc.landed)
			}
			if _, err := mem.Stat(ctx, CommitKey(2)); !errors.Is(err, objectstore.ErrNotExist) {
				t.Fatalf("a second commit was written: %v", err)
			}
		})
	}
}

// A compaction (removes with dataChange=false) conflicts with a transaction
// that read or removes the same files, like Spark's checker.
func TestCompactionConflicts(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	snap := createTestTable(t, mem, nil)
	seed := NewTransaction(snap, "WRITE")
	seed.Add(addFile("a0.parquet", "a"), addFile("a1.parquet", "a"))
	res, err := seed.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compact := func(tx *Transaction, out string) {
		for _, f := range tx.ReadFiles(partIs("a")) {
			r := f.RemoveAt(1700000000000)
			r.DataChange = false
			tx.Add(Action{Remove: r})
		}
		a := addFile(out, "a")
		a.Add.DataChange = false
		tx.Add(a)
	}
	first, second := NewTransaction(res.Snapshot, "OPTIMIZE"), NewTransaction(res.Snapshot, "OPTIMIZE")
	compact(first, "c1.parquet")
	compact(second, "c2.parquet")
	if _, err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = second.Commit(ctx)
	if !errors.Is(err, ErrConcurrentDeleteRead) || !errors.Is(err, ErrConcurrentDeleteDelete) {
		t.Fatalf("second compaction: %v, want delete-read and delete-delete conflicts", err)
	}
}
