// Package logwindow bounds how many lines of one kind a log gets: at most
// Burst per Window, the first line after a cut saying how many were left
// out. A client retrying in a loop, or a flood of connections, must not
// flood the log of the server refusing them.
package logwindow

import (
	"sync"
	"time"
)

// Limiter counts the lines of one kind. Set Window and Burst before the
// first Allow; it is safe for concurrent use.
type Limiter struct {
	// Window is how long a window of lines lasts.
	Window time.Duration
	// Burst is how many lines a window logs.
	Burst int

	mu         sync.Mutex
	from       time.Time // the window's start
	logged     int       // lines logged in this window
	suppressed int       // lines left out since the last logged one
}

// Allow reports whether a line may be logged at now and, if so, how many
// were left out since the last one logged (to be said with it).
func (l *Limiter) Allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.from) >= l.Window {
		l.from, l.logged = now, 0
	}
	if l.logged >= l.Burst {
		l.suppressed++
		return false, 0
	}
	l.logged++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}
