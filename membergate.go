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
	// through confirms the membership, from when it was sent (see
	// memberLease); zero means until one fails.
	lease time.Duration
	// until is when the lease of the last confirmation ends.
	until time.Time
	// failed is set from a failed heartbeat or join until one succeeds.
	failed bool
	// renewed, when set, is closed at the next confirmation.
	renewed chan struct{}
}

// memberLease is the lease of an orderly clustering member's heartbeats:
// twice its HeartbeatInterval. The member does not know the engine's
// SessionTimeout (neither the join nor a heartbeat answers it), only that
// HeartbeatInterval must stay well under it; with a session of at least
// three heartbeat intervals (the README asks so of orderly groups), the
// engine cannot have expired the member while its lease runs, as the
// engine's session runs from the receipt of the heartbeat, later than its
// sending. Its heartbeats long-poll for half an interval (heartbeatWait),
// so in a healthy member the next one gets through about one interval
// after the last one was sent, an interval before the lease ends.
func memberLease(heartbeat time.Duration) time.Duration {
	return 2 * heartbeat
}

// confirm records that a heartbeat or join sent at sent got through to
// the engine as a member.
func (g *memberGate) confirm(sent time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = false
	if end := sent.Add(g.lease); end.After(g.until) {
		g.until = end
	}
	if g.renewed != nil {
		close(g.renewed)
		g.renewed = nil
	}
}

// fail records that a heartbeat or join failed.
func (g *memberGate) fail() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = true
}

// set records whether a heartbeat or join sent at sent got through
// (confirmed) or failed; runMembership tells it so.
func (g *memberGate) set(sent time.Time, confirmed bool) {
	if confirmed {
		g.confirm(sent)
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
