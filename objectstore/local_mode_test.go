package objectstore_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// processUmask reads the umask of this process from /proc/self/status
// (setting and restoring it with umask(2) would change it for every test
// running at the same time).
func processUmask(t *testing.T) fs.FileMode {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status to read the umask from: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				t.Fatalf("umask %q: %v", v, err)
			}
			return fs.FileMode(m)
		}
	}
	t.Skip("/proc/self/status has no Umask line")
	return 0
}

// TestLocalModes: Put, PutIfAbsent and Upload create objects mode 0666 and
// the directories they need mode 0777, masked by the umask, as other
// writers of local tables do; they were 0600 whatever the umask
// (os.CreateTemp), so no other user could read a table (issue 31 item 2;
// cmd/deltactl's TestReadAsSecondUser reads one as another user).
func TestLocalModes(t *testing.T) {
	umask := processUmask(t)
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "t")
	l, err := objectstore.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Put(ctx, "_delta_log/00000000000000000000.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.PutIfAbsent(ctx, "a=1/b=2/part-0.parquet", []byte("x")); err != nil {
		t.Fatal(err)
	}
	up, err := l.Upload(ctx, "c=3/part-1.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := up.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := up.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{
		"":                                     fs.ModeDir | 0o777&^umask,
		"_delta_log":                           fs.ModeDir | 0o777&^umask,
		"_delta_log/00000000000000000000.json": 0o666 &^ umask,
		"a=1":                                  fs.ModeDir | 0o777&^umask,
		"a=1/b=2":                              fs.ModeDir | 0o777&^umask,
		"a=1/b=2/part-0.parquet":               0o666 &^ umask,
		"c=3":                                  fs.ModeDir | 0o777&^umask,
		"c=3/part-1.parquet":                   0o666 &^ umask,
	}
	got := map[string]fs.FileMode{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(strings.TrimPrefix(rel, "."))] = info.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, m := range want {
		if got[k] != m {
			t.Errorf("%q: mode %v, want %v (umask %03o)", k, got[k], m, umask)
		}
	}
	if len(got) != len(want) {
		t.Errorf("entries %v, want %v (a temporary file left behind?)", got, want)
	}
}
