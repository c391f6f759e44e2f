package equeue

import (
	"sync"
	"time"
)

// liveCount counts a consumer's goroutines and, of them, those inside a
// handler call that Close may return without: a call a drain gave up on
// (runner.giveUp), and a call of a fenced runner (runner.abandon), both of
// a handler that ignores its cancelled context. Close waits for every
// goroutine but those: their messages stay uncommitted, their late results
// are ignored, and they end on their own when the handler returns. The
// zero value is ready to use.
type liveCount struct {
	mu      sync.Mutex
	running int           // goroutines started (Consumer.goFunc) and not returned
	calling int           // given-up handler calls in progress, each on one of those goroutines
	fenced  int           // handler calls of fenced runners in progress, not given up, each on one of those goroutines
	changed chan struct{} // closed at the next change; nil while nobody waits
}

// add changes the counts by dRunning and dCalling and wakes the waiters.
func (l *liveCount) add(dRunning, dCalling int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running += dRunning
	l.calling += dCalling
	l.wakeLocked()
}

// addFenced changes the count of fenced runners' handler calls by d and
// wakes the waiters.
func (l *liveCount) addFenced(d int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fenced += d
	l.wakeLocked()
}

// wakeLocked wakes the waiters; l.mu is held.
func (l *liveCount) wakeLocked() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// changedLocked returns the channel closed at the next change; l.mu is
// held.
func (l *liveCount) changedLocked() <-chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// wait returns once no goroutine runs, or with inHandlers once every
// goroutine still running is inside a given-up handler call or a handler
// call of a fenced runner.
func (l *liveCount) wait(inHandlers bool) {
	for {
		l.mu.Lock()
		left := l.running
		if inHandlers {
			left -= l.calling + l.fenced
		}
		if left <= 0 {
			l.mu.Unlock()
			return
		}
		ch := l.changedLocked()
		l.mu.Unlock()
		<-ch
	}
}

// waitFenced waits up to timeout for the handler calls of fenced runners
// to return; it returns how many still run.
func (l *liveCount) waitFenced(timeout time.Duration) int {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		l.mu.Lock()
		left := l.fenced
		if left <= 0 {
			l.mu.Unlock()
			return 0
		}
		ch := l.changedLocked()
		l.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			l.mu.Lock()
			defer l.mu.Unlock()
			return max(l.fenced, 0)
		}
	}
}
