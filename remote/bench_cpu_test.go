package remote_test

import (
	"time"

	"github.com/equeue-go/equeue/internal/benchcpu"
)

// benchProcessCPU returns the CPU time the process has used so far, and
// whether the platform reports it (internal/benchcpu).
func benchProcessCPU() (time.Duration, bool) { return benchcpu.Process() }
