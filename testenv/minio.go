package testenv

import (
	"errors"
	"fmt"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// StartMinIO starts a MinIO server on 127.0.0.1 with a fresh data directory
// and an empty bucket, as StartServer does, and stops it when t ends.
//
// When there is no server binary, or it does not start, StartMinIO skips t
// with a hint to run scripts/install-minio.sh; with CI=true it fails t
// instead, so a missing install step cannot hide as a skipped test.
func StartMinIO(t testing.TB) *MinIO {
	t.Helper()
	m, err := StartServer(t.Context(), t.TempDir()) // TempDir is removed after Close: cleanups run last-in first-out
	if err != nil {
		if se := unavailableError(err); se != nil {
			minioKind.skipUnavailable(t, se.msg, se.output)
		}
		var se *startError
		if errors.As(err, &se) {
			t.Fatalf("testenv: %s\n%s", se.msg, se.output)
		}
		t.Fatal(err)
	}
	minioKind.closeAtEnd(t, m)
	return m
}

// NewStore returns an S3 store on this server under a prefix no other
// NewStore call of m returns, so every store starts empty. opts are applied
// after S3Options. It fails t when the store cannot be made.
func (m *MinIO) NewStore(t testing.TB, opts ...objectstore.S3Option) *objectstore.S3 {
	t.Helper()
	prefix := fmt.Sprintf("store-%d", m.stores.Add(1))
	s, err := m.StoreAt(t.Context(), prefix, opts...)
	if err != nil {
		t.Fatalf("testenv: NewS3 on MinIO: %v", err)
	}
	return s
}
