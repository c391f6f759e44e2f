package remote

import (
	"net"
	"sync"
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
// to another broker), so a stale cap never cuts a long-poll short. Only
// an answer that came over the latest connection counts: one still
// arriving over the connection before (a broker draining its calls as it
// stops gracefully) tells the limits of the broker that client left.
type toldLimits struct {
	// mu orders learn and forget, so that an answer of a connection
	// before the latest cannot store its limits after forget.
	mu sync.Mutex
	// conn names the latest connection begun (connName of its local
	// address), "" before any.
	conn string
	// session is the told session timeout (equeue.Assignment.
	// SessionTimeout), in nanoseconds; zero while unknown.
	session atomic.Int64
	// pullCap is the told MaxPullWait (equeue.Assignment.MaxPullWait), in
	// nanoseconds; zero while unknown.
	pullCap atomic.Int64
}

// learn records the limits a told, when it came over the latest
// connection (over is the local address of the connection it came
// over); a limit it does not tell is unknown from now on. An answer of an
// older connection changes nothing.
func (l *toldLimits) learn(over net.Addr, a equeue.Assignment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if connName(over) != l.conn {
		return
	}
	l.session.Store(int64(max(a.SessionTimeout, 0)))
	l.pullCap.Store(int64(max(a.MaxPullWait, 0)))
}

// forget makes every limit unknown: the client connected again, over a
// connection whose local address is local.
func (l *toldLimits) forget(local net.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conn = connName(local)
	l.session.Store(0)
	l.pullCap.Store(0)
}

// connName names the connection whose local address is a; "" when it is
// unknown. The client's connections have local addresses of their own
// (namingCreds), also where their sockets' are all the same (a Unix
// socket's client end).
func connName(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.Network() + " " + a.String()
}

// sessionTimeout is the told session timeout; zero while unknown.
func (l *toldLimits) sessionTimeout() time.Duration { return time.Duration(l.session.Load()) }

// maxPullWait is the told MaxPullWait; zero while unknown.
func (l *toldLimits) maxPullWait() time.Duration { return time.Duration(l.pullCap.Load()) }
