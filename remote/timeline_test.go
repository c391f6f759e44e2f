package remote_test

import (
	"log/slog"
	"sync"
	"testing"
)

// timeline keeps the log lines of a test's consumer and clients, with
// their times, and prints them when the test fails: a wait that times out
// then shows where the time went (heartbeats, rejoins, pulls, restarts).
// Lines logged after the test ended are kept and never printed, so a
// goroutine that logs late cannot log into a finished test.
type timeline struct {
	mu    sync.Mutex
	lines []string
}

// newTimeline returns a logger (Debug and up) whose lines t prints if it
// fails.
func newTimeline(t *testing.T) *slog.Logger {
	tl := &timeline{}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		tl.mu.Lock()
		defer tl.mu.Unlock()
		for _, l := range tl.lines {
			t.Log(l)
		}
	})
	return slog.New(slog.NewTextHandler(lineWriter(tl.add), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func (tl *timeline) add(line string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.lines = append(tl.lines, line)
}
