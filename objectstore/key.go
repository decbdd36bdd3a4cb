package objectstore

import (
	"context"
	"strings"
)

// checkKey rejects keys that cannot name an object under a store root: empty
// keys, keys with a leading slash, and keys with empty, "." or ".." segments.
func checkKey(key string) error {
	if key == "" || strings.HasPrefix(key, "/") {
		return ErrInvalidKey
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return ErrInvalidKey
		}
	}
	return nil
}

// cutRange returns the bytes of data selected by r, cut at the end of data.
func cutRange(data []byte, r Range) ([]byte, error) {
	if r.Offset < 0 {
		return nil, ErrInvalidRange
	}
	size := int64(len(data))
	if r.Offset >= size {
		return []byte{}, nil
	}
	end := size
	if r.Length >= 0 && r.Offset+r.Length < size {
		end = r.Offset + r.Length
	}
	out := make([]byte, end-r.Offset)
	copy(out, data[r.Offset:end])
	return out, nil
}

// checkCall is the check every call on one key makes before any I/O: the
// key is valid (ErrInvalidKey otherwise) and ctx is not done (its error
// otherwise).
func checkCall(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return ctx.Err()
}
