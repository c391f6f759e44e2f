package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The listener of a secure stream logs the handshakes it refuses, at warn,
// with the dialler's address and a reason an operator acts on (a node
// with another secret, one of another version, one too slow, or none of
// these). A node that keeps retrying, or a flood, must not flood the log:
// at most refusalBurst lines of each reason per refusalWindow, and past
// them the first line of each address with none in the window yet, for
// up to refusalAddresses more addresses, then, at the window's end, one
// line saying how many more addresses were refused (refusallines.go);
// the next line of a reason logged says how many of that reason were
// left out meanwhile.
// Each reason has its own lines, so that a flood of connections that are
// no equeue nodes does not hide the one line saying that a node holds
// another secret, and a flood of wrong proofs from one address (or a few)
// does not hide that of a node elsewhere, unless it comes from more than
// refusalAddresses addresses.
const (
	refusalWindow    = 10 * time.Second
	refusalBurst     = 10
	refusalAddresses = 100
	// maxUnnamedAddresses bounds the addresses past refusalAddresses a
	// window's summary line tells apart; past it, it says "at least".
	maxUnnamedAddresses = 4096
)

// The reasons a refused handshake is logged with.
const (
	reasonWrongSecret = "wrong secret"
	// reasonBareProof is a bare proof of a node of equeue-raft/2 that
	// does not verify: another secret, or random bytes.
	reasonBareProof  = "unverified bare proof"
	reasonMalformed  = "malformed hello"
	reasonBadVersion = "bad version"
	reasonTimeout    = "timeout"
	reasonOther      = "failed handshake"
)

// errWrongProof is the error of a connection whose other end sent a proof
// that does not match: it holds another secret, or another salt.
var errWrongProof = fmt.Errorf("%w: its proof does not match (another secret, or another cluster salt?)", errRaftProof)

// refusalLog logs refused handshakes, rate-limited per reason.
type refusalLog struct {
	log   atomic.Pointer[slog.Logger] // nil: silent
	now   func() time.Time
	after func(time.Duration, func()) (stop func() bool) // runs f after d (tests: when they say)
	// windows is per reason; set at start, then only read.
	windows map[string]*reasonLines
	// timers holds the window-end timers armed and not yet run, and
	// stopped says the stream closed: a timer that runs after that logs
	// nothing (stop).
	timersMu sync.Mutex
	timers   map[uint64]func() bool
	nextID   uint64
	stopped  bool
}

func newRefusalLog() *refusalLog {
	r := &refusalLog{now: time.Now, windows: map[string]*reasonLines{}, timers: map[uint64]func() bool{},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
	for _, reason := range []string{reasonWrongSecret, reasonBareProof, reasonMalformed, reasonBadVersion, reasonTimeout, reasonOther} {
		r.windows[reason] = &reasonLines{}
	}
	return r
}

// setLogger makes refusals go to log from now on.
func (r *refusalLog) setLogger(log *slog.Logger) { r.log.Store(log) }

// refused logs the handshake with remote refused with err, unless this
// window's lines of its reason are used up (reasonLines).
func (r *refusalLog) refused(remote net.Addr, err error) {
	log := r.log.Load()
	if log == nil {
		return
	}
	reason := refusalReason(err)
	lines := r.windows[reason]
	turn := lines.allow(r.now(), refusalSource(remote))
	if turn.ended != nil {
		r.sum(log, reason, turn.ended)
	}
	if turn.arm != 0 {
		r.armWindowEnd(lines, reason, turn.arm, turn.armIn)
	}
	if !turn.log {
		return
	}
	left := turn.suppressed
	addr := "unknown"
	if remote != nil {
		addr = remote.String()
	}
	attrs := []any{"remote", addr, "reason", reason, "err", err}
	if left > 0 {
		attrs = append(attrs, "suppressed", left)
	}
	log.Warn("cluster: refused a Raft connection", attrs...)
}

// armWindowEnd arms the timer that says the sum of window of lines
// (reason) at its end, in d, unless the stream closed by then (stop).
func (r *refusalLog) armWindowEnd(lines *reasonLines, reason string, window uint64, d time.Duration) {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	if r.stopped {
		return
	}
	r.nextID++
	id := r.nextID
	r.timers[id] = r.after(d, func() {
		// Held while it logs: stop waits for a line under way.
		r.timersMu.Lock()
		defer r.timersMu.Unlock()
		delete(r.timers, id)
		if r.stopped {
			return
		}
		if sum := lines.windowEnded(window); sum != nil {
			if log := r.log.Load(); log != nil {
				r.sum(log, reason, sum)
			}
		}
	})
}

// stop stops the window-end timers armed: none logs once it returned
// (the stream's Close).
func (r *refusalLog) stop() {
	r.timersMu.Lock()
	defer r.timersMu.Unlock()
	r.stopped = true
	for id, stop := range r.timers {
		stop()
		delete(r.timers, id)
	}
}

// sum logs the line of a window that refused more addresses of reason
// than it logged lines for.
func (r *refusalLog) sum(log *slog.Logger, reason string, s *refusalSum) {
	attrs := []any{"reason", reason, "addresses", s.addresses, "refusals", s.refusals, "window", refusalWindow}
	if s.atLeast {
		attrs = append(attrs, "addresses_at_least", true)
	}
	log.Warn("cluster: refused Raft connections from more addresses, with no line of their own", attrs...)
}

// refusalReason is the reason a handshake that failed with err is logged
// with.
func refusalReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errMalformedHello):
		// Before a timeout: part of a hello's header, then nothing until
		// the deadline, is a malformed hello.
		return reasonMalformed
	case errors.As(err, &ne) && ne.Timeout():
		return reasonTimeout
	case errors.Is(err, errRaftVersion):
		return reasonBadVersion
	case errors.Is(err, errWrongBareProof):
		return reasonBareProof
	case errors.Is(err, errWrongProof):
		return reasonWrongSecret
	}
	return reasonOther
}

// setLogger makes the stream log the handshakes it refuses to log (nil:
// silent, as it is until a node opened on it sets its logger).
func (s *secureStream) setLogger(log *slog.Logger) { s.refusals.setLogger(log) }
