package equeue

import (
	"context"
	"sync"
	"sync/atomic"
)

// gateLock is a lock held shared or exclusively, had in the order it is
// asked for: a waiter for it waits for those before it, shared or not,
// so that neither kind starves the other. A waiter whose context ends
// leaves the queue at once, and those behind it that the holders admit
// have it then. The zero value is unlocked.
type gateLock struct {
	mu     sync.Mutex
	shared int         // holders sharing it
	excl   bool        // held exclusively
	queue  []*gateWait // waiters, in the order they came
}

// gateWait is one waiter of a gateLock; had is closed once it holds it.
type gateWait struct {
	shared bool
	had    chan struct{}
}

// admits reports whether the holders let one more in (shared or not);
// l.mu must be held.
func (l *gateLock) admits(shared bool) bool {
	return !l.excl && (shared || l.shared == 0)
}

// take makes one more holder; l.mu must be held.
func (l *gateLock) take(shared bool) {
	if shared {
		l.shared++
	} else {
		l.excl = true
	}
}

// admit lets in the waiters at the head of the queue that the holders
// admit; l.mu must be held.
func (l *gateLock) admit() {
	for len(l.queue) > 0 && l.admits(l.queue[0].shared) {
		w := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.take(w.shared)
		close(w.had)
	}
	if len(l.queue) == 0 {
		l.queue = nil
	}
}

// lock locks l, shared or exclusively, waiting for it as long as ctx
// lets it (had at once when it is free and no one waits, even with ctx
// ended); a wait is counted in waits when it is not nil. A wait that ctx
// ends returns ctx's error and l is not held.
func (l *gateLock) lock(ctx context.Context, shared bool, waits *atomic.Int64) error {
	l.mu.Lock()
	if len(l.queue) == 0 && l.admits(shared) {
		l.take(shared)
		l.mu.Unlock()
		return nil
	}
	w := &gateWait{shared: shared, had: make(chan struct{})}
	l.queue = append(l.queue, w)
	l.mu.Unlock()
	if waits != nil {
		waits.Add(1)
		defer waits.Add(-1)
	}
	select {
	case <-w.had:
		return nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-w.had: // had meanwhile: held, as if ctx ended after
		return nil
	default:
	}
	for i, x := range l.queue {
		if x == w {
			// The last slot, left beyond the length, is cleared: the
			// backing array must not keep the waiter reachable.
			last := len(l.queue) - 1
			copy(l.queue[i:], l.queue[i+1:])
			l.queue[last] = nil
			l.queue = l.queue[:last]
			break
		}
	}
	l.admit() // those it held behind it
	return ctx.Err()
}

// unlock gives back a hold of l taken shared or not.
func (l *gateLock) unlock(shared bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if shared {
		l.shared--
	} else {
		l.excl = false
	}
	l.admit()
}
