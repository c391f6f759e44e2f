package remote_test

import (
	"os"
	"testing"
)

// Windows has none of the signals the multi-process tests send their
// children (signals_unix_test.go); signal.Notify ignores a nil one.
var sigPause, sigResume, sigGoroutines, sigProfile os.Signal

// needChildSignals skips a test that pauses its children or signals them.
func needChildSignals(tb testing.TB) {
	tb.Helper()
	tb.Skip("pausing a child process (SIGSTOP, SIGCONT) or signalling it (SIGUSR1, SIGUSR2) needs a POSIX system")
}
