package txlog

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// getCounter counts the Gets started and fails those of the keys in fail.
type getCounter struct {
	objectstore.Store
	gets atomic.Int64
	fail map[string]bool
}

var errInjected = errors.New("injected read failure")

func (s *getCounter) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	s.gets.Add(1)
	if s.fail[key] {
		return nil, errInjected
	}
	return s.Store.Get(ctx, key, r)
}

// TestFetchCommitsWindow: fetchCommits hands the commits to fn in version
// order, never has more than conc commits fetched ahead of fn (the window
// that bounds memory), and reports the first failing commit in version
// order, not the first to fail in time.
func TestFetchCommitsWindow(t *testing.T) {
	ctx := context.Background()
	const n = 40
	mem := objectstore.NewMem("fetch")
	files := make([]logFile, n)
	for v := range int64(n) {
		data, err := EncodeCommit([]Action{{Txn: &Txn{AppID: "a", Version: v}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := mem.Put(ctx, CommitKey(v), data); err != nil {
			t.Fatal(err)
		}
		files[v] = logFile{key: CommitKey(v), version: v, json: true}
	}
	for _, conc := range []int{2, 3, 8} {
		store := &getCounter{Store: mem}
		var next int64
		err := fetchCommits(ctx, store, files, -1, conc, func(f logFile, actions []Action) error {
			if f.version != next || len(actions) != 1 || actions[0].Txn.Version != next {
				t.Fatalf("conc %d: fn got version %d (%d actions), want %d", conc, f.version, len(actions), next)
			}
			time.Sleep(time.Millisecond) // let the readers run ahead if they can
			if ahead := store.gets.Load() - next; ahead > int64(conc) {
				t.Errorf("conc %d: %d commits fetched ahead of version %d, want <= %d", conc, ahead, next, conc)
			}
			next++
			return nil
		})
		if err != nil || next != n {
			t.Fatalf("conc %d: err %v after %d commits, want nil after %d", conc, err, next, n)
		}
	}

	// Commits 5 and 6 fail, read at about the same time: the error is 5's,
	// after fn saw 0..4.
	store := &getCounter{Store: mem, fail: map[string]bool{CommitKey(5): true, CommitKey(6): true}}
	var seen []int64
	err := fetchCommits(ctx, store, files, -1, 4, func(f logFile, _ []Action) error {
		seen = append(seen, f.version)
		return nil
	})
	if !errors.Is(err, errInjected) || len(seen) != 5 || seen[4] != 4 {
		t.Fatalf("err %v, fn saw %v; want the injected error after versions 0..4", err, seen)
	}
	if want := "reading commit 5"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name commit 5", err)
	}
}
