package faultstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
)

// The crash hook runs exactly once, when the crash strikes, whichever the
// phase; faults of other kinds never run it.
func TestFaultyCrashHook(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		fault     faultstore.Fault
		wantCalls int  // hook calls after the second put
		wantB     bool // whether "b" was stored
	}{
		{"crash before", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Kind: faultstore.Crash}, 1, false},
		{"crash after", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Phase: faultstore.After, Kind: faultstore.Crash}, 1, true},
		{"drop reply", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Kind: faultstore.DropReply}, 0, true},
		{"fail", faultstore.Fault{Op: faultstore.OpPut, Nth: 2, Kind: faultstore.Fail}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := objectstore.NewMem("t")
			hook := 0
			f := faultstore.New(mem, faultstore.WithCrashHook(func() { hook++ }))
			f.Inject(tc.fault)
			if err := f.Put(ctx, "a", []byte("1")); err != nil {
				t.Fatal(err)
			}
			if hook != 0 {
				t.Fatalf("hook ran %d times before the fault", hook)
			}
			if err := f.Put(ctx, "b", []byte("2")); err == nil {
				t.Fatal("second put succeeded, want the injected fault")
			}
			if hook != tc.wantCalls {
				t.Fatalf("hook ran %d times, want %d", hook, tc.wantCalls)
			}
			if _, err := mem.Stat(ctx, "b"); (err == nil) != tc.wantB {
				t.Fatalf("b stored = %v, want %v", err == nil, tc.wantB)
			}
			// Later calls of a crashed writer fail without running the hook again.
			err := f.Put(ctx, "c", []byte("3"))
			if tc.wantCalls == 1 && !errors.Is(err, faultstore.ErrCrashed) {
				t.Fatalf("put after the crash: %v, want ErrCrashed", err)
			}
			if hook != tc.wantCalls {
				t.Fatalf("hook ran %d times after a later call, want %d", hook, tc.wantCalls)
			}
		})
	}
}

// A random crash runs the hook too.
func TestFaultyCrashHookRandom(t *testing.T) {
	ctx := context.Background()
	hook := 0
	f := faultstore.New(objectstore.NewMem("t"),
		faultstore.WithRandomFaults(1, 1, faultstore.Crash),
		faultstore.WithCrashHook(func() { hook++ }))
	for range 3 {
		if err := f.Put(ctx, "k", nil); !errors.Is(err, faultstore.ErrCrashed) {
			t.Fatalf("put: %v, want ErrCrashed", err)
		}
	}
	if hook != 1 {
		t.Fatalf("hook ran %d times, want 1", hook)
	}
}
