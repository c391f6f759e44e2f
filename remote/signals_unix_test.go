//go:build !windows

package remote_test

import (
	"os"
	"syscall"
	"testing"
)

// The signals the multi-process tests send their children: pause one and
// resume it, ask a broker for its goroutine count or its profile.
var (
	sigPause      os.Signal = syscall.SIGSTOP
	sigResume     os.Signal = syscall.SIGCONT
	sigGoroutines os.Signal = syscall.SIGUSR1
	sigProfile    os.Signal = syscall.SIGUSR2
)

// needChildSignals is where a test that sends its children those signals
// starts: this system has them, so it goes on.
func needChildSignals(tb testing.TB) { tb.Helper() }
