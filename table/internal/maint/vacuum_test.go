package maint

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestHiddenKey(t *testing.T) {
	for key, want := range map[string]bool{
		"part-0.parquet":                  false,
		"city=ams/part-0.parquet":         false,
		"_city=ams/part-0.parquet":        false,
		"_delta_log/00000.json":           true,
		"_change_data/x.parquet":          false,
		"_change_data/city=ams/x.parquet": false,
		"_change_data/_SUCCESS":           true,
		"city=ams/.part-0.parquet.crc":    true,
		".hidden/part-0.parquet":          true,
		"deletion_vector_0000.bin":        false,
		"city=ams/_SUCCESS":               true,
		"a=1/b=_x/part-0.snappy.parquet":  false,
	} {
		if got := hiddenKey(key); got != want {
			t.Errorf("hiddenKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// forEach runs every call, at most conc at once, reports each to progress
// in order of completion, and returns the first error without stopping the
// other calls; a cancelled ctx starts none.
func TestForEach(t *testing.T) {
	var running, peak, calls atomic.Int32
	var reports []int
	boom := errors.New("boom")
	err := forEach(context.Background(), 20, 3, func(done, total int) {
		if total != 20 {
			t.Errorf("total %d, want 20", total)
		}
		reports = append(reports, done)
	}, func(i int) error {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		running.Add(-1)
		calls.Add(1)
		if i == 5 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("err %v, want boom", err)
	}
	if calls.Load() != 20 || peak.Load() > 3 {
		t.Errorf("calls %d (want 20), peak concurrency %d (want <= 3)", calls.Load(), peak.Load())
	}
	if len(reports) != 20 || reports[0] != 1 || reports[19] != 20 {
		t.Errorf("progress reports %v, want 1..20", reports)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls.Store(0)
	err = forEach(ctx, 5, 2, nil, func(int) error { calls.Add(1); return nil })
	if !errors.Is(err, context.Canceled) || calls.Load() != 0 {
		t.Errorf("cancelled: err %v, %d calls; want context.Canceled, 0 calls", err, calls.Load())
	}
}
