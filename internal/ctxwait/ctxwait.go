// Package ctxwait waits for a duration unless a context ends first: the
// wait of txlog's commit retry backoff and of faultstore's injected latency.
package ctxwait

import (
	"context"
	"time"
)

// Sleep waits d and returns nil, or returns ctx.Err() as soon as ctx is
// done. A d of zero or less does not wait: it returns ctx.Err().
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
