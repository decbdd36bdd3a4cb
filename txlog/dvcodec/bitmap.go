package dvcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// magic is the magic number that starts a serialized deletion vector
// bitmap, little endian (spec "Deletion Vector Format").
const magic uint32 = 1681511377

// nativeMagic is the magic number of the older "native" RoaringBitmapArray
// serialization (a 4-byte count, then per 32-bit bucket in key order a 4-byte
// size and a 32-bit RoaringBitmap), which Delta readers still accept. The
// inline example of the spec section "Deletion Vector Descriptor Schema" is
// in this format with big-endian header integers.
const nativeMagic uint32 = 1681511376

// decodeBitmap decodes a serialized deletion vector: magic
// number + 64-bit portable RoaringBitmap (spec "Deletion Vector Format"); the
// older native format (magic 1681511376, little or big endian header) is
// accepted too. It returns an error for an unknown magic number, a malformed
// bitmap or trailing bytes, and never panics.
func decodeBitmap(data []byte) (bm *roaring64.Bitmap, err error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("bitmap of %d bytes is too short", len(data))
	}
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, fmt.Errorf("malformed bitmap: %v", r)
		}
	}()
	switch {
	case binary.LittleEndian.Uint32(data) == magic:
		return decodePortable(data[4:])
	case binary.LittleEndian.Uint32(data) == nativeMagic:
		return decodeNative(data[4:], binary.LittleEndian)
	case binary.BigEndian.Uint32(data) == nativeMagic:
		return decodeNative(data[4:], binary.BigEndian)
	}
	return nil, fmt.Errorf("magic number %d, want %d", binary.LittleEndian.Uint32(data), magic)
}

func decodePortable(data []byte) (*roaring64.Bitmap, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("portable bitmap of %d bytes is too short", len(data))
	}
	// each bucket needs a 4-byte key and at least an 8-byte 32-bit header
	if n := binary.LittleEndian.Uint64(data); n > uint64(len(data)-8)/12 {
		return nil, fmt.Errorf("bitmap claims %d buckets in %d bytes", n, len(data))
	}
	bm := roaring64.New()
	n, err := bm.ReadFrom(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("malformed bitmap: %w", err)
	}
	if n != int64(len(data)) {
		return nil, fmt.Errorf("%d trailing bytes after the bitmap", int64(len(data))-n)
	}
	return bm, nil
}

func decodeNative(data []byte, order binary.ByteOrder) (*roaring64.Bitmap, error) {
	if len(data) < 4 {
		return nil, errors.New("native bitmap without a count")
	}
	count := order.Uint32(data)
	data = data[4:]
	if uint64(count) > uint64(len(data))/12 {
		return nil, fmt.Errorf("bitmap claims %d buckets in %d bytes", count, len(data))
	}
	out := roaring64.New()
	for key := range count {
		if len(data) < 4 {
			return nil, fmt.Errorf("bucket %d truncated", key)
		}
		size := order.Uint32(data)
		data = data[4:]
		if uint64(size) > uint64(len(data)) {
			return nil, fmt.Errorf("bucket %d of %d bytes truncated", key, size)
		}
		b := roaring.New()
		n, err := b.ReadFrom(bytes.NewReader(data[:size]))
		if err != nil || n != int64(size) {
			return nil, fmt.Errorf("malformed bucket %d: %v", key, err)
		}
		it := b.Iterator()
		high := uint64(key) << 32
		for it.HasNext() {
			out.Add(high | uint64(it.Next()))
		}
		data = data[size:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("%d trailing bytes after the bitmap", len(data))
	}
	return out, nil
}

// EncodeBitmap serializes bm as magic number + 64-bit portable
// RoaringBitmap (spec "Deletion Vector Format"), the form LoadAt reads.
// Errors are the bitmap library's write errors.
func EncodeBitmap(bm *roaring64.Bitmap) ([]byte, error) {
	var b bytes.Buffer
	b.Write(binary.LittleEndian.AppendUint32(nil, magic))
	if _, err := bm.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
