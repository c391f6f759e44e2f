package equeue_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fatalRecorder is a testing.TB whose Fatalf records its message and ends
// the calling goroutine, as testing's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A wait that times out reports a count as it is at the timeout, when the
// count is passed as a func() any: before, every arg was formatted as it
// was when the wait began ("handled 0 of 100" though 60 were handled).
func TestEventually_ReportsValuesAtTimeout(t *testing.T) {
	var checks atomic.Int64
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		eventually(r, 50*time.Millisecond, func() bool { checks.Add(1); return false },
			"checked %d times, %s", func() any { return checks.Load() }, "never true")
	}()
	<-done
	require.Positive(t, checks.Load())
	require.Equal(t, fmt.Sprintf("timed out after 50ms: checked %d times, never true", checks.Load()), r.msg)
}
