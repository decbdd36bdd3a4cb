// Package faultstore is a fault-injecting objectstore.Store for tests: it
// wraps any store, records every call it receives (Store.Calls), and fails,
// delays or crashes calls as planned (Store.Inject with a Fault) or at
// random (WithRandomFaults, deterministic for a seed). A crash test
// enumerates the calls an operation makes, then crashes before and after
// each one; a lost reply (DropReply) is a call that took effect but whose
// caller cannot know it. Every made-up error wraps ErrInjected and is an
// *InjectedError.
package faultstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/deltakit/deltakit/internal/ctxwait"
	"github.com/deltakit/deltakit/objectstore"
)

// Op names an objectstore.Store method, for fault injection.
type Op string

// The operations a fault store counts and can fail.
const (
	OpGet         Op = "get"
	OpPut         Op = "put"
	OpPutIfAbsent Op = "put-if-absent"
	OpList        Op = "list"
	OpStat        Op = "stat"
	OpDelete      Op = "delete"
	// OpUpload is the start of a streaming upload (objectstore.Uploader.Upload). Its
	// Commit counts as OpPut, the call where the object appears, so that a
	// fault planned for a put strikes a streamed object too.
	OpUpload Op = "upload"
	// OpUploadWrite is one Write of a streaming upload. Writes are not
	// recorded by Calls (a large object takes many), and only a fault
	// whose Op is OpUploadWrite strikes them: a fault of any op (Op "")
	// and random faults count and strike recorded calls only.
	OpUploadWrite Op = "upload-write"
)

// ErrInjected is wrapped by every error a fault store makes up.
var ErrInjected = errors.New("injected fault")

// ErrCrashed is wrapped by the errors of a fault store after a crash: the
// writer using it is dead and every later call fails.
var ErrCrashed = errors.New("writer crashed (injected)")

// ErrReplyLost is wrapped when a fault store performed a call and then
// dropped its reply, like a timeout or a connection reset after the request
// reached the server. The caller cannot know whether the call took effect.
var ErrReplyLost = errors.New("reply lost (injected)")

// Kind says what an injected fault does.
type Kind int

const (
	// Fail returns an error without making the call (Before) or after
	// making it (After, which is the same as DropReply).
	Fail Kind = iota
	// Crash fails this call and every later one with ErrCrashed. With
	// Before the call is not made; with After it is made, then the writer dies.
	Crash
	// DropReply makes the call, then returns ErrReplyLost.
	DropReply
	// Status returns an *InjectedError with Status (e.g. 409, 503)
	// without making the call.
	Status
	// Latency waits Latency, then makes the call normally.
	Latency
)

// Phase says whether a fault strikes before or after the call is made.
type Phase int

const (
	Before Phase = iota // the call is not made
	After               // the call is made, its result replaced
)

// Fault is one fault to inject. It strikes on the Nth call (1-based) that
// matches Op (any op when "") and KeyPrefix, counted from the moment the
// fault was injected.
type Fault struct {
	Op        Op
	KeyPrefix string
	Nth       int
	Phase     Phase
	Kind      Kind
	Status    int           // for Status: the HTTP status to report
	Latency   time.Duration // for Latency
	// Err, for Fail before the call, is the cause to report instead of
	// ErrInjected, e.g. syscall.ENOSPC. A put fails with it as Local
	// would: a cause that leaves the key unchanged (ENOSPC, EROFS, EACCES,
	// ...) also wraps objectstore.ErrNotStored.
	Err error
}

// InjectedError is the error a fault store returns for an injected fault.
type InjectedError struct {
	Op     Op
	Key    string
	Status int   // HTTP status for Status, else 0
	Err    error // ErrCrashed, ErrReplyLost, ErrInjected or Fault.Err
}

func (e *InjectedError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("objectstore: %s key %q: %v (status %d)", e.Op, e.Key, e.Err, e.Status)
	}
	return fmt.Sprintf("objectstore: %s key %q: %v", e.Op, e.Key, e.Err)
}

// Unwrap returns the cause and ErrInjected.
func (e *InjectedError) Unwrap() []error { return []error{e.Err, ErrInjected} }

// Call records one call a fault store received.
type Call struct {
	Op  Op
	Key string // the key, or the prefix for List
}

// Store wraps an objectstore.Store and injects faults: planned ones (Inject) and random
// ones (WithRandomFaults), deterministic for a given seed and call sequence.
// It records every call it receives (Calls), so a test can enumerate the
// calls an operation makes and then crash before and after each of them.
// Safe for concurrent use.
type Store struct {
	inner objectstore.Store

	mu      sync.Mutex
	faults  []*armedFault
	calls   []Call
	crashed bool
	rng     *rand.Rand
	rate    float64
	kinds   []Kind

	onCrash   func()
	crashOnce sync.Once
}

type armedFault struct {
	Fault
	seen int
	done bool
}

// Option configures New.
type Option func(*Store)

// WithRandomFaults makes each call fail with probability rate (0..1) with a
// fault kind drawn from kinds (default Status 503), using a PRNG seeded
// with seed: the same seed and call sequence give the same faults.
func WithRandomFaults(seed uint64, rate float64, kinds ...Kind) Option {
	return func(f *Store) {
		f.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		f.rate = rate
		f.kinds = kinds
		if len(f.kinds) == 0 {
			f.kinds = []Kind{Status}
		}
	}
}

// WithCrashHook calls fn once, when the first Crash strikes (planned
// or random), before the call that crashed returns. A crash test cancels
// the dead writer's context there: a crashed process runs no retries and no
// background work, while a writer that merely sees failing calls would
// keep retrying them.
func WithCrashHook(fn func()) Option {
	return func(f *Store) { f.onCrash = fn }
}

// New wraps inner.
func New(inner objectstore.Store, opts ...Option) *Store {
	f := &Store{inner: inner}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Inject arms faults; each strikes once.
func (f *Store) Inject(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ft := range faults {
		f.faults = append(f.faults, &armedFault{Fault: ft})
	}
}

// Calls returns the calls received so far, in order.
func (f *Store) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Crashed reports whether a Crash struck.
func (f *Store) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Inner returns the wrapped store.
func (f *Store) Inner() objectstore.Store { return f.inner }

// URI implements objectstore.Store: the wrapped store's URI.
func (f *Store) URI() string { return f.inner.URI() }

// plan decides what happens to one call; record adds it to Calls.
func (f *Store) plan(op Op, key string, record bool) (before, after *Fault, crashedErr error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if record {
		f.calls = append(f.calls, Call{Op: op, Key: key})
	}
	if f.crashed {
		return nil, nil, &InjectedError{Op: op, Key: key, Err: ErrCrashed}
	}
	for _, a := range f.faults {
		// A call not recorded is struck only by a fault that names its op:
		// the Nth of "any op" counts the calls Calls lists.
		if a.done || (a.Op != "" && a.Op != op) || (a.Op == "" && !record) || !strings.HasPrefix(key, a.KeyPrefix) {
			continue
		}
		a.seen++
		if a.seen < max(a.Nth, 1) {
			continue
		}
		a.done = true
		ft := a.Fault
		if ft.Phase == Before && ft.Kind != DropReply {
			if ft.Kind == Crash {
				f.crashed = true
			}
			return &ft, nil, nil
		}
		return nil, &ft, nil
	}
	if record && f.rng != nil && f.rng.Float64() < f.rate {
		ft := Fault{Op: op, Kind: f.kinds[f.rng.IntN(len(f.kinds))], Status: 503, Latency: 10 * time.Millisecond}
		if ft.Kind == Crash {
			f.crashed = true
		}
		if ft.Kind == DropReply {
			return nil, &ft, nil
		}
		return &ft, nil, nil
	}
	return nil, nil, nil
}

// strikeBefore returns the error of a fault that strikes before the call
// (nil for latency, after waiting).
func strikeBefore(ctx context.Context, ft *Fault, op Op, key string) error {
	switch ft.Kind {
	case Latency:
		return ctxwait.Sleep(ctx, ft.Latency)
	case Crash:
		return &InjectedError{Op: op, Key: key, Err: ErrCrashed}
	case Status:
		return &InjectedError{Op: op, Key: key, Status: ft.Status, Err: ErrInjected}
	default:
		if ft.Err == nil {
			return &InjectedError{Op: op, Key: key, Err: ErrInjected}
		}
		cause := ft.Err
		if (op == OpPut || op == OpPutIfAbsent) && objectstore.DefiniteWriteFailure(cause) {
			cause = fmt.Errorf("%w: %w", objectstore.ErrNotStored, cause)
		}
		return &InjectedError{Op: op, Key: key, Err: cause}
	}
}

// strikeAfter returns the error of a fault that strikes after the call.
func (f *Store) strikeAfter(ft *Fault, op Op, key string) error {
	switch ft.Kind {
	case Crash:
		f.mu.Lock()
		f.crashed = true
		f.mu.Unlock()
		f.fireCrashHook()
		return &InjectedError{Op: op, Key: key, Err: ErrCrashed}
	case Latency:
		time.Sleep(ft.Latency)
		return nil
	case Status:
		return &InjectedError{Op: op, Key: key, Status: ft.Status, Err: ErrReplyLost}
	default:
		return &InjectedError{Op: op, Key: key, Err: ErrReplyLost}
	}
}

// fireCrashHook runs the WithCrashHook function, once.
func (f *Store) fireCrashHook() {
	if f.onCrash != nil {
		f.crashOnce.Do(f.onCrash)
	}
}

// do runs one call under the fault plan.
func (f *Store) do(ctx context.Context, op Op, key string, call func() error) error {
	return f.doCall(ctx, op, key, true, call)
}

// doCall is do; record adds the call to Calls.
func (f *Store) doCall(ctx context.Context, op Op, key string, record bool, call func() error) error {
	before, after, err := f.plan(op, key, record)
	if err != nil {
		return err
	}
	if before != nil {
		if before.Kind == Crash {
			f.fireCrashHook()
		}
		if err := strikeBefore(ctx, before, op, key); err != nil {
			return err
		}
	}
	callErr := call()
	if after != nil {
		if err := f.strikeAfter(after, op, key); err != nil {
			return err
		}
	}
	return callErr
}

// Get implements objectstore.Store.
func (f *Store) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	var out []byte
	err := f.do(ctx, OpGet, key, func() (err error) {
		out, err = f.inner.Get(ctx, key, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadAt implements objectstore.RangeReader: faults strike as on Get
// (OpGet), and the read goes to the inner store's ReadAt (or its Get).
func (f *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	var n int
	var readErr error
	err := f.do(ctx, OpGet, key, func() error {
		n, readErr = objectstore.ReadAt(ctx, f.inner, key, p, off)
		if errors.Is(readErr, io.EOF) {
			return nil // a short read is a result, not a failure
		}
		return readErr
	})
	if err != nil {
		return 0, err
	}
	return n, readErr
}

// Put implements objectstore.Store.
func (f *Store) Put(ctx context.Context, key string, data []byte) error {
	return f.do(ctx, OpPut, key, func() error { return f.inner.Put(ctx, key, data) })
}

// PutIfAbsent implements objectstore.Store.
func (f *Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return f.do(ctx, OpPutIfAbsent, key, func() error { return f.inner.PutIfAbsent(ctx, key, data) })
}

// List implements objectstore.Store. Faults strike when iteration starts.
func (f *Store) List(ctx context.Context, prefix, startAfter string) iter.Seq2[objectstore.ObjectInfo, error] {
	return func(yield func(objectstore.ObjectInfo, error) bool) {
		var infos []objectstore.ObjectInfo
		err := f.do(ctx, OpList, prefix, func() error {
			for info, err := range f.inner.List(ctx, prefix, startAfter) {
				if err != nil {
					return err
				}
				infos = append(infos, info)
			}
			return nil
		})
		if err != nil {
			yield(objectstore.ObjectInfo{}, err)
			return
		}
		for _, info := range infos {
			if !yield(info, nil) {
				return
			}
		}
	}
}

// Stat implements objectstore.Store.
func (f *Store) Stat(ctx context.Context, key string) (objectstore.ObjectInfo, error) {
	var out objectstore.ObjectInfo
	err := f.do(ctx, OpStat, key, func() (err error) {
		out, err = f.inner.Stat(ctx, key)
		return err
	})
	if err != nil {
		return objectstore.ObjectInfo{}, err
	}
	return out, nil
}

// Delete implements objectstore.Store.
func (f *Store) Delete(ctx context.Context, key string) error {
	return f.do(ctx, OpDelete, key, func() error { return f.inner.Delete(ctx, key) })
}

// Upload implements objectstore.Uploader: the wrapped store's upload (StartUpload's,
// so a store without the capability buffers), under the fault plan. The
// start is OpUpload, each Write OpUploadWrite and Commit OpPut. When an
// injected fault fails any of them (a crash too), the wrapped upload is
// aborted, so that a test leaves no temporary file or open multipart
// upload behind; a real crash would leave those to the store's cleanup.
func (f *Store) Upload(ctx context.Context, key string) (objectstore.Upload, error) {
	var inner objectstore.Upload
	err := f.do(ctx, OpUpload, key, func() (err error) {
		inner, err = objectstore.StartUpload(ctx, f.inner, key)
		return err
	})
	if err != nil {
		if inner != nil {
			_ = inner.Abort(context.WithoutCancel(ctx))
		}
		return nil, err
	}
	return &faultyUpload{f: f, ctx: ctx, key: key, inner: inner}, nil
}

type faultyUpload struct {
	f     *Store
	ctx   context.Context
	key   string
	inner objectstore.Upload
	err   error // the first injected failure
	done  bool  // Commit or Abort was called
}

// failed aborts the wrapped upload after err and keeps err for later calls.
func (u *faultyUpload) failed(err error) error {
	if u.err == nil {
		u.err = err
	}
	_ = u.inner.Abort(context.WithoutCancel(u.ctx))
	return u.err
}

func (u *faultyUpload) Write(p []byte) (int, error) {
	switch {
	case u.done:
		return 0, &objectstore.KeyError{Op: "upload", Store: u.f.URI(), Key: u.key, Err: objectstore.ErrUploadClosed}
	case u.err != nil:
		return 0, u.err
	}
	var n int
	err := u.f.doCall(u.ctx, OpUploadWrite, u.key, false, func() (err error) {
		n, err = u.inner.Write(p)
		return err
	})
	var ie *InjectedError
	if errors.As(err, &ie) {
		return n, u.failed(err)
	}
	return n, err
}

func (u *faultyUpload) Commit(ctx context.Context) error {
	switch {
	case u.done:
		return &objectstore.KeyError{Op: "upload", Store: u.f.URI(), Key: u.key, Err: objectstore.ErrUploadClosed}
	case u.err != nil:
		u.done = true
		return u.err
	}
	u.done = true
	err := u.f.do(ctx, OpPut, u.key, func() error { return u.inner.Commit(ctx) })
	if err != nil {
		// A fault before the call left the upload open; after it, the
		// abort does nothing.
		return u.failed(err)
	}
	return nil
}

func (u *faultyUpload) Abort(ctx context.Context) error {
	u.done = true
	return u.inner.Abort(ctx)
}
