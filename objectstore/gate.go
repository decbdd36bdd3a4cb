package objectstore

import "context"

// GateUploads returns store with uploads that send nothing before gate
// returns nil: each upload's first hold bytes are kept in memory, and a
// Write past them, or Commit, waits for gate (called with the upload's
// context; the caller makes it return once for all uploads if it must).
// When gate returns an error the upload stores nothing and its Write or
// Commit returns a *KeyError wrapping that error. Every other call goes to
// store unchanged. The returned store is an Uploader, and a RangeReader
// when store is one. table's WithUploadGate uses it to encode data files
// while the caller still decides whether they may be stored.
func GateUploads(store Store, gate func(context.Context) error, hold int) Store {
	g := &uploadGateStore{Store: store, gate: gate, hold: hold}
	if rr, ok := store.(RangeReader); ok {
		return &rangeGateStore{uploadGateStore: g, rr: rr}
	}
	return g
}

// uploadGateStore is the Store of GateUploads.
type uploadGateStore struct {
	Store
	gate func(context.Context) error
	hold int
}

// rangeGateStore is the Store of GateUploads over a RangeReader: it keeps
// the wrapped store's ReadAt, which embedding Store alone would hide.
type rangeGateStore struct {
	*uploadGateStore
	rr RangeReader
}

func (g *rangeGateStore) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	return g.rr.ReadAt(ctx, key, p, off)
}

func (g *uploadGateStore) Upload(ctx context.Context, key string) (Upload, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, &KeyError{Op: "upload", Store: g.URI(), Key: key, Err: err}
	}
	return &heldUpload{ctx: ctx, key: key, store: g.Store, gate: g.gate, hold: g.hold}, nil
}

// heldUpload buffers the object until the gate opens, then streams it to
// the store's own upload.
type heldUpload struct {
	ctx   context.Context
	key   string
	store Store
	gate  func(context.Context) error
	hold  int // bytes kept before the gate opened
	buf   []byte
	up    Upload // nil until the gate opened
	err   error
	done  bool
}

// open waits for the gate and starts the real upload with what is held.
func (u *heldUpload) open() error {
	if u.up != nil || u.err != nil {
		return u.err
	}
	if err := u.gate(u.ctx); err != nil {
		u.err = &KeyError{Op: "upload", Store: u.store.URI(), Key: u.key, Err: err}
		return u.err
	}
	up, err := StartUpload(u.ctx, u.store, u.key)
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
		return 0, &KeyError{Op: "upload", Store: u.store.URI(), Key: u.key, Err: ErrUploadClosed}
	}
	if u.up == nil && u.err == nil && len(u.buf)+len(p) <= u.hold {
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
		return &KeyError{Op: "upload", Store: u.store.URI(), Key: u.key, Err: ErrUploadClosed}
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
