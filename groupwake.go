package equeue

import (
	"maps"
	"slices"
)

// A change of a group answers the held heartbeats (and moves the
// Assignment.Version) of only the members whose answer it changes: each
// member's view is computed once per change, in one pass over the group's
// queues, and compared with the view it was last given. Waking every
// member and computing each one's assignment anew cost members × queues
// per join, leave or release (and one network answer per member of a
// remote group).

// memberView is what a clustering member's answer carries of its own: its
// grants, the queues it hands over, and how many it waits for.
type memberView struct {
	queues   []Grant
	revoking []Grant
	pending  int
}

// reset empties v, keeping its buffers.
func (v *memberView) reset() {
	v.queues, v.revoking, v.pending = v.queues[:0], v.revoking[:0], 0
}

// equal reports whether v and o answer the same.
func (v *memberView) equal(o *memberView) bool {
	return v.pending == o.pending && slices.Equal(v.queues, o.queues) && slices.Equal(v.revoking, o.revoking)
}

// sharedView is what every member's answer carries alike: the model, the
// priority lanes and, in a broadcasting group, the grants (every queue,
// under the reset epoch).
type sharedView struct {
	model  MessageModel
	lanes  map[string]int
	queues []QueueRef // broadcasting only
	epoch  int64      // broadcasting only: resetEpoch
}

// wakeUp answers the member's held heartbeats. g.mu must be held.
func (m *member) wakeUp() {
	m.wk.mu.Lock()
	defer m.wk.mu.Unlock()
	if m.wk.ch != nil {
		close(m.wk.ch)
		m.wk.ch = nil
	}
}

// waitChange returns the channel closed at the next change of the
// member's answer, or at its removal. g.mu must be held.
func (m *member) waitChange() <-chan struct{} {
	m.wk.mu.Lock()
	defer m.wk.mu.Unlock()
	if m.wk.gone { // removed already: answers at once
		gone := make(chan struct{})
		close(gone)
		return gone
	}
	if m.wk.ch == nil {
		m.wk.ch = make(chan struct{})
	}
	return m.wk.ch
}

// notify takes a new group version and gives it, waking their held
// heartbeats, to the members whose answer changed since they were last
// given one. g.mu must be held.
func (g *group) notify() {
	g.version++
	all := g.sharedChanged()
	clustering := g.model != Broadcasting
	if clustering {
		g.computeViews()
	}
	for _, m := range g.members {
		changed := all || m.version == 0 // a new member takes this version
		if clustering {
			changed = changed || !m.view.equal(&m.next)
			m.view, m.next = m.next, m.view
		}
		if changed {
			m.version = g.version
			m.publishAnswer(clustering)
			m.wakeUp()
		}
	}
	g.publish() // last: see groupanswer.go
}

// sharedChanged records what every member's answer carries alike and
// reports whether it changed. g.mu must be held.
func (g *group) sharedChanged() bool {
	s := &g.shared
	changed := s.model != g.model || !maps.Equal(s.lanes, g.lanes)
	s.model, s.lanes = g.model, g.lanes
	if g.model != Broadcasting {
		s.queues, s.epoch = s.queues[:0], 0
		return changed
	}
	if s.epoch != g.resetEpoch || !slices.Equal(s.queues, g.queues) {
		changed = true
		s.queues = append(s.queues[:0], g.queues...)
		s.epoch = g.resetEpoch
	}
	return changed
}

// computeViews fills every member's next view in one pass over the
// group's queues (the cases of assignment). g.mu must be held.
func (g *group) computeViews() {
	for _, m := range g.members {
		m.next.reset()
	}
	for _, q := range g.queues {
		o, held := g.owners[q]
		target := g.target[q]
		if held {
			if m := g.members[o.member]; m != nil {
				if o.member == target {
					m.next.queues = append(m.next.queues, Grant{QueueRef: q, Epoch: o.epoch})
				} else {
					m.next.revoking = append(m.next.revoking, Grant{QueueRef: q, Epoch: o.epoch})
				}
			}
		}
		if target != "" && (!held || o.member != target) {
			if m := g.members[target]; m != nil {
				m.next.pending++
			}
		}
	}
}
