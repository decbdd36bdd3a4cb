package objectstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// Puts that fail for good (a name too long, a file where a directory should
// be, a directory where the object should be) wrap ErrNotStored and the
// system's cause, and leave no temporary file behind.
func TestLocalDefinitePutFailures(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		key   string
		setup func(t *testing.T, root string)
		ops   []string // "put", "put-if-absent"
		want  syscall.Errno
	}{
		{name: "name too long", key: "_delta_log/" + strings.Repeat("x", 300) + ".json",
			ops: []string{"put", "put-if-absent"}, want: syscall.ENAMETOOLONG},
		{name: "parent is a file", key: "f/x.json",
			setup: func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "f"), "not a dir") },
			ops:   []string{"put", "put-if-absent"}, want: syscall.ENOTDIR},
		{name: "key is a directory (rename after the temporary file was written)", key: "d",
			setup: func(t *testing.T, root string) {
				if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			ops: []string{"put"}, want: syscall.EEXIST},
	}
	for _, tc := range tests {
		for _, op := range tc.ops {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				root := t.TempDir()
				if tc.setup != nil {
					tc.setup(t, root)
				}
				s, err := objectstore.NewLocal(root)
				if err != nil {
					t.Fatal(err)
				}
				if op == "put" {
					err = s.Put(ctx, tc.key, []byte("data"))
				} else {
					err = s.PutIfAbsent(ctx, tc.key, []byte("data"))
				}
				if !errors.Is(err, objectstore.ErrNotStored) || !errors.Is(err, tc.want) {
					t.Fatalf("%s %q: %v, want ErrNotStored and %v", op, tc.key, err, tc.want)
				}
				var ke *objectstore.KeyError
				if !errors.As(err, &ke) || ke.Op != op || ke.Key != tc.key {
					t.Fatalf("%s: %v, want a *KeyError naming op and key", op, err)
				}
				if tmp := tempFiles(t, root); len(tmp) > 0 {
					t.Fatalf("temporary files left behind: %v", tmp)
				}
			})
		}
	}
}

// Errors that do not say nothing was stored (here a cancelled context, or a
// key already taken) do not wrap ErrNotStored.
func TestLocalOtherPutErrorsAreNotDefinite(t *testing.T) {
	s, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "k", []byte("a")); err != nil {
		t.Fatal(err)
	}
	err = s.PutIfAbsent(ctx, "k", []byte("b"))
	if !errors.Is(err, objectstore.ErrAlreadyExists) || errors.Is(err, objectstore.ErrNotStored) {
		t.Fatalf("second put-if-absent: %v, want ErrAlreadyExists only", err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tempFiles lists Local's temporary files under root.
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

// TestNewLocalRootIsFile checks that a local root that is a file is an
// invalid argument naming the path.
func TestNewLocalRootIsFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := objectstore.NewLocal(f)
	if !errors.Is(err, objectstore.ErrInvalidArgument) || !strings.Contains(err.Error(), `local root "`+f+`" is a file, not a directory`) {
		t.Fatalf("NewLocal(file) = %v; want ErrInvalidArgument naming %s", err, f)
	}
}
