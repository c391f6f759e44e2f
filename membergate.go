package equeue

import (
	"sync"
	"time"
)

// memberGate holds an orderly clustering consumer's queues while its
// membership is in doubt: from a heartbeat (or rejoin) that failed until
// one that succeeds, and, with a lease, once no heartbeat got through for
// the lease, counted from the sending of the last one that did (a
// heartbeat that hangs, as on a connection to a stopped engine or through
// a partition that drops packets, neither succeeds nor fails until its
// deadline, which may come after the engine's session timeout).
// Meanwhile the engine may have expired the member, as a network
// partition keeps its heartbeats away, and granted its queues to another
// member, which the cut-off member cannot hear; going on with the
// messages it had pulled would then run a queue on two members at once,
// and its messages out of order across them. So its queues begin no new
// message (nor an in-place retry) until a heartbeat confirms the
// membership again, or the engine answers that it expired (the queues
// are then fenced and dropped, see runMembership's lost). The zero value
// has no lease and is confirmed.
type memberGate struct {
	mu sync.Mutex
	// lease, when positive, is how long a heartbeat or join that got
	// through confirms the membership, from when it was sent, while the
	// engine's session timeout is unknown (see memberLease); zero means
	// until one fails.
	lease time.Duration
	// session is the engine's session timeout the last confirmation told
	// (Assignment.SessionTimeout); zero while unknown.
	session time.Duration
	// until is when the lease of the last confirmation ends.
	until time.Time
	// last is when the last confirmed heartbeat or join was sent.
	last time.Time
	// failed is set from a failed heartbeat or join until one succeeds.
	failed bool
	// renewed, when set, is closed at the next confirmation.
	renewed chan struct{}
}

// memberLease is the lease of an orderly clustering member's heartbeats
// while the engine's session timeout is unknown (a server of a version
// that does not tell it): twice its HeartbeatInterval. HeartbeatInterval
// must then stay well under the session; with a session of at least
// three heartbeat intervals (the README asks so of orderly groups), the
// engine cannot have expired the member while its lease runs, as the
// engine's session runs from the receipt of the heartbeat, later than its
// sending. Once the engine tells its session, sessionLease keeps the
// lease under it whatever the interval.
func memberLease(heartbeat time.Duration) time.Duration {
	return 2 * heartbeat
}

// sessionLease is the lease of a member whose lease with an unknown
// session is lease, under an engine session timeout of session (zero:
// unknown): at most half the session, so that it ends well before the
// engine may expire the member, whose session runs from the receipt of
// the heartbeat. No lease (zero) stays none.
func sessionLease(lease, session time.Duration) time.Duration {
	if lease <= 0 || session <= 0 {
		return lease
	}
	return min(lease, session/2)
}

// current is the lease a confirmation gives now: sessionLease under the
// last session the engine told. Heartbeats long-poll for a quarter of it
// (Consumer.heartbeatWait), so in a healthy member the next one gets
// through well before the lease of the last one ends.
func (g *memberGate) current() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return sessionLease(g.lease, g.session)
}

// confirm records that a heartbeat or join sent at sent got through to
// the engine as a member, whose answer told the engine's session timeout
// session (zero: unknown, the last one told stays).
func (g *memberGate) confirm(sent time.Time, session time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = false
	if session > 0 {
		g.session = session
	}
	if end := sent.Add(sessionLease(g.lease, g.session)); end.After(g.until) {
		g.until = end
	}
	if sent.After(g.last) {
		g.last = sent
	}
	if g.renewed != nil {
		close(g.renewed)
		g.renewed = nil
	}
}

// sessionEnds returns when the engine may expire the member at the
// earliest: the last confirmation's sending plus the engine's session
// timeout (its session counts from the receipt). Zero while either is
// unknown.
func (g *memberGate) sessionEnds() time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last.IsZero() || g.session <= 0 {
		return time.Time{}
	}
	return g.last.Add(g.session)
}

// fail records that a heartbeat or join failed.
func (g *memberGate) fail() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = true
}

// set records whether a heartbeat or join sent at sent got through
// (confirmed, its answer telling the engine's session timeout session)
// or failed; runMembership tells it so.
func (g *memberGate) set(sent time.Time, session time.Duration, confirmed bool) {
	if confirmed {
		g.confirm(sent, session)
	} else {
		g.fail()
	}
}

// wait returns true once the membership is confirmed (at once when it
// is), false when stop is closed first.
func (g *memberGate) wait(stop <-chan struct{}) bool {
	for {
		g.mu.Lock()
		if !g.failed && (g.lease <= 0 || time.Now().Before(g.until)) {
			g.mu.Unlock()
			return true
		}
		if g.renewed == nil {
			g.renewed = make(chan struct{})
		}
		renewed := g.renewed
		g.mu.Unlock()
		select {
		case <-renewed:
		case <-stop:
			return false
		}
	}
}
