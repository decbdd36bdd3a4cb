package objectstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// TestOpenURIs checks which URIs Open accepts and which it refuses with
// ErrInvalidArgument, naming what is wrong.
func TestOpenURIs(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs := filepath.ToSlash(filepath.Join(dir, "abs"))
	tests := []struct {
		uri     string
		wantURI string // accepted: the store's URI
		wantErr string // refused: a substring of the error
	}{
		{uri: "t1", wantURI: "file://" + filepath.ToSlash(filepath.Join(dir, "t1"))},
		{uri: "./a:b", wantURI: "file://" + filepath.ToSlash(filepath.Join(dir, "a:b"))},
		{uri: abs, wantURI: "file://" + abs},
		{uri: "file://" + abs, wantURI: "file://" + abs},
		{uri: "file:" + abs, wantURI: "file://" + abs},
		{uri: "file://localhost" + abs, wantURI: "file://" + abs},
		{uri: "FILE://" + abs, wantURI: "file://" + abs},
		{uri: "mem://x", wantURI: "mem://x"},

		{uri: "", wantErr: "empty URI"},
		{uri: "   ", wantErr: "empty URI"},
		{uri: "gs://bucket/t", wantErr: `unsupported scheme "gs"`},
		{uri: "abfss://c@acct.dfs.core.windows.net/t", wantErr: `unsupported scheme "abfss"`},
		{uri: "htp:/x", wantErr: `unsupported scheme "htp"`},
		{uri: "http://example.com/t", wantErr: `unsupported scheme "http"`},
		{uri: "file://otherhost/t", wantErr: `host "otherhost"`},
		{uri: "file:relative", wantErr: "absolute path"},
		{uri: "mem://", wantErr: "needs a name"},
		{uri: "mem:x", wantErr: "needs a name"},
		{uri: "s3://", wantErr: "needs a bucket"},
		{uri: "s3:bucket/t", wantErr: "needs a bucket"},
		{uri: "s3a:///t", wantErr: "needs a bucket"},
	}
	for _, tc := range tests {
		t.Run(tc.uri, func(t *testing.T) {
			s, err := objectstore.Open(context.Background(), tc.uri)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Open(%q): %v", tc.uri, err)
				}
				if s.URI() != tc.wantURI {
					t.Fatalf("Open(%q).URI() = %q, want %q", tc.uri, s.URI(), tc.wantURI)
				}
				return
			}
			if !errors.Is(err, objectstore.ErrInvalidArgument) {
				t.Fatalf("Open(%q) = %v, %v; want ErrInvalidArgument", tc.uri, s, err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Open(%q): %q, want it to say %q", tc.uri, err, tc.wantErr)
			}
			if strings.Contains(tc.wantErr, "scheme") && !strings.Contains(err.Error(), "s3://") {
				t.Fatalf("Open(%q): %q does not name the supported schemes", tc.uri, err)
			}
		})
	}
}
