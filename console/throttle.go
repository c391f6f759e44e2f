package console

import (
	"sync"
	"time"
)

// loginThrottle refuses sign-ins after too many failures in a window, so
// tokens cannot be guessed quickly through the login form or bearer
// headers: from one source (see Console.throttleKey) after
// maxLoginFailures, and from all sources together after maxTotalFailures,
// so that an attacker rotating addresses gets no more guesses than that.
// A count is never forgotten before its window ends.
type loginThrottle struct {
	mu    sync.Mutex
	fails map[string]failWindow
	total failWindow // every source's failures
}

type failWindow struct {
	start time.Time
	n     int
}

const (
	maxLoginFailures = 10
	// maxTotalFailures bounds the failures of all sources together in a
	// window; past it every sign-in waits for the window's end. A flood
	// from many addresses then keeps operators from signing in for that
	// minute (their sessions go on) instead of guessing without limit.
	maxTotalFailures = 1000
	loginWindow      = time.Minute
	// maxTrackedAddrs bounds the sources tracked. Only sources whose window
	// is open are kept, and each one's first failure in it was counted in
	// the total's window then open (this one or the one before), so about
	// twice maxTotalFailures are at most: past this backstop a new source
	// is counted in the total only.
	maxTrackedAddrs = 4096
)

// The reasons wait gives.
const (
	sourceWaits = "Too many failed sign-ins from this address: wait a minute."
	allWait     = "Too many failed sign-ins from all addresses together: wait a minute."
)

// open reports whether the window is open at now.
func (f failWindow) open(now time.Time) bool { return now.Sub(f.start) < loginWindow }

// wait returns why source may not try to sign in now, or "" when it may.
func (l *loginThrottle) wait(source string, now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total.open(now) && l.total.n >= maxTotalFailures {
		return allWait
	}
	if f, ok := l.fails[source]; ok && f.open(now) && f.n >= maxLoginFailures {
		return sourceWaits
	}
	return ""
}

// failed counts a failed sign-in of source.
func (l *loginThrottle) failed(source string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.total.open(now) {
		l.total = failWindow{start: now}
	}
	l.total.n++
	if l.fails == nil {
		l.fails = map[string]failWindow{}
	}
	f, ok := l.fails[source]
	if !ok && len(l.fails) >= maxTrackedAddrs {
		for a, f := range l.fails {
			if !f.open(now) {
				delete(l.fails, a)
			}
		}
		if len(l.fails) >= maxTrackedAddrs {
			// Only when many requests passed wait at once: the total
			// counted this failure, and refuses everyone already.
			return
		}
	}
	if !f.open(now) {
		f = failWindow{start: now}
	}
	f.n++
	l.fails[source] = f
}
