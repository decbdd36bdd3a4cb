package bench

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/deltakit/deltakit/objectstore"
)

// quantile returns the q-quantile (0..1) of ds by the nearest-rank method;
// 0 for no samples.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// recordingStore passes every call through and keeps the bytes of the last
// commit file created with PutIfAbsent, so a floor can write exactly what
// deltakit wrote.
type recordingStore struct {
	objectstore.Store
	mu   sync.Mutex
	last []byte
}

func (r *recordingStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	err := r.Store.PutIfAbsent(ctx, key, data)
	if err == nil && isCommitKey(key) {
		r.mu.Lock()
		r.last = data
		r.mu.Unlock()
	}
	return err
}

func (r *recordingStore) lastPutIfAbsent() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}
