package dvcodec

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

// The examples of the spec section "Deletion Vector Descriptor Schema".
func TestDeletionVectorSpecExamples(t *testing.T) {
	u := &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: i32(4), SizeInBytes: 40, Cardinality: 6}
	if p, err := u.AbsolutePath(); err != nil || p != "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin" {
		t.Errorf("AbsolutePath('u') = %q, %v", p, err)
	}
	noPrefix := &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "^-aqEH.-t@S}K{vb[*k^"}
	if p, err := noPrefix.AbsolutePath(); err != nil || p != "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin" {
		t.Errorf("AbsolutePath without prefix = %q, %v", p, err)
	}
	abs := &txlog.DeletionVectorDescriptor{StorageType: "p", PathOrInlineDv: "s3://mytable/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"}
	if p, err := abs.AbsolutePath(); err != nil || p != abs.PathOrInlineDv {
		t.Errorf("AbsolutePath('p') = %q, %v", p, err)
	}
	inline := &txlog.DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
	bm, err := load(context.Background(), objectstore.NewMem("x"), inline)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bm.ToArray(), []uint64{3, 4, 7, 11, 18, 29}; !slices.Equal(got, want) {
		t.Errorf("inline rows %v, want %v", got, want)
	}
	if _, err := inline.AbsolutePath(); err == nil {
		t.Error("inline DV has a path")
	}
}

// dvFile builds a DV file (spec "Deletion Vector File Storage Format") with
// the given bitmaps and returns it with the offset of each.
func dvFile(t *testing.T, bitmaps ...*roaring64.Bitmap) ([]byte, []int32, []int32) {
	t.Helper()
	data := []byte{1}
	var offsets, sizes []int32
	for _, bm := range bitmaps {
		b, err := EncodeBitmap(bm)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, int32(len(data)))
		sizes = append(sizes, int32(len(b)))
		data = binary.BigEndian.AppendUint32(data, uint32(len(b)))
		data = append(data, b...)
		data = binary.BigEndian.AppendUint32(data, crc32.ChecksumIEEE(b))
	}
	return data, offsets, sizes
}

func TestLoadDeletionVectorFromFile(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("dv")
	small := roaring64.BitmapOf(0, 5, 9)
	large := roaring64.New()
	large.AddRange(100, 70_000)
	large.Add(1 << 40) // a second 32-bit bucket
	data, offsets, sizes := dvFile(t, small, large)
	uuidZ85 := "^-aqEH.-t@S}K{vb[*k^"
	path := "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
	if err := store.Put(ctx, path, data); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", data); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dv   *txlog.DeletionVectorDescriptor
		want *roaring64.Bitmap
		err  error
	}{
		{"relative with prefix, first", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab" + uuidZ85, Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}, small, nil},
		{"relative with prefix, second", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab" + uuidZ85, Offset: &offsets[1], SizeInBytes: sizes[1], Cardinality: int64(large.GetCardinality())}, large, nil},
		{"relative without prefix", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: uuidZ85, Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}, small, nil},
		{"absolute under the store", &txlog.DeletionVectorDescriptor{StorageType: "p", PathOrInlineDv: "mem://dv/ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}, small, nil},
		{"absolute elsewhere", &txlog.DeletionVectorDescriptor{StorageType: "p", PathOrInlineDv: "s3://other/x.bin", Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}, nil, txlog.ErrPathOutsideTable},
		{"absolute elsewhere is a corrupt log", &txlog.DeletionVectorDescriptor{StorageType: "p", PathOrInlineDv: "file:///x.bin", Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}, nil, txlog.ErrCorruptLog},
		{"relative with a .. prefix", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "../" + uuidZ85, Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}, nil, txlog.ErrPathOutsideTable},
		{"wrong cardinality", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: uuidZ85, Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 4}, nil, txlog.ErrCorruptLog},
		{"wrong size", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: uuidZ85, Offset: &offsets[0], SizeInBytes: sizes[0] + 1, Cardinality: 3}, nil, txlog.ErrCorruptLog},
		{"wrong offset", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: uuidZ85, Offset: i32(offsets[0] + 1), SizeInBytes: sizes[0], Cardinality: 3}, nil, txlog.ErrCorruptLog},
		{"missing file", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "zz" + uuidZ85, Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}, nil, objectstore.ErrNotExist},
		{"bad z85", &txlog.DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab~-aqEH.-t@S}K{vb[*k^", SizeInBytes: 1}, nil, txlog.ErrCorruptLog},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bm, err := load(ctx, store, tt.dv)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bm.Equals(tt.want) {
				t.Errorf("rows differ: %d vs %d", bm.GetCardinality(), tt.want.GetCardinality())
			}
		})
	}
	// a flipped byte fails the checksum
	data[offsets[0]+6] ^= 0xFF
	if err := store.Put(ctx, path, data); err != nil {
		t.Fatal(err)
	}
	_, err := load(ctx, store, tests[0].dv)
	if !errors.Is(err, txlog.ErrCorruptLog) {
		t.Errorf("checksum mismatch: %v", err)
	}
}

func TestDecodeBitmapRejects(t *testing.T) {
	good, err := EncodeBitmap(roaring64.BitmapOf(1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	huge := slices.Clone(good)
	binary.LittleEndian.PutUint64(huge[4:], 1<<62)
	for name, data := range map[string][]byte{
		"empty":         nil,
		"wrong magic":   append([]byte{1, 2, 3, 4}, good[4:]...),
		"truncated":     good[:len(good)-2],
		"trailing":      append(slices.Clone(good), 0),
		"huge buckets":  huge,
		"garbage":       append(slices.Clone(good[:12]), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF),
		"only a header": good[:12],
	} {
		if _, err := decodeBitmap(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeBitmap(f *testing.F) {
	good, _ := EncodeBitmap(roaring64.BitmapOf(1, 2, 3, 1<<33))
	f.Add(good)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeBitmap(data) // must not panic
	})
}

func i32(v int32) *int32 { return &v }
