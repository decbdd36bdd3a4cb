package txlog

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// stealingStore commits a competing blind append at a commit key just
// before the caller's PutIfAbsent of it, steal times: the caller loses
// that many races in a row.
type stealingStore struct {
	objectstore.Store
	steal int
}

func (s *stealingStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if s.steal > 0 && strings.HasSuffix(key, ".json") && strings.HasPrefix(key, LogPrefix+"0") {
		s.steal--
		blind := true
		other, err := EncodeCommit([]Action{
			{CommitInfo: &CommitInfo{Operation: "WRITE", TxnID: fmt.Sprintf("other-%d", s.steal), IsBlindAppend: &blind}},
			addFile(fmt.Sprintf("other-%d.parquet", s.steal), "b"),
		})
		if err != nil {
			return err
		}
		if err := s.Store.PutIfAbsent(ctx, key, other); err != nil {
			return err
		}
	}
	return s.Store.PutIfAbsent(ctx, key, data)
}

// fakeTiming gives tx a clock that advances 1 ms per reading (so every
// PutIfAbsent round trip is 1 ms) and records its sleeps.
func fakeTiming(tx *Transaction, now *time.Time, sleeps *[]time.Duration) {
	tx.cfg.clock = func() time.Time { *now = now.Add(time.Millisecond); return *now }
	tx.cfg.sleep = func(_ context.Context, d time.Duration) error {
		*sleeps = append(*sleeps, d)
		*now = now.Add(d)
		return nil
	}
	tx.cfg.rand = func() float64 { return 0.5 }
}

// TestLostRacesRetryAtOnce: a commit that loses many races in a row retries
// each at once (as Spark and delta-rs do), never backing off: a loser that
// waits falls further behind the writers that won. Before, the third lost
// race in a row and every one after it waited an exponentially growing
// time.
func TestLostRacesRetryAtOnce(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem("t")
	createTestTable(t, mem, nil)
	store := &stealingStore{Store: mem, steal: 8}
	snap, err := Load(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	tx := NewTransaction(snap, "WRITE", WithLogger(slog.New(slog.DiscardHandler)), WithoutAutoCheckpoint())
	now := time.Unix(1700000000, 0)
	var sleeps []time.Duration
	fakeTiming(tx, &now, &sleeps)
	tx.Add(addFile("mine.parquet", "a"))
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 9 || res.Attempts != 9 || res.Snapshot.NumFiles() != 9 {
		t.Fatalf("commit: version %d, %d attempts, %d files; want 9, 9, 9", res.Version, res.Attempts, res.Snapshot.NumFiles())
	}
	if len(sleeps) != 0 {
		t.Fatalf("lost races waited %v, want no wait", sleeps)
	}
}

// TestWinnerYieldsToLosers: a writer that lost a race and then won
// yieldAfterWins commits in a row waits 2-3 round trips of its last PUT
// before its next first attempt (so that writers that lost, which must
// read its commit first, get a version), stops waiting after
// yieldAfterWins waits that nobody took, and a writer that never lost
// never waits.
func TestWinnerYieldsToLosers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		steal     int
		wantWaits int
	}{
		{"never lost", 0, 0},
		{"lost once", 1, yieldAfterWins},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			createTestTable(t, mem, nil)
			snap, err := Load(ctx, &stealingStore{Store: mem, steal: tc.steal})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(1700000000, 0)
			var sleeps []time.Duration
			var waitedAt []int
			for i := range 3 * yieldAfterWins {
				tx := NewTransaction(snap, "WRITE", WithLogger(slog.New(slog.DiscardHandler)), WithoutAutoCheckpoint())
				fakeTiming(tx, &now, &sleeps)
				tx.Add(addFile(fmt.Sprintf("c%d.parquet", i), "a"))
				n := len(sleeps)
				res, err := tx.Commit(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(sleeps) > n {
					waitedAt = append(waitedAt, i)
				}
				snap = res.Snapshot
			}
			if len(waitedAt) != tc.wantWaits {
				t.Fatalf("commits %v waited (%v), want %d waits", waitedAt, sleeps, tc.wantWaits)
			}
			for j, i := range waitedAt {
				if i != yieldAfterWins+1+j {
					t.Fatalf("commits %v waited, want %d.. (after %d wins following the lost race)", waitedAt, yieldAfterWins+1, yieldAfterWins)
				}
				if sleeps[j] != 2500*time.Microsecond { // (2 + rand 0.5) round trips of 1 ms
					t.Fatalf("wait %v, want 2.5 ms", sleeps[j])
				}
			}
		})
	}
}

// winnerCountingStore counts Gets and Lists.
type winnerCountingStore struct {
	objectstore.Store
	gets, lists atomic.Int64
}

func (s *winnerCountingStore) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, key, r)
}

func (s *winnerCountingStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[objectstore.ObjectInfo, error] {
	s.lists.Add(1)
	return s.Store.List(ctx, prefix, startAfter)
}

// TestReadWinnersBehind: a lost race reads each winner once and the free
// version after them (a 404), and lists nothing (a LIST per lost race cost
// more requests per commit than it saved at 8 writers: winnerWindow).
func TestReadWinnersBehind(t *testing.T) {
	ctx := context.Background()
	mem := objectstore.NewMem(t.Name())
	snap := createTestTable(t, mem, nil)
	for i := range 9 { // versions 1..9
		tx := NewTransaction(snap, "WRITE", WithoutAutoCheckpoint())
		tx.Add(addFile(fmt.Sprintf("f%d.parquet", i), "a"))
		res, err := tx.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	for _, tc := range []struct {
		from                 int64
		winners, gets, lists int64
	}{{9, 1, 2, 0}, {8, 2, 3, 0}, {1, 9, 10, 0}} {
		cs := &winnerCountingStore{Store: mem}
		got, err := readWinners(ctx, cs, tc.from)
		if err != nil || int64(len(got)) != tc.winners || cs.gets.Load() != tc.gets || cs.lists.Load() != tc.lists {
			t.Fatalf("from %d: %d winners (%v), %d GETs, %d LISTs; want %d, %d, %d",
				tc.from, len(got), err, cs.gets.Load(), cs.lists.Load(), tc.winners, tc.gets, tc.lists)
		}
	}
}
