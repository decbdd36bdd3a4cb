package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The test binary runs itself as a child process (as the writer with a
// known umask, as the second user) when these are set: secondUserRole is
// "write" or "read", secondUserArgs the deltactl arguments as JSON.
const (
	secondUserRole = "DELTAKIT_TEST_SECOND_USER_ROLE"
	secondUserArgs = "DELTAKIT_TEST_SECOND_USER_ARGS"
	// nobody is the uid and gid of the second user (nobody/nogroup).
	nobody = 65534
)

// TestReadAsSecondUser: a table deltactl writes on the local filesystem
// can be read by another user as far as the umask allows: files are
// created 0666 and directories 0777, masked by the umask (0644 and 0755
// under umask 022), as Spark's and delta-rs's writers create them. They
// were 0600 (os.CreateTemp), so a Spark job or a reader running as another
// user could not read the table (issue 31 item 2). A child process with
// umask 022 writes a partitioned table (commits, data files in partition
// directories, a checkpoint, _last_checkpoint); a child running as uid and
// gid 65534 reads it with cat and verify.
func TestReadAsSecondUser(t *testing.T) {
	if role := os.Getenv(secondUserRole); role != "" {
		secondUserChild(role)
		return
	}
	dir := t.TempDir()
	// t.TempDir's directories are 0700: let the second user reach the table.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := copyTestBinary(t, dir)
	in := filepath.Join(dir, "in.csv")
	var b strings.Builder
	b.WriteString("id,city\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "%d,%s\n", i, []string{"ams", "sfo"}[i%2])
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tbl := filepath.Join(dir, "t")
	if out, code := runChild(t, bin, "write", nil, "ingest", in, tbl, "--epoch-rows", "1", "--query-id", "q", "--partition-by", "city"); code != 0 {
		t.Fatalf("writer: exit %d\n%s", code, out)
	}

	// Modes: 0666 and 0777 masked by the writer's umask 022.
	var files, dirs int
	err := filepath.WalkDir(tbl, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o644)
		if d.IsDir() {
			want, dirs = 0o755|fs.ModeDir, dirs+1
		} else {
			files++
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %v, want %v", strings.TrimPrefix(p, dir), info.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 12 commits, 12 data files, a checkpoint, _last_checkpoint; the
	// table, _delta_log and two partition directories.
	if files != 26 || dirs != 4 {
		t.Errorf("%d files and %d directories in the table, want 26 and 4", files, dirs)
	}

	if os.Geteuid() != 0 {
		t.Skipf("reading as uid %d needs root (uid %d here); the modes were checked", nobody, os.Geteuid())
	}
	for d := filepath.Dir(filepath.Dir(dir)); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s (above the test's temporary directory, mode %v) is not searchable by other users; the modes were checked", d, st.Mode())
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	cred := &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true}
	out, code := runChild(t, bin, "read", cred, "cat", tbl, "--format", "jsonl", "--limit", "0")
	if code != 0 {
		t.Fatalf("cat as uid %d: exit %d\n%s", nobody, code, out)
	}
	var ids []int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct{ ID int64 }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("cat as uid %d: %q: %v\n%s", nobody, line, err, out)
		}
		ids = append(ids, row.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, seq(1, 12)) {
		t.Errorf("cat as uid %d: ids %v, want 1..12", nobody, ids)
	}
	if out, code := runChild(t, bin, "read", cred, "verify", tbl); code != 0 || !strings.Contains(out, ": OK;") {
		t.Errorf("verify as uid %d: exit %d\n%s", nobody, code, out)
	}
}

// copyTestBinary copies the running test binary into dir, mode 0755: the
// build directory it runs from is private to its user.
func copyTestBinary(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "deltactl.test")
	dst, err := os.OpenFile(bin, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runChild runs deltactl args in a child process of bin in role, as cred
// when set, and returns its output (and, when it fails, its stderr) and
// exit code.
func runChild(t *testing.T, bin, role string, cred *syscall.Credential, args ...string) (string, int) {
	t.Helper()
	enc, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestReadAsSecondUser$")
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), secondUserRole+"="+role, secondUserArgs+"="+string(enc))
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out) + "\nstderr:\n" + stderr.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s %v: %v", role, args, err)
	}
	if stderr.Len() > 0 {
		t.Errorf("%s %v wrote to stderr:\n%s", role, args, stderr.String())
	}
	return string(out), 0
}

// secondUserChild runs deltactl with the arguments of secondUserArgs and
// exits with its code; the writer first sets umask 022.
func secondUserChild(role string) {
	var args []string
	if err := json.Unmarshal([]byte(os.Getenv(secondUserArgs)), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if role == "write" {
		syscall.Umask(0o022)
	}
	os.Exit(run(context.Background(), args, env{stdin: strings.NewReader(""), stdout: os.Stdout, stderr: os.Stderr, getenv: func(string) string { return "" }}))
}
