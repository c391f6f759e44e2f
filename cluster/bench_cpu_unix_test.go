//go:build unix

package cluster_test

import (
	"syscall"
	"time"
)

// benchProcessCPU returns the CPU time (user and system) the process has
// used so far, and true: in the benchmarks, every node's.
func benchProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
