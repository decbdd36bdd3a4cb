package objectstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Upload implements Uploader. The bytes go to a temporary file (".tmp-*",
// never listed) in the key's directory; Commit fsyncs it and renames it to
// the key, as Put does, so the object appears whole or not at all. Abort,
// a failed Write and a cancelled ctx remove the temporary file.
func (l *Local) Upload(ctx context.Context, key string) (Upload, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, l.err("upload", key, err)
	}
	final := l.path(key)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, localDirMode); err != nil {
		return nil, l.putErr("upload", key, err)
	}
	tmp, err := createTemp(dir)
	if err != nil {
		return nil, l.putErr("upload", key, err)
	}
	return &localUpload{uploadState: uploadState{ctx: ctx}, l: l, key: key, final: final, f: tmp}, nil
}

type localUpload struct {
	uploadState
	l     *Local
	key   string
	final string
	f     *os.File // nil once closed and removed, or renamed
}

func (u *localUpload) closedErr() error { return u.l.err("upload", u.key, ErrUploadClosed) }

// fail records err, removes the temporary file and returns the error.
func (u *localUpload) fail(err error) error {
	if u.err == nil {
		u.err = u.l.putErr("upload", u.key, err)
	}
	u.discard()
	return u.err
}

func (u *localUpload) discard() {
	if u.f != nil {
		u.f.Close()
		os.Remove(u.f.Name())
		u.f = nil
	}
}

func (u *localUpload) Write(p []byte) (int, error) {
	if err := u.enter(u, false); err != nil {
		return 0, err
	}
	n, err := u.f.Write(p)
	if err != nil {
		return n, u.fail(err)
	}
	return n, nil
}

func (u *localUpload) Commit(ctx context.Context) error {
	if err := u.enter(u, true); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return u.fail(err)
	}
	if err := u.f.Sync(); err != nil {
		return u.fail(err)
	}
	name := u.f.Name()
	if err := u.f.Close(); err != nil {
		return u.fail(err)
	}
	u.f = nil
	if err := os.Rename(name, u.final); err != nil {
		os.Remove(name)
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			// The key is a directory: nothing replaced.
			u.err = u.l.err("upload", u.key, fmt.Errorf("%w: %w", ErrNotStored, err))
			return u.err
		}
		return u.fail(err)
	}
	syncDir(filepath.Dir(u.final))
	return nil
}

func (u *localUpload) Abort(context.Context) error {
	u.done = true
	u.discard()
	return nil
}
