//go:build unix

package equeue_test

import (
	"syscall"
	"time"
)

// benchProcessCPU returns the CPU time (user and system) the process has
// used so far, and true; on a shared machine CPU per message varies less
// than wall-clock rates do.
func benchProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
