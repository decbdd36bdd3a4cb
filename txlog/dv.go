package txlog

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
)

// dvMagic is the magic number that starts a serialized deletion vector
// bitmap, little endian (spec "Deletion Vector Format").
const dvMagic uint32 = 1681511377

// z85Alphabet is the Z85 (ZeroMQ RFC 32) alphabet, the base85 variant of the
// spec.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Value maps a byte to its digit value + 1 (0 = not in the alphabet).
var z85Value = func() (t [256]byte) {
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = byte(i + 1)
	}
	return t
}()

// z85Decode decodes Z85 text whose length is a multiple of 5 into 4 bytes
// per 5 characters. It returns an error for other lengths, characters
// outside the alphabet, or a group above 2^32-1.
func z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := range 5 {
			d := z85Value[s[i+j]]
			if d == 0 {
				return nil, fmt.Errorf("z85: invalid character %q at %d", s[i+j], i+j)
			}
			v = v*85 + uint64(d-1)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85: group at %d overflows 32 bits", i)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(v))
	}
	return out, nil
}

// Z85Encode encodes data, whose length must be a multiple of 4, as Z85.
func Z85Encode(data []byte) (string, error) {
	if len(data)%4 != 0 {
		return "", fmt.Errorf("z85: length %d is not a multiple of 4", len(data))
	}
	var b strings.Builder
	b.Grow(len(data) / 4 * 5)
	for i := 0; i < len(data); i += 4 {
		v := binary.BigEndian.Uint32(data[i:])
		var g [5]byte
		for j := 4; j >= 0; j-- {
			g[j] = z85Alphabet[v%85]
			v /= 85
		}
		b.Write(g[:])
	}
	return b.String(), nil
}

// AbsolutePath returns the location of an on-disk DV (spec "Derived
// Fields"): for storage type 'u' the table-relative path
// "<prefix>/deletion_vector_<uuid>.bin" (no prefix directory when the prefix
// is empty), for 'p' the URI-decoded absolute path. Inline DVs ('i') have no
// path: it returns an error, as for a malformed descriptor.
func (dv *DeletionVectorDescriptor) AbsolutePath() (string, error) {
	switch dv.StorageType {
	case "u":
		s := dv.PathOrInlineDv
		if len(s) < 20 {
			return "", fmt.Errorf("deletion vector: pathOrInlineDv %q is shorter than a z85 UUID", s)
		}
		prefix, enc := s[:len(s)-20], s[len(s)-20:]
		raw, err := z85Decode(enc)
		if err != nil {
			return "", fmt.Errorf("deletion vector: bad UUID: %w", err)
		}
		h := hex.EncodeToString(raw)
		name := "deletion_vector_" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32] + ".bin"
		if prefix == "" {
			return name, nil
		}
		return prefix + "/" + name, nil
	case "p":
		return DecodePath(dv.PathOrInlineDv), nil
	case "i":
		return "", errors.New("deletion vector: an inline DV has no path")
	}
	return "", fmt.Errorf("deletion vector: unknown storageType %q", dv.StorageType)
}

// loadDeletionVector returns the set of deleted row indexes (0-based
// positions in the data file) of dv: decoded from the descriptor for inline
// DVs ('i'), else read from the DV file in store ("Deletion Vector File
// Storage Format": big-endian size, bitmap, CRC-32 at dv.Offset). A nil dv
// yields an empty bitmap. Errors: store errors wrapped (objectstore.ErrNotExist
// for a missing file) and *CorruptLogError for a bad descriptor, size,
// checksum, magic number, bitmap or cardinality. The DV file must lie
// under the store's root (see PathResolver): a path elsewhere is a
// *CorruptLogError wrapping a *PathError (ErrPathOutsideTable), returned
// before any read. It never panics.
func loadDeletionVector(ctx context.Context, store objectstore.Store, dv *DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if dv == nil || dv.StorageType == "i" {
		return LoadDeletionVectorAt(ctx, store, "", dv)
	}
	key, err := dv.storeKey(store)
	if err != nil {
		return nil, corrupt("", -1, err, "deletion vector %s: path", dv.UniqueID())
	}
	return LoadDeletionVectorAt(ctx, store, key, dv)
}

// storeKey maps the DV's path to a key of store, refusing paths outside
// the store's root.
func (dv *DeletionVectorDescriptor) storeKey(store objectstore.Store) (string, error) {
	r, err := NewPathResolver(store.URI())
	if err != nil {
		return "", err
	}
	loc, err := dv.Locate(r)
	if err != nil {
		return "", err
	}
	return loc.Key, nil
}

// LoadDeletionVectorAt reads the deletion vector dv, for a DV file whose location
// the caller resolved already (DeletionVectorDescriptor.Locate): the file is
// read from key of store. Inline DVs ignore store and key.
func LoadDeletionVectorAt(ctx context.Context, store objectstore.Store, key string, dv *DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if dv == nil {
		return roaring64.New(), nil
	}
	bad := func(err error, format string, args ...any) error {
		return corrupt("", -1, err, "deletion vector %s: %s", dv.UniqueID(), fmt.Sprintf(format, args...))
	}
	if dv.SizeInBytes < 0 {
		return nil, bad(nil, "negative sizeInBytes %d", dv.SizeInBytes)
	}
	var data []byte
	switch dv.StorageType {
	case "i":
		enc := dv.PathOrInlineDv
		// Spark pads the encoded text to a multiple of 5 characters
		raw, err := z85Decode(enc)
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
			return nil, corrupt(key, -1, nil, "deletion vector at offset %d truncated: %d bytes, want %d", off, len(buf), 8+int(dv.SizeInBytes))
		}
		size := binary.BigEndian.Uint32(buf)
		if size != uint32(dv.SizeInBytes) {
			return nil, corrupt(key, -1, nil, "deletion vector at offset %d has size %d, descriptor says %d", off, size, dv.SizeInBytes)
		}
		data = buf[4 : 4+size]
		if sum := binary.BigEndian.Uint32(buf[4+size:]); sum != crc32.ChecksumIEEE(data) {
			return nil, corrupt(key, -1, nil, "deletion vector at offset %d: CRC-32 mismatch", off)
		}
	default:
		return nil, bad(nil, "unknown storageType %q", dv.StorageType)
	}
	bm, err := decodeDeletionVectorBitmap(data)
	if err != nil {
		return nil, bad(err, "bitmap")
	}
	if c := bm.GetCardinality(); c != uint64(dv.Cardinality) {
		return nil, bad(nil, "bitmap holds %d rows, cardinality says %d", c, dv.Cardinality)
	}
	return bm, nil
}

// dvNativeMagic is the magic number of the older "native" RoaringBitmapArray
// serialization (a 4-byte count, then per 32-bit bucket in key order a 4-byte
// size and a 32-bit RoaringBitmap), which Delta readers still accept. The
// inline example of the spec section "Deletion Vector Descriptor Schema" is
// in this format with big-endian header integers.
const dvNativeMagic uint32 = 1681511376

// decodeDeletionVectorBitmap decodes a serialized deletion vector: magic
// number + 64-bit portable RoaringBitmap (spec "Deletion Vector Format"); the
// older native format (magic 1681511376, little or big endian header) is
// accepted too. It returns an error for an unknown magic number, a malformed
// bitmap or trailing bytes, and never panics.
func decodeDeletionVectorBitmap(data []byte) (bm *roaring64.Bitmap, err error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("bitmap of %d bytes is too short", len(data))
	}
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, fmt.Errorf("malformed bitmap: %v", r)
		}
	}()
	switch {
	case binary.LittleEndian.Uint32(data) == dvMagic:
		return decodePortable(data[4:])
	case binary.LittleEndian.Uint32(data) == dvNativeMagic:
		return decodeNative(data[4:], binary.LittleEndian)
	case binary.BigEndian.Uint32(data) == dvNativeMagic:
		return decodeNative(data[4:], binary.BigEndian)
	}
	return nil, fmt.Errorf("magic number %d, want %d", binary.LittleEndian.Uint32(data), dvMagic)
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

// EncodeDeletionVectorBitmap serializes bm as magic number + 64-bit portable
// RoaringBitmap, the inverse of decodeDeletionVectorBitmap.
func EncodeDeletionVectorBitmap(bm *roaring64.Bitmap) ([]byte, error) {
	var b bytes.Buffer
	b.Write(binary.LittleEndian.AppendUint32(nil, dvMagic))
	if _, err := bm.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
