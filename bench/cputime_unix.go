//go:build unix

package bench

import (
	"os"
	"syscall"
	"time"
)

// cpuTime returns the user plus system CPU time this process has used so
// far, all threads included; 0 when the system does not say.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxRSSKB returns the peak resident set in KiB of the ended child process
// ps (ru_maxrss), 0 when the system does not say.
func maxRSSKB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}
