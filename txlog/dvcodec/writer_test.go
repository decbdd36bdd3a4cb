package dvcodec

import (
	"context"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakit/deltakit/objectstore"
	"github.com/deltakit/deltakit/txlog"
)

func TestDeletionVectorWriterRoundTrip(t *testing.T) {
	ctx := context.Background()
	store := objectstore.NewMem("dv")
	cases := [][]uint64{
		{0},
		{1, 2, 3, 999},
		{5, 1 << 33, 1<<33 + 7}, // two 32-bit buckets
	}
	w := NewWriter()
	var descs []*txlog.DeletionVectorDescriptor
	for _, rows := range cases {
		d, err := w.Add(roaring64.BitmapOf(rows...))
		if err != nil {
			t.Fatal(err)
		}
		descs = append(descs, d)
	}
	if _, err := w.Add(roaring64.New()); err == nil {
		t.Fatal("Add of an empty bitmap: no error")
	}
	if err := w.Write(ctx, store); err != nil {
		t.Fatal(err)
	}
	for i, d := range descs {
		p, err := d.AbsolutePath()
		if err != nil || p != w.Key() {
			t.Fatalf("DV %d: AbsolutePath = %q, %v; want %q", i, p, err, w.Key())
		}
		if d.Cardinality != int64(len(cases[i])) {
			t.Errorf("DV %d: cardinality %d, want %d", i, d.Cardinality, len(cases[i]))
		}
		bm, err := load(ctx, store, d)
		if err != nil {
			t.Fatalf("DV %d: %v", i, err)
		}
		if got := bm.ToArray(); len(got) != len(cases[i]) {
			t.Fatalf("DV %d: rows %v, want %v", i, got, cases[i])
		} else {
			for j := range got {
				if got[j] != cases[i][j] {
					t.Fatalf("DV %d: rows %v, want %v", i, got, cases[i])
				}
			}
		}
	}
	if *descs[0].Offset != 1 {
		t.Errorf("first DV at offset %d, want 1 (after the version byte)", *descs[0].Offset)
	}
}
