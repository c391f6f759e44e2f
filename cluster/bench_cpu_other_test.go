//go:build !unix

package cluster_test

import "time"

// benchProcessCPU reports no CPU time where getrusage is missing.
func benchProcessCPU() (time.Duration, bool) { return 0, false }
