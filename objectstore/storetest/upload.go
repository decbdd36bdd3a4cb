package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
)

// pendingLister is the S3 store's view of its open multipart uploads.
type pendingLister interface {
	PendingUploads(ctx context.Context, prefix string) ([]string, error)
}

// checkNoPending fails t when s (or a store it wraps) has a multipart
// upload open under key.
func checkNoPending(t *testing.T, s objectstore.Store, key string) {
	t.Helper()
	for s != nil {
		if p, ok := s.(pendingLister); ok {
			keys, err := p.PendingUploads(t.Context(), key)
			if err != nil {
				t.Fatalf("PendingUploads(%q): %v", key, err)
			}
			if len(keys) != 0 {
				t.Errorf("multipart uploads left open: %q", keys)
			}
			return
		}
		w, ok := s.(interface{ Inner() objectstore.Store })
		if !ok {
			return
		}
		s = w.Inner()
	}
}

// pattern returns n bytes that differ from part to part and from any
// shifted copy of themselves, so a lost, doubled or reordered chunk shows.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// writeChunks writes data to u in chunks of the given sizes, cycling.
func writeChunks(t *testing.T, u objectstore.Upload, data []byte, sizes ...int) {
	t.Helper()
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		m, err := u.Write(data[:n])
		if err != nil || m != n {
			t.Fatalf("Write of %d bytes = %d, %v", n, m, err)
		}
		data = data[n:]
	}
}

func startUpload(t *testing.T, ctx context.Context, s objectstore.Store, key string) objectstore.Upload {
	t.Helper()
	u, err := objectstore.StartUpload(ctx, s, key)
	if err != nil {
		t.Fatalf("StartUpload(%q): %v", key, err)
	}
	return u
}

func checkAbsent(t *testing.T, s objectstore.Store, key string) {
	t.Helper()
	if _, err := s.Stat(t.Context(), key); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("Stat(%q) = %v, want ErrNotExist", key, err)
	}
	if got := listKeys(t, s, "", ""); len(got) != 0 {
		t.Errorf("List = %q, want nothing", got)
	}
}

// testUploadRoundTrip streams small objects, one replacing a Put, one
// empty, one through PutStream; none is visible before its Commit.
func testUploadRoundTrip(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	data := pattern(100_003, 1)
	const key = "date=2024-01-01/part-00000-c000.snappy.parquet"
	u := startUpload(t, ctx, s, key)
	writeChunks(t, u, data, 1, 4096, 65_536, 7)
	checkAbsent(t, s, key)
	if err := u.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := mustGet(t, s, key); !bytes.Equal(got, data) {
		t.Errorf("Get after Commit = %d bytes, want %d (equal=%v)", len(got), len(data), bytes.Equal(got, data))
	}
	if info, err := s.Stat(ctx, key); err != nil || info.Size != int64(len(data)) {
		t.Errorf("Stat after Commit = %+v, %v; want size %d", info, err, len(data))
	}

	// An upload replaces an existing object, as Put does, and only on Commit.
	mustPut(t, s, "replaced", []byte("old content"))
	u = startUpload(t, ctx, s, "replaced")
	writeChunks(t, u, []byte("new"), 2)
	if got := mustGet(t, s, "replaced"); string(got) != "old content" {
		t.Errorf("Get before Commit = %q, want the old content", got)
	}
	if err := u.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := mustGet(t, s, "replaced"); string(got) != "new" {
		t.Errorf("Get after Commit = %q, want %q", got, "new")
	}

	u = startUpload(t, ctx, s, "empty")
	if err := u.Commit(ctx); err != nil {
		t.Fatalf("Commit of an empty upload: %v", err)
	}
	if got := mustGet(t, s, "empty"); len(got) != 0 {
		t.Errorf("Get(empty) = %d bytes, want 0", len(got))
	}

	n, err := objectstore.PutStream(ctx, s, "streamed", bytes.NewReader(data[:5000]))
	if err != nil || n != 5000 {
		t.Fatalf("PutStream = %d, %v; want 5000, nil", n, err)
	}
	if got := mustGet(t, s, "streamed"); !bytes.Equal(got, data[:5000]) {
		t.Errorf("Get(streamed) = %d bytes, want the 5000 streamed", len(got))
	}
	// A reader that fails stores nothing.
	failing := io.MultiReader(bytes.NewReader(data), iotestErrReader{})
	if _, err := objectstore.PutStream(ctx, s, "failed", failing); !errors.Is(err, errReader) {
		t.Errorf("PutStream of a failing reader = %v, want its error", err)
	}
	if _, err := s.Stat(ctx, "failed"); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("Stat(failed) = %v, want ErrNotExist", err)
	}
	for _, k := range []string{key, "replaced", "empty", "streamed", "failed"} {
		checkNoPending(t, s, k)
	}
}

var errReader = errors.New("storetest: reader failed")

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errReader }

// largeSize spans three parts of S3's default 8 MiB and five of its
// smallest, 5 MiB.
const largeSize = 21<<20 + 7

// testUploadLarge streams an object of several S3 parts in uneven writes
// and reads it back whole and across part boundaries.
func testUploadLarge(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	data := pattern(largeSize, 2)
	const key = "large/part-00001.parquet"
	u := startUpload(t, ctx, s, key)
	writeChunks(t, u, data, 1<<20+13, 256<<10, 3<<20-1, 17)
	if _, err := s.Stat(ctx, key); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("Stat before Commit = %v, want ErrNotExist", err)
	}
	if err := u.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	got := mustGet(t, s, key)
	if !bytes.Equal(got, data) {
		first := 0
		for first < min(len(got), len(data)) && got[first] == data[first] {
			first++
		}
		t.Fatalf("Get = %d bytes, want %d; first difference at %d", len(got), len(data), first)
	}
	for _, off := range []int64{5<<20 - 3, 8<<20 - 3, 16<<20 - 3, largeSize - 6} {
		part, err := s.Get(ctx, key, objectstore.Range{Offset: off, Length: 6})
		if err != nil || !bytes.Equal(part, data[off:min(off+6, largeSize)]) {
			t.Errorf("Get(%d, 6) = %x, %v; want %x", off, part, err, data[off:min(off+6, largeSize)])
		}
	}
	checkNoPending(t, s, key)
}

// testUploadAbort aborts uploads midway, small and of several parts: no
// object appears, an existing one stays, nothing is left open, and the
// aborted upload refuses further use.
func testUploadAbort(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	for _, size := range []int{1000, largeSize} {
		const key = "aborted/part-00002.parquet"
		u := startUpload(t, ctx, s, key)
		writeChunks(t, u, pattern(size, 3), 1<<20)
		if err := u.Abort(ctx); err != nil {
			t.Fatalf("Abort after %d bytes: %v", size, err)
		}
		checkAbsent(t, s, key)
		checkNoPending(t, s, key)
		if err := u.Abort(ctx); err != nil {
			t.Errorf("second Abort: %v", err)
		}
		if _, err := u.Write([]byte("x")); !errors.Is(err, objectstore.ErrUploadClosed) {
			t.Errorf("Write after Abort = %v, want ErrUploadClosed", err)
		}
		err := u.Commit(ctx)
		if !errors.Is(err, objectstore.ErrUploadClosed) {
			t.Errorf("Commit after Abort = %v, want ErrUploadClosed", err)
		}
		checkKeyError(t, err, "upload", key)
		checkAbsent(t, s, key)
	}

	mustPut(t, s, "kept", []byte("old"))
	u := startUpload(t, ctx, s, "kept")
	writeChunks(t, u, pattern(largeSize, 4), 4<<20)
	if err := u.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, "kept"); string(got) != "old" {
		t.Errorf("aborted upload changed the existing object to %d bytes", len(got))
	}
	checkNoPending(t, s, "kept")
}

// testUploadCanceled cancels an upload's context midway: the upload fails
// with context.Canceled, stores nothing and leaves nothing open.
func testUploadCanceled(t *testing.T, s objectstore.Store) {
	for _, size := range []int{1000, largeSize} {
		const key = "canceled/part-00003.parquet"
		ctx, cancel := context.WithCancel(t.Context())
		u := startUpload(t, ctx, s, key)
		writeChunks(t, u, pattern(size, 5), 1<<20)
		cancel()
		var err error
		for range 64 { // a write may be taken into a buffer before it notices
			if _, err = u.Write(pattern(1<<20, 6)); err != nil {
				break
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Write after cancel (%d bytes before) = %v, want context.Canceled", size, err)
		}
		if err := u.Commit(t.Context()); err == nil {
			t.Errorf("Commit after cancel (%d bytes before) succeeded", size)
		}
		checkAbsent(t, s, key)
		checkNoPending(t, s, key)
		if err := u.Abort(t.Context()); err != nil {
			t.Errorf("Abort after a failed upload: %v", err)
		}
	}

	// A context cancelled before Commit fails Commit even with no Write
	// after it.
	ctx, cancel := context.WithCancel(t.Context())
	u := startUpload(t, ctx, s, "canceled-before-commit")
	writeChunks(t, u, []byte("some bytes"), 4)
	cancel()
	if err := u.Commit(t.Context()); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit after cancel = %v, want context.Canceled", err)
	}
	checkAbsent(t, s, "canceled-before-commit")

	// A cancelled context refuses to start.
	if _, err := objectstore.StartUpload(ctx, s, "never"); !errors.Is(err, context.Canceled) {
		t.Errorf("StartUpload with a cancelled context = %v, want context.Canceled", err)
	}
	checkAbsent(t, s, "never")
}

// testUploadCommitTwice: a second Commit is ErrUploadClosed and leaves the
// object; Abort after Commit does nothing.
func testUploadCommitTwice(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	for _, size := range []int{10, largeSize} {
		const key = "twice"
		data := pattern(size, 7)
		u := startUpload(t, ctx, s, key)
		writeChunks(t, u, data, 5<<20+1)
		if err := u.Commit(ctx); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		err := u.Commit(ctx)
		if !errors.Is(err, objectstore.ErrUploadClosed) {
			t.Errorf("second Commit = %v, want ErrUploadClosed", err)
		}
		checkKeyError(t, err, "upload", key)
		if _, err := u.Write([]byte("more")); !errors.Is(err, objectstore.ErrUploadClosed) {
			t.Errorf("Write after Commit = %v, want ErrUploadClosed", err)
		}
		if err := u.Abort(ctx); err != nil {
			t.Errorf("Abort after Commit: %v", err)
		}
		if got := mustGet(t, s, key); !bytes.Equal(got, data) {
			t.Errorf("object after second Commit and Abort = %d bytes, want the committed %d", len(got), len(data))
		}
		checkNoPending(t, s, key)
	}
}

func testUploadInvalidKey(t *testing.T, s objectstore.Store) {
	for _, key := range []string{"", "/abs", "a//b", "a/../b"} {
		_, err := objectstore.StartUpload(t.Context(), s, key)
		if !errors.Is(err, objectstore.ErrInvalidKey) {
			t.Errorf("StartUpload(%q) = %v, want ErrInvalidKey", key, err)
			continue
		}
		checkKeyError(t, err, "upload", key)
	}
	if got := listKeys(t, s, "", ""); len(got) != 0 {
		t.Errorf("invalid keys created objects: %q", got)
	}
}
