package equeue

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Heartbeats are answered without the group's lock (g.mu). Every change
// of the group ends in notify, which publishes what the answers carry:
// each changed member's own part (memberAnswer), then what every member's
// answer carries alike (groupAnswer). A heartbeat reads both and, while
// its member's answer stays as it knows it, long-polls on the member's
// own channel. Under a crowd of offset fetches, releases, pulls and
// commits of one group, heartbeats queued behind them on g.mu: on a
// starved machine their members' sessions ran out meanwhile, and each
// expiry rebalanced the group, making more releases and fetches, slower
// heartbeats and more expiries. A heartbeat now records its member alive
// (and in progress, see member.expired) before anything else, and takes
// g.mu only to answer a member whose answer is being published.

// memberAnswer is what a member's answer carries of its own, as published
// at the last change of it: never changed once published.
type memberAnswer struct {
	version  int64
	queues   []Grant // clustering only
	revoking []Grant // clustering only
	pending  int     // clustering only
}

// groupAnswer is what every member's answer carries alike, as published
// at the group's last change: never changed once published.
type groupAnswer struct {
	version      int64 // the group's version (g.version) it was published at
	epoch        int64
	lanes        map[string]int
	broadcasting bool
	grants       []Grant // broadcasting only: every queue, under the reset epoch
}

// memberWake holds a member's long-poll channel and whether it was
// removed (or replaced by a join of its ID), so that heartbeats wait for
// a change without g.mu.
type memberWake struct {
	mu   sync.Mutex
	ch   chan struct{} // closed at the next change; nil while no heartbeat waits
	gone bool
}

// publishAnswer publishes m's answer as its view and version stand. g.mu
// must be held.
func (m *member) publishAnswer(clustering bool) {
	a := &memberAnswer{version: m.version}
	if clustering {
		a.queues = slices.Clone(m.view.queues)
		a.revoking = slices.Clone(m.view.revoking)
		a.pending = m.view.pending
	}
	m.answer.Store(a)
}

// publish publishes what every member's answer carries alike. Called last
// in notify, after the members' own parts. g.mu must be held.
func (g *group) publish() {
	a := &groupAnswer{version: g.version, epoch: g.epoch, lanes: g.lanes, broadcasting: g.model == Broadcasting}
	if a.broadcasting {
		a.grants = make([]Grant, len(g.queues))
		for i, q := range g.queues {
			a.grants[i] = Grant{QueueRef: q, Epoch: g.resetEpoch}
		}
	}
	g.answer.Store(a)
}

// publishedAnswer returns member m's answer as last published, the same
// as assignment would under g.mu; ok is false while the group has not
// published one for m, or is publishing a change (then g.mu answers).
func (g *group) publishedAnswer(m *member, o *Options) (a Assignment, ok bool) {
	for range 3 {
		ga, ma := g.answer.Load(), m.answer.Load() // the group's first: published last
		if ga == nil || ma == nil {
			return Assignment{}, false
		}
		if ma.version > ga.version { // a change being published
			runtime.Gosched()
			continue
		}
		a = Assignment{Group: g.name, Member: m.id, Epoch: ga.epoch, Version: ma.version, Queues: []Grant{}, Priorities: ga.lanes,
			SessionTimeout: o.SessionTimeout, MaxPullWait: o.MaxPullWait}
		if ga.broadcasting {
			a.Queues = append(slices.Grow(a.Queues, len(ga.grants)), ga.grants...)
			return a, true
		}
		// Copies: callers may keep and change what they are given.
		a.Queues = append(a.Queues, ma.queues...)
		if len(ma.revoking) > 0 {
			a.Revoking = slices.Clone(ma.revoking)
		}
		a.Pending = ma.pending
		return a, true
	}
	return Assignment{}, false
}

// indexed returns the live member id of g, nil when there is none: the
// index follows g.members, under g.mu, for readers without it.
func (g *group) indexed(id string) *member {
	if m, ok := g.index.Load(id); ok {
		return m.(*member)
	}
	return nil
}

// addMember makes m the member of its ID, replacing (and removing) one
// that held it. g.mu must be held.
func (g *group) addMember(m *member) {
	if old := g.members[m.id]; old != nil {
		old.remove() // a heartbeat of the member it replaces answers that it is no member
	}
	g.members[m.id] = m
	g.index.Store(m.id, m)
}

// remove marks m removed from its group and answers its held heartbeats.
// g.mu must be held.
func (m *member) remove() {
	m.wk.mu.Lock()
	defer m.wk.mu.Unlock()
	m.wk.gone = true
	if m.wk.ch != nil {
		close(m.wk.ch)
		m.wk.ch = nil
	}
}

// removed reports whether m was removed from its group.
func (m *member) removed() bool {
	m.wk.mu.Lock()
	defer m.wk.mu.Unlock()
	return m.wk.gone
}

// awaitAnswer returns the channel closed at the next change of m's answer
// from the one of version, or its removal; nil when it changed already.
// gone is true once m was removed.
func (m *member) awaitAnswer(version int64) (ch <-chan struct{}, gone bool) {
	m.wk.mu.Lock()
	defer m.wk.mu.Unlock()
	if m.wk.gone {
		return nil, true
	}
	if a := m.answer.Load(); a == nil || a.version != version {
		return nil, false
	}
	if m.wk.ch == nil {
		m.wk.ch = make(chan struct{})
	}
	return m.wk.ch, false
}

// publishedHeartbeat answers member m's heartbeat from what the group
// published, without g.mu: at once when the member's answer is not the
// one it knows (or it asks no wait), else when that answer changes, the
// member is removed, or deadline passes. done is false when the group has
// not published m's answer, or was publishing a change: the heartbeat is
// then answered under g.mu.
func (e *Engine) publishedHeartbeat(ctx context.Context, g *group, m *member, req *HeartbeatRequest, deadline time.Time) (a Assignment, done bool, err error) {
	notMember := func() (Assignment, bool, error) {
		return Assignment{}, true, fmt.Errorf("%w: %q in group %q", ErrNotMember, req.Member, req.Group)
	}
	for {
		a, ok := g.publishedAnswer(m, &e.opts)
		if !ok {
			return Assignment{}, false, nil
		}
		wait := time.Until(deadline)
		if a.Version != req.KnownVersion || req.Wait == 0 || wait <= 0 {
			if m.removed() {
				return notMember()
			}
			return a, true, nil
		}
		changed, gone := m.awaitAnswer(a.Version)
		if gone {
			return notMember()
		}
		if changed == nil {
			continue // changed since it was read
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Assignment{}, true, ctx.Err()
		case <-e.closing:
			t.Stop()
			return Assignment{}, true, ErrClosed
		}
		t.Stop()
		if h := e.heartbeatWokenHook.Load(); h != nil {
			(*h)(req.Member)
		}
		// Read, then checked: a removal before the read is seen. Checked
		// first, a removal between the two gave the member's last answer
		// beside the group's part after its removal: queues now granted
		// to others, under the new epoch.
		a, ok = g.publishedAnswer(m, &e.opts)
		if m.removed() {
			return notMember()
		}
		return a, ok, nil
	}
}
