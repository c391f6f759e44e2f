package cluster_test

import (
	"os"
	"testing"
)

// Windows has no signal to pause a process with (signals_unix_test.go).
var sigPause, sigResume os.Signal

// needPauseSignals skips a test that pauses node processes.
func needPauseSignals(tb testing.TB) {
	tb.Helper()
	tb.Skip("pausing a node's process (SIGSTOP, SIGCONT) needs a POSIX system")
}
