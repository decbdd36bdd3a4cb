// Package objectstore stores bytes under string keys on the local filesystem,
// in memory, or on S3-compatible storage. Its one hard promise is PutIfAbsent:
// an atomic "create this key only if it is absent", on which deltakit builds
// Delta's atomic log versions without rename.
//
// Keys are slash-separated paths relative to the store's root (no leading
// slash), for example "_delta_log/00000000000000000000.json". The package knows
// nothing of Delta or Parquet.
package objectstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// ErrNotExist is returned (wrapped in a *KeyError) when a key is absent.
var ErrNotExist = errors.New("object does not exist")

// ErrAlreadyExists is returned (wrapped in a *KeyError) by PutIfAbsent when
// the key already exists: another writer created it first.
var ErrAlreadyExists = errors.New("object already exists")

// ErrInvalidKey is returned (wrapped in a *KeyError) for an empty key, a key
// with a leading slash, or a key with "." or ".." segments.
var ErrInvalidKey = errors.New("invalid object key")

// ErrInvalidRange is returned (wrapped in a *KeyError) for a byte range with a
// negative offset or length.
var ErrInvalidRange = errors.New("invalid byte range")

// ErrNotStored is wrapped (in a *KeyError, together with the system's cause,
// e.g. syscall.ENOSPC) when a Put or PutIfAbsent failed in a way that
// certainly left the key as it was: nothing was created or replaced, so
// there is no outcome to learn by reading the key back and retrying the same
// call soon is futile. Local reports it for a full disk or quota (ENOSPC,
// EDQUOT), a read-only filesystem (EROFS), missing permission (EACCES,
// EPERM), a file too large (EFBIG), a name too long (ENAMETOOLONG), a
// path component that is a file (ENOTDIR) and a key that is a directory
// (EISDIR); S3's PutIfAbsent for a 403 reply (AccessDenied, a bad key or
// signature) and a missing or invalid bucket. Other errors of a put (a timeout,
// a reset connection, a 5xx reply) leave the outcome open.
var ErrNotStored = errors.New("nothing stored")

// ErrInvalidArgument is wrapped by Open and the constructors for a bad URI or
// option: an empty URI, an unknown scheme, a bucket-less s3:// URI, an
// unusable endpoint.
var ErrInvalidArgument = errors.New("invalid argument")

// KeyError records the operation, the store and the key that failed. Match
// its cause with errors.Is (ErrNotExist, ErrAlreadyExists, ...) or errors.As.
type KeyError struct {
	Op    string // "get", "put", "put-if-absent", "list", "stat", "delete"
	Store string // the store's URI, e.g. "s3://bucket/prefix"
	Key   string
	Err   error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("objectstore: %s %s key %q: %v", e.Op, e.Store, e.Key, e.Err)
}

func (e *KeyError) Unwrap() error { return e.Err }

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string    // key relative to the store root
	Size    int64     // bytes
	ModTime time.Time // last modification time as reported by the backend
}

// Range selects bytes [Offset, Offset+Length) of an object. Length < 0 means
// "to the end of the object". The zero Range (Offset 0, Length 0) is not
// special: use FullObject to read everything.
type Range struct {
	Offset int64 // bytes from the start
	Length int64 // bytes; negative for "until the end"
}

// FullObject is the Range that reads an object from its first to its last byte.
var FullObject = Range{Offset: 0, Length: -1}

// Store is the small interface every backend implements. All methods are safe
// for concurrent use. Every error names the key and wraps one of this
// package's sentinels where one applies.
type Store interface {
	// Get returns the bytes of key in range r. A range beyond the end of the
	// object is cut at the end. Returns ErrNotExist when key is absent.
	Get(ctx context.Context, key string, r Range) ([]byte, error)

	// Put stores data under key, replacing any existing object. Readers see
	// either the old or the new content, never a partial object.
	Put(ctx context.Context, key string, data []byte) error

	// PutIfAbsent stores data under key only if key does not exist yet, as one
	// atomic step. Returns ErrAlreadyExists when another object holds the key.
	// Readers never see a partial object.
	PutIfAbsent(ctx context.Context, key string, data []byte) error

	// List yields the objects whose keys start with prefix and sort strictly
	// after startAfter (byte-wise lexicographic order), in that order. An
	// empty startAfter lists from the beginning. Iteration stops at the first
	// error, which is yielded with a zero ObjectInfo.
	List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error]

	// Stat returns the object's size and modification time, or ErrNotExist.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// Delete removes key. Deleting an absent key is not an error.
	Delete(ctx context.Context, key string) error

	// URI names the store root, e.g. "file:///data/t1" or "s3://bucket/t1".
	URI() string
}
