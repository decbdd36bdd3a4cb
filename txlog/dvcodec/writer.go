package dvcodec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/txlog/internal/z85"
)

// Writer collects the deletion vectors of one operation into one DV file,
// "deletion_vector_<uuid>.bin" at the table root (spec "Deletion Vector
// File Storage Format"): a version byte (1), then per DV its size in bytes
// (big-endian int32), the serialized bitmap (EncodeBitmap) and its CRC-32
// (big-endian). Each descriptor has storage type 'u' (a path derived from
// the file's UUID, no prefix), the offset of its size field, sizeInBytes and
// cardinality.
//
// Add bitmaps with Add, then write the file once with Write; descriptors are
// valid only after Write succeeds. A Writer is not safe for concurrent use.
type Writer struct {
	id    uuid.UUID
	buf   bytes.Buffer
	descs []*txlog.DeletionVectorDescriptor
}

// NewWriter starts a DV file with a fresh random UUID.
func NewWriter() *Writer {
	w := &Writer{id: uuid.New()}
	w.buf.WriteByte(1)
	return w
}

// Key returns the store key of the DV file, relative to the table root.
func (w *Writer) Key() string { return "deletion_vector_" + w.id.String() + ".bin" }

// Len returns how many DVs were added.
func (w *Writer) Len() int { return len(w.descs) }

// Add appends bm (row indexes of one data file, 0-based, spec "Deletion
// Vectors") and returns its descriptor. An empty bitmap is an error: a file
// with no deleted rows carries no DV. The file must stay below 2 GiB (the
// descriptor's offset is an int32).
func (w *Writer) Add(bm *roaring64.Bitmap) (*txlog.DeletionVectorDescriptor, error) {
	if bm == nil || bm.IsEmpty() {
		return nil, fmt.Errorf("txlog: deletion vector %d of %s is empty", len(w.descs), w.Key())
	}
	data, err := EncodeBitmap(bm)
	if err != nil {
		return nil, fmt.Errorf("txlog: encoding deletion vector %d of %s: %w", len(w.descs), w.Key(), err)
	}
	off := w.buf.Len()
	if int64(off)+int64(len(data))+8 > math.MaxInt32 {
		return nil, fmt.Errorf("txlog: deletion vector file %s would exceed 2 GiB", w.Key())
	}
	w.buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(data))))
	w.buf.Write(data)
	w.buf.Write(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(data)))
	enc, err := z85.Encode(w.id[:])
	if err != nil {
		return nil, err
	}
	off32 := int32(off)
	d := &txlog.DeletionVectorDescriptor{
		StorageType:    "u",
		PathOrInlineDv: enc,
		Offset:         &off32,
		SizeInBytes:    int32(len(data)),
		Cardinality:    int64(bm.GetCardinality()),
	}
	w.descs = append(w.descs, d)
	return d, nil
}

// Write stores the DV file under Key in store (a plain put: the name is
// unique). It does nothing when no DV was added.
func (w *Writer) Write(ctx context.Context, store objectstore.Store) error {
	if len(w.descs) == 0 {
		return nil
	}
	if err := store.Put(ctx, w.Key(), w.buf.Bytes()); err != nil {
		return fmt.Errorf("txlog: writing deletion vector file %s: %w", w.Key(), err)
	}
	return nil
}

// Inline returns the inline descriptor (storage type 'i') of bm: the
// serialized bitmap, zero-padded to a multiple of 4 bytes, in Z85 text;
// sizeInBytes is the unpadded size (spec "Deletion Vector Descriptor
// Schema"). An empty bitmap is an error, as for Writer.Add.
func Inline(bm *roaring64.Bitmap) (*txlog.DeletionVectorDescriptor, error) {
	if bm == nil || bm.IsEmpty() {
		return nil, fmt.Errorf("txlog: inline deletion vector is empty")
	}
	raw, err := EncodeBitmap(bm)
	if err != nil {
		return nil, fmt.Errorf("txlog: encoding inline deletion vector: %w", err)
	}
	size := len(raw)
	for len(raw)%4 != 0 {
		raw = append(raw, 0)
	}
	enc, err := z85.Encode(raw)
	if err != nil {
		return nil, err
	}
	return &txlog.DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: enc,
		SizeInBytes: int32(size), Cardinality: int64(bm.GetCardinality())}, nil
}
