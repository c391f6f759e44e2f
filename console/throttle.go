package console

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// loginThrottle refuses sign-ins from an address after too many failures in
// a window, so tokens cannot be guessed quickly through the login form.
type loginThrottle struct {
	mu    sync.Mutex
	fails map[string]failWindow
}

type failWindow struct {
	start time.Time
	n     int
}

const (
	maxLoginFailures = 10
	loginWindow      = time.Minute
	maxTrackedAddrs  = 4096
)

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// allowed reports whether addr may try to sign in now.
func (l *loginThrottle) allowed(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.fails[addr]
	return !ok || now.Sub(f.start) >= loginWindow || f.n < maxLoginFailures
}

// failed counts a failed sign-in of addr.
func (l *loginThrottle) failed(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fails == nil {
		l.fails = map[string]failWindow{}
	}
	if len(l.fails) >= maxTrackedAddrs {
		for a, f := range l.fails {
			if now.Sub(f.start) >= loginWindow {
				delete(l.fails, a)
			}
		}
		if len(l.fails) >= maxTrackedAddrs {
			clear(l.fails) // a flood of addresses: start over rather than grow
		}
	}
	f := l.fails[addr]
	if now.Sub(f.start) >= loginWindow {
		f = failWindow{start: now}
	}
	f.n++
	l.fails[addr] = f
}
