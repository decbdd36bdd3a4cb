package dvcodec

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
	"github.com/deltakit/deltakit/txlog/internal/z85"
)

// corrupt returns the *txlog.CorruptLogError of a malformed DV: file is
// the DV file's store key ("" when none); the table version is unknown.
func corrupt(file string, err error, format string, args ...any) *txlog.CorruptLogError {
	return &txlog.CorruptLogError{File: file, Version: -1, Reason: fmt.Sprintf(format, args...), Err: err}
}

// load returns the deleted row indexes of dv, its file (storage types 'u'
// and 'p') located under the store's root (txlog.PathResolver): a path
// elsewhere is a *txlog.CorruptLogError wrapping a *txlog.PathError
// (txlog.ErrPathOutsideTable), returned before any read.
func load(ctx context.Context, store objectstore.Store, dv *txlog.DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if dv == nil || dv.StorageType == "i" {
		return LoadAt(ctx, store, "", dv)
	}
	r, err := txlog.NewPathResolver(store.URI())
	if err != nil {
		return nil, corrupt("", err, "deletion vector %s: path", dv.UniqueID())
	}
	loc, err := dv.Locate(r)
	if err != nil {
		return nil, corrupt("", err, "deletion vector %s: path", dv.UniqueID())
	}
	return LoadAt(ctx, store, loc.Key, dv)
}

// LoadAt returns the set of deleted row indexes (0-based positions in the
// data file) of dv: decoded from the descriptor for inline DVs ('i', store
// and key unused), else read from key of store, the DV file whose location
// the caller resolved (txlog.DeletionVectorDescriptor.Locate), at dv.Offset
// (spec "Deletion Vector File Storage Format": big-endian size, bitmap,
// CRC-32). A nil dv yields an empty bitmap. Errors: store errors wrapped
// (objectstore.ErrNotExist for a missing file) and *txlog.CorruptLogError
// for a bad descriptor, size, checksum, magic number, bitmap or
// cardinality. It reads at most the descriptor's sizeInBytes + 8 bytes and
// never panics.
func LoadAt(ctx context.Context, store objectstore.Store, key string, dv *txlog.DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if dv == nil {
		return roaring64.New(), nil
	}
	bad := func(err error, format string, args ...any) error {
		return corrupt("", err, "deletion vector %s: %s", dv.UniqueID(), fmt.Sprintf(format, args...))
	}
	if dv.SizeInBytes < 0 {
		return nil, bad(nil, "negative sizeInBytes %d", dv.SizeInBytes)
	}
	var data []byte
	switch dv.StorageType {
	case "i":
		enc := dv.PathOrInlineDv
		// Spark pads the encoded text to a multiple of 5 characters
		raw, err := z85.Decode(enc)
		if err != nil {
			return nil, bad(err, "inline data")
		}
		if int(dv.SizeInBytes) > len(raw) {
			return nil, bad(nil, "inline data has %d bytes, sizeInBytes says %d", len(raw), dv.SizeInBytes)
		}
		data = raw[:dv.SizeInBytes]
	case "u", "p":
		if key == "" {
			return nil, bad(nil, "no file to read the %q deletion vector from", dv.StorageType)
		}
		off := int64(0)
		if dv.Offset != nil {
			off = int64(*dv.Offset)
		}
		if off < 0 {
			return nil, bad(nil, "negative offset %d", off)
		}
		buf, err := store.Get(ctx, key, objectstore.Range{Offset: off, Length: 4 + int64(dv.SizeInBytes) + 4})
		if err != nil {
			return nil, fmt.Errorf("txlog: reading deletion vector %s: %w", key, err)
		}
		if len(buf) < 8+int(dv.SizeInBytes) {
			return nil, corrupt(key, nil, "deletion vector at offset %d truncated: %d bytes, want %d", off, len(buf), 8+int(dv.SizeInBytes))
		}
		size := binary.BigEndian.Uint32(buf)
		if size != uint32(dv.SizeInBytes) {
			return nil, corrupt(key, nil, "deletion vector at offset %d has size %d, descriptor says %d", off, size, dv.SizeInBytes)
		}
		data = buf[4 : 4+size]
		if sum := binary.BigEndian.Uint32(buf[4+size:]); sum != crc32.ChecksumIEEE(data) {
			return nil, corrupt(key, nil, "deletion vector at offset %d: CRC-32 mismatch", off)
		}
	default:
		return nil, bad(nil, "unknown storageType %q", dv.StorageType)
	}
	bm, err := decodeBitmap(data)
	if err != nil {
		return nil, bad(err, "bitmap")
	}
	if c := bm.GetCardinality(); c != uint64(dv.Cardinality) {
		return nil, bad(nil, "bitmap holds %d rows, cardinality says %d", c, dv.Cardinality)
	}
	return bm, nil
}
