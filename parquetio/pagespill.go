package parquetio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/parquet-go/parquet-go"
)

// A Writer holds the encoded pages of the row group it is writing until
// the row group is complete (up to WithRowGroupSize bytes, 64 MiB for the
// table's data files). On the Go heap those bytes are live whenever the
// collector marks, so at GOGC 100 the heap may grow to twice them: a
// 64 MiB row group cost ~128 MiB of peak RSS. A writer whose row groups
// may be larger than pageHeapBudget therefore keeps its first
// pageHeapBudget bytes of pages on the heap and spills the rest to
// temporary files (parquet-go's file buffer pool) in WithTempDir's
// directory; a writer of smaller row groups (small appends, streaming
// epochs) uses parquet-go's heap pool only and never touches a file.

// pageHeapBudget is how many bytes of a row group's encoded pages one
// Writer keeps on the heap, over all its columns, before it spills to
// temporary files. It is above the largest row group of a typical append
// (P2's 13 MB file is one row group) so that those never pay for a file,
// and small next to the 64 MiB row groups of large files.
const pageHeapBudget = 16 << 20

// heapPages is parquet-go's heap buffer pool, shared by all writers so
// that its chunks are reused from one row group (and file) to the next,
// as parquet-go's own default pool is.
var heapPages = parquet.NewBufferPool()

// spillPattern names the temporary files of spilled pages.
const spillPattern = "deltakit-pages-*"

// spillPool is the parquet.BufferPool of one Writer's column page
// buffers: each buffer's bytes are on the heap while the writer's heap
// budget lasts and in a temporary file after that. release closes and
// removes the temporary files still open (parquet-go returns a row
// group's buffers when it has written the row group, not when a write
// fails).
type spillPool struct {
	dir   string
	files parquet.BufferPool

	mu     sync.Mutex
	budget int64                     // heap bytes not reserved by a buffer
	open   map[*spillBuffer]struct{} // buffers that have a file
	done   bool                      // released: no more files
}

var _ parquet.BufferPool = (*spillPool)(nil)

// newSpillPool returns the page buffer pool of a Writer whose temporary
// files go to dir ("" for os.TempDir()).
func newSpillPool(dir string) *spillPool {
	if dir == "" {
		dir = os.TempDir()
	}
	return &spillPool{dir: dir, files: parquet.NewFileBufferPool(dir, spillPattern), budget: pageHeapBudget,
		open: map[*spillBuffer]struct{}{}}
}

func (p *spillPool) GetBuffer() io.ReadWriteSeeker {
	return &spillBuffer{pool: p, head: heapPages.GetBuffer()}
}

func (p *spillPool) PutBuffer(rw io.ReadWriteSeeker) {
	b, ok := rw.(*spillBuffer)
	if !ok {
		return
	}
	p.mu.Lock()
	p.budget += b.reserved
	b.reserved = 0
	delete(p.open, b)
	p.mu.Unlock()
	b.free()
}

// reserve takes n bytes of heap budget, reporting whether there were.
func (p *spillPool) reserve(n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.budget < n {
		return false
	}
	p.budget -= n
	return true
}

var errSpillReleased = errors.New("parquetio: page buffer used after its writer was closed")

// spill returns a new temporary file for b's bytes past the heap.
func (p *spillPool) spill(b *spillBuffer) (io.ReadWriteSeeker, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return nil, errSpillReleased
	}
	f := p.files.GetBuffer()
	if _, err := f.Seek(0, io.SeekStart); err != nil { // the error of a file not created
		return nil, fmt.Errorf("parquetio: page buffer file in %s: %w", p.dir, err)
	}
	p.open[b] = struct{}{}
	return f, nil
}

// release closes and removes the temporary files of the buffers not yet
// returned; a buffer used after it returns errors, not data.
func (p *spillPool) release() {
	p.mu.Lock()
	open := p.open
	p.open, p.done = map[*spillBuffer]struct{}{}, true
	p.mu.Unlock()
	for b := range open {
		p.files.PutBuffer(b.tail)
		b.tail = errorFile{}
	}
}

// spillBuffer is a column's page buffer: bytes [0, reserved) on the heap
// (head), the rest in a temporary file (tail) once the pool's heap budget
// is gone. parquet-go writes it from the start, seeks to 0 and reads it
// through; it also supports overwrites and seeks anywhere.
type spillBuffer struct {
	pool     *spillPool
	head     io.ReadWriteSeeker
	tail     io.ReadWriteSeeker // nil until the buffer spills
	reserved int64              // heap budget taken: the head's capacity
	pos      int64
	size     int64
}

func (b *spillBuffer) free() {
	heapPages.PutBuffer(b.head)
	if b.tail != nil {
		b.pool.files.PutBuffer(b.tail)
	}
	b.head, b.tail = nil, errorFile{}
	b.pos, b.size = 0, 0
}

// part returns the buffer holding offset b.pos, positioned there, and
// how many bytes from there it holds (-1: no limit).
func (b *spillBuffer) part() (io.ReadWriteSeeker, int64, error) {
	if b.head == nil {
		return nil, 0, errSpillReleased
	}
	if b.pos < b.reserved {
		_, err := b.head.Seek(b.pos, io.SeekStart)
		return b.head, b.reserved - b.pos, err
	}
	_, err := b.tail.Seek(b.pos-b.reserved, io.SeekStart)
	return b.tail, -1, err
}

func (b *spillBuffer) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if b.pos >= b.reserved && b.tail == nil {
			// Budget for exactly what is written, so that the many small
			// columns of a wide table do not exhaust it.
			if b.pos == b.reserved && b.pool.reserve(int64(len(p))) {
				b.reserved += int64(len(p))
			} else {
				f, err := b.pool.spill(b)
				if err != nil {
					return n, err
				}
				b.tail = f
			}
		}
		w, room, err := b.part()
		if err != nil {
			return n, err
		}
		k := int64(len(p))
		if room >= 0 {
			k = min(k, room)
		}
		m, err := w.Write(p[:k])
		n += m
		b.pos += int64(m)
		b.size = max(b.size, b.pos)
		p = p[m:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (b *spillBuffer) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.pos >= b.size {
		return 0, io.EOF
	}
	r, room, err := b.part()
	if err != nil {
		return 0, err
	}
	k := min(int64(len(p)), b.size-b.pos)
	if room >= 0 {
		k = min(k, room)
	}
	m, err := io.ReadFull(r, p[:k])
	b.pos += int64(m)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF // shorter than written: broken
	}
	return m, err
}

// WriteTo copies the bytes from the current offset to the end to w; it is
// how parquet-go copies a column chunk to the file (io.Copy).
func (b *spillBuffer) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for b.pos < b.size {
		r, room, err := b.part()
		if err != nil {
			return n, err
		}
		k := b.size - b.pos
		if room >= 0 {
			k = min(k, room)
		}
		m, err := io.CopyN(w, r, k)
		n += m
		b.pos += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (b *spillBuffer) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += b.pos
	case io.SeekEnd:
		offset += b.size
	}
	if offset < 0 {
		return b.pos, errors.New("parquetio: page buffer: seek to a negative offset")
	}
	b.pos = offset
	return offset, nil
}

// errorFile is the tail of a released buffer.
type errorFile struct{}

func (errorFile) Read([]byte) (int, error)       { return 0, errSpillReleased }
func (errorFile) Write([]byte) (int, error)      { return 0, errSpillReleased }
func (errorFile) Seek(int64, int) (int64, error) { return 0, errSpillReleased }
