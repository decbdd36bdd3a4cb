package objectstore

import (
	"context"
	"iter"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mem is an in-memory Store for unit tests. Objects live as long as the Mem
// value; two Mem values never share objects. The zero value is not usable:
// call NewMem.
type Mem struct {
	name string
	now  func() time.Time

	mu   sync.RWMutex
	objs map[string]memObject
	keys []string // sorted
}

type memObject struct {
	data    []byte
	modTime time.Time
}

// NewMem returns an empty in-memory store whose URI is "mem://name".
func NewMem(name string) *Mem {
	return &Mem{name: name, now: time.Now, objs: map[string]memObject{}}
}

// URI implements Store.
func (m *Mem) URI() string { return "mem://" + m.name }

func (m *Mem) err(op, key string, err error) error {
	return &KeyError{Op: op, Store: m.URI(), Key: key, Err: err}
}

// Get implements Store.
func (m *Mem) Get(ctx context.Context, key string, r Range) ([]byte, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, m.err("get", key, err)
	}
	m.mu.RLock()
	obj, ok := m.objs[key]
	m.mu.RUnlock()
	if !ok {
		return nil, m.err("get", key, ErrNotExist)
	}
	out, err := cutRange(obj.data, r)
	if err != nil {
		return nil, m.err("get", key, err)
	}
	return out, nil
}

// ReadAt implements RangeReader: the bytes are copied into p.
func (m *Mem) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if err := checkCall(ctx, key); err != nil {
		return 0, m.err("get", key, err)
	}
	if off < 0 {
		return 0, m.err("get", key, ErrInvalidRange)
	}
	m.mu.RLock()
	obj, ok := m.objs[key]
	m.mu.RUnlock()
	if !ok {
		return 0, m.err("get", key, ErrNotExist)
	}
	n := 0
	if off < int64(len(obj.data)) {
		n = copy(p, obj.data[off:])
	}
	return fillResult(n, len(p))
}

// Put implements Store.
func (m *Mem) Put(ctx context.Context, key string, data []byte) error {
	return m.put(ctx, "put", key, data, false)
}

// PutIfAbsent implements Store.
func (m *Mem) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return m.put(ctx, "put-if-absent", key, data, true)
}

func (m *Mem) put(ctx context.Context, op, key string, data []byte, ifAbsent bool) error {
	if err := checkCall(ctx, key); err != nil {
		return m.err(op, key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, exists := m.objs[key]
	if exists && ifAbsent {
		return m.err(op, key, ErrAlreadyExists)
	}
	m.objs[key] = memObject{data: slices.Clone(data), modTime: m.now()}
	if !exists {
		i, _ := slices.BinarySearch(m.keys, key)
		m.keys = slices.Insert(m.keys, i, key)
	}
	return nil
}

// List implements Store. It lists a consistent view taken when iteration
// starts.
func (m *Mem) List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(ObjectInfo{}, m.err("list", prefix, err))
			return
		}
		m.mu.RLock()
		from := max(startAfter, prefix)
		i := sort.SearchStrings(m.keys, from)
		var infos []ObjectInfo
		for ; i < len(m.keys); i++ {
			k := m.keys[i]
			if k == startAfter {
				continue
			}
			if !strings.HasPrefix(k, prefix) {
				break
			}
			o := m.objs[k]
			infos = append(infos, ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
		}
		m.mu.RUnlock()
		for _, info := range infos {
			if !yield(info, nil) {
				return
			}
		}
	}
}

// Stat implements Store.
func (m *Mem) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkCall(ctx, key); err != nil {
		return ObjectInfo{}, m.err("stat", key, err)
	}
	m.mu.RLock()
	o, ok := m.objs[key]
	m.mu.RUnlock()
	if !ok {
		return ObjectInfo{}, m.err("stat", key, ErrNotExist)
	}
	return ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// Delete implements Store.
func (m *Mem) Delete(ctx context.Context, key string) error {
	if err := checkCall(ctx, key); err != nil {
		return m.err("delete", key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key]; !ok {
		return nil
	}
	delete(m.objs, key)
	if i, found := slices.BinarySearch(m.keys, key); found {
		m.keys = slices.Delete(m.keys, i, i+1)
	}
	return nil
}

// SetModTime changes the modification time of an existing key; tests use it
// for time travel by timestamp and retention. Returns ErrNotExist.
func (m *Mem) SetModTime(key string, t time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return m.err("stat", key, ErrNotExist)
	}
	o.modTime = t
	m.objs[key] = o
	return nil
}

// Upload implements Uploader: the object is collected in memory and stored
// by Commit, as Put stores it.
func (m *Mem) Upload(ctx context.Context, key string) (Upload, error) {
	if err := checkCall(ctx, key); err != nil {
		return nil, m.err("upload", key, err)
	}
	return &bufferedUpload{uploadState: uploadState{ctx: ctx}, key: key, uri: m.URI(), put: m.Put}, nil
}
