package txlog

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// fileSet is the live-file (or tombstone) state of a snapshot: a stack of
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
type fileSet[T any] struct {
	levels []*fileLevel[T] // newest first; levels[0] is private while building
	n      int             // number of live keys
	keyOf  func(*T) FileKey
}

// fileLevel is one map of a fileSet, plus its sorted entries (computed once,
// on demand, for the bottom level).
type fileLevel[T any] struct {
	m        levelMap[T]
	sortOnce sync.Once
	sorted   []*T        // values sorted by key (keys are recomputed: keyOf)
	ready    atomic.Bool // sorted is set
	// A bottom level merged from a sorted bottom level: its sorted values
	// are seed (the old level's) merged with the changes in seedDelta, which
	// is cheaper than sorting again. Both are dropped once sorted is set.
	seed      []*T
	seedDelta *levelMap[T]
}

// levelMap is a map from FileKey, split in two to keep the common entry
// small: files without a deletion vector are keyed by path alone.
type levelMap[T any] struct {
	byPath map[string]*T  // keys with DV ""
	withDV map[FileKey]*T // keys with a DV; nil until needed
}

func newLevelMap[T any](size int) levelMap[T] {
	return levelMap[T]{byPath: make(map[string]*T, size)}
}

func (m *levelMap[T]) get(k FileKey) (*T, bool) {
	if k.DV == "" {
		v, ok := m.byPath[k.Path]
		return v, ok
	}
	v, ok := m.withDV[k]
	return v, ok
}

func (m *levelMap[T]) set(k FileKey, v *T) {
	if k.DV == "" {
		m.byPath[k.Path] = v
		return
	}
	if m.withDV == nil {
		m.withDV = map[FileKey]*T{}
	}
	m.withDV[k] = v
}

func (m *levelMap[T]) del(k FileKey) {
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
func (m *levelMap[T]) all(fn func(FileKey, *T)) {
	for p, v := range m.byPath {
		fn(FileKey{Path: p}, v)
	}
	for k, v := range m.withDV {
		fn(k, v)
	}
}

type fileEntry[T any] struct {
	k FileKey
	v *T
}

// levelRatio is how many times smaller than the level below it a level must
// be to stay separate.
const levelRatio = 8

func compareFileKeys(a, b FileKey) int {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c
	}
	return strings.Compare(a.DV, b.DV)
}

// newFileSet returns an empty set with one private level.
func newFileSet[T any](keyOf func(*T) FileKey) fileSet[T] {
	return fileSet[T]{levels: []*fileLevel[T]{{m: newLevelMap[T](0)}}, keyOf: keyOf}
}

// derive returns a set that shares every level of s under a new, empty,
// private top level.
func (s *fileSet[T]) derive() fileSet[T] {
	levels := make([]*fileLevel[T], 0, len(s.levels)+1)
	levels = append(levels, &fileLevel[T]{m: newLevelMap[T](0)})
	levels = append(levels, s.levels...)
	return fileSet[T]{levels: levels, n: s.n, keyOf: s.keyOf}
}

// lookupFrom returns the value of k in levels[from:], ok false when absent
// or removed.
func (s *fileSet[T]) lookupFrom(from int, k FileKey) (*T, bool) {
	for _, l := range s.levels[from:] {
		if v, ok := l.m.get(k); ok {
			return v, v != nil
		}
	}
	return nil, false
}

func (s *fileSet[T]) get(k FileKey) (*T, bool) { return s.lookupFrom(0, k) }

// len returns the number of live keys.
func (s *fileSet[T]) len() int { return s.n }

// put sets k in the private top level.
func (s *fileSet[T]) put(k FileKey, v *T) {
	if _, live := s.get(k); !live {
		s.n++
	}
	s.levels[0].m.set(k, v)
}

// putNew sets k, known not to be live, in a set of one level (checkpoint
// rows hold reconciled state).
func (s *fileSet[T]) putNew(k FileKey, v *T) {
	if len(s.levels) > 1 {
		s.put(k, v)
		return
	}
	m := &s.levels[0].m
	if _, dup := m.get(k); !dup {
		s.n++
	}
	m.set(k, v)
}

// del removes k through the private top level.
func (s *fileSet[T]) del(k FileKey) {
	top := &s.levels[0].m
	if _, live := s.get(k); live {
		s.n--
	}
	if len(s.levels) > 1 {
		if _, below := s.lookupFrom(1, k); below {
			top.set(k, nil)
			return
		}
	}
	top.del(k)
}

// seal makes the set ready to publish: an empty top level is dropped, and
// levels are merged from the top while a level is not levelRatio times
// smaller than the one below. The levels of the result are never modified
// again.
func (s *fileSet[T]) seal() {
	if len(s.levels) > 1 && s.levels[0].m.len() == 0 {
		s.levels = s.levels[1:]
	}
	for len(s.levels) > 1 && s.levels[0].m.len()*levelRatio > s.levels[1].m.len() {
		top := &s.levels[0].m
		bottom := len(s.levels) == 2
		m := s.levels[1].m.clone()
		if m.byPath == nil {
			m.byPath = map[string]*T{}
		}
		top.all(func(k FileKey, v *T) {
			if v == nil && bottom {
				m.del(k)
			} else {
				m.set(k, v)
			}
		})
		l := &fileLevel[T]{m: m}
		if old := s.levels[1]; bottom && old.ready.Load() {
			l.seed, l.seedDelta = old.sorted, top
		}
		levels := make([]*fileLevel[T], 0, len(s.levels)-1)
		levels = append(levels, l)
		s.levels = append(levels, s.levels[2:]...)
	}
}

// overlay returns the newest entry of every key held above the bottom level
// (nil values: removed), or nil when there is only the bottom level.
func (s *fileSet[T]) overlay() map[FileKey]*T {
	if len(s.levels) == 1 {
		return nil
	}
	n := 0
	for _, l := range s.levels[:len(s.levels)-1] {
		n += l.m.len()
	}
	over := make(map[FileKey]*T, n)
	for _, l := range s.levels[:len(s.levels)-1] {
		l.m.all(func(k FileKey, v *T) {
			if _, newer := over[k]; !newer {
				over[k] = v
			}
		})
	}
	return over
}

// each calls fn for every live key, in no particular order.
func (s *fileSet[T]) each(fn func(FileKey, *T)) {
	over := s.overlay()
	s.levels[len(s.levels)-1].m.all(func(k FileKey, v *T) {
		if _, shadowed := over[k]; !shadowed {
			fn(k, v)
		}
	})
	for k, v := range over {
		if v != nil {
			fn(k, v)
		}
	}
}

// sortedValues returns the bottom level's values sorted by key, computed
// once per level (levels are shared between snapshots).
func (l *fileLevel[T]) sortedValues(keyOf func(*T) FileKey) []*T {
	l.sortOnce.Do(func() {
		if l.seedDelta != nil {
			delta := make(map[FileKey]*T, l.seedDelta.len())
			l.seedDelta.all(func(k FileKey, v *T) { delta[k] = v })
			l.sorted = mergeSorted(l.seed, delta, l.m.len(), keyOf)
		} else {
			es := make([]fileEntry[T], 0, l.m.len())
			l.m.all(func(k FileKey, v *T) { es = append(es, fileEntry[T]{k, v}) })
			slices.SortFunc(es, func(a, b fileEntry[T]) int { return compareFileKeys(a.k, b.k) })
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
// keyOf) overridden by over (nil values: removed), sorted by key.
func mergeSorted[T any](base []*T, over map[FileKey]*T, size int, keyOf func(*T) FileKey) []*T {
	if len(over) == 0 {
		return slices.Clone(base)
	}
	out := make([]*T, 0, size)
	ov := make([]fileEntry[T], 0, len(over))
	for k, v := range over {
		ov = append(ov, fileEntry[T]{k, v})
	}
	slices.SortFunc(ov, func(a, b fileEntry[T]) int { return compareFileKeys(a.k, b.k) })
	i, j := 0, 0
	for i < len(base) || j < len(ov) {
		c := -1
		switch {
		case i == len(base):
			c = 1
		case j < len(ov):
			c = compareFileKeys(keyOf(base[i]), ov[j].k)
		}
		switch {
		case c < 0:
			out = append(out, base[i])
			i++
		default:
			if c == 0 {
				i++
			}
			if ov[j].v != nil {
				out = append(out, ov[j].v)
			}
			j++
		}
	}
	return out
}

// sortedValues returns the live values sorted by key: the bottom level's
// sorted values (shared) merged with the sorted overlay. The slice is
// shared when the set has one level.
func (s *fileSet[T]) sortedValues() []*T {
	vs := s.levels[len(s.levels)-1].sortedValues(s.keyOf)
	if over := s.overlay(); len(over) > 0 {
		vs = mergeSorted(vs, over, s.n, s.keyOf)
	}
	return vs
}
