package scan

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// poolAllocator is the memory.Allocator of one columnar scan's Parquet
// reading: the page reader's compressed and decompressed page buffers
// (parquet.ReaderProperties) and pqarrow's own buffers (FileReader: value
// and level buffers, validity bitmaps, dictionary index builders, and the
// arrays they become). Buffers of 4 KiB and more come in power-of-two size
// classes and go back to a per-class pool when freed (a buffer outgrown by
// a record reader, a dictionary array once gathered into strings, a batch
// the caller released), so the next batch, column or file reuses memory
// that is already mapped and in cache instead of allocating and zeroing
// fresh heap and collecting it later.
//
// Variable-length data that reaches the caller is never recycled:
// arrow-go's String.Value (and Binary.Value) return strings and slices
// that alias the array's bytes, and callers (arrowio.Rows among them) keep
// such strings after the batch is released; recycled memory would change
// them (TestScanArrowSameAsScanCorpus caught exactly that when the arrays
// came from the pool unpinned). pinOutput marks those buffers before a batch is
// emitted, and Free leaves a marked buffer to the garbage collector.
// Fixed-width values are read by copy (Int64.Value etc.), so their
// buffers go back to the pool when the caller releases the batch, as with
// any arrow-go allocator that reuses memory (memory.Mallocator); a caller
// that never calls Release leaves them to the garbage collector.
//
// Memory is Go heap throughout: sync.Pool drops idle buffers at GC. Like
// memory.GoAllocator (and Mallocator, whose calloc arrow-go's builders
// rely on for their bitmaps) it returns zeroed memory, 64-byte aligned.
type poolAllocator struct {
	pools [poolClasses]sync.Pool
	// pinned holds the addresses (uintptr: no reference that would keep
	// the memory alive) of buffers Free must not pool.
	pinned sync.Map
}

const (
	poolMinShift = 12 // 4 KiB
	poolClasses  = 18 // up to 512 MiB
	poolAlign    = 64
)

func NewPoolAllocator() *poolAllocator { return &poolAllocator{} }

// class returns the size class of a buffer of size bytes, -1 for none.
func poolClass(size int) int {
	if size < 1<<poolMinShift {
		return -1
	}
	c := bits.Len(uint(size-1)) - poolMinShift
	if c >= poolClasses {
		return -1
	}
	return c
}

func Aligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%poolAlign == 0
}

// Allocate returns size zeroed bytes.
func (a *poolAllocator) Allocate(size int) []byte { return a.alloc(size, true) }

// alloc returns size bytes, zeroed if zero is set (fresh memory always is).
func (a *poolAllocator) alloc(size int, zero bool) []byte {
	c := poolClass(size)
	if c < 0 {
		return goAlloc(size)
	}
	if v := a.pools[c].Get(); v != nil {
		b := (*v.(*[]byte))[:size]
		if zero {
			clear(b)
		}
		return b
	}
	b := make([]byte, 1<<(c+poolMinShift))
	if !Aligned(b) {
		// Go's allocator puts objects of 4 KiB and more at page or
		// size-class boundaries; should it not, no pooling.
		return goAlloc(size)
	}
	return b[:size]
}

// Reallocate returns b resized to size bytes, its first min(len(b), size)
// bytes kept and the rest zeroed.
func (a *poolAllocator) Reallocate(size int, b []byte) []byte { return a.realloc(size, b, true) }

func (a *poolAllocator) realloc(size int, b []byte, zero bool) []byte {
	if cap(b) >= size {
		old := len(b)
		b = b[:size]
		if zero && size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.alloc(size, zero)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free gives b's memory back to its class's pool, unless it is pinned.
func (a *poolAllocator) Free(b []byte) {
	c := cap(b)
	if c < 1<<poolMinShift || c&(c-1) != 0 || !Aligned(b) {
		return
	}
	if _, pinned := a.pinned.LoadAndDelete(uintptr(unsafe.Pointer(unsafe.SliceData(b)))); pinned {
		return
	}
	k := poolClass(c)
	if k < 0 {
		return
	}
	b = b[:c]
	a.pools[k].Put(&b)
}

// pin marks buf's memory as never to be pooled again (a stale address
// of a buffer that came from elsewhere costs one map entry and at worst
// keeps a later buffer at the same address out of the pool).
func (a *poolAllocator) pin(buf *memory.Buffer) {
	if buf == nil || buf.Cap() < 1<<poolMinShift {
		return
	}
	a.pinned.Store(uintptr(unsafe.Pointer(unsafe.SliceData(buf.Buf()))), struct{}{})
}

// pinOutput pins the variable-length data buffers of d and its children
// and dictionary: the bytes String.Value and Binary.Value alias.
func (a *poolAllocator) pinOutput(d arrow.ArrayData) {
	if d == nil {
		return
	}
	if ad, ok := d.(*array.Data); ok && ad == nil {
		return
	}
	switch d.DataType().ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		if bufs := d.Buffers(); len(bufs) > 2 {
			a.pin(bufs[2])
		}
	case arrow.FIXED_SIZE_BINARY:
		if bufs := d.Buffers(); len(bufs) > 1 {
			a.pin(bufs[1])
		}
	case arrow.STRING_VIEW, arrow.BINARY_VIEW:
		for _, b := range d.Buffers()[min(2, len(d.Buffers())):] {
			a.pin(b)
		}
	}
	for _, c := range d.Children() {
		a.pinOutput(c)
	}
	a.pinOutput(d.Dictionary())
}

// RawAllocator is a poolAllocator's pools without the zeroing: the
// allocator of the page reader (parquet.ReaderProperties), whose buffers
// (compressed pages read from the file, pages decompressed into, the
// dictionary page) are overwritten whole before they are read, the
// reader checking the lengths read and decompressed. Zeroing them cost
// about an eighth of the memory a 30-file scan cleared. Its buffers go
// back to the same pools; poolAllocator zeroes what it hands out whatever
// it held before.
type RawAllocator struct{ *poolAllocator }

// Allocate returns size bytes of unspecified content.
func (r RawAllocator) Allocate(size int) []byte { return r.alloc(size, false) }

// Reallocate returns b resized to size bytes, its first min(len(b), size)
// bytes kept and the rest of unspecified content.
func (r RawAllocator) Reallocate(size int, b []byte) []byte { return r.realloc(size, b, false) }

// goAlloc is memory.GoAllocator's Allocate: zeroed, 64-byte aligned, its
// capacity exactly size (so Free never pools it unless it is a class size).
func goAlloc(size int) []byte {
	buf := make([]byte, size+poolAlign)
	addr := int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	shift := (poolAlign - addr%poolAlign) % poolAlign
	return buf[shift : size+shift : size+shift]
}

var (
	_ memory.Allocator = (*poolAllocator)(nil)
	_ memory.Allocator = RawAllocator{}
)
