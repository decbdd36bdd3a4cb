//go:build !unix

package bench

import (
	"os"
	"time"
)

// cpuTime returns 0: CPU time is measured on Unix only.
func cpuTime() time.Duration { return 0 }

// maxRSSKB returns 0: peak RSS is measured on Unix only.
func maxRSSKB(*os.ProcessState) int64 { return 0 }
