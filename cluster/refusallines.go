package cluster

import (
	"net"
	"sync"
	"time"
)

// reasonLines counts the log lines of one reason of refused handshakes
// (securerefusals.go): at most refusalBurst a window, and past them the
// first line of each address that has none in the window yet, for up to
// refusalAddresses more addresses. A flood from one address, or from
// many, then hides no other address's first refusal until the flood
// itself comes from more than refusalAddresses addresses: a node of the
// cluster with a mistyped secret is reported at once, whatever else is
// refused. Past them, the addresses refused without a line are counted
// (up to maxUnnamedAddresses of them told apart) and summed up in one
// line at the window's end (unnamed). A refusal past the bound that
// comes after that line (the timer ran at the window's end by its own
// clock, the refusal read the time just before) is only counted with the
// lines left out (saidSum). A window then logs at most
// refusalBurst+refusalAddresses+1 lines of a reason, and its maps hold
// at most as many addresses as they count. It is safe for concurrent
// use.
type reasonLines struct {
	mu         sync.Mutex
	window     uint64              // the window's number, from 1
	from       time.Time           // the window's start
	logged     int                 // lines logged in this window
	sources    map[string]struct{} // the addresses with a line in this window
	suppressed int                 // lines left out since the last logged one
	unnamed    unnamedAddresses    // addresses refused past the bound, not yet summed up
	// saidSum says that the window's timer said its sum: the window
	// has no line left, not even a second sum.
	saidSum bool
}

// unnamedAddresses counts, in a window, the addresses refused with no
// line of their own: the window logged lines for refusalAddresses
// others already.
type unnamedAddresses struct {
	addrs    map[string]struct{} // at most maxUnnamedAddresses
	more     bool                // more addresses than addrs holds
	refusals int                 // refusals of those addresses
}

// refusalSum is what a window's summary line says: addresses refused
// with no line of their own (atLeast: more, not told apart), and how
// often.
type refusalSum struct {
	addresses int
	atLeast   bool
	refusals  int
}

// refusalTurn is what allow tells refused to do.
type refusalTurn struct {
	log        bool        // log this refusal
	suppressed int         // lines left out since the last one, said with it
	ended      *refusalSum // the sum of the window before, not said yet: say it first
	arm        uint64      // a window whose sum its end is to say (armWindowEnd); 0: none
	armIn      time.Duration
}

// allow says what to do with a refusal of a connection from source at
// now (refusalTurn).
func (l *reasonLines) allow(now time.Time, source string) (turn refusalTurn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sources == nil || now.Sub(l.from) >= refusalWindow {
		turn.ended = l.takeSum()
		l.window++
		l.from, l.logged, l.sources, l.saidSum = now, 0, map[string]struct{}{}, false
	}
	_, seen := l.sources[source]
	switch {
	case l.logged < refusalBurst:
	case !seen && l.logged < refusalBurst+refusalAddresses:
		// The address's first line in this window, within the lines
		// past the burst: counted by lines, not by addresses, since the
		// burst's may all be of one address.
	case !seen && l.saidSum:
		// Past the bound, after the window's summary line: only left
		// out, said with the next line logged.
		l.suppressed++
		return turn
	case !seen:
		// Past the bound: counted for the window's summary line.
		if l.unnamed.addrs == nil {
			l.unnamed.addrs = map[string]struct{}{}
			turn.arm, turn.armIn = l.window, l.from.Add(refusalWindow).Sub(now)
		}
		if _, ok := l.unnamed.addrs[source]; !ok {
			if len(l.unnamed.addrs) < maxUnnamedAddresses {
				l.unnamed.addrs[source] = struct{}{}
			} else {
				l.unnamed.more = true
			}
		}
		l.unnamed.refusals++
		l.suppressed++
		return turn
	default:
		l.suppressed++
		return turn
	}
	l.logged++
	l.sources[source] = struct{}{}
	turn.log = true
	turn.suppressed, l.suppressed = l.suppressed, 0
	return turn
}

// windowEnded returns the sum of window, once its end came, unless it was
// said already (nil). The window says no other sum (saidSum).
func (l *reasonLines) windowEnded(window uint64) *refusalSum {
	l.mu.Lock()
	defer l.mu.Unlock()
	if window != l.window {
		return nil // rolled over by a refusal, which took the sum
	}
	sum := l.takeSum()
	if sum != nil {
		l.saidSum = true
	}
	return sum
}

// takeSum returns the sum of the addresses refused past the bound since
// the last one, and starts a new one (nil when there were none).
func (l *reasonLines) takeSum() *refusalSum {
	u := l.unnamed
	if u.addrs == nil {
		return nil
	}
	l.unnamed = unnamedAddresses{}
	return &refusalSum{addresses: len(u.addrs), atLeast: u.more, refusals: u.refusals}
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
