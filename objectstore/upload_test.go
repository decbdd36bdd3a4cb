package objectstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// TestFaultyUploadFaults: faults planned for an upload's start, its writes
// and its Commit (an OpPut) strike it; whatever fails, the wrapped upload
// is aborted, and only a lost reply stores the object.
func TestFaultyUploadFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		fault      objectstore.Fault
		wantErr    error // from the call the fault strikes
		failAt     string
		wantStored bool
	}{
		{"start fails", objectstore.Fault{Op: objectstore.OpUpload, Nth: 1, Kind: objectstore.FaultFail}, objectstore.ErrInjected, "start", false},
		{"start reply lost", objectstore.Fault{Op: objectstore.OpUpload, Nth: 1, Kind: objectstore.FaultDropReply}, objectstore.ErrReplyLost, "start", false},
		{"third write fails", objectstore.Fault{Op: objectstore.OpUploadWrite, Nth: 3, Kind: objectstore.FaultFail}, objectstore.ErrInjected, "write", false},
		{"write with full disk", objectstore.Fault{Op: objectstore.OpUploadWrite, Nth: 2, Kind: objectstore.FaultFail, Err: syscall.ENOSPC}, syscall.ENOSPC, "write", false},
		{"crash in a write", objectstore.Fault{Op: objectstore.OpUploadWrite, Nth: 2, Kind: objectstore.FaultCrash}, objectstore.ErrCrashed, "write", false},
		{"commit fails before", objectstore.Fault{Op: objectstore.OpPut, KeyPrefix: "part-", Nth: 1, Kind: objectstore.FaultFail}, objectstore.ErrInjected, "commit", false},
		{"commit crashes before", objectstore.Fault{Op: objectstore.OpPut, Nth: 1, Kind: objectstore.FaultCrash}, objectstore.ErrCrashed, "commit", false},
		{"commit reply lost", objectstore.Fault{Op: objectstore.OpPut, Nth: 1, Kind: objectstore.FaultDropReply}, objectstore.ErrReplyLost, "commit", true},
		{"commit crashes after", objectstore.Fault{Op: objectstore.OpPut, Nth: 1, Phase: objectstore.After, Kind: objectstore.FaultCrash}, objectstore.ErrCrashed, "commit", true},
		{"other key", objectstore.Fault{Op: objectstore.OpPut, KeyPrefix: "zzz", Nth: 1, Kind: objectstore.FaultFail}, nil, "", true},
	}
	const key = "part-00000.parquet"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			local, err := objectstore.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			f := objectstore.NewFaulty(local)
			f.Inject(tc.fault)
			check := func(at string, err error) bool {
				t.Helper()
				if at != tc.failAt {
					if err != nil {
						t.Fatalf("%s: %v", at, err)
					}
					return false
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("%s: %v, want %v", at, err, tc.wantErr)
				}
				return true
			}
			u, err := f.Upload(ctx, key)
			if !check("start", err) {
				var werr error
				for range 4 {
					if _, werr = u.Write([]byte("0123456789")); werr != nil {
						break
					}
				}
				if tc.failAt == "write" || werr != nil {
					check("write", werr)
				}
				if tc.failAt != "write" {
					check("commit", u.Commit(ctx))
				} else if err := u.Commit(ctx); !errors.Is(err, tc.wantErr) {
					t.Errorf("Commit after a failed write = %v, want %v", err, tc.wantErr)
				}
			}
			got, err := local.Get(ctx, key, objectstore.FullObject)
			if stored := err == nil; stored != tc.wantStored {
				t.Fatalf("stored %v (%v), want %v", stored, err, tc.wantStored)
			}
			if tc.wantStored && string(got) != strings.Repeat("0123456789", 4) {
				t.Errorf("stored %q", got)
			}
			if tmp := tempFiles(t, dir); len(tmp) != 0 {
				t.Errorf("temporary files left: %q", tmp)
			}
		})
	}
}

// TestFaultyUploadCalls: an upload records its start and, as a put, its
// Commit; writes are not recorded.
func TestFaultyUploadCalls(t *testing.T) {
	ctx := context.Background()
	f := objectstore.NewFaulty(objectstore.NewMem("t"))
	if _, err := objectstore.PutStream(ctx, f, "k", bytes.NewReader(make([]byte, 1<<20))); err != nil {
		t.Fatal(err)
	}
	want := []objectstore.Call{{Op: objectstore.OpUpload, Key: "k"}, {Op: objectstore.OpPut, Key: "k"}}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Errorf("Calls = %v, want %v", got, want)
	}
}

// TestLocalUploadTempFile: the bytes of an upload sit in a temporary file
// next to the key, which Commit renames and Abort, a failed Write and a
// cancelled context remove.
func TestLocalUploadTempFile(t *testing.T) {
	for _, end := range []string{"commit", "abort", "cancel"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			s, err := objectstore.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			u, err := s.Upload(ctx, "p=1/part-0.parquet")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := u.Write([]byte("data")); err != nil {
				t.Fatal(err)
			}
			tmp := tempFiles(t, dir)
			if len(tmp) != 1 || filepath.Dir(tmp[0]) != filepath.Join(dir, "p=1") {
				t.Fatalf("temporary files while writing: %q, want one in p=1", tmp)
			}
			switch end {
			case "commit":
				err = u.Commit(ctx)
			case "abort":
				err = u.Abort(ctx)
			case "cancel":
				cancel()
				if _, err := u.Write([]byte("more")); !errors.Is(err, context.Canceled) {
					t.Fatalf("Write after cancel = %v, want context.Canceled", err)
				}
				err = nil
			}
			if err != nil {
				t.Fatal(err)
			}
			if tmp := tempFiles(t, dir); len(tmp) != 0 {
				t.Errorf("temporary files after %s: %q", end, tmp)
			}
			_, err = os.Stat(filepath.Join(dir, "p=1", "part-0.parquet"))
			if stored := err == nil; stored != (end == "commit") {
				t.Errorf("after %s the object exists: %v", end, stored)
			}
		})
	}
}

// A Commit that cannot rename (the key is a directory) wraps ErrNotStored
// and leaves no temporary file.
func TestLocalUploadKeyIsDirectory(t *testing.T) {
	dir := t.TempDir()
	s, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "d", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	u, err := s.Upload(context.Background(), "d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := u.Commit(context.Background()); !errors.Is(err, objectstore.ErrNotStored) {
		t.Errorf("Commit onto a directory = %v, want ErrNotStored", err)
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
}

// A fault of any op counts the calls Calls records: an upload's writes do
// not shift its Nth.
func TestFaultyAnyOpSkipsWrites(t *testing.T) {
	ctx := context.Background()
	f := objectstore.NewFaulty(objectstore.NewMem("t"))
	f.Inject(objectstore.Fault{Nth: 2, Kind: objectstore.FaultFail}) // the Commit: call 2 after the start
	u, err := f.Upload(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := u.Write([]byte("x")); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	if err := u.Commit(ctx); !errors.Is(err, objectstore.ErrInjected) {
		t.Fatalf("Commit = %v, want the fault of call 2", err)
	}
}
