package table

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// poolAllocator is the memory.Allocator of one columnar scan's Parquet
// page reading (parquet.ReaderProperties: compressed and decompressed page
// buffers): buffers of 4 KiB and more come in power-of-two size classes
// and go back to a per-class pool when the page reader frees them, so the
// next page, column or file reuses memory that is already mapped and in
// cache instead of allocating and zeroing fresh heap.
//
// It is never the allocator of the batches' arrays (pqarrow's FileReader,
// gatherStrings): arrow-go's String.Value returns strings that alias the
// array's bytes, and callers (arrowio.Rows among them) keep such strings
// after the batch is released; recycled memory would change them
// (TestScanArrowCorpus caught exactly that when the arrays came from the
// pool). Page bytes are always copied into the arrays by the decoders.
//
// Memory is Go heap throughout: sync.Pool drops idle buffers at GC. Like
// memory.GoAllocator it returns zeroed memory, 64-byte aligned.
type poolAllocator struct {
	pools [poolClasses]sync.Pool
}

const (
	poolMinShift = 12 // 4 KiB
	poolClasses  = 18 // up to 512 MiB
	poolAlign    = 64
)

func newPoolAllocator() *poolAllocator { return &poolAllocator{} }

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

func aligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%poolAlign == 0
}

// Allocate returns size zeroed bytes.
func (a *poolAllocator) Allocate(size int) []byte {
	c := poolClass(size)
	if c < 0 {
		return goAlloc(size)
	}
	if v := a.pools[c].Get(); v != nil {
		b := (*v.(*[]byte))[:size]
		clear(b)
		return b
	}
	b := make([]byte, 1<<(c+poolMinShift))
	if !aligned(b) {
		// Go's allocator puts objects of 4 KiB and more at page or
		// size-class boundaries; should it not, no pooling.
		return goAlloc(size)
	}
	return b[:size]
}

// Reallocate returns b resized to size bytes, its first min(len(b), size)
// bytes kept and the rest zeroed.
func (a *poolAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free gives b's memory back to its class's pool.
func (a *poolAllocator) Free(b []byte) {
	c := cap(b)
	if c < 1<<poolMinShift || c&(c-1) != 0 || !aligned(b) {
		return
	}
	k := poolClass(c)
	if k < 0 {
		return
	}
	b = b[:c]
	a.pools[k].Put(&b)
}

// goAlloc is memory.GoAllocator's Allocate: zeroed, 64-byte aligned, its
// capacity exactly size (so Free never pools it unless it is a class size).
func goAlloc(size int) []byte {
	buf := make([]byte, size+poolAlign)
	addr := int(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	shift := (poolAlign - addr%poolAlign) % poolAlign
	return buf[shift : size+shift : size+shift]
}

var _ memory.Allocator = (*poolAllocator)(nil)
