package scan

import (
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPoolAllocatorZeroedAligned: a recycled buffer comes back zeroed and
// 64-byte aligned, growth in place zeroes the new tail, and growth past
// the class copies the kept bytes.
func TestPoolAllocatorZeroedAligned(t *testing.T) {
	a := NewPoolAllocator()
	for _, size := range []int{10, 4096, 5000, 1 << 20} {
		b := a.Allocate(size)
		if len(b) != size {
			t.Fatalf("Allocate(%d): len %d", size, len(b))
		}
		if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64 != 0 {
			t.Fatalf("Allocate(%d) not 64-byte aligned", size)
		}
		for i := range b {
			b[i] = 0xff
		}
		a.Free(b)
		c := a.Allocate(size)
		for i, v := range c {
			if v != 0 {
				t.Fatalf("Allocate(%d) after Free: byte %d is %#x", size, i, v)
			}
		}
		for i := range c {
			c[i] = 7
		}
		d := a.Reallocate(size+100, c[:size])
		for i, v := range d {
			if want := byte(7); i >= size {
				want = 0
				if v != want {
					t.Fatalf("Reallocate(%d): byte %d is %d, want 0", size+100, i, v)
				}
			} else if v != want {
				t.Fatalf("Reallocate(%d): kept byte %d is %d, want 7", size+100, i, v)
			}
		}
		a.Free(d)
	}
}

// TestRawAllocatorSharesPools: the page reader's rawAllocator takes
// buffers from the same pools without zeroing them (checked when the pool
// hands back the buffer just freed, as sync.Pool does on one goroutine
// without a GC in between), keeps a prefix on Reallocate, and the zeroing
// allocator still zeroes what rawAllocator dirtied and freed.
func TestRawAllocatorSharesPools(t *testing.T) {
	a := NewPoolAllocator()
	r := RawAllocator{a}
	const size = 1 << 16
	b := a.Allocate(size)
	for i := range b {
		b[i] = 0xab
	}
	addr := unsafe.SliceData(b)
	a.Free(b)
	c := r.Allocate(size)
	if len(c) != size || uintptr(unsafe.Pointer(unsafe.SliceData(c)))%64 != 0 {
		t.Fatalf("raw Allocate(%d): len %d, aligned %v", size, len(c), Aligned(c))
	}
	if unsafe.SliceData(c) == addr && c[size-1] != 0xab {
		t.Errorf("raw Allocate zeroed a pooled buffer (last byte %#x)", c[size-1])
	}
	for i := range c {
		c[i] = byte(i)
	}
	d := r.Reallocate(3*size, c)
	if len(d) != 3*size {
		t.Fatalf("raw Reallocate: len %d", len(d))
	}
	for i := range size {
		if d[i] != byte(i) {
			t.Fatalf("raw Reallocate: kept byte %d is %d, want %d", i, d[i], byte(i))
		}
	}
	for i := range d {
		d[i] = 0xcd
	}
	r.Free(d)
	for _, n := range []int{size, 3 * size} {
		z := a.Allocate(n)
		for i, v := range z {
			if v != 0 {
				t.Fatalf("Allocate(%d) after raw use: byte %d is %#x", n, i, v)
			}
		}
	}
}

// TestGatherStrings: dictionary strings with nulls, a sliced array and
// an out-of-range index.
func TestGatherStrings(t *testing.T) {
	mem := memory.DefaultAllocator
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer db.Release()
	for _, s := range []string{"SFO", "", "LAX", "-", "SFO", "LAX", "-", "JFK"} {
		if s == "-" {
			db.AppendNull()
			continue
		}
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	d := db.NewDictionaryArray()
	defer d.Release()
	for _, tc := range []struct {
		from, to int
		want     []string // "-": null
	}{
		{0, 8, []string{"SFO", "", "LAX", "-", "SFO", "LAX", "-", "JFK"}},
		{3, 8, []string{"-", "SFO", "LAX", "-", "JFK"}},
		{4, 6, []string{"SFO", "LAX"}},
	} {
		sl := array.NewSlice(d, int64(tc.from), int64(tc.to)).(*array.Dictionary)
		for _, m := range []memory.Allocator{nil, NewPoolAllocator()} {
			g, err := GatherStrings(sl, m)
			if err != nil {
				t.Fatal(err)
			}
			s := g.(*array.String)
			if s.Len() != len(tc.want) {
				t.Fatalf("[%d:%d]: %d values, want %d", tc.from, tc.to, s.Len(), len(tc.want))
			}
			for i, w := range tc.want {
				if got := s.Value(i); (w == "-") != s.IsNull(i) || (w != "-" && got != w) {
					t.Errorf("[%d:%d] value %d: %q (null %v), want %q", tc.from, tc.to, i, got, s.IsNull(i), w)
				}
			}
			g.Release()
		}
		sl.Release()
	}
	// An index past the dictionary is an error, not a panic.
	idx := array.NewInt32Builder(mem)
	idx.AppendValues([]int32{0, 5}, nil)
	ia := idx.NewArray()
	idx.Release()
	dict := d.Dictionary()
	bad := array.NewDictionaryArray(d.DataType(), ia, dict)
	ia.Release()
	defer bad.Release()
	if _, err := GatherStrings(bad, nil); err == nil {
		t.Fatal("gatherStrings: index 5 of a 3-value dictionary gave no error")
	}
}
