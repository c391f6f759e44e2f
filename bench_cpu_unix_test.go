//go:build unix

package equeue_test

import (
	"syscall"
	"time"
)

// benchProcessCPU returns the CPU time (user and system) the process has
// used so far, and true. CPU per message leaves out time spent waiting for
// a core, though on a loaded machine it still moves with the load (shared
// caches, the store's background compactions).
func benchProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
