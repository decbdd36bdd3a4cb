package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Local is a Store on the local filesystem, rooted at a directory. It is the
// embedded default store of deltakit.
//
// PutIfAbsent writes a temporary file in the target's directory, fsyncs it and
// link(2)s it to the final name, which fails with EEXIST when the name is
// taken: the object appears whole or not at all. Put does the same with
// rename(2). Temporary files are named ".tmp-*" and are never listed.
// Objects are created mode 0666 and directories 0777, masked by the
// process umask, as other writers of local tables create them.
type Local struct {
	root string // absolute, cleaned
}

const localTempPrefix = ".tmp-"

// NewLocal returns a Store rooted at dir. dir may be relative; it is made
// absolute. A missing dir is not created until the first put (so opening a
// table that does not exist leaves nothing behind); it lists as empty.
// Returns an error wrapping ErrInvalidArgument when dir exists and is not
// a directory.
func NewLocal(dir string) (*Local, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("objectstore: local root %q: %w", dir, err)
	}
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("objectstore: local root %q is a file, not a directory: %w", abs, ErrInvalidArgument)
	}
	return &Local{root: abs}, nil
}

// Root returns the absolute directory the store is rooted at.
func (l *Local) Root() string { return l.root }

// URI implements Store.
func (l *Local) URI() string { return "file://" + filepath.ToSlash(l.root) }

func (l *Local) err(op, key string, err error) error {
	// A path component that is a file ("a" in "a/b") means "a/b" is absent.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		err = fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	return &KeyError{Op: op, Store: l.URI(), Key: key, Err: err}
}

func (l *Local) path(key string) string {
	return filepath.Join(l.root, filepath.FromSlash(key))
}

// Get implements Store.
func (l *Local) Get(ctx context.Context, key string, r Range) ([]byte, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, l.err("get", key, err)
	}
	if r.Offset < 0 {
		return nil, l.err("get", key, ErrInvalidRange)
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return nil, l.err("get", key, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, l.err("get", key, err)
	}
	if st.IsDir() {
		return nil, l.err("get", key, ErrNotExist)
	}
	size := st.Size()
	if r.Offset >= size {
		return []byte{}, nil
	}
	n := size - r.Offset
	if r.Length >= 0 && r.Length < n {
		n = r.Length
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, r.Offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, l.err("get", key, err)
	}
	return buf, nil
}

// ReadAt implements RangeReader with os.File.ReadAt into p.
func (l *Local) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := checkCall(ctx, key); err != nil {
		return 0, l.err("get", key, err)
	}
	if off < 0 {
		return 0, l.err("get", key, ErrInvalidRange)
	}
	f, err := os.Open(l.path(key))
	if err != nil {
		return 0, l.err("get", key, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, l.err("get", key, err)
	}
	if st.IsDir() {
		return 0, l.err("get", key, ErrNotExist)
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := f.ReadAt(p, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, l.err("get", key, err)
	}
	return fillResult(n, len(p))
}

// Put implements Store.
func (l *Local) Put(ctx context.Context, key string, data []byte) error {
	return l.put(ctx, "put", key, data, false)
}

// PutIfAbsent implements Store.
func (l *Local) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return l.put(ctx, "put-if-absent", key, data, true)
}

func (l *Local) put(ctx context.Context, op, key string, data []byte, ifAbsent bool) error {
	if err := checkCall(ctx, key); err != nil {
		return l.err(op, key, err)
	}
	final := l.path(key)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, localDirMode); err != nil {
		return l.putErr(op, key, err)
	}
	tmp, err := createTemp(dir)
	if err != nil {
		return l.putErr(op, key, err)
	}
	tmpName := tmp.Name()
	// After link or rename, and after a failed or partial write (a full
	// disk): the temporary file never outlives the call.
	defer os.Remove(tmpName)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return l.putErr(op, key, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return l.putErr(op, key, err)
	}
	if err := tmp.Close(); err != nil {
		return l.putErr(op, key, err)
	}
	if ifAbsent {
		if err := os.Link(tmpName, final); err != nil {
			if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.EEXIST) {
				return l.err(op, key, ErrAlreadyExists)
			}
			return l.putErr(op, key, err)
		}
	} else if err := os.Rename(tmpName, final); err != nil {
		if errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
			// The key is a directory (os.Rename's EEXIST): nothing replaced.
			return l.err(op, key, fmt.Errorf("%w: %w", ErrNotStored, err))
		}
		return l.putErr(op, key, err)
	}
	syncDir(dir)
	return nil
}

// putErr is err for a failed put: a cause that certainly left the key
// unchanged also wraps ErrNotStored.
func (l *Local) putErr(op, key string, err error) error {
	if DefiniteWriteFailure(err) {
		err = fmt.Errorf("%w: %w", ErrNotStored, err)
	}
	return l.err(op, key, err)
}

// definiteWriteErrnos are the errors of a local write that mean nothing was
// written: the call failed before the object could appear.
var definiteWriteErrnos = []syscall.Errno{
	syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM,
	syscall.EFBIG, syscall.ENAMETOOLONG, syscall.ENOTDIR, syscall.EISDIR,
}

// DefiniteWriteFailure reports whether err, from a local write, is a
// system error that means nothing was written (ENOSPC, EDQUOT, EROFS,
// EACCES, EPERM, EFBIG, ENAMETOOLONG, ENOTDIR, EISDIR): the errors that
// Local's puts also wrap in ErrNotStored. faultstore uses it to fail an
// injected put as Local would.
func DefiniteWriteFailure(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && slices.Contains(definiteWriteErrnos, errno)
}

// syncDir makes a new directory entry durable. Errors are ignored: some
// filesystems do not support fsync on directories, and the data itself is
// already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// List implements Store. It walks only the directories that can hold keys
// with the prefix, in lexicographic key order.
func (l *Local) List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		// The deepest directory that contains every key with this prefix.
		base := ""
		if i := strings.LastIndex(prefix, "/"); i >= 0 {
			base = prefix[:i]
		}
		keys, err := l.walk(ctx, base, prefix, startAfter)
		if err != nil {
			yield(ObjectInfo{}, l.err("list", prefix, err))
			return
		}
		for _, k := range keys {
			if !yield(k, nil) {
				return
			}
		}
	}
}

// walk collects the files below base whose keys start with prefix and sort
// after startAfter, sorted by key.
func (l *Local) walk(ctx context.Context, base, prefix, startAfter string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	var visit func(rel string) error
	visit = func(rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := os.ReadDir(filepath.Join(l.root, filepath.FromSlash(rel)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, localTempPrefix) {
				continue
			}
			key := name
			if rel != "" {
				key = rel + "/" + name
			}
			if e.IsDir() {
				// Descend only where keys may still match the prefix.
				dirKey := key + "/"
				if strings.HasPrefix(dirKey, prefix) || strings.HasPrefix(prefix, dirKey) {
					if err := visit(key); err != nil {
						return err
					}
				}
				continue
			}
			if !strings.HasPrefix(key, prefix) || key <= startAfter {
				continue
			}
			info, err := e.Info()
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue // deleted while listing
				}
				return err
			}
			out = append(out, ObjectInfo{Key: key, Size: info.Size(), ModTime: info.ModTime()})
		}
		return nil
	}
	if err := visit(base); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkCall(ctx, key); err != nil {
		return ObjectInfo{}, l.err("stat", key, err)
	}
	st, err := os.Stat(l.path(key))
	if err != nil {
		return ObjectInfo{}, l.err("stat", key, err)
	}
	if st.IsDir() {
		return ObjectInfo{}, l.err("stat", key, ErrNotExist)
	}
	return ObjectInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Delete implements Store. Empty parent directories are left in place.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := checkCall(ctx, key); err != nil {
		return l.err("delete", key, err)
	}
	if err := os.Remove(l.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return l.err("delete", key, err)
	}
	return nil
}
