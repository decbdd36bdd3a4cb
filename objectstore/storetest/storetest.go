// Package storetest is the conformance suite every objectstore.Store backend
// must pass. A backend's tests call Run with a function that returns a fresh,
// empty store for each subtest:
//
//	func TestMemConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) objectstore.Store {
//			return objectstore.NewMem(t.Name())
//		})
//	}
//
// Packages above objectstore may use Run to check a wrapper store (for
// example a fault-injecting one) still behaves like a Store.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// Run runs the conformance suite. The upload tests use
// objectstore.StartUpload, so they check a store's own Uploader when it has
// one and the buffered fallback otherwise. On a store with a
// PendingUploads(ctx, prefix) ([]string, error) method (S3), directly or
// under Inner() wrappers, they also check that no multipart upload is left
// open. newStore must return an empty store that
// no other subtest uses; Run calls it once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) objectstore.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s objectstore.Store)
	}{
		{"PutGet", testPutGet},
		{"PutReplaces", testPutReplaces},
		{"PutIfAbsent", testPutIfAbsent},
		{"PutIfAbsentRace", testPutIfAbsentRace},
		{"NoPartialReads", testNoPartialReads},
		{"List", testList},
		{"ListMany", testListMany},
		{"Range", testRange},
		{"ReadAt", testReadAt},
		{"Missing", testMissing},
		{"Delete", testDelete},
		{"SpecialKeys", testSpecialKeys},
		{"InvalidKeys", testInvalidKeys},
		{"CanceledContext", testCanceledContext},
		{"UploadRoundTrip", testUploadRoundTrip},
		{"UploadLarge", testUploadLarge},
		{"UploadAbort", testUploadAbort},
		{"UploadCanceled", testUploadCanceled},
		{"UploadCommitTwice", testUploadCommitTwice},
		{"UploadInvalidKey", testUploadInvalidKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if s.URI() == "" {
				t.Fatal("URI() is empty")
			}
			tc.fn(t, s)
		})
	}
}

func testPutGet(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	tests := []struct {
		key  string
		data []byte
	}{
		{"empty", []byte{}},
		{"small.txt", []byte("hello, delta")},
		{"_delta_log/00000000000000000000.json", []byte(`{"commitInfo":{}}` + "\n")},
		{"bin/all-bytes", allBytes},
		{"deep/a/b/c/d/e/f.parquet", bytes.Repeat([]byte("0123456789abcdef"), 4096)},
	}
	before := time.Now()
	for _, tc := range tests {
		if err := s.Put(ctx, tc.key, tc.data); err != nil {
			t.Fatalf("Put(%q): %v", tc.key, err)
		}
	}
	for _, tc := range tests {
		got := mustGet(t, s, tc.key)
		if !bytes.Equal(got, tc.data) {
			t.Errorf("Get(%q) = %d bytes %.32q, want %d bytes %.32q", tc.key, len(got), got, len(tc.data), tc.data)
		}
		info, err := s.Stat(ctx, tc.key)
		if err != nil {
			t.Fatalf("Stat(%q): %v", tc.key, err)
		}
		if info.Key != tc.key || info.Size != int64(len(tc.data)) {
			t.Errorf("Stat(%q) = key %q size %d, want key %q size %d", tc.key, info.Key, info.Size, tc.key, len(tc.data))
		}
		// Servers may store whole seconds and run on another clock.
		if d := info.ModTime.Sub(before); d < -5*time.Minute || d > 5*time.Minute {
			t.Errorf("Stat(%q).ModTime = %v, want close to %v", tc.key, info.ModTime, before)
		}
	}
}

func testPutReplaces(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	const key = "_last_checkpoint"
	mustPut(t, s, key, []byte("a longer first version"))
	mustPut(t, s, key, []byte("second"))
	if got := mustGet(t, s, key); string(got) != "second" {
		t.Errorf("Get after second Put = %q, want %q", got, "second")
	}
	info, err := s.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len("second")) {
		t.Errorf("Stat size after replace = %d, want %d", info.Size, len("second"))
	}
}

func testPutIfAbsent(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	const key = "_delta_log/00000000000000000001.json"
	if err := s.PutIfAbsent(ctx, key, []byte("first")); err != nil {
		t.Fatalf("PutIfAbsent on absent key: %v", err)
	}
	err := s.PutIfAbsent(ctx, key, []byte("second"))
	if !errors.Is(err, objectstore.ErrAlreadyExists) {
		t.Fatalf("PutIfAbsent on existing key = %v, want ErrAlreadyExists", err)
	}
	checkKeyError(t, err, "put-if-absent", key)
	if got := mustGet(t, s, key); string(got) != "first" {
		t.Errorf("content after losing PutIfAbsent = %q, want %q", got, "first")
	}

	// A key created by Put is just as taken.
	mustPut(t, s, "by-put", []byte("x"))
	if err := s.PutIfAbsent(ctx, "by-put", []byte("y")); !errors.Is(err, objectstore.ErrAlreadyExists) {
		t.Errorf("PutIfAbsent on key written by Put = %v, want ErrAlreadyExists", err)
	}
	// After Delete the key is free again.
	if err := s.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, key, []byte("third")); err != nil {
		t.Fatalf("PutIfAbsent after Delete: %v", err)
	}
	if got := mustGet(t, s, key); string(got) != "third" {
		t.Errorf("content after re-create = %q, want %q", got, "third")
	}
}

// testPutIfAbsentRace lets 32 writers race for each of 20 keys: exactly one
// must win each key, every other must get ErrAlreadyExists, and the key must
// hold the winner's bytes.
func testPutIfAbsentRace(t *testing.T, s objectstore.Store) {
	const keys, writers = 20, 32
	ctx := t.Context()
	for k := range keys {
		key := fmt.Sprintf("_delta_log/%020d.json", k)
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			errs   = make([]error, writers)
			bodies = make([][]byte, writers)
		)
		for w := range writers {
			bodies[w] = fmt.Appendf(nil, `{"commitInfo":{"writer":%d,"key":%d}}`+"\n", w, k)
			wg.Go(func() {
				<-start
				errs[w] = s.PutIfAbsent(ctx, key, bodies[w])
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for w, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("%s: writers %d and %d both won", key, winner, w)
			case err == nil:
				winner = w
			case !errors.Is(err, objectstore.ErrAlreadyExists):
				t.Errorf("%s: writer %d: %v, want nil or ErrAlreadyExists", key, w, err)
			default:
				checkKeyError(t, err, "put-if-absent", key)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: no writer won", key)
		}
		if got := mustGet(t, s, key); !bytes.Equal(got, bodies[winner]) {
			t.Errorf("%s holds %q, want the winner's %q", key, got, bodies[winner])
		}
	}
}

// testNoPartialReads reads a key in a loop while writers create and replace
// it with 1 MiB blobs. Every read must be ErrNotExist or one whole blob.
func testNoPartialReads(t *testing.T, s objectstore.Store) {
	const size = 1 << 20
	const blobs = 8
	ctx := t.Context()
	key := "part-00000.snappy.parquet"
	blob := make([][]byte, blobs)
	for i := range blob {
		blob[i] = bytes.Repeat([]byte{byte('A' + i)}, size)
	}

	var done atomic.Bool
	var reads, whole atomic.Int64
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for !done.Load() {
				got, err := s.Get(ctx, key, objectstore.FullObject)
				reads.Add(1)
				if errors.Is(err, objectstore.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Errorf("Get during writes: %v", err)
					return
				}
				if len(got) != size || got[0] < 'A' || got[0] >= 'A'+blobs || !bytes.Equal(got, blob[got[0]-'A']) {
					t.Errorf("Get during writes saw a partial object: %d bytes, first byte %q", len(got), got[:min(len(got), 1)])
					return
				}
				whole.Add(1)
			}
		})
	}

	// Let readers observe the absent key before the first write.
	for reads.Load() < 4 && !t.Failed() {
		time.Sleep(time.Millisecond)
	}
	var writers sync.WaitGroup
	var created atomic.Int32
	for i := range blobs {
		writers.Go(func() {
			if i%2 == 0 {
				err := s.PutIfAbsent(ctx, key, blob[i])
				if err == nil {
					created.Add(1)
				} else if !errors.Is(err, objectstore.ErrAlreadyExists) {
					t.Errorf("PutIfAbsent blob %d: %v", i, err)
				}
				return
			}
			for range 3 {
				if err := s.Put(ctx, key, blob[i]); err != nil {
					t.Errorf("Put blob %d: %v", i, err)
				}
			}
		})
	}
	writers.Wait()
	// Keep reading the final state for a moment.
	for n := whole.Load(); whole.Load() < n+4 && !t.Failed(); {
		time.Sleep(time.Millisecond)
	}
	done.Store(true)
	readers.Wait()
	if created.Load() > 1 {
		t.Errorf("%d PutIfAbsent calls created the key, want at most 1", created.Load())
	}
	if whole.Load() == 0 {
		t.Error("no read saw a whole blob")
	}
	t.Logf("%d reads, %d saw a whole blob", reads.Load(), whole.Load())
}

func testList(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	keys := []string{
		"_delta_log/00000000000000000000.json",
		"_delta_log/00000000000000000001.json",
		"_delta_log/00000000000000000002.json",
		"_delta_log/00000000000000000002.checkpoint.parquet",
		"_delta_log/00000000000000000010.json",
		"_delta_log/_last_checkpoint",
		"a-b",
		"a.b",
		"a/b",
		"a/c/d",
		"a0",
		"b",
		"date=2024-01-01/part-0.parquet",
	}
	// Write in reverse so that no backend can pass by keeping write order.
	for i, k := range slices.Backward(keys) {
		mustPut(t, s, k, bytes.Repeat([]byte("x"), i+1))
	}
	tests := []struct {
		prefix, startAfter string
		want               []string
	}{
		{"", "", []string{
			"_delta_log/00000000000000000000.json",
			"_delta_log/00000000000000000001.json",
			"_delta_log/00000000000000000002.checkpoint.parquet",
			"_delta_log/00000000000000000002.json",
			"_delta_log/00000000000000000010.json",
			"_delta_log/_last_checkpoint",
			"a-b", "a.b", "a/b", "a/c/d", "a0", "b",
			"date=2024-01-01/part-0.parquet",
		}},
		{"_delta_log/", "", []string{
			"_delta_log/00000000000000000000.json",
			"_delta_log/00000000000000000001.json",
			"_delta_log/00000000000000000002.checkpoint.parquet",
			"_delta_log/00000000000000000002.json",
			"_delta_log/00000000000000000010.json",
			"_delta_log/_last_checkpoint",
		}},
		{"_delta_log/", "_delta_log/00000000000000000001.json", []string{
			"_delta_log/00000000000000000002.checkpoint.parquet",
			"_delta_log/00000000000000000002.json",
			"_delta_log/00000000000000000010.json",
			"_delta_log/_last_checkpoint",
		}},
		// startAfter need not name an existing key.
		{"_delta_log/", "_delta_log/00000000000000000002", []string{
			"_delta_log/00000000000000000002.checkpoint.parquet",
			"_delta_log/00000000000000000002.json",
			"_delta_log/00000000000000000010.json",
			"_delta_log/_last_checkpoint",
		}},
		// startAfter before the prefix changes nothing.
		{"_delta_log/0000000000000000000", "0", []string{
			"_delta_log/00000000000000000000.json",
			"_delta_log/00000000000000000001.json",
			"_delta_log/00000000000000000002.checkpoint.parquet",
			"_delta_log/00000000000000000002.json",
		}},
		// startAfter past every key with the prefix.
		{"_delta_log/", "_delta_log/~", nil},
		{"_delta_log/", "b", nil},
		// A prefix is a string prefix, not a directory.
		{"a", "", []string{"a-b", "a.b", "a/b", "a/c/d", "a0"}},
		{"a/", "", []string{"a/b", "a/c/d"}},
		{"a", "a.b", []string{"a/b", "a/c/d", "a0"}},
		{"a/b", "", []string{"a/b"}},
		{"a/b", "a/b", nil},
		{"nothing/", "", nil},
		{"", "a0", []string{"b", "date=2024-01-01/part-0.parquet"}},
	}
	sizes := map[string]int64{}
	for i, k := range slices.Backward(keys) {
		sizes[k] = int64(i + 1)
	}
	for _, tc := range tests {
		var got []string
		for info, err := range s.List(ctx, tc.prefix, tc.startAfter) {
			if err != nil {
				t.Fatalf("List(%q, %q): %v", tc.prefix, tc.startAfter, err)
			}
			got = append(got, info.Key)
			if info.Size != sizes[info.Key] {
				t.Errorf("List(%q, %q): %q has size %d, want %d", tc.prefix, tc.startAfter, info.Key, info.Size, sizes[info.Key])
			}
			if info.ModTime.IsZero() {
				t.Errorf("List(%q, %q): %q has zero ModTime", tc.prefix, tc.startAfter, info.Key)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("List(%q, %q) =\n\t%q\nwant\n\t%q", tc.prefix, tc.startAfter, got, tc.want)
		}
	}

	// Stopping early must not panic or yield again.
	n := 0
	for _, err := range s.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("early break: got %d items, want 2", n)
	}
}

// testListMany lists more keys than one S3 page (1000) holds.
func testListMany(t *testing.T, s objectstore.Store) {
	const n = 1100
	ctx := t.Context()
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("_delta_log/%020d.json", i)
	}
	var wg sync.WaitGroup
	work := make(chan string)
	for range 16 {
		wg.Go(func() {
			for k := range work {
				if err := s.Put(ctx, k, []byte(k)); err != nil {
					t.Errorf("Put(%q): %v", k, err)
				}
			}
		})
	}
	for _, k := range want {
		work <- k
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	mustPut(t, s, "_delta_log.txt", []byte("outside the prefix"))

	got := listKeys(t, s, "_delta_log/", "")
	if !slices.Equal(got, want) {
		t.Errorf("List of %d keys returned %d keys, sorted=%v", n, len(got), slices.IsSorted(got))
	}
	got = listKeys(t, s, "_delta_log/", want[499])
	if !slices.Equal(got, want[500:]) {
		t.Errorf("List after %q returned %d keys, want %d", want[499], len(got), n-500)
	}
}

func testRange(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	mustPut(t, s, "digits", []byte("0123456789"))
	mustPut(t, s, "empty", []byte{})
	tests := []struct {
		key    string
		offset int64
		length int64
		want   string
	}{
		{"digits", 0, -1, "0123456789"},
		{"digits", 0, 0, ""},
		{"digits", 0, 1, "0"},
		{"digits", 3, 4, "3456"},
		{"digits", 3, -1, "3456789"},
		{"digits", 9, 1, "9"},
		{"digits", 9, -1, "9"},
		{"digits", 8, 10, "89"},
		{"digits", 0, 10, "0123456789"},
		{"digits", 0, 1000, "0123456789"},
		{"digits", 10, -1, ""},
		{"digits", 10, 5, ""},
		{"digits", 100, 1, ""},
		{"digits", 5, 0, ""},
		{"empty", 0, -1, ""},
		{"empty", 0, 5, ""},
		{"empty", 3, -1, ""},
	}
	for _, tc := range tests {
		got, err := s.Get(ctx, tc.key, objectstore.Range{Offset: tc.offset, Length: tc.length})
		if err != nil {
			t.Errorf("Get(%q, {%d, %d}): %v", tc.key, tc.offset, tc.length, err)
			continue
		}
		if got == nil || string(got) != tc.want {
			t.Errorf("Get(%q, {%d, %d}) = %q (nil=%v), want %q", tc.key, tc.offset, tc.length, got, got == nil, tc.want)
		}
	}

	for _, r := range []objectstore.Range{{Offset: -1, Length: -1}, {Offset: -5, Length: 2}} {
		_, err := s.Get(ctx, "digits", r)
		if !errors.Is(err, objectstore.ErrInvalidRange) {
			t.Errorf("Get(digits, %+v) = %v, want ErrInvalidRange", r, err)
		}
		checkKeyError(t, err, "get", "digits")
	}
	for _, r := range []objectstore.Range{objectstore.FullObject, {Offset: 2, Length: 3}, {Offset: 0, Length: 0}, {Offset: 100, Length: -1}} {
		_, err := s.Get(ctx, "missing", r)
		if !errors.Is(err, objectstore.ErrNotExist) {
			t.Errorf("Get(missing, %+v) = %v, want ErrNotExist", r, err)
		}
	}
}

func testMissing(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	mustPut(t, s, "dir/present", []byte("x"))
	for _, key := range []string{"absent", "dir/absent", "dir", "dir/present/below"} {
		_, err := s.Get(ctx, key, objectstore.FullObject)
		if !errors.Is(err, objectstore.ErrNotExist) {
			t.Errorf("Get(%q) = %v, want ErrNotExist", key, err)
		}
		checkKeyError(t, err, "get", key)
		_, err = s.Stat(ctx, key)
		if !errors.Is(err, objectstore.ErrNotExist) {
			t.Errorf("Stat(%q) = %v, want ErrNotExist", key, err)
		}
		checkKeyError(t, err, "stat", key)
	}
	if got := listKeys(t, s, "absent", ""); len(got) != 0 {
		t.Errorf("List(absent) = %q, want nothing", got)
	}
}

func testDelete(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	if err := s.Delete(ctx, "never-existed"); err != nil {
		t.Errorf("Delete of absent key: %v", err)
	}
	mustPut(t, s, "dir/a", []byte("a"))
	mustPut(t, s, "dir/b", []byte("b"))
	if err := s.Delete(ctx, "dir/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "dir/a", objectstore.FullObject); !errors.Is(err, objectstore.ErrNotExist) {
		t.Errorf("Get after Delete = %v, want ErrNotExist", err)
	}
	if got := listKeys(t, s, "", ""); !slices.Equal(got, []string{"dir/b"}) {
		t.Errorf("List after Delete = %q, want [dir/b]", got)
	}
	if err := s.Delete(ctx, "dir/a"); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if got := mustGet(t, s, "dir/b"); string(got) != "b" {
		t.Errorf("sibling after Delete = %q, want %q", got, "b")
	}
}

// testSpecialKeys stores keys that need escaping in URLs or file names:
// Delta partition directories escape values with %, and values may hold
// spaces, '=', '+' and any Unicode.
func testSpecialKeys(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	keys := []string{
		"with space/a b.json",
		"pct/100%.json",
		"pct/%2F%20%41",
		"ts=2024-01-01 00%3A00%3A00/part-0.parquet",
		"eq/a=b=c",
		"plus/a+b",
		"amp/a&b",
		"query/a?b",
		"hash/a#b",
		"semi/a;b,c",
		"quote/a'b\"c",
		"tilde/~a",
		"unicode/日本語/ファイル.parquet",
		"unicode/straße/Ünïcödé",
		"emoji/😀",
	}
	for i, key := range keys {
		data := fmt.Appendf(nil, "object %d: %s", i, key)
		if err := s.PutIfAbsent(ctx, key, data); err != nil {
			t.Errorf("PutIfAbsent(%q): %v", key, err)
			continue
		}
		if got := mustGet(t, s, key); !bytes.Equal(got, data) {
			t.Errorf("Get(%q) = %q, want %q", key, got, data)
		}
		if got, err := s.Get(ctx, key, objectstore.Range{Offset: 7, Length: 1}); err != nil || string(got) != string(data[7:8]) {
			t.Errorf("Get(%q, {7, 1}) = %q, %v; want %q", key, got, err, data[7:8])
		}
		info, err := s.Stat(ctx, key)
		if err != nil || info.Key != key || info.Size != int64(len(data)) {
			t.Errorf("Stat(%q) = %+v, %v; want size %d", key, info, err, len(data))
		}
		if err := s.PutIfAbsent(ctx, key, data); !errors.Is(err, objectstore.ErrAlreadyExists) {
			t.Errorf("second PutIfAbsent(%q) = %v, want ErrAlreadyExists", key, err)
		}
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if got := listKeys(t, s, "", ""); !slices.Equal(got, want) {
		t.Errorf("List =\n\t%q\nwant\n\t%q", got, want)
	}
	if got := listKeys(t, s, "unicode/", "unicode/straße/Ünïcödé"); !slices.Equal(got, []string{"unicode/日本語/ファイル.parquet"}) {
		t.Errorf("List(unicode/, after straße) = %q", got)
	}
	for _, key := range keys {
		if err := s.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q): %v", key, err)
		}
	}
	if got := listKeys(t, s, "", ""); len(got) != 0 {
		t.Errorf("List after deleting all = %q, want nothing", got)
	}
}

func testInvalidKeys(t *testing.T, s objectstore.Store) {
	ctx := t.Context()
	keys := []string{"", "/", "/abs", "a//b", "a/", "./a", "a/./b", "a/../b", "..", "."}
	for _, key := range keys {
		ops := map[string]error{}
		_, ops["get"] = s.Get(ctx, key, objectstore.FullObject)
		ops["put"] = s.Put(ctx, key, []byte("x"))
		ops["put-if-absent"] = s.PutIfAbsent(ctx, key, []byte("x"))
		_, ops["stat"] = s.Stat(ctx, key)
		ops["delete"] = s.Delete(ctx, key)
		for op, err := range ops {
			if !errors.Is(err, objectstore.ErrInvalidKey) {
				t.Errorf("%s(%q) = %v, want ErrInvalidKey", op, key, err)
				continue
			}
			checkKeyError(t, err, op, key)
		}
	}
	if got := listKeys(t, s, "", ""); len(got) != 0 {
		t.Errorf("invalid keys created objects: %q", got)
	}
}

func testCanceledContext(t *testing.T, s objectstore.Store) {
	mustPut(t, s, "present", []byte("x"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := s.Get(ctx, "present", objectstore.FullObject)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Get with canceled context = %v, want context.Canceled", err)
	}
	if err := s.PutIfAbsent(ctx, "new", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("PutIfAbsent with canceled context = %v, want context.Canceled", err)
	}
	for _, err := range s.List(ctx, "", "") {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("List with canceled context yielded %v, want context.Canceled", err)
		}
		break
	}
}

func mustPut(t *testing.T, s objectstore.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(t.Context(), key, data); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func mustGet(t *testing.T, s objectstore.Store, key string) []byte {
	t.Helper()
	data, err := s.Get(t.Context(), key, objectstore.FullObject)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return data
}

func listKeys(t *testing.T, s objectstore.Store, prefix, startAfter string) []string {
	t.Helper()
	var keys []string
	for info, err := range s.List(t.Context(), prefix, startAfter) {
		if err != nil {
			t.Fatalf("List(%q, %q): %v", prefix, startAfter, err)
		}
		keys = append(keys, info.Key)
	}
	return keys
}

// checkKeyError asserts that err is a *objectstore.KeyError naming op and key.
func checkKeyError(t *testing.T, err error, op, key string) {
	t.Helper()
	var ke *objectstore.KeyError
	if !errors.As(err, &ke) {
		t.Errorf("error %v is not a *objectstore.KeyError", err)
		return
	}
	if ke.Op != op || ke.Key != key || ke.Store == "" {
		t.Errorf("KeyError{Op: %q, Store: %q, Key: %q}, want Op %q, Key %q and a store", ke.Op, ke.Store, ke.Key, op, key)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
		t.Errorf("error %q does not name the key %q", err, key)
	}
}
