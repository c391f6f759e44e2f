package remote

import (
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue"
)

// toldLimits are the engine's limits the client's latest join or
// heartbeat answer told, which bound its long-polls and heartbeats
// (callBound, heartbeatSlack). They are the limits of the server that
// answered: the next answer replaces them, one that tells none (a server
// of an older version) included, and a new connection forgets them (the
// broker may have restarted with other options, or the address may lead
// to another broker), so a stale cap never cuts a long-poll short.
type toldLimits struct {
	// session is the told session timeout (equeue.Assignment.
	// SessionTimeout), in nanoseconds; zero while unknown.
	session atomic.Int64
	// pullCap is the told MaxPullWait (equeue.Assignment.MaxPullWait), in
	// nanoseconds; zero while unknown.
	pullCap atomic.Int64
}

// learn records the limits a told; a limit it does not tell is unknown
// from now on.
func (l *toldLimits) learn(a equeue.Assignment) {
	l.session.Store(int64(max(a.SessionTimeout, 0)))
	l.pullCap.Store(int64(max(a.MaxPullWait, 0)))
}

// forget makes every limit unknown: the client connected again.
func (l *toldLimits) forget() {
	l.session.Store(0)
	l.pullCap.Store(0)
}

// sessionTimeout is the told session timeout; zero while unknown.
func (l *toldLimits) sessionTimeout() time.Duration { return time.Duration(l.session.Load()) }

// maxPullWait is the told MaxPullWait; zero while unknown.
func (l *toldLimits) maxPullWait() time.Duration { return time.Duration(l.pullCap.Load()) }
