package objectstore

import (
	"context"
	"io"
)

// RangeReader is the capability of a Store to read a range of an object
// into a buffer the caller owns, so that a reader of many ranges (a
// checkpoint read row group by row group) can use one buffer for all of
// them instead of a fresh one per Get (S3, Local, Mem and faultstore.Store
// have it). Use ReadAt, which falls back to Get for a Store without it.
type RangeReader interface {
	// ReadAt reads len(p) bytes of key from offset off into p, like
	// io.ReaderAt: it returns the number of bytes read, and when that is
	// less than len(p) (the object ends first) an error, io.EOF if nothing
	// else went wrong. A read at or past the end returns 0, io.EOF. An
	// empty p reads nothing and returns 0, nil (or ErrNotExist for an
	// absent key). Returns ErrNotExist (in a *KeyError) for an absent key
	// and ErrInvalidRange for a negative off.
	ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error)
}

// ReadAt reads len(p) bytes of key in s from offset off into p, with the
// semantics of RangeReader.ReadAt: s's own ReadAt when s is a RangeReader,
// else a ranged Get copied into p.
func ReadAt(ctx context.Context, s Store, key string, p []byte, off int64) (int, error) {
	if rr, ok := s.(RangeReader); ok {
		return rr.ReadAt(ctx, key, p, off)
	}
	if off < 0 {
		return 0, &KeyError{Op: "get", Store: s.URI(), Key: key, Err: ErrInvalidRange}
	}
	b, err := s.Get(ctx, key, Range{Offset: off, Length: int64(len(p))})
	if err != nil {
		return 0, err
	}
	return fillResult(copy(p, b), len(p))
}

// fillResult is the io.ReaderAt result of reading n of want bytes.
func fillResult(n, want int) (int, error) {
	if n < want {
		return n, io.EOF
	}
	return n, nil
}
