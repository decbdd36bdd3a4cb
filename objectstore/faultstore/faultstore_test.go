package faultstore_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
	"github.com/deltakit/deltakit/objectstore/storetest"
)

// Without faults, a fault store behaves exactly like the store it wraps.
func TestFaultyConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Store {
		return faultstore.New(objectstore.NewMem("t"))
	})
}

func TestFaultyInjects(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		fault      faultstore.Fault
		wantErr    error
		wantStored bool // whether the put took effect
		thenErr    error
	}{
		{"fail before", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Kind: faultstore.Fail}, faultstore.ErrInjected, false, nil},
		{"drop reply", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Kind: faultstore.DropReply}, faultstore.ErrReplyLost, true, nil},
		{"crash before", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Kind: faultstore.Crash}, faultstore.ErrCrashed, false, faultstore.ErrCrashed},
		{"crash after", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Phase: faultstore.After, Kind: faultstore.Crash}, faultstore.ErrCrashed, true, faultstore.ErrCrashed},
		{"status 409", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Kind: faultstore.Status, Status: 409}, faultstore.ErrInjected, false, nil},
		{"other key prefix", faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: "zzz", Nth: 1, Kind: faultstore.Fail}, nil, true, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			f := faultstore.New(mem)
			f.Inject(tc.fault)
			if err := f.Put(ctx, "a", []byte("1")); err != nil {
				t.Fatalf("first put: %v", err)
			}
			err := f.Put(ctx, "b", []byte("2"))
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("second put: %v, want %v", err, tc.wantErr)
			}
			_, statErr := mem.Stat(ctx, "b")
			if stored := statErr == nil; stored != tc.wantStored {
				t.Fatalf("stored %v, want %v", stored, tc.wantStored)
			}
			_, err = f.Get(ctx, "a", objectstore.FullObject)
			if tc.thenErr == nil && err != nil || tc.thenErr != nil && !errors.Is(err, tc.thenErr) {
				t.Fatalf("later get: %v, want %v", err, tc.thenErr)
			}
			if got := len(f.Calls()); got != 3 {
				t.Fatalf("%d calls recorded, want 3", got)
			}
		})
	}
}

// Random faults are the same for the same seed.
func TestFaultyRandomIsDeterministic(t *testing.T) {
	run := func(seed uint64) []bool {
		f := faultstore.New(objectstore.NewMem("t"), faultstore.WithRandomFaults(seed, 0.3))
		var out []bool
		for range 50 {
			out = append(out, f.Put(context.Background(), "k", []byte("v")) != nil)
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	if len(a) != len(b) {
		t.Fatal("lengths differ")
	}
	same := true
	failures := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 differs at call %d", i)
		}
		if a[i] != c[i] {
			same = false
		}
		if a[i] {
			failures++
		}
	}
	if same {
		t.Error("seeds 7 and 8 gave the same faults")
	}
	if failures < 5 || failures > 30 {
		t.Errorf("%d failures of 50 at rate 0.3", failures)
	}
}

// Opening a local store on a missing directory creates nothing; the first
// put does.
func TestLocalDoesNotCreateRootOnOpen(t *testing.T) {
	root := t.TempDir() + "/a/b"
	s, err := objectstore.Open(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range s.List(context.Background(), "", "") {
		t.Fatalf("list of a missing root: %v", err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("root exists after open: %v", err)
	}
	if err := s.PutIfAbsent(context.Background(), "_delta_log/x.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root + "/_delta_log/x.json"); err != nil {
		t.Fatal(err)
	}
}
