package cluster

import (
	"net"
	"sync"
	"time"
)

// reasonLines counts the log lines of one reason of refused handshakes
// (securerefusals.go): at most refusalBurst a window, and past them the
// first line of each address that has none in the window yet, for up to
// refusalBurst more addresses. A flood from one address, or from a few,
// then hides no other address's first refusal: a node of the cluster
// with a mistyped secret is reported at once, whatever else is refused.
// A flood from many addresses logs at most twice refusalBurst lines a
// window, and sources holds at most as many addresses. It is safe for
// concurrent use.
type reasonLines struct {
	mu         sync.Mutex
	from       time.Time           // the window's start
	logged     int                 // lines logged in this window
	sources    map[string]struct{} // the addresses with a line in this window
	suppressed int                 // lines left out since the last logged one
}

// allow reports whether a refusal of a connection from source may be
// logged at now and, if so, how many were left out since the last line
// (to be said with it).
func (l *reasonLines) allow(now time.Time, source string) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sources == nil || now.Sub(l.from) >= refusalWindow {
		l.from, l.logged, l.sources = now, 0, map[string]struct{}{}
	}
	_, seen := l.sources[source]
	switch {
	case l.logged < refusalBurst:
	case !seen && l.logged < 2*refusalBurst:
		// The address's first line in this window, within the lines
		// past the burst: counted by lines, not by addresses, since the
		// burst's may all be of one address.
	default:
		l.suppressed++
		return false, 0
	}
	l.logged++
	l.sources[source] = struct{}{}
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

// refusalSource is the address whose lines reasonLines counts for a
// connection from remote: its IP address, since each connection has a
// port of its own.
func refusalSource(remote net.Addr) string {
	switch a := remote.(type) {
	case nil:
		return ""
	case *net.TCPAddr:
		return a.IP.String()
	}
	return remote.String()
}
