//go:build unix

package remote_test

import (
	"syscall"
	"time"
)

// benchProcessCPU returns the CPU time (user and system) the process has
// used so far, and true. The benchmarks run client and broker in one
// process, so it counts both sides of a remote path.
func benchProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
