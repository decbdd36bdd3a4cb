package objectstore

import (
	"bytes"
	"context"
	"errors"
	"io"
)

// ErrUploadClosed is returned (wrapped in a *KeyError) by Write and Commit
// on an Upload that was already committed or aborted.
var ErrUploadClosed = errors.New("upload already committed or aborted")

// Upload is one object being written as a stream. Bytes written go to the
// store as they come (in bounded buffers), and the object appears under its
// key, whole, only when Commit returns nil: until then readers see the key
// as it was (absent, or the old object), never a partial object.
//
// An Upload is not safe for concurrent use. After an error from Write the
// upload is failed: later Writes and Commit return that error, and the
// backend has already released what it held (or Abort does).
type Upload interface {
	// Write appends p to the object. It may block while earlier bytes are
	// sent, so that an upload holds a bounded amount of memory.
	io.Writer

	// Commit stores the object under its key, replacing any existing
	// object, as Put does. It returns ErrUploadClosed after Commit or
	// Abort. When Commit fails the upload is aborted: nothing is left
	// behind, except when the error leaves the outcome open as a Put's
	// can (a lost reply).
	Commit(ctx context.Context) error

	// Abort discards the upload: nothing appears under the key, and the
	// backend frees what it holds (S3's multipart upload, a local temporary
	// file). Abort after Commit or after Abort does nothing and returns nil,
	// so `defer u.Abort(ctx)` is the usual way to clean up.
	Abort(ctx context.Context) error
}

// Uploader is the capability of a Store to write an object as a stream
// (S3, Local, Mem and faultstore.Store have it). Use StartUpload, which falls back to
// buffering for a Store without it.
type Uploader interface {
	// Upload starts writing the object key. ctx governs the whole upload:
	// when it is cancelled before Commit, the upload fails and is aborted.
	// Returns ErrInvalidKey for a bad key.
	Upload(ctx context.Context, key string) (Upload, error)
}

// StartUpload starts a streaming write of key to s: s's own Upload when s
// is an Uploader, else an upload that buffers the object in memory and
// Puts it on Commit.
func StartUpload(ctx context.Context, s Store, key string) (Upload, error) {
	if u, ok := s.(Uploader); ok {
		return u.Upload(ctx, key)
	}
	if err := checkCall(ctx, key); err != nil {
		return nil, &KeyError{Op: "upload", Store: s.URI(), Key: key, Err: err}
	}
	return &bufferedUpload{uploadState: uploadState{ctx: ctx}, key: key, uri: s.URI(), put: s.Put}, nil
}

// PutStream copies r to key in s through StartUpload and commits it; it
// returns the number of bytes stored. On any error (reading r, writing, a
// cancelled ctx) the upload is aborted and nothing is stored.
func PutStream(ctx context.Context, s Store, key string, r io.Reader) (int64, error) {
	u, err := StartUpload(ctx, s, key)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(u, r)
	if err == nil {
		err = u.Commit(ctx)
	}
	if err != nil {
		_ = u.Abort(context.WithoutCancel(ctx))
		var ke *KeyError
		if !errors.As(err, &ke) {
			err = &KeyError{Op: "upload", Store: s.URI(), Key: key, Err: err}
		}
		return 0, err
	}
	return n, nil
}

// bufferedUpload collects the object in memory and stores it with one put
// on Commit. Mem uses it with its own put; StartUpload with Store.Put.
type bufferedUpload struct {
	uploadState
	key string
	uri string
	put func(ctx context.Context, key string, data []byte) error
	buf bytes.Buffer
}

// uploadState is the life cycle the uploads of this package share: the
// first failure sticks, nothing is accepted after Commit or Abort, and a
// cancelled start ctx fails every later call.
type uploadState struct {
	ctx  context.Context // the ctx the upload was started with
	err  error           // the first failure
	done bool            // committed or aborted
}

// uploadOps is what uploadState.enter asks of an upload: the error of a
// call after Commit or Abort, and how it records a failure.
type uploadOps interface {
	closedErr() error
	fail(err error) error
}

// enter begins a Write (commit false) or a Commit (commit true) of u: it
// returns u.closedErr() after Commit or Abort, the first failure if there
// was one, u.fail of the start ctx's error if it is done, else nil. A
// Commit marks the upload done whatever it returns.
func (s *uploadState) enter(u uploadOps, commit bool) error {
	if s.done {
		return u.closedErr()
	}
	s.done = commit
	if s.err != nil {
		return s.err
	}
	if err := s.ctx.Err(); err != nil {
		return u.fail(err)
	}
	return nil
}

func (u *bufferedUpload) closedErr() error {
	return &KeyError{Op: "upload", Store: u.uri, Key: u.key, Err: ErrUploadClosed}
}

func (u *bufferedUpload) fail(err error) error {
	if u.err == nil {
		u.err = &KeyError{Op: "upload", Store: u.uri, Key: u.key, Err: err}
		u.buf = bytes.Buffer{}
	}
	return u.err
}

func (u *bufferedUpload) Write(p []byte) (int, error) {
	if err := u.enter(u, false); err != nil {
		return 0, err
	}
	return u.buf.Write(p)
}

func (u *bufferedUpload) Commit(ctx context.Context) error {
	if err := u.enter(u, true); err != nil {
		return err
	}
	data := u.buf.Bytes()
	u.buf = bytes.Buffer{}
	if err := u.put(ctx, u.key, data); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			return err
		}
		return u.fail(err)
	}
	return nil
}

func (u *bufferedUpload) Abort(context.Context) error {
	u.done = true
	u.buf = bytes.Buffer{}
	return nil
}
