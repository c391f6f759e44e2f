package equeue

import "sync"

// liveCount counts a consumer's goroutines and, of them, those inside a
// handler call that a drain gave up on (runner.giveUp): a handler that
// ignores its cancelled context. Close waits for every goroutine but
// those: their messages stay uncommitted, their late results are ignored,
// and they end on their own when the handler returns. The zero value is
// ready to use.
type liveCount struct {
	mu      sync.Mutex
	running int           // goroutines started (Consumer.goFunc) and not returned
	calling int           // given-up handler calls in progress, each on one of those goroutines
	changed chan struct{} // closed at the next change; nil while nobody waits
}

// add changes the counts by dRunning and dCalling and wakes the waiters.
func (l *liveCount) add(dRunning, dCalling int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running += dRunning
	l.calling += dCalling
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// wait returns once no goroutine runs, or with inHandlers once every
// goroutine still running is inside a given-up handler call.
func (l *liveCount) wait(inHandlers bool) {
	for {
		l.mu.Lock()
		left := l.running
		if inHandlers {
			left -= l.calling
		}
		if left <= 0 {
			l.mu.Unlock()
			return
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		<-ch
	}
}
