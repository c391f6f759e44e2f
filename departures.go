package equeue

import (
	"sync"
	"time"
)

// departures remembers, for SessionTimeout after each leave, the
// incarnations that left their group (LeaveGroup), so that a join of one
// of them that reaches the engine after its leave is refused with
// ErrNotMember instead of adding the member again. Such a join was sent
// before the leave: a consumer's rejoin in the background (after a forced
// DeleteGroup removed it, or its session expired) that Close cut short
// while the request was still on its way over a remote connection. The
// member it added held the ID against the next Start, and kept the group
// from being deleted without Force, until its session expired. A join
// later than SessionTimeout after its leave is no longer refused, but the
// member it adds, with no consumer heartbeating for it, is gone after one
// session too.
//
// A new incarnation (the next Start) of the member ID joins at once, and a
// member removed without leaving (expired, or its group deleted with
// Force) rejoins with its incarnation as before.
//
// At most maxDepartures are kept, the oldest dropped first, so that leaves
// of ever new names cannot grow the engine's memory without bound.
type departures struct {
	mu    sync.Mutex
	at    map[departure]time.Time
	order []departedAt // oldest first; an entry left again later is here twice
}

// departure is one incarnation of a member ID that left a group.
type departure struct{ group, member, incarnation string }

type departedAt struct {
	departure
	at time.Time
}

// maxDepartures bounds the leaves remembered.
const maxDepartures = 1 << 14

// maxIncarnationLen bounds the incarnation tokens remembered: consumers'
// are 16 bytes; a longer one is not remembered.
const maxIncarnationLen = 255

// add remembers that the incarnation of req left its group at now, and
// forgets the leaves older than keep. A leave without an incarnation (a
// client that predates them), or that names no valid group, member ID or
// incarnation, is not remembered.
func (d *departures) add(req *LeaveRequest, now time.Time, keep time.Duration) {
	if req.Incarnation == "" || len(req.Incarnation) > maxIncarnationLen ||
		ValidateName(req.Group) != nil || validateMemberID(req.Member) != nil {
		return
	}
	k := departure{group: req.Group, member: req.Member, incarnation: req.Incarnation}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at == nil {
		d.at = map[departure]time.Time{}
	}
	for len(d.order) > 0 && (len(d.order) >= maxDepartures || now.Sub(d.order[0].at) > keep) {
		o := d.order[0]
		d.order[0] = departedAt{} // let go of its strings
		d.order = d.order[1:]
		if d.at[o.departure].Equal(o.at) {
			delete(d.at, o.departure)
		}
	}
	d.at[k] = now
	d.order = append(d.order, departedAt{departure: k, at: now})
}

// left reports whether the incarnation of req left its group within keep
// before now. A join without an incarnation is never refused.
func (d *departures) left(req *JoinRequest, now time.Time, keep time.Duration) bool {
	if req.Incarnation == "" {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.at[departure{group: req.Group, member: req.Member, incarnation: req.Incarnation}]
	return ok && now.Sub(at) <= keep
}
