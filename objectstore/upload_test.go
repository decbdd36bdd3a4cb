package objectstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

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
