package txlog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// skippingListStore hides hide[i] from its listing i (the last entry from
// every later listing), as a local directory read does for a file created
// while the read runs.
type skippingListStore struct {
	objectstore.Store
	mu    sync.Mutex
	hide  []string // "" hides nothing
	lists int
	// before, when set, runs before listing i (writers committing
	// between listings).
	before func(i int)
}

func (s *skippingListStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[objectstore.ObjectInfo, error] {
	s.mu.Lock()
	if s.before != nil {
		s.before(s.lists)
	}
	key := s.hide[min(s.lists, len(s.hide)-1)]
	s.lists++
	s.mu.Unlock()
	return func(yield func(objectstore.ObjectInfo, error) bool) {
		for info, err := range s.Store.List(ctx, prefix, startAfter) {
			if err == nil && key != "" && info.Key == key {
				continue
			}
			if !yield(info, err) {
				return
			}
		}
	}
}

// TestListingMissesACommit: a listing that misses commit v while listing
// v+1 is listed again, so Load, Update and Commits see a contiguous log;
// a gap that stays is reported as ErrLogGap after a bounded number of
// listings.
func TestListingMissesACommit(t *testing.T) {
	ctx := context.Background()
	m := newMemTable(t)
	m.commit(0, protocolAction(1, 2), metadataAction(nil))
	m.commit(1, addAction("a", nil))
	m.commit(2, addAction("b", nil))
	m.commit(3, addAction("c", nil))
	m.commit(4, addAction("d", nil))
	m.commit(5, addAction("e", nil))
	base, err := Load(ctx, m.mem, AtVersion(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		hide      []string
		wantLists int // listings of one call
		wantGap   bool
	}{
		{"no gap", []string{""}, 1, false},
		{"first listing misses 2", []string{CommitKey(2), ""}, 2, false},
		{"each listing misses a newer one", []string{CommitKey(2), CommitKey(3), CommitKey(4), ""}, 4, false},
		{"every listing misses a new one", []string{CommitKey(2), CommitKey(3), CommitKey(4), CommitKey(2)}, 4, true},
		// a gap that stays where it was is the log's: no third listing
		{"commit 2 is gone", []string{CommitKey(2)}, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := map[string]func(s *skippingListStore) (int64, error){
				"Load": func(s *skippingListStore) (int64, error) {
					snap, err := Load(ctx, s)
					if err != nil {
						return -1, err
					}
					return snap.Version(), nil
				},
				"Commits": func(s *skippingListStore) (int64, error) {
					last := int64(-1)
					for c, err := range Commits(ctx, s, 0, -1) {
						if err != nil {
							return last, err
						}
						last = c.Version
					}
					return last, nil
				},
				"Update": func(s *skippingListStore) (int64, error) {
					base.store = s
					snap, err := base.Update(ctx)
					if err != nil {
						return -1, err
					}
					return snap.Version(), nil
				},
			}
			for name, call := range calls {
				s := &skippingListStore{Store: m.mem, hide: tc.hide}
				v, err := call(s)
				if tc.wantGap {
					if !errors.Is(err, ErrLogGap) {
						t.Errorf("%s: v=%d err=%v, want ErrLogGap", name, v, err)
					}
				} else if err != nil || v != 5 {
					t.Errorf("%s: v=%d err=%v, want version 5", name, v, err)
				}
				if name != "Update" && s.lists != tc.wantLists {
					t.Errorf("%s listed %d times, want %d", name, s.lists, tc.wantLists)
				}
			}
		})
	}
}

// TestCommitsFromMissedStart: Commits from version v lists once more when
// the first listing misses v itself, and reports a VersionNotFoundError when
// v stays missing.
func TestCommitsFromMissedStart(t *testing.T) {
	ctx := context.Background()
	m := newMemTable(t)
	m.commit(0, protocolAction(1, 2), metadataAction(nil))
	for v := int64(1); v <= 4; v++ {
		m.commit(v, addAction(fmt.Sprint(v), nil))
	}
	for _, tc := range []struct {
		name      string
		hide      []string
		want      []int64
		wantLists int
	}{
		{"listed", []string{""}, []int64{2, 3, 4}, 1},
		{"first listing misses 2", []string{CommitKey(2), ""}, []int64{2, 3, 4}, 2},
		{"2 is gone", []string{CommitKey(2)}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &skippingListStore{Store: m.mem, hide: tc.hide}
			var got []int64
			var gotErr error
			for c, err := range Commits(ctx, s, 2, -1) {
				if err != nil {
					gotErr = err
					break
				}
				got = append(got, c.Version)
			}
			if tc.want == nil {
				var vnf *VersionNotFoundError
				if !errors.As(gotErr, &vnf) || vnf.Version != 2 {
					t.Errorf("err = %v, want version 2 not found", gotErr)
				}
			} else if gotErr != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Commits = %v, %v; want %v", got, gotErr, tc.want)
			}
			if s.lists != tc.wantLists {
				t.Errorf("listed %d times, want %d", s.lists, tc.wantLists)
			}
		})
	}
}

// TestRelistCutAtNewGap: when the listing made again misses a commit
// created after the first listing, it is cut before that commit: the
// snapshot is the newest contiguous one, not a false ErrLogGap.
func TestRelistCutAtNewGap(t *testing.T) {
	ctx := context.Background()
	m := newMemTable(t)
	m.commit(0, protocolAction(1, 2), metadataAction(nil))
	for v := int64(1); v <= 3; v++ {
		m.commit(v, addAction(fmt.Sprint(v), nil))
	}
	s := &skippingListStore{Store: m.mem, hide: []string{CommitKey(2), CommitKey(4), ""},
		before: func(i int) {
			if i == 1 { // writers commit 4 and 5 after the first listing
				m.commit(4, addAction("4", nil))
				m.commit(5, addAction("5", nil))
			}
		}}
	snap, err := Load(ctx, s)
	if err != nil || snap.Version() != 3 || snap.NumFiles() != 3 {
		t.Fatalf("Load = %v, want version 3 with 3 files", err)
	}
	if s.lists != 2 {
		t.Errorf("listed %d times, want 2", s.lists)
	}
	if snap, err = snap.Update(ctx); err != nil || snap.Version() != 5 {
		t.Fatalf("Update = %v, want version 5", err)
	}
}
