package table

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenErrorsNameOperationAndURI checks that Open's errors from the
// store layer (before any log is read) name the operation and the URI, as
// its log errors do, and stay matchable.
func TestOpenErrorsNameOperationAndURI(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, uri, want string }{
		{"path is a file", file, "table: open " + file + ": objectstore: local root \"" + file + "\" is a file, not a directory"},
		{"unknown scheme", "ftp://host/t", "table: open ftp://host/t: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(context.Background(), tc.uri)
			if !errors.Is(err, ErrInvalidArgument) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Open(%s) = %v; want ErrInvalidArgument starting %q", tc.uri, err, tc.want)
			}
		})
	}
}
