package equeue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"
)

// newIncarnation returns a token for one Start of a member: a later Start
// with the same member ID (a restart) carries another one.
func newIncarnation() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// expired reports whether m is gone for good: no heartbeat in progress and
// none for longer than the session timeout.
func (m *member) expired(now time.Time, session time.Duration) bool {
	return m.waiting.Load() == 0 && now.Sub(time.Unix(0, m.lastSeen.Load())) > session
}

// seen records a heartbeat of m at now; a heartbeat of a frozen group
// (groupfreeze.go) records it without g.mu.
func (m *member) seen(now time.Time) {
	n := now.UnixNano()
	for {
		old := m.lastSeen.Load()
		if old >= n || m.lastSeen.CompareAndSwap(old, n) {
			return
		}
	}
}

// runMembership keeps a member in its group until ctx ends: it heartbeats
// (a long-poll that returns early when the group's assignment changes),
// hands every new assignment to ap (an applier made under ctx), and
// rejoins after the engine expired the member or its group was deleted
// (calling lost first, since its grants are gone). first, when not nil,
// is the assignment the member's join answered, applied first. ap applies
// the assignments beside the heartbeats, one at a time and in order (see
// applier), so that a broker call of an apply that outlasts the session
// timeout does not let the engine expire the member; the apply under way
// is cancelled, and waited for, before lost, and runMembership stops ap
// before it returns. While another
// incarnation holds the member ID, rejoining is refused with
// ErrMemberIDInUse; it goes on trying (with backoff) and reports replaced
// meanwhile, so the member does not leave in the other one's name.
// confirmed is told after each heartbeat or rejoin when it was sent and
// whether it reached the engine as a member (true, with the session
// timeout its answer told) or failed (false: the engine may have expired
// the member meanwhile; see memberGate); an answer that the member
// expired is reported by lost instead. wait tells each heartbeat how long
// it may long-poll.
func runMembership(ctx context.Context, b Broker, join *JoinRequest, wait func() time.Duration, log *slog.Logger,
	known func() int64, first *Assignment, ap *applier, lost func(), replaced func(bool),
	confirmed func(time.Time, time.Duration, bool)) {
	const minBackoff = 100 * time.Millisecond
	backoff := minBackoff
	defer ap.stop()
	if first != nil {
		ap.post(*first)
	}
	for ctx.Err() == nil {
		sent := time.Now()
		a, err := b.Heartbeat(ctx, &HeartbeatRequest{Group: join.Group, Member: join.Member, KnownVersion: ap.known(known), Wait: wait(), Incarnation: join.Incarnation})
		if err == nil {
			confirmed(sent, a.SessionTimeout, true)
			if a.Version != ap.known(known) {
				ap.post(a)
			}
		} else if errors.Is(err, ErrNotMember) || errors.Is(err, ErrGroupNotFound) {
			// Expired, or removed with its group (DeleteGroup with Force):
			// join again, into the group of that name there is now.
			log.Warn("no longer a group member; rejoining", "err", err)
			ap.reset()
			lost()
			sent = time.Now()
			a, err = b.JoinGroup(ctx, join)
			replaced(errors.Is(err, ErrMemberIDInUse))
			if err == nil {
				confirmed(sent, a.SessionTimeout, true)
				ap.post(a)
			}
		} else if ctx.Err() == nil && !brokerClosed(err) {
			confirmed(sent, 0, false)
		}
		switch {
		case err == nil:
			backoff = minBackoff
			continue
		case ctx.Err() != nil || brokerClosed(err):
			return
		}
		log.Warn("heartbeat failed", "err", err, "retry_in", backoff)
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// brokerClosed reports whether a heartbeat's err means the broker is
// closed for good (the engine's or the client's own close): ErrClosed,
// but not a call cut short by a cluster leader's tenure ending, which
// also matches ErrIndeterminate and which the next leader mends.
func brokerClosed(err error) bool {
	return errors.Is(err, ErrClosed) && !errors.Is(err, ErrIndeterminate)
}

// leaveGroup removes a member on Close. The leave names the member's
// incarnation: if the engine expired this one while it was cut off and a
// restart took the member ID, the engine answers ErrNotMember and the
// other incarnation stays.
func leaveGroup(ctx context.Context, b Broker, join *JoinRequest) error {
	return b.LeaveGroup(ctx, &LeaveRequest{Group: join.Group, Member: join.Member, Incarnation: join.Incarnation})
}

// notLeft reports whether a leave's error means the member may still be
// in the group: not when it is no member (left, expired, replaced), the
// group does not exist (a Close before the first join), or the broker
// closed.
func notLeft(err error) bool {
	return err != nil && !errors.Is(err, ErrNotMember) && !errors.Is(err, ErrGroupNotFound) && !errors.Is(err, ErrClosed)
}
