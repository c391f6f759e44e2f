// Package benchcpu measures the CPU time of the running process, for
// benchmarks that report CPU per message ("cpu-ns/msg"): unlike wall time
// it leaves out time spent waiting for a core, so it stays comparable on a
// loaded machine (though it still moves with the load: shared caches, the
// store's background compactions).
package benchcpu

import "time"

// Process returns the CPU time (user and system, every goroutine) the
// process has used so far, and whether the platform reports it.
func Process() (time.Duration, bool) { return process() }
