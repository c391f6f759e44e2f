//go:build !windows

package cluster_test

import (
	"os"
	"syscall"
	"testing"
)

// The signals the Jepsen test's pause rounds send a node's process.
var sigPause, sigResume os.Signal = syscall.SIGSTOP, syscall.SIGCONT

// needPauseSignals is where a test that pauses node processes starts: this
// system has the signals, so it goes on.
func needPauseSignals(tb testing.TB) { tb.Helper() }
