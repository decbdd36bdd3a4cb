package faultstore_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/objectstore/faultstore"
)

// TestFaultyUploadFaults: faults planned for an upload's start, its writes
// and its Commit (an OpPut) strike it; whatever fails, the wrapped upload
// is aborted, and only a lost reply stores the object.
func TestFaultyUploadFaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		fault      faultstore.Fault
		wantErr    error // from the call the fault strikes
		failAt     string
		wantStored bool
	}{
		{"start fails", faultstore.Fault{Op: faultstore.OpUpload, Nth: 1, Kind: faultstore.Fail}, faultstore.ErrInjected, "start", false},
		{"start reply lost", faultstore.Fault{Op: faultstore.OpUpload, Nth: 1, Kind: faultstore.DropReply}, faultstore.ErrReplyLost, "start", false},
		{"third write fails", faultstore.Fault{Op: faultstore.OpUploadWrite, Nth: 3, Kind: faultstore.Fail}, faultstore.ErrInjected, "write", false},
		{"write with full disk", faultstore.Fault{Op: faultstore.OpUploadWrite, Nth: 2, Kind: faultstore.Fail, Err: syscall.ENOSPC}, syscall.ENOSPC, "write", false},
		{"crash in a write", faultstore.Fault{Op: faultstore.OpUploadWrite, Nth: 2, Kind: faultstore.Crash}, faultstore.ErrCrashed, "write", false},
		{"commit fails before", faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: "part-", Nth: 1, Kind: faultstore.Fail}, faultstore.ErrInjected, "commit", false},
		{"commit crashes before", faultstore.Fault{Op: faultstore.OpPut, Nth: 1, Kind: faultstore.Crash}, faultstore.ErrCrashed, "commit", false},
		{"commit reply lost", faultstore.Fault{Op: faultstore.OpPut, Nth: 1, Kind: faultstore.DropReply}, faultstore.ErrReplyLost, "commit", true},
		{"commit crashes after", faultstore.Fault{Op: faultstore.OpPut, Nth: 1, Phase: faultstore.After, Kind: faultstore.Crash}, faultstore.ErrCrashed, "commit", true},
		{"other key", faultstore.Fault{Op: faultstore.OpPut, KeyPrefix: "zzz", Nth: 1, Kind: faultstore.Fail}, nil, "", true},
	}
	const key = "part-00000.parquet"
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			local, err := objectstore.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			f := faultstore.New(local)
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
	f := faultstore.New(objectstore.NewMem("t"))
	if _, err := objectstore.PutStream(ctx, f, "k", bytes.NewReader(make([]byte, 1<<20))); err != nil {
		t.Fatal(err)
	}
	want := []faultstore.Call{{Op: faultstore.OpUpload, Key: "k"}, {Op: faultstore.OpPut, Key: "k"}}
	if got := f.Calls(); !slices.Equal(got, want) {
		t.Errorf("Calls = %v, want %v", got, want)
	}
}

// A fault of any op counts the calls Calls records: an upload's writes do
// not shift its Nth.
func TestFaultyAnyOpSkipsWrites(t *testing.T) {
	ctx := context.Background()
	f := faultstore.New(objectstore.NewMem("t"))
	f.Inject(faultstore.Fault{Nth: 2, Kind: faultstore.Fail}) // the Commit: call 2 after the start
	u, err := f.Upload(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := u.Write([]byte("x")); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	if err := u.Commit(ctx); !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("Commit = %v, want the fault of call 2", err)
	}
}

// A fault store reports an injected ENOSPC on a put as Local would.
func TestFaultyInjectsErrno(t *testing.T) {
	ctx := context.Background()
	f := faultstore.New(objectstore.NewMem("m"))
	f.Inject(faultstore.Fault{Op: faultstore.OpPutIfAbsent, Nth: 1, Kind: faultstore.Fail, Err: syscall.ENOSPC},
		faultstore.Fault{Op: faultstore.OpGet, Nth: 1, Kind: faultstore.Fail, Err: syscall.EIO})
	err := f.PutIfAbsent(ctx, "k", []byte("x"))
	if !errors.Is(err, syscall.ENOSPC) || !errors.Is(err, objectstore.ErrNotStored) || !errors.Is(err, faultstore.ErrInjected) {
		t.Fatalf("put-if-absent: %v, want ENOSPC, ErrNotStored and ErrInjected", err)
	}
	if _, err := f.Inner().Stat(ctx, "k"); !errors.Is(err, objectstore.ErrNotExist) {
		t.Fatalf("the failed put was made: %v", err)
	}
	if _, err := f.Get(ctx, "k", objectstore.FullObject); !errors.Is(err, syscall.EIO) || errors.Is(err, objectstore.ErrNotStored) {
		t.Fatalf("get: %v, want EIO without ErrNotStored", err)
	}
}

// tempFiles lists Local's temporary files (".tmp-*") under root.
func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
