package table

import (
	"context"
	"sync"

	"github.com/deltakit/deltakit/objectstore"
)

// gateHold is how many bytes of one data file a gated write holds in
// memory while its gate has not returned; a file that grows past it waits
// for the gate before writing on.
const gateHold = 8 << 20

// WithUploadGate lets WriteFiles (and Draft.WriteFiles, WriteFilesOf)
// encode the data files while the caller is still deciding whether they
// may be stored: the bytes of each file are held in memory (up to 8 MiB
// per file; a larger file waits there) and nothing is sent to the store
// until gate returns. gate is called at most once per write, from the
// goroutines that write the files, with the write's context; when it
// returns an error, no file is stored and the write fails with an error
// wrapping it. The streaming sink overlaps its refresh of the log with
// encoding an epoch this way, so a skipped epoch stores nothing.
func WithUploadGate(gate func(context.Context) error) WriteOption {
	return func(c *writeConfig) {
		if gate == nil {
			c.gate = nil
			return
		}
		var once sync.Once
		var err error
		c.gate = func(ctx context.Context) error {
			once.Do(func() { err = gate(ctx) })
			return err
		}
	}
}

// uploadGateStore is a store whose uploads (the data files of a write with
// WithUploadGate) send nothing before the gate returns nil.
type uploadGateStore struct {
	objectstore.Store
	gate func(context.Context) error
}

func (g *uploadGateStore) Upload(ctx context.Context, key string) (objectstore.Upload, error) {
	return &heldUpload{ctx: ctx, key: key, store: g.Store, gate: g.gate}, nil
}

// heldUpload buffers the object until the gate opens, then streams it to
// the store's own upload.
type heldUpload struct {
	ctx   context.Context
	key   string
	store objectstore.Store
	gate  func(context.Context) error
	buf   []byte
	up    objectstore.Upload // nil until the gate opened
	err   error
	done  bool
}

// open waits for the gate and starts the real upload with what is held.
func (u *heldUpload) open() error {
	if u.up != nil || u.err != nil {
		return u.err
	}
	if err := u.gate(u.ctx); err != nil {
		u.err = &objectstore.KeyError{Op: "upload", Store: u.store.URI(), Key: u.key, Err: err}
		return u.err
	}
	up, err := objectstore.StartUpload(u.ctx, u.store, u.key)
	if err == nil {
		_, err = up.Write(u.buf)
	}
	u.buf = nil
	if err != nil {
		if up != nil {
			_ = up.Abort(context.WithoutCancel(u.ctx))
		}
		u.err = err
		return err
	}
	u.up = up
	return nil
}

func (u *heldUpload) Write(p []byte) (int, error) {
	if u.done {
		return 0, &objectstore.KeyError{Op: "upload", Store: u.store.URI(), Key: u.key, Err: objectstore.ErrUploadClosed}
	}
	if u.up == nil && u.err == nil && len(u.buf)+len(p) <= gateHold {
		u.buf = append(u.buf, p...)
		return len(p), nil
	}
	if err := u.open(); err != nil {
		return 0, err
	}
	return u.up.Write(p)
}

func (u *heldUpload) Commit(ctx context.Context) error {
	if u.done {
		return &objectstore.KeyError{Op: "upload", Store: u.store.URI(), Key: u.key, Err: objectstore.ErrUploadClosed}
	}
	if err := u.open(); err != nil {
		u.done = true
		return err
	}
	u.done = true
	return u.up.Commit(ctx)
}

func (u *heldUpload) Abort(ctx context.Context) error {
	u.done, u.buf = true, nil
	if u.up != nil {
		return u.up.Abort(ctx)
	}
	return nil
}
