package storetest

import (
	"errors"
	"io"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// testReadAt checks objectstore.ReadAt (a store's own RangeReader when it
// has one) against the bytes put: io.ReaderAt results, the caller's buffer
// filled and nothing written past what was read.
func testReadAt(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	mustPut(t, s, "digits", []byte("0123456789"))
	mustPut(t, s, "empty", []byte{})
	tests := []struct {
		key     string
		off     int64
		bufLen  int
		want    string
		wantEOF bool
	}{
		{"digits", 0, 10, "0123456789", false},
		{"digits", 0, 1, "0", false},
		{"digits", 3, 4, "3456", false},
		{"digits", 9, 1, "9", false},
		{"digits", 8, 10, "89", true},
		{"digits", 0, 1000, "0123456789", true},
		{"digits", 10, 1, "", true},
		{"digits", 100, 3, "", true},
		{"digits", 5, 0, "", false},
		{"empty", 0, 5, "", true},
		{"empty", 0, 0, "", false},
	}
	for _, tc := range tests {
		buf := make([]byte, tc.bufLen)
		for i := range buf {
			buf[i] = '#'
		}
		n, err := objectstore.ReadAt(ctx, s, tc.key, buf, tc.off)
		if tc.wantEOF && !errors.Is(err, io.EOF) || !tc.wantEOF && err != nil {
			t.Errorf("ReadAt(%q, %d bytes at %d) error = %v, want EOF %v", tc.key, tc.bufLen, tc.off, err, tc.wantEOF)
		}
		if n != len(tc.want) || string(buf[:n]) != tc.want {
			t.Errorf("ReadAt(%q, %d bytes at %d) = %d, %q; want %q", tc.key, tc.bufLen, tc.off, n, buf[:n], tc.want)
		}
		for i := n; i < len(buf); i++ {
			if buf[i] != '#' {
				t.Errorf("ReadAt(%q, %d bytes at %d) wrote byte %d beyond the %d read", tc.key, tc.bufLen, tc.off, i, n)
				break
			}
		}
	}

	// One buffer reused: the second read replaces the first's bytes.
	buf := make([]byte, 4)
	for _, tc := range []struct {
		off  int64
		want string
	}{{0, "0123"}, {6, "6789"}, {2, "2345"}} {
		if n, err := objectstore.ReadAt(ctx, s, "digits", buf, tc.off); err != nil || string(buf[:n]) != tc.want {
			t.Errorf("reused buffer ReadAt(digits, 4 at %d) = %q, %v; want %q", tc.off, buf[:n], err, tc.want)
		}
	}

	_, err := objectstore.ReadAt(ctx, s, "digits", make([]byte, 2), -1)
	if !errors.Is(err, objectstore.ErrInvalidRange) {
		t.Errorf("ReadAt(digits, at -1) = %v, want ErrInvalidRange", err)
	}
	checkKeyError(t, err, "get", "digits")
	for _, bufLen := range []int{0, 3} {
		_, err := objectstore.ReadAt(ctx, s, "missing", make([]byte, bufLen), 0)
		if !errors.Is(err, objectstore.ErrNotExist) {
			t.Errorf("ReadAt(missing, %d bytes) = %v, want ErrNotExist", bufLen, err)
		}
		checkKeyError(t, err, "get", "missing")
	}
	_, err = objectstore.ReadAt(ctx, s, "/bad", make([]byte, 2), 0)
	if !errors.Is(err, objectstore.ErrInvalidKey) {
		t.Errorf("ReadAt(/bad) = %v, want ErrInvalidKey", err)
	}
}
