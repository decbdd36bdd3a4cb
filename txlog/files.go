package txlog

import "github.com/deltakit/deltakit/txlog/internal/fileset"

// This file is txlog's side of the snapshot file-set storage
// (internal/fileset): a snapshot keeps its live files and tombstones in
// fileSets, which share levels between snapshots and keep the live files
// packed; txlog sees only these methods, keyed by FileKey. How an add is
// taken apart for packing (addCodec, splitAdd, joinAdd) is generated from
// the checkpoint field table (checkpoint_rows.go).

// fileSet is the live files (T = Add) or tombstones (T = Remove) of a
// snapshot. A published snapshot's set is never modified: a new snapshot
// derives a set from it, changes that, and seals it.
type fileSet[T any] struct{ s fileset.Set[T] }

func addKey(a *Add) fileset.Key       { return fileset.Key(a.Key()) }
func removeKey(r *Remove) fileset.Key { return fileset.Key(r.Key()) }

// newAddSet returns an empty set of live files, packed once large.
func newAddSet() fileSet[Add] { return fileSet[Add]{fileset.NewPacking(&addCodec)} }

// newRemoveSet returns an empty set of tombstones (never packed).
func newRemoveSet() fileSet[Remove] { return fileSet[Remove]{fileset.New(removeKey)} }

// packBuilder packs the adds of a checkpoint as it is read: row groups in
// segments (packSeg, one per decoding goroutine), single adds directly.
type (
	packBuilder = fileset.Builder[Add, addRareFields]
	packSeg     = fileset.Seg[Add, addRareFields]
)

func newPackBuilder() *packBuilder { return fileset.NewBuilder(&addCodec) }
func newPackSeg(n int) *packSeg    { return fileset.NewSeg(&addCodec, n) }

// packInto packs a into seg. It calls splitAdd and addKey directly (not
// through addCodec's function values, as seg.Add does), so that a, the
// checkpoint reader's scratch add, stays on the caller's stack: through
// the codec every add of a checkpoint was moved to the heap (about 100
// bytes per file of garbage while the checkpoint loads, +60 MiB of peak
// RSS at 1,000,000 files).
func packInto(seg *packSeg, a *Add) {
	f, r, hasRare := splitAdd(a)
	seg.Pack(&f, r, hasRare, addKey(a))
}

// addSetOf returns the set of live files packed by pb.
func addSetOf(pb *packBuilder) fileSet[Add] { return fileSet[Add]{fileset.FromPacked(pb.Finish())} }

// derive returns a set that shares every level of f under a new private
// level, to be changed and sealed.
func (f *fileSet[T]) derive() fileSet[T] { return fileSet[T]{f.s.Derive()} }

// seal makes the set ready to publish (fileset.Set.Seal).
func (f *fileSet[T]) seal() { f.s.Seal() }

func (f *fileSet[T]) put(k FileKey, v *T) { f.s.Put(fileset.Key(k), v) }

// putNew sets k, known not to be live (checkpoint rows hold reconciled
// state).
func (f *fileSet[T]) putNew(k FileKey, v *T) { f.s.PutNew(fileset.Key(k), v) }

func (f *fileSet[T]) del(k FileKey) { f.s.Del(fileset.Key(k)) }

func (f *fileSet[T]) get(k FileKey) (*T, bool) { return f.s.Get(fileset.Key(k)) }

// len returns the number of live keys.
func (f *fileSet[T]) len() int { return f.s.Len() }

// each calls fn for every live key, in no particular order.
func (f *fileSet[T]) each(fn func(FileKey, *T)) {
	f.s.Each(func(k fileset.Key, v *T) { fn(FileKey(k), v) })
}

// allSorted yields the live values in key order without keeping them.
func (f *fileSet[T]) allSorted(yield func(*T) bool) { f.s.AllSorted(yield) }

// sortedValues returns the live values in key order (shared; not to be
// modified).
func (f *fileSet[T]) sortedValues() []*T { return f.s.SortedValues() }

// compareFileKeys orders file keys by path, then deletion vector.
func compareFileKeys(a, b FileKey) int { return fileset.Compare(fileset.Key(a), fileset.Key(b)) }
