//go:build !unix

package bench

import "time"

// cpuTime returns 0: CPU time is measured on Unix only.
func cpuTime() time.Duration { return 0 }
