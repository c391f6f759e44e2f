package equeue

import (
	"iter"
	"slices"
	"strings"
	"sync"
)

// floorIndex maps each topic to the groups that may hold its messages back
// from a retention pass keeping unconsumed messages (consumedBelow), so
// that a pass looks at a topic's groups instead of every group for every
// queue. A group is indexed under the topics it subscribes to and, until
// its next rebalance, those it committed offsets of; consumedBelow decides
// under the group's lock whether it counts.
//
// A group that starts to count for a topic (a join, a rebalance, an offset
// stored for the first time or moved back) bumps the topic's sequence
// under mu, after the change and before its position on the topic can be
// read or set, and not while a pass holds the topic (moving): it waits
// for the pass, still holding g.mu. A pass holds a topic, under mu, only
// if the topic's sequence is the one it read before working out the
// floor, and moves the queue's watermark before it lets the topic go:
// such a change therefore lands either before the floor is worked out
// (and is counted), or after the watermark moved (and the group's
// position is set from the new watermark, or stored below it as any
// commit below a queue's first may be).
//
// mu itself is never held across the watermark's store write: a slow or
// hung disk stalls only the groups starting to count for the topic being
// cut, not the rebalances and first commits of every group, and with them
// the heartbeats and listings of groups of other topics. mu is taken
// after g.mu, and is never held while taking a group's lock nor across
// store I/O.
type floorIndex struct {
	mu     sync.Mutex
	topics map[string]*floorTopic
	groups map[*group]map[string]struct{} // the topics each group is indexed under
	seq    uint64                         // the last sequence handed out
	// moving holds the topics a pass moves a watermark of, each with a
	// channel closed when the pass lets the topic go (floorHold.release).
	moving map[string]chan struct{}
}

// floorTopic is one topic's entry in a floorIndex.
type floorTopic struct {
	groups map[*group]struct{}
	seq    uint64 // changes whenever a group may have started to count
}

// floorView is a pass's copy of one topic's entry.
type floorView struct {
	topic  string
	seq    uint64   // the topic's sequence when groups was read
	groups []*group // the groups indexed under topic then
	read   bool     // false until read, and again once seq is stale
}

// add indexes g under topics and bumps their sequences, once no pass
// moves a watermark of one of them. g.mu must be held.
func (x *floorIndex) add(g *group, topics ...string) {
	x.lockUnmoving(func(yield func(string) bool) {
		for _, t := range topics {
			if !yield(t) {
				return
			}
		}
	})
	defer x.mu.Unlock()
	x.addLocked(g, topics)
}

// set indexes g, at a rebalance, under the topics it subscribes to alone
// and bumps their sequences (a member that joined a broadcasting group has
// not started on any queue yet), once no pass moves a watermark of one of
// them. A group without subscriptions keeps its topics, each bumped. g.mu
// must be held.
func (x *floorIndex) set(g *group) {
	x.lockUnmoving(func(yield func(string) bool) {
		for _, s := range g.subs {
			if !yield(s.Topic) {
				return
			}
		}
		if len(g.subs) == 0 {
			for t := range x.groups[g] {
				if !yield(t) {
					return
				}
			}
		}
	})
	defer x.mu.Unlock()
	for t := range x.groups[g] {
		switch {
		case len(g.subs) == 0:
			x.addOne(g, t)
		case !g.subscribesTo(t):
			x.drop(g, t)
		}
	}
	for _, s := range g.subs {
		x.addOne(g, s.Topic)
	}
}

// lockUnmoving locks mu once no pass moves a watermark of a topic that
// topics yields, waiting without mu for each such pass; topics is called
// with mu held, again after each wait.
func (x *floorIndex) lockUnmoving(topics iter.Seq[string]) {
	x.mu.Lock()
	for {
		var wait chan struct{}
		for t := range topics {
			if wait = x.moving[t]; wait != nil {
				break
			}
		}
		if wait == nil {
			return
		}
		x.mu.Unlock()
		<-wait
		x.mu.Lock()
	}
}

// addLocked is add with x.mu held.
func (x *floorIndex) addLocked(g *group, topics []string) {
	for _, t := range topics {
		x.addOne(g, t)
	}
}

// addOne indexes g under t and bumps t's sequence. x.mu must be held.
func (x *floorIndex) addOne(g *group, t string) {
	if x.topics == nil {
		x.topics = map[string]*floorTopic{}
		x.groups = map[*group]map[string]struct{}{}
	}
	ft := x.topics[t]
	if ft == nil {
		ft = &floorTopic{groups: map[*group]struct{}{}}
		x.topics[t] = ft
	}
	ft.groups[g] = struct{}{}
	x.seq++
	ft.seq = x.seq
	if x.groups[g] == nil {
		x.groups[g] = map[string]struct{}{}
	}
	x.groups[g][t] = struct{}{}
}

// remove drops g, a group deleted or dropped, from every topic.
func (x *floorIndex) remove(g *group) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for t := range x.groups[g] {
		x.drop(g, t)
	}
}

// drop unindexes g under t. x.mu must be held.
func (x *floorIndex) drop(g *group, t string) {
	if ft := x.topics[t]; ft != nil {
		delete(ft.groups, g)
		if len(ft.groups) == 0 {
			delete(x.topics, t)
		}
	}
	delete(x.groups[g], t)
	if len(x.groups[g]) == 0 {
		delete(x.groups, g)
	}
}

// read fills v with topic's groups and sequence.
func (x *floorIndex) read(v *floorView) {
	x.mu.Lock()
	defer x.mu.Unlock()
	v.seq, v.groups, v.read = 0, v.groups[:0], true
	if ft := x.topics[v.topic]; ft != nil {
		v.seq = ft.seq
		for g := range ft.groups {
			v.groups = append(v.groups, g)
		}
	}
}

// hold marks v's topic moving if no group started to count for it since v
// was read, and reports whether it did; otherwise v is to be read again.
// Passes over one topic take turns (retainTopic), so the topic is not
// moving already; were it, v would be read again too.
func (x *floorIndex) hold(v *floorView) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	var seq uint64
	if ft := x.topics[v.topic]; ft != nil {
		seq = ft.seq
	}
	if seq != v.seq || x.moving[v.topic] != nil {
		v.read = false
		return false
	}
	if x.moving == nil {
		x.moving = map[string]chan struct{}{}
	}
	x.moving[v.topic] = make(chan struct{})
	return true
}

// floorHold is a retention pass's hold of a topic of a floorIndex (see
// hold), let go once the queue's watermark moved.
type floorHold struct {
	x     *floorIndex
	topic string
}

// release lets the topic go, if held, and wakes the groups waiting to
// start counting for it; a second call does nothing.
func (h *floorHold) release() {
	if h.x == nil {
		return
	}
	h.x.mu.Lock()
	close(h.x.moving[h.topic])
	delete(h.x.moving, h.topic)
	h.x.mu.Unlock()
	h.x = nil
}

// floorTries is how many times a pass works out a queue's floor while
// groups keep starting to count for its topic, before it leaves the queue
// to the next pass.
const floorTries = 4

// floorFor lowers cutoff to the floor of q, a queue of v's topic, and
// returns with the topic held in c.floors (h), so that no group starts to
// count for the topic before the caller moved the watermark and released
// h. It reports false, holding nothing, when groups kept starting to count.
func (c *coordinator) floorFor(v *floorView, q QueueRef, cutoff int64, h *floorHold) (int64, bool) {
	for range floorTries {
		if !v.read {
			c.floors.read(v)
		}
		floor := consumedBelow(v.groups, q, cutoff)
		if c.floorHook != nil {
			c.floorHook(q)
		}
		if c.floors.hold(v) {
			h.x, h.topic = &c.floors, v.topic
			return floor, true
		}
	}
	return 0, false
}

// consumedBelow lowers cutoff to the smallest offset one of gs that counts
// for q's topic still needs.
func consumedBelow(gs []*group, q QueueRef, cutoff int64) int64 {
	for _, g := range gs {
		g.mu.Lock()
		cutoff = g.consumedBelow(q, cutoff)
		g.mu.Unlock()
	}
	return cutoff
}

// consumedBelow lowers cutoff to the smallest offset g still needs of q, if
// g counts for q's topic: it subscribes to it or, coordinated outside the
// engine (no subscriptions), it committed offsets of it. g.mu must be held.
func (g *group) consumedBelow(q QueueRef, cutoff int64) int64 {
	shared, started := g.offsets[offsetKey{q: q}]
	if len(g.subs) > 0 {
		if !g.subscribesTo(q.Topic) {
			return cutoff
		}
	} else if !started && !g.committedTo(q.Topic) {
		return cutoff
	}
	if g.model != Broadcasting {
		if !started {
			return 0 // the group has not started on this queue yet
		}
		return min(cutoff, shared)
	}
	found := false
	for k, off := range g.offsets {
		if k.q == q && k.member != "" {
			found = true
			cutoff = min(cutoff, off)
		}
	}
	if !found {
		return 0
	}
	// Every member reads everything: one that has not started on this
	// queue yet holds it all back too.
	for id := range g.members {
		if _, ok := g.offsets[offsetKey{member: id, q: q}]; !ok {
			return 0
		}
	}
	return cutoff
}

// committedTo reports whether g, coordinated outside the engine, holds a
// committed offset of topic. g.mu must be held.
func (g *group) committedTo(topic string) bool {
	for k := range g.offsets {
		if k.member == "" && k.q.Topic == topic {
			return true
		}
	}
	return false
}

// retainedTopics lists the topics g counts for at open: those it
// subscribes to or, without subscriptions, those it holds offsets of.
func (g *group) retainedTopics() []string {
	var topics []string
	for _, s := range g.subs {
		topics = append(topics, s.Topic)
	}
	if len(g.subs) == 0 {
		for k := range g.offsets {
			topics = append(topics, k.q.Topic)
		}
		slices.Sort(topics)
		topics = slices.Compact(topics)
	}
	return topics
}

// subscribesTo reports whether g subscribes to topic: a binary search, the
// subscriptions being sorted by topic. g.mu must be held.
func (g *group) subscribesTo(topic string) bool {
	_, ok := slices.BinarySearchFunc(g.subs, topic, func(s Subscription, t string) int { return strings.Compare(s.Topic, t) })
	return ok
}
