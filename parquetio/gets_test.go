package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/schema"
	"github.com/deltakit/deltakit/value"
)

// getCountingStore counts a store's Gets and the bytes they return. It hides
// the wrapped store's ReadAt, so every read is a Get.
type getCountingStore struct {
	objectstore.Store
	gets, bytes atomic.Int64
}

func (s *getCountingStore) Get(ctx context.Context, key string, r objectstore.Range) ([]byte, error) {
	b, err := s.Store.Get(ctx, key, r)
	s.gets.Add(1)
	s.bytes.Add(int64(len(b)))
	return b, err
}

func getsSchema() *schema.StructType {
	return schema.NewStruct(field("id", prim(schema.Long), false), field("payload", prim(schema.String), true))
}

// getsRows are n rows with 40 bytes of random hex each, which no codec
// shrinks much: the file grows with n.
func getsRows(n int) []value.Row {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	rows := make([]value.Row, n)
	for i := range rows {
		rows[i] = value.Row{int64(i), fmt.Sprintf("%016x%016x%08x", rng.Uint64(), rng.Uint64(), rng.Uint32())}
	}
	return rows
}

// TestOpenGetsPerRead: reading a data file from a store costs one GET when
// the speculative tail holds the whole file, two when it does not (the tail,
// then the body without the tail's bytes: the bytes fetched are the file's
// size exactly, and there is no GET of the leading magic), one GET per row
// group outside the tail for a file of several, and a projected read fetches
// the tail and its column's chunk only.
func TestOpenGetsPerRead(t *testing.T) {
	ctx := context.Background()
	sch := getsSchema()
	idOnly := schema.NewStruct(field("id", prim(schema.Long), false))
	const tail = 64 << 10
	for _, tc := range []struct {
		name      string
		rows      int
		groupRows int64
		read      *schema.StructType
		wantGets  int64
		wantAll   bool // the bytes fetched are the whole file
	}{
		{"small full", 500, 1 << 20, sch, 1, true},
		{"large full", 20000, 1 << 20, sch, 2, true},
		{"large id only", 20000, 1 << 20, idOnly, 2, false},
		{"four row groups full", 20000, 5000, sch, 2, true},
		{"four row groups id only", 20000, 5000, idOnly, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := getsRows(tc.rows)
			data, _ := writeToBytes(t, sch, rows, WithRowGroupRows(tc.groupRows))
			if small := len(data) <= tail; small != (tc.rows == 500) {
				t.Fatalf("file of %d bytes: small=%v, the case assumes otherwise", len(data), small)
			}
			st := &getCountingStore{Store: objectstore.NewMem("gets")}
			if err := st.Put(ctx, "f.parquet", data); err != nil {
				t.Fatal(err)
			}
			f, err := Open(ctx, st, "f.parquet", tc.read)
			if err != nil {
				t.Fatal(err)
			}
			var got []value.Row
			for row, err := range f.Rows(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, row)
			}
			if len(got) != len(rows) {
				t.Fatalf("%d rows, want %d", len(got), len(rows))
			}
			for i, row := range got {
				want := rows[i][:len(tc.read.Fields)]
				if !reflect.DeepEqual(row, want) {
					t.Fatalf("row %d = %v, want %v", i, row, want)
				}
			}
			wantBytes := int64(len(data))
			if !tc.wantAll {
				// The tail, and each row group's id chunk (the first, outside
				// the tail), the first with the 4 bytes of magic before it.
				wantBytes = tail + 4
				for g := range f.NumRowGroups() {
					off, n, err := f.chunkRange(g, 0)
					if err != nil {
						t.Fatal(err)
					}
					if g == 0 && off != 4 || off+n > int64(len(data))-tail {
						t.Fatalf("id chunk of row group %d at [%d,+%d) of %d bytes: the case assumes the first at 4, all before the tail", g, off, n, len(data))
					}
					wantBytes += n
				}
			}
			if g, b := st.gets.Load(), st.bytes.Load(); g != tc.wantGets || b != wantBytes {
				t.Errorf("%d GETs of %d bytes for a file of %d bytes, want %d of %d", g, b, len(data), tc.wantGets, wantBytes)
			}
		})
	}
}

// TestOpenBadLeadingMagic: a file whose leading magic is not PAR1 is an
// ErrCorrupt *FileError naming it, from Open when the tail holds the whole
// file, else from the read of the first row group (whose GET holds the
// magic).
func TestOpenBadLeadingMagic(t *testing.T) {
	ctx := context.Background()
	sch := getsSchema()
	for _, tc := range []struct {
		rows   int
		wantOp string
	}{{500, "open"}, {20000, "read"}} {
		data, _ := writeToBytes(t, sch, getsRows(tc.rows))
		data[1] = 'X'
		st := objectstore.NewMem("gets")
		const key = "bad/f.parquet"
		if err := st.Put(ctx, key, data); err != nil {
			t.Fatal(err)
		}
		var rerr error
		for _, err := range ReadFile(ctx, st, key, sch) {
			if err != nil {
				rerr = err
			}
		}
		var fe *FileError
		if !errors.As(rerr, &fe) || fe.File != key || fe.Op != tc.wantOp || !errors.Is(rerr, ErrCorrupt) {
			t.Fatalf("%d rows: error %v, want an ErrCorrupt *FileError of %s %s", tc.rows, rerr, tc.wantOp, key)
		}
	}
}

// TestOpenTailSplitsChunk: when the tail starts inside a column chunk (or
// inside the leading magic), the chunk is read from a GET of its part before
// the tail and the tail's bytes, which together are the file, once.
func TestOpenTailSplitsChunk(t *testing.T) {
	ctx := context.Background()
	sch := getsSchema()
	rows := getsRows(3000)
	data, _ := writeToBytes(t, sch, rows)
	for _, before := range []int64{2, 4, 1000, int64(len(data)) / 2} {
		st := &getCountingStore{Store: objectstore.NewMem("gets")}
		if err := st.Put(ctx, "f.parquet", data); err != nil {
			t.Fatal(err)
		}
		tailAt := func(c *readConfig) { c.tailSize = int64(len(data)) - before }
		var n int
		for row, err := range ReadFile(ctx, st, "f.parquet", sch, tailAt) {
			if err != nil {
				t.Fatalf("tail from %d: %v", before, err)
			}
			if !reflect.DeepEqual(row, rows[n]) {
				t.Fatalf("tail from %d: row %d = %v, want %v", before, n, row, rows[n])
			}
			n++
		}
		if n != len(rows) {
			t.Fatalf("tail from %d: %d rows, want %d", before, n, len(rows))
		}
		if g, b := st.gets.Load(), st.bytes.Load(); g != 2 || b != int64(len(data)) {
			t.Errorf("tail from %d: %d GETs of %d bytes, want 2 of %d", before, g, b, len(data))
		}
	}
}

// TestOpenTailAtChunkBoundaries: a file of 4 row groups read from a store,
// in full (the chunks of all row groups at once) and projected (row group by
// row group), with the tail starting inside the leading magic and at, just
// before, just after and inside every column chunk, reads its rows.
func TestOpenTailAtChunkBoundaries(t *testing.T) {
	ctx := context.Background()
	sch := getsSchema()
	rows := getsRows(8000)
	data, _ := writeToBytes(t, sch, rows, WithRowGroupRows(2000))
	st := objectstore.NewMem("gets")
	if err := st.Put(ctx, "f.parquet", data); err != nil {
		t.Fatal(err)
	}
	f0, err := OpenReaderAt(bytes.NewReader(data), int64(len(data)), "x", sch)
	if err != nil {
		t.Fatal(err)
	}
	var cuts []int64
	for g := range f0.NumRowGroups() {
		for c := 0; c < 2; c++ {
			off, n, _ := f0.chunkRange(g, c)
			cuts = append(cuts, off-1, off, off+1, off+n/2, off+n-1, off+n, off+n+1)
		}
	}
	cuts = append(cuts, 1, 2, 3)
	idOnly := schema.NewStruct(field("id", prim(schema.Long), false))
	payOnly := schema.NewStruct(field("payload", prim(schema.String), true))
	for _, rs := range []*schema.StructType{sch, idOnly, payOnly} {
		for _, before := range cuts {
			tailAt := func(c *readConfig) { c.tailSize = int64(len(data)) - before }
			var n int
			for row, err := range ReadFile(ctx, st, "f.parquet", rs, tailAt) {
				if err != nil {
					t.Fatalf("%d fields tail from %d: %v", len(rs.Fields), before, err)
				}
				var want any = rows[n][:len(rs.Fields)]
				if rs == payOnly {
					want = rows[n][1:]
				}
				if !reflect.DeepEqual(any(row), want) {
					t.Fatalf("tail from %d: row %d = %v, want %v", before, n, row, want)
				}
				n++
			}
			if n != len(rows) {
				t.Fatalf("tail from %d: %d rows", before, n)
			}
		}
	}
}
