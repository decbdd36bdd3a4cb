package parquetio

import (
	"bytes"
	"context"
	"errors"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// spillSchema and spillRows: an id and 1,000 random letters a row, so a
// row group holds about as many bytes of pages as of values.
func spillSchema() *schema.StructType {
	return schema.NewStruct(field("id", prim("long"), false), field("payload", prim("string"), true))
}

func spillRows(n int, seed uint64) []value.Row {
	rng := rand.New(rand.NewPCG(seed, 2))
	p := make([]byte, 1000)
	rows := make([]value.Row, n)
	for i := range rows {
		for j := range p {
			p[j] = byte('a' + rng.IntN(26))
		}
		rows[i] = value.Row{int64(i), string(p)}
	}
	return rows
}

// tempFiles returns the sizes of the files in dir by name.
func tempFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			out[e.Name()] = fi.Size()
		}
	}
	return out
}

// TestSpillBuffer: a spillBuffer reads back what was written, across the
// end of its heap part, after seeks and overwrites, through Read and
// WriteTo; returned to its pool it removes its file.
func TestSpillBuffer(t *testing.T) {
	dir := t.TempDir()
	pool := newSpillPool(dir)
	pool.budget = 1000 // the heap part ends within the second write
	data := []byte(string(spillRows(1, 7)[0][1].(string)) + string(spillRows(1, 8)[0][1].(string)))
	b := pool.GetBuffer()
	for _, part := range [][]byte{data[:600], data[600:601], data[601:]} {
		if n, err := b.Write(part); n != len(part) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(part), n, err)
		}
	}
	if len(tempFiles(t, dir)) != 1 {
		t.Fatalf("temporary files %v after writing past the heap budget, want one", tempFiles(t, dir))
	}
	_, _ = b.Seek(998, io.SeekStart)
	_, _ = b.Write([]byte("WXYZ")) // across the end of the heap part
	want := bytes.Clone(data)
	copy(want[998:], "WXYZ")
	if off, err := b.Seek(0, io.SeekStart); off != 0 || err != nil {
		t.Fatalf("Seek(0) = %d, %v", off, err)
	}
	got, err := io.ReadAll(b)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes (err %v), want the %d written", len(got), err, len(want))
	}
	if end, err := b.Seek(-10, io.SeekEnd); end != int64(len(want)-10) || err != nil {
		t.Fatalf("Seek(-10, end) = %d, %v", end, err)
	}
	_, _ = b.Seek(990, io.SeekStart)
	var out bytes.Buffer
	if n, err := b.(io.WriterTo).WriteTo(&out); n != int64(len(want)-990) || err != nil || !bytes.Equal(out.Bytes(), want[990:]) {
		t.Fatalf("WriteTo from 990 = %d, %v", n, err)
	}
	if _, err := b.Seek(-1, io.SeekStart); err == nil {
		t.Fatal("Seek(-1) succeeded")
	}
	pool.PutBuffer(b)
	if len(tempFiles(t, dir)) != 0 || pool.budget != 1000 {
		t.Fatalf("after PutBuffer: files %v, budget %d; want none and 1000", tempFiles(t, dir), pool.budget)
	}
}

// TestWriteRowGroupSpills: the encoded pages of a large row group being
// written are on the heap only up to pageHeapBudget, the rest in a
// temporary file. Before the writer used spillPool, 48 MiB of
// incompressible values buffered in one row group were 48 MiB of live
// heap (and, at GOGC 100, up to twice that of peak heap). The file reads
// back whole and no temporary file is left.
func TestWriteRowGroupSpills(t *testing.T) {
	dir := t.TempDir()
	sch := spillSchema()
	var out bytes.Buffer
	w, err := NewWriter(&out, sch, WithRowGroupSize(64<<20), WithTempDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	const batches = 48 // 48 MiB of values: less than one row group
	written := fnv.New64a()
	for k := range batches {
		rows := spillRows(1000, uint64(k))
		for i, r := range rows {
			r[0] = int64(k*len(rows) + i)
			written.Write([]byte(r[1].(string)))
		}
		if err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
	}
	if out.Len() > 1<<20 {
		t.Fatalf("%d bytes written before the row group is full", out.Len())
	}
	runtime.GC() // twice: the second empties the sync.Pools' victim caches
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > pageHeapBudget+12<<20 {
		t.Errorf("live heap %d MiB holding a row group of %d MiB of values; want < %d MiB", ms.HeapAlloc>>20, batches, (pageHeapBudget+12<<20)>>20)
	}
	var spilled int64
	for _, n := range tempFiles(t, dir) {
		spilled += n
	}
	if spilled < (batches<<20)-pageHeapBudget-4<<20 {
		t.Errorf("%d MiB of pages in temporary files, want about %d", spilled>>20, (batches<<20-pageHeapBudget)>>20)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Errorf("temporary files left after Close: %v", left)
	}
	f, err := parquet.OpenFile(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows() != batches*1000 {
		t.Fatalf("file has %d rows, want %d", f.NumRows(), batches*1000)
	}
	var n int64
	h := fnv.New64a()
	for row, err := range ReadReaderAt(t.Context(), bytes.NewReader(out.Bytes()), int64(out.Len()), "f", sch) {
		if err != nil {
			t.Fatal(err)
		}
		if row[0] != n {
			t.Fatalf("row %d has id %v", n, row[0])
		}
		h.Write([]byte(row[1].(string)))
		n++
	}
	if n != f.NumRows() || h.Sum64() != written.Sum64() {
		t.Fatalf("read %d rows (payload hash %x), wrote %d (hash %x)", n, h.Sum64(), f.NumRows(), written.Sum64())
	}
}

// TestSpillFilesRemoved: a FileWriter that spilled pages leaves no
// temporary file whether it succeeds, fails on a bad row, is aborted or
// its context is cancelled; one whose row groups fit the heap budget
// never creates one.
func TestSpillFilesRemoved(t *testing.T) {
	sch := spillSchema()
	rows := spillRows(20_000, 1) // 20 MiB: past pageHeapBudget
	small := spillRows(2_000, 2)
	tests := []struct {
		name    string
		rows    []value.Row
		cancel  bool // cancel the upload's context before Close
		bad     bool // then write a bad row
		abort   bool // Abort instead of Close
		spills  bool
		wantErr error
	}{
		{name: "success", rows: rows, spills: true},
		{name: "bad row", rows: rows, bad: true, spills: true, wantErr: ErrInvalidValue},
		{name: "abort", rows: rows, abort: true, spills: true},
		{name: "cancelled", rows: rows, cancel: true, spills: true, wantErr: context.Canceled},
		{name: "small file", rows: small},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			store := objectstore.NewMem("t")
			fw, err := CreateFile(ctx, store, "part-0.parquet", sch, WithRowGroupSize(64<<20), WithTempDir(dir))
			if err != nil {
				t.Fatal(err)
			}
			if err := fw.Write(tc.rows); err != nil {
				t.Fatal(err)
			}
			if got := len(tempFiles(t, dir)) > 0; got != tc.spills {
				t.Fatalf("temporary files %v while writing, want some: %v", tempFiles(t, dir), tc.spills)
			}
			if tc.cancel {
				cancel()
			}
			if tc.bad {
				if err := fw.Write([]value.Row{{"x", nil}}); !errors.Is(err, tc.wantErr) {
					t.Fatalf("Write of a bad row = %v, want %v", err, tc.wantErr)
				}
			}
			if tc.abort {
				fw.Abort()
			} else {
				_, err = fw.Close(ctx)
				if !errors.Is(err, tc.wantErr) && (tc.wantErr != nil || err != nil) {
					t.Fatalf("Close = %v, want %v", err, tc.wantErr)
				}
				fw.Abort()
			}
			if left := tempFiles(t, dir); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
			_, err = store.Stat(context.Background(), "part-0.parquet")
			if stored := err == nil; stored != (tc.wantErr == nil && !tc.abort) {
				t.Errorf("file stored: %v (Stat: %v)", stored, err)
			}
		})
	}
}
