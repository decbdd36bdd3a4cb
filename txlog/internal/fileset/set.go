// Package fileset stores the live files (and tombstones) of a txlog
// snapshot: Set is a stack of maps that snapshots share instead of copying,
// and a set made with a Codec keeps its bottom level packed (packed.go):
// about a quarter of the memory of a map of values, which are materialised
// on demand. txlog's Snapshot talks to it through Set's methods (Put, Del,
// Get, Len, Each, AllSorted, SortedValues, Derive, Seal) and, when it reads
// a checkpoint, a Builder; the packed layout and its unsafe string views
// stay in this package.
package fileset

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Key identifies a logical file: its decoded path and the unique id of its
// deletion vector ("" without one). txlog.FileKey converts to and from it.
type Key struct {
	Path string
	DV   string
}

// Compare orders keys by path, then deletion vector.
// Fields are the fields of a file that a packed level stores for every
// file; the others are kept aside for the files that have them (R of Codec).
type Fields struct {
	Path             string
	PartitionValues  map[string]string
	Size             int64
	ModificationTime int64
	DataChange       bool
	Stats            string
}

// EmptyPartitionValues is the shared empty partitionValues map that a
// packed level gives every file whose map is empty.
var EmptyPartitionValues = map[string]string{}

// Codec tells a packed level how to take a T apart and put it together: R
// holds the fields of a T that Fields does not.
type Codec[T, R any] struct {
	// Key returns v's key.
	Key func(v *T) Key
	// Split returns v's fields, its other fields, and whether any of the
	// other fields is set. v's strings may be scratch memory: they are
	// copied.
	Split func(v *T) (Fields, R, bool)
	// Join sets *v to the file of f and r (nil: none of the other fields
	// is set). f's strings may share memory with other files: they are
	// not to be modified.
	Join func(v *T, f *Fields, r *R)
}

// Set is the live-file (or tombstone) state of a snapshot: a stack of
// maps, newest first, that snapshots share instead of copying. Once a
// snapshot is published its levels are never modified, so a snapshot
// derived from it (a commit, an Update) costs a new small top level plus an
// amortised share of the merges, not a copy of every file.
//
// A lookup walks the levels from the top; the first level holding the key
// decides, and a nil value there means the key was removed. The bottom level
// holds no nil values. After each build, seal merges a level into the one
// below it while it is not at least levelRatio times smaller, so there are at
// most log_levelRatio(n)+1 levels and every entry is copied O(levelRatio)
// times per level it moves down.
//
// The bottom level of a set with a codec (NewPacking; the live files) is
// packed (Packed) when it is built from a checkpoint, when a merge
// builds it, and when the set's only level holds at least packMin keys: a
// packed level keeps a file in about a quarter of the memory of a map of
// *Add, and its values are materialised on demand.
type Set[T any] struct {
	levels []*fileLevel[T] // newest first; levels[0] is private while building
	n      int             // number of live keys
	keyOf  func(*T) Key
	pack   func(sorted []entry[T]) level[T] // nil: never packed
}

// level is a compact, immutable bottom level (packedFiles).
type level[T any] interface {
	has(k Key) bool
	// get returns the value of k, materialised: it is the same pointer as
	// in sortedValues once those are computed, a new value before.
	get(k Key) (*T, bool)
	len() int
	sortedValues(keyOf func(*T) Key) []*T
	// all yields the values in key order: those of sortedValues once they
	// are computed, else values materialised for the call and not kept.
	all(yield func(*T) bool)
	// merge returns the level with delta (sorted by key, nil values
	// removing their key) applied.
	merge(delta []entry[T]) level[T]
	// isReady reports whether the sorted values are materialised and kept.
	isReady() bool
	// reordered reports whether the records are not in key order.
	reordered() bool
}

// fileLevel is one map of a Set, plus its sorted entries (computed once,
// on demand, for the bottom level), or a packed bottom level.
type fileLevel[T any] struct {
	m        levelMap[T]
	packed   level[T] // set: the level is packed and m is unused
	sortOnce sync.Once
	sorted   []*T        // values sorted by key (keys are recomputed: keyOf)
	ready    atomic.Bool // sorted is set
	// A bottom level merged from a sorted bottom level: its sorted values
	// are seed (the old level's) merged with the changes in seedDelta, which
	// is cheaper than sorting again. Both are dropped once sorted is set.
	seed      []*T
	seedDelta *levelMap[T]
}

// levelMap is a map from Key, split in two to keep the common entry
// small: files without a deletion vector are keyed by path alone.
type levelMap[T any] struct {
	byPath map[string]*T // keys with DV ""
	withDV map[Key]*T    // keys with a DV; nil until needed
}

func newLevelMap[T any](size int) levelMap[T] {
	return levelMap[T]{byPath: make(map[string]*T, size)}
}

func (m *levelMap[T]) get(k Key) (*T, bool) {
	if k.DV == "" {
		v, ok := m.byPath[k.Path]
		return v, ok
	}
	v, ok := m.withDV[k]
	return v, ok
}

func (m *levelMap[T]) set(k Key, v *T) {
	if k.DV == "" {
		m.byPath[k.Path] = v
		return
	}
	if m.withDV == nil {
		m.withDV = map[Key]*T{}
	}
	m.withDV[k] = v
}

func (m *levelMap[T]) del(k Key) {
	if k.DV == "" {
		delete(m.byPath, k.Path)
	} else {
		delete(m.withDV, k)
	}
}

func (m *levelMap[T]) len() int { return len(m.byPath) + len(m.withDV) }

func (m *levelMap[T]) clone() levelMap[T] {
	return levelMap[T]{byPath: maps.Clone(m.byPath), withDV: maps.Clone(m.withDV)}
}

// all yields every entry, nil values included.
func (m *levelMap[T]) all(fn func(Key, *T)) {
	for p, v := range m.byPath {
		fn(Key{Path: p}, v)
	}
	for k, v := range m.withDV {
		fn(k, v)
	}
}

type entry[T any] struct {
	k Key
	v *T
}

// levelRatio is how many times smaller than the level below it a level must
// be to stay separate.
const levelRatio = 8

func Compare(a, b Key) int {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	return strings.Compare(a.DV, b.DV)
}

func (l *fileLevel[T]) get(k Key) (*T, bool) {
	if l.packed != nil {
		return l.packed.get(k)
	}
	return l.m.get(k)
}

// has reports whether the level holds k, and whether k is live there.
func (l *fileLevel[T]) has(k Key) (held, live bool) {
	if l.packed != nil {
		ok := l.packed.has(k)
		return ok, ok
	}
	v, ok := l.m.get(k)
	return ok, v != nil
}

func (l *fileLevel[T]) len() int {
	if l.packed != nil {
		return l.packed.len()
	}
	return l.m.len()
}

// New returns an empty set that never packs, with one private level.
func New[T any](keyOf func(*T) Key) Set[T] {
	return Set[T]{levels: []*fileLevel[T]{{m: newLevelMap[T](0)}}, keyOf: keyOf}
}

// NewPacking returns an empty set, with one private level, that packs its
// bottom level with c (see Set).
func NewPacking[T, R any](c *Codec[T, R]) Set[T] {
	s := New(c.Key)
	s.pack = func(es []entry[T]) level[T] { return packEntries(c, es) }
	return s
}

// FromPacked returns a packing set whose bottom level is p (a Builder's),
// with an empty private level above it.
func FromPacked[T, R any](p *Packed[T, R]) Set[T] {
	s := NewPacking(p.codec)
	s.levels = append(s.levels, &fileLevel[T]{packed: p})
	s.n = p.len()
	return s
}

// Derive returns a set that shares every level of s under a new, empty,
// private top level.
func (s *Set[T]) Derive() Set[T] {
	levels := make([]*fileLevel[T], 0, len(s.levels)+1)
	levels = append(levels, &fileLevel[T]{m: newLevelMap[T](0)})
	levels = append(levels, s.levels...)
	return Set[T]{levels: levels, n: s.n, keyOf: s.keyOf, pack: s.pack}
}

// liveFrom reports whether k is live in levels[from:], without
// materialising a packed value.
func (s *Set[T]) liveFrom(from int, k Key) bool {
	for _, l := range s.levels[from:] {
		if held, live := l.has(k); held {
			return live
		}
	}
	return false
}

func (s *Set[T]) Get(k Key) (*T, bool) {
	for _, l := range s.levels {
		if v, ok := l.get(k); ok {
			return v, v != nil
		}
	}
	return nil, false
}

// Len returns the number of live keys.
func (s *Set[T]) Len() int { return s.n }

// Put sets k in the private top level.
func (s *Set[T]) Put(k Key, v *T) {
	if !s.liveFrom(0, k) {
		s.n++
	}
	s.levels[0].m.set(k, v)
}

// PutNew sets k, known not to be live, in a set of one level (checkpoint
// rows hold reconciled state).
func (s *Set[T]) PutNew(k Key, v *T) {
	if len(s.levels) > 1 {
		s.Put(k, v)
		return
	}
	m := &s.levels[0].m
	if _, dup := m.get(k); !dup {
		s.n++
	}
	m.set(k, v)
}

// Del removes k through the private top level.
func (s *Set[T]) Del(k Key) {
	top := &s.levels[0].m
	if s.liveFrom(0, k) {
		s.n--
	}
	if len(s.levels) > 1 {
		if s.liveFrom(1, k) {
			top.set(k, nil)
			return
		}
	}
	top.del(k)
}

// Seal makes the set ready to publish: an empty top level is dropped, and
// levels are merged from the top while a level is not levelRatio times
// smaller than the one below. A bottom level that a merge built, or a lone
// private level of at least packMin keys, is packed when the set packs.
// The levels of the result are never modified again.
func (s *Set[T]) Seal() {
	fresh := len(s.levels) == 1 // the private level is the only one
	if len(s.levels) > 1 && s.levels[0].len() == 0 {
		s.levels = s.levels[1:]
	}
	for len(s.levels) > 1 && s.levels[0].len()*levelRatio > s.levels[1].len() {
		top := &s.levels[0].m
		bottom := len(s.levels) == 2
		var l *fileLevel[T]
		if p := s.levels[1].packed; p != nil {
			// only the bottom level is packed
			l = &fileLevel[T]{packed: p.merge(sortedEntries(top))}
		} else {
			m := s.levels[1].m.clone()
			if m.byPath == nil {
				m.byPath = map[string]*T{}
			}
			top.all(func(k Key, v *T) {
				if v == nil && bottom {
					m.del(k)
				} else {
					m.set(k, v)
				}
			})
			l = &fileLevel[T]{m: m}
			if old := s.levels[1]; bottom && old.ready.Load() {
				l.seed, l.seedDelta = old.sorted, top
			}
		}
		fresh = fresh || bottom
		levels := make([]*fileLevel[T], 0, len(s.levels)-1)
		levels = append(levels, l)
		s.levels = append(levels, s.levels[2:]...)
	}
	if b := s.levels[len(s.levels)-1]; fresh && s.pack != nil && b.packed == nil && b.m.len() >= packMin {
		s.levels[len(s.levels)-1] = &fileLevel[T]{packed: s.pack(sortedEntries(&b.m))}
	}
}

// sortedOverlay returns the entries of an overlay map sorted by key.
func sortedOverlay[T any](over map[Key]*T) []entry[T] {
	es := make([]entry[T], 0, len(over))
	for k, v := range over {
		es = append(es, entry[T]{k, v})
	}
	slices.SortFunc(es, func(a, b entry[T]) int { return Compare(a.k, b.k) })
	return es
}

// sortedEntries returns the entries of m sorted by key.
func sortedEntries[T any](m *levelMap[T]) []entry[T] {
	es := make([]entry[T], 0, m.len())
	m.all(func(k Key, v *T) { es = append(es, entry[T]{k, v}) })
	slices.SortFunc(es, func(a, b entry[T]) int { return Compare(a.k, b.k) })
	return es
}

// overlay returns the newest entry of every key held above the bottom level
// (nil values: removed), or nil when there is only the bottom level.
func (s *Set[T]) overlay() map[Key]*T {
	if len(s.levels) == 1 {
		return nil
	}
	n := 0
	for _, l := range s.levels[:len(s.levels)-1] {
		n += l.len()
	}
	over := make(map[Key]*T, n)
	for _, l := range s.levels[:len(s.levels)-1] {
		l.m.all(func(k Key, v *T) {
			if _, newer := over[k]; !newer {
				over[k] = v
			}
		})
	}
	return over
}

// Each calls fn for every live key, in no particular order.
func (s *Set[T]) Each(fn func(Key, *T)) {
	over := s.overlay()
	visit := func(k Key, v *T) {
		if _, shadowed := over[k]; !shadowed {
			fn(k, v)
		}
	}
	if b := s.levels[len(s.levels)-1]; b.packed != nil {
		b.packed.all(func(v *T) bool { // materialised for the call, not kept
			visit(s.keyOf(v), v)
			return true
		})
	} else {
		b.m.all(visit)
	}
	for k, v := range over {
		if v != nil {
			fn(k, v)
		}
	}
}

// sortedValues returns the bottom level's values sorted by key, computed
// once per level (levels are shared between snapshots).
func (l *fileLevel[T]) sortedValues(keyOf func(*T) Key) []*T {
	l.sortOnce.Do(func() {
		if l.seedDelta != nil {
			l.sorted = mergeSorted(l.seed, sortedEntries(l.seedDelta), l.m.len(), keyOf)
		} else {
			es := sortedEntries(&l.m)
			l.sorted = make([]*T, len(es))
			for i, e := range es {
				l.sorted[i] = e.v
			}
		}
		l.seed, l.seedDelta = nil, nil
		l.ready.Store(true)
	})
	return l.sorted
}

// mergeSorted returns the values of base (sorted by key, keys given by
// keyOf) overridden by ov (sorted by key, one entry a key; nil values:
// removed), sorted by key.
func mergeSorted[T any](base []*T, ov []entry[T], size int, keyOf func(*T) Key) []*T {
	if len(ov) == 0 {
		return slices.Clone(base)
	}
	out := make([]*T, 0, size)
	// base and ov are sorted by key and each has a key once: the run of
	// base before each overlay key is found by a galloping search, so a
	// small overlay over a large level computes few of base's keys
	// (keyOf may decode a path) and copies the runs between them whole.
	i := 0
	for _, e := range ov {
		p := gallop(base, i, e.k, keyOf)
		out = append(out, base[i:p]...)
		i = p
		if i < len(base) && Compare(keyOf(base[i]), e.k) == 0 {
			i++
		}
		if e.v != nil {
			out = append(out, e.v)
		}
	}
	return append(out, base[i:]...)
}

// gallop returns the first index from lo of sorted base whose key is at
// least k: it probes lo, lo+1, lo+3, lo+7, ... until a key is at least k,
// then searches the last step's range, so the keys computed grow with
// the logarithm of the distance from lo, not of len(base).
func gallop[T any](base []*T, lo int, k Key, keyOf func(*T) Key) int {
	step, hi := 1, lo
	for hi < len(base) && Compare(keyOf(base[hi]), k) < 0 {
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, len(base))
	return lo + sort.Search(hi-lo, func(x int) bool { return Compare(keyOf(base[lo+x]), k) >= 0 })
}

// AllSorted yields the live values in the order of sortedValues without
// building that slice: a packed bottom level materialises its values for
// the call only (level.all), so going once through every file keeps
// the set at its packed size.
func (s *Set[T]) AllSorted(yield func(*T) bool) {
	b := s.levels[len(s.levels)-1]
	bottom := func(y func(*T) bool) {
		for _, v := range b.sortedValues(s.keyOf) {
			if !y(v) {
				return
			}
		}
	}
	if b.packed != nil {
		bottom = b.packed.all
	}
	over := s.overlay()
	if len(over) == 0 {
		bottom(yield)
		return
	}
	ov := sortedOverlay(over)
	j, stopped := 0, false
	// emit yields the overlay's live value of entry j.
	emit := func() bool {
		v := ov[j].v
		j++
		if v != nil && !yield(v) {
			stopped = true
			return false
		}
		return true
	}
	bottom(func(v *T) bool {
		k := s.keyOf(v)
		for j < len(ov) && Compare(ov[j].k, k) < 0 {
			if !emit() {
				return false
			}
		}
		if j < len(ov) && Compare(ov[j].k, k) == 0 {
			return emit() // the overlay's entry replaces or removes v
		}
		if !yield(v) {
			stopped = true
			return false
		}
		return true
	})
	for !stopped && j < len(ov) {
		emit()
	}
}

// SortedValues returns the live values sorted by key: the bottom level's
// sorted values (shared) merged with the sorted overlay. The slice is
// shared when the set has one level.
func (s *Set[T]) SortedValues() []*T {
	var vs []*T
	if b := s.levels[len(s.levels)-1]; b.packed != nil {
		vs = b.packed.sortedValues(s.keyOf)
	} else {
		vs = b.sortedValues(s.keyOf)
	}
	if over := s.overlay(); len(over) > 0 {
		vs = mergeSorted(vs, sortedOverlay(over), s.n, s.keyOf)
	}
	return vs
}

// Layout describes how a set is stored; tests and diagnostics read it.
type Layout struct {
	Levels int  // maps (and packed levels) stacked, newest first
	Packed bool // the bottom level is packed
	// Materialised: the packed bottom level keeps its values materialised
	// (SortedValues was called on it).
	Materialised bool
	// Reordered: the packed bottom level's records are not in key order
	// (a checkpoint not written in key order) and it keeps an order.
	Reordered bool
}

// Layout returns how s is stored.
func (s *Set[T]) Layout() Layout {
	l := Layout{Levels: len(s.levels)}
	if p := s.levels[len(s.levels)-1].packed; p != nil {
		l.Packed, l.Materialised, l.Reordered = true, p.isReady(), p.reordered()
	}
	return l
}
