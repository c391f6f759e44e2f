package equeue

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/equeue-go/equeue/allocate"
)

// Message priority, in the log model.
//
// A topic created with TopicOptions.Priorities = P gives each of its
// queues P lanes, and each lane is a queue of its own: queue q of the
// topic is stored as the queue IDs q*P ... q*P+P-1, lane l at q*P+l. A
// producer sends a message to the lane of its Message.Priority (0 is the
// lowest), in the queue its key or the selector picks (selectors see the
// topic's queues, q, not the lanes). Each lane therefore has its own
// offsets, committed offset and sliding window, and survives a restart as
// any queue does.
//
// A consumer group allocates the lanes of a queue together, to one member,
// and a Consumer handing the queue over releases them together. That
// member runs one pull loop per lane as for any queue; before it hands
// a message (or a batch) of lane l to a handler, it waits while a higher
// lane of the same queue still has messages to hand out: pulled and not
// handed out yet, or stored beyond what it pulled, or not pulled at all
// yet (a parked lane, see park.go, from the moment an append wakes it;
// over a remote broker, an idle lane in which a read finds messages, see
// priority_probe.go).
// So under a backlog every message of a higher lane reaches a handler
// before any message of a lower lane of the same queue.
//
// Guarantees that remain: order within a lane is the queue order (offset
// order, and the orderly mode holds per lane). There is no order across
// lanes: a lower-priority message sent first is delivered after a
// higher-priority one sent later, and messages already handed to the
// worker pool when a higher-priority message arrives are not recalled.
// Priority acts within one queue; queues (and so different keys) are
// consumed independently, as always. A message retried through the retry
// topic is delivered from there, when its retry is due, without priority
// over other messages (it still carries its Priority). Its retry and
// dead-letter copies record the lane it was stored in (stampPriority): a
// topic deleted and made again may have another lane count by the time
// they are handled or redriven, and the lane of its old queue ID with it.

// MaxPriorities is the most priority lanes a topic's queues may have
// (TopicOptions.Priorities).
const MaxPriorities = 16

// laneCount is the number of lanes per queue, 1 without priorities.
func (t *topic) laneCount() int { return max(t.lanes, 1) }

// lanesNote is the note an error about a queue count adds for a topic of
// lanes priority lanes per queue: nothing without priorities.
func lanesNote(lanes int) string {
	if lanes <= 1 {
		return ""
	}
	return fmt.Sprintf(" (queues of %d priority lanes)", lanes)
}

// topicLanes returns the lane count of a topic, 1 when it has none or is unknown.
func (e *Engine) topicLanes(name string) int {
	if t, ok := e.lookupTopic(name); ok {
		return t.laneCount()
	}
	return 1
}

// laneOf maps a message priority to one of n lanes: below 0 is the lowest,
// above n-1 the highest.
func laneOf(priority, n int) int { return min(max(priority, 0), n-1) }

// laneTopic is one topic's queues for allocateLanes: every queue ID, each
// lane of each queue, with the topic's lane count.
type laneTopic struct {
	name   string
	lanes  int
	queues []allocate.Queue
}

// allocateLanes divides each topic's queue IDs among the members ids with
// strategy s, each topic on its own as s.Allocate would, keeping the lanes
// of each queue together, and records the result in target.
func allocateLanes(s allocate.Strategy, topics []laneTopic, ids []string, target map[QueueRef]string) {
	heads := make([][]allocate.Queue, 0, len(topics))
	var lanes map[string]int // of the topics with more than one lane
	for _, t := range topics {
		n := max(t.lanes, 1)
		if n == 1 {
			heads = append(heads, t.queues)
			continue
		}
		hs := make([]allocate.Queue, 0, len(t.queues)/n)
		for _, q := range t.queues {
			if q.ID%n == 0 {
				hs = append(hs, allocate.Queue{Topic: q.Topic, ID: q.ID / n})
			}
		}
		heads = append(heads, hs)
		if lanes == nil {
			lanes = map[string]int{}
		}
		lanes[t.name] = n
	}
	allocate.Each(s, heads, ids, func(q allocate.Queue, id string) {
		n := max(lanes[q.Topic], 1)
		for l := range n {
			target[QueueRef{Topic: q.Topic, Queue: q.ID*n + l}] = id
		}
	})
}

// lanes returns the lane count of the routed topic and the lane of m.
func (r Route) lanes(m *Message) (n, lane int) {
	n = max(r.Priorities, 1)
	return n, laneOf(m.Priority, n)
}

// laneWritable lists the queues (not queue IDs) whose given lane is open
// to producers.
func (r Route) laneWritable(n, lane int) []int {
	if n == 1 {
		return r.Writable
	}
	out := make([]int, 0, len(r.Writable)/n)
	for _, id := range r.Writable {
		if id%n == lane {
			out = append(out, id/n)
		}
	}
	return out
}

// reroute picks a writable queue ID for m: one its key routes to in the
// given priority lane, else in any lane.
func (r Route) reroute(m *Message, lane int) int {
	n := max(r.Priorities, 1)
	if w := r.laneWritable(n, lane); n > 1 && len(w) > 0 {
		return KeyHashSelector().Select(m, w)*n + lane
	}
	return KeyHashSelector().Select(m, r.Writable)
}

// stampPriority records on d, the retry or dead-letter copy of a message
// stored at queue ID queue of t, the priority lane the message was stored
// in (SysOriginPriority), while t's lane count still says which it is. A
// copy of a retry keeps what its retry carries: the lane count of its
// origin topic may have changed since.
func stampPriority(d *Message, t *topic, queue int) {
	if isInternalTopic(t.name) {
		return
	}
	if n := t.laneCount(); n > 1 {
		d.sys[SysOriginPriority] = strconv.Itoa(queue % n)
	}
}

// originPriority returns the priority lane a retry or dead-letter copy's
// message was stored in: the one the copy records; 0 for a copy that
// records its origin topic's ID (SysOriginTopicID) but no lane, made by a
// build that records lanes, of a topic without priorities (its only lane
// is the lowest); else (a copy made before copies recorded either) the
// lane of its origin queue ID among n, the lane count its origin topic has
// now.
func originPriority(m *Message, n int) int {
	if p, err := strconv.Atoi(m.sys[SysOriginPriority]); err == nil && p >= 0 {
		return p
	}
	if n <= 1 || m.sys[SysOriginTopicID] != "" {
		return 0
	}
	q, _ := strconv.Atoi(m.sys[SysOriginQueue])
	return q % n
}

// laneSlot is one priority lane a consumer runs: its queue's key on the
// consumer's laneBoard and whether it has messages to hand out.
type laneSlot struct {
	key  laneKey
	lane int
}

// laneKey names a queue (not a lane) of a topic with priorities.
type laneKey struct {
	topic string
	queue int
}

// laneBoard tracks, per queue with priorities a consumer runs, which of its
// lanes have messages to hand out. The zero value is ready to use.
type laneBoard struct {
	mu      sync.Mutex
	busy    map[laneKey]map[int]laneState // lane -> its state
	changed chan struct{}                 // closed at the next change; nil while nobody waits
	counts  sync.Map                      // topic -> lane count learned from its route
}

// laneState is a lane's entry on the laneBoard: the slot of its latest
// grant, the only one that may change it, whether it is busy, and the
// offset its runner pulls next (laneStopped while no runner pulls it).
type laneState struct {
	slot *laneSlot
	busy bool
	next int64
}

// laneStopped is the next offset of a lane no runner pulls: claimed and
// not pulled yet, or whose runner stopped.
const laneStopped = -1

// laneKeepNext, given to update, keeps the lane's recorded next offset.
const laneKeepNext = -2

// claim makes s the slot of its lane, busy (not pulled yet). A runner of an
// earlier grant of the lane (fenced, and stopping in the background) no
// longer changes the lane: its stop does not mean that the lane has
// nothing to hand out.
func (b *laneBoard) claim(s *laneSlot) {
	b.update(s, true, laneStopped, true)
}

// set records whether lane s has messages to hand out, unless a later grant
// of the lane claimed it since.
func (b *laneBoard) set(s *laneSlot, busy bool) {
	b.update(s, busy, laneKeepNext, false)
}

// setAt is set that also records next, the offset the lane's runner pulls
// next (laneStopped once it stopped).
func (b *laneBoard) setAt(s *laneSlot, busy bool, next int64) {
	b.update(s, busy, next, false)
}

// update changes lane s's state. Waiters (see turn) are woken when the
// lane's busy mark changes, and when an idle lane's next offset does: a
// remote runner waiting for an idle higher lane to pull what it found
// there (see probeHigher) learns that it did, or that the lane stopped.
func (b *laneBoard) update(s *laneSlot, busy bool, next int64, claim bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.busy == nil {
		b.busy = map[laneKey]map[int]laneState{}
	}
	ls := b.busy[s.key]
	if ls == nil {
		ls = map[int]laneState{}
		b.busy[s.key] = ls
	}
	old, ok := ls[s.lane]
	if ok && !claim && old.slot != s {
		return // an earlier grant's runner
	}
	if next == laneKeepNext {
		next = laneStopped
		if ok {
			next = old.next
		}
	}
	ls[s.lane] = laneState{slot: s, busy: busy, next: next}
	if ok && old.busy == busy && (busy || old.next == next) {
		return
	}
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// isBusy reports whether lane s has messages to hand out.
func (b *laneBoard) isBusy(s *laneSlot) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.busy[s.key][s.lane].busy
}

// turn reports whether no lane above s is busy, and else returns a channel
// closed at the next change. With probe, it also returns the lanes above s
// that are idle while a runner pulls them, with the offsets their runners
// pull next, and then a channel closed at the next change too.
func (b *laneBoard) turn(s *laneSlot, probe bool) (bool, <-chan struct{}, []laneAt) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var idle []laneAt
	for l, st := range b.busy[s.key] {
		if l <= s.lane {
			continue
		}
		if st.busy {
			return false, b.changedLocked(), nil
		}
		if probe && st.next >= 0 {
			idle = append(idle, laneAt{lane: l, next: st.next})
		}
	}
	if len(idle) == 0 {
		return true, nil, nil
	}
	return true, b.changedLocked(), idle
}

// changedLocked returns the channel closed at the board's next change.
// b.mu must be held.
func (b *laneBoard) changedLocked() <-chan struct{} {
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

// learnLanes records the lane counts of topics with priorities (from an
// assignment), and marks the lanes of fresh grants busy before any of their
// runners starts, so that no lower lane goes first while a higher one is
// being started. It returns the lanes it marked, for unclaimLanes should
// no runner start on them. A topic's priorities are fixed at creation, but
// a topic deleted and created again may have others: the latest
// assignment holds.
func (c *Consumer) learnLanes(lanes map[string]int, fresh []Grant) []*laneSlot {
	for t, n := range lanes {
		if n > 1 {
			c.lanes.counts.Store(t, n)
		}
	}
	var claimed []*laneSlot
	for _, g := range fresh {
		if lanes[g.Topic] <= 1 {
			c.lanes.counts.Delete(g.Topic)
		}
		if s := c.laneSlotFor(g); s != nil {
			claimed = append(claimed, s)
		}
	}
	return claimed
}

// unclaimLanes marks idle the lanes learnLanes marked busy for grants on
// which no runner starts (fetching their offsets failed): no runner would
// ever clear them. A mark left on the highest lane of a topic deleted
// meanwhile would hold back, for good, the lower lanes of the same queue
// of the topic made again with fewer lanes. The next grant of the queue
// marks its lanes again.
func (c *Consumer) unclaimLanes(slots []*laneSlot) {
	for _, s := range slots {
		c.lanes.set(s, false)
	}
}

// subscribedLanes returns the lane counts of g's subscribed topics that
// have priorities, nil when none has.
func (c *coordinator) subscribedLanes(g *group) map[string]int {
	var out map[string]int
	for _, s := range g.subs {
		if n := c.e.topicLanes(s.Topic); n > 1 {
			if out == nil {
				out = map[string]int{}
			}
			out[s.Topic] = n
		}
	}
	return out
}

// laneCount returns the lane count learned for topic, 1 when unknown.
func (c *Consumer) laneCount(topic string) int {
	if v, ok := c.lanes.counts.Load(topic); ok {
		return v.(int)
	}
	return 1
}

// laneSlotFor returns the lane g is, nil when its topic has no priorities.
// A new lane is busy (not pulled yet) until its first pull says otherwise,
// whatever a runner of an earlier grant of it does meanwhile (see claim).
func (c *Consumer) laneSlotFor(g Grant) *laneSlot {
	n := c.laneCount(g.Topic)
	if n == 1 {
		return nil
	}
	s := &laneSlot{key: laneKey{topic: g.Topic, queue: g.Queue / n}, lane: g.Queue % n}
	c.lanes.claim(s)
	return s
}

// laneBusy records whether the runner's lane has messages to hand out.
func (r *runner) laneBusy(busy bool) {
	if r.lane != nil {
		r.c.lanes.set(r.lane, busy)
	}
}

// laneBusyAt is laneBusy that also records next, the offset the runner
// pulls next (laneStopped once it stopped).
func (r *runner) laneBusyAt(busy bool, next int64) {
	if r.lane != nil {
		r.c.lanes.setAt(r.lane, busy, next)
	}
}

// laneWait is the long-poll wait of the runner's next pull: none while its
// lane is busy, so that a lane whose end is not known yet learns it at once
// instead of holding lower lanes back for a whole long-poll.
func (r *runner) laneWait(wait time.Duration) time.Duration {
	if r.lane != nil && r.c.lanes.isBusy(r.lane) {
		return 0
	}
	return wait
}

// laneTurn waits while a higher-priority lane of the runner's queue has
// messages to hand out; false when the runner stopped first. With probe,
// over a remote broker, it also waits while an idle higher lane has
// messages stored beyond what its runner pulled (see probeHigher).
func (r *runner) laneTurn(probe bool) bool {
	if r.lane == nil {
		return true
	}
	probe = probe && engineOf(r.c.b) == nil
	for {
		ok, ch, idle := r.c.lanes.turn(r.lane, probe)
		if ok && (len(idle) == 0 || !r.probeHigher(idle)) {
			return true
		}
		select {
		case <-ch:
		case <-r.ctx.Done():
			return false
		}
	}
}

// markPriority sets the Priority of pulled messages: the lane they were
// stored in, or for a message from the retry topic, its origin's lane
// (originPriority).
func (r *runner) markPriority(msgs []*Message) {
	if r.lane != nil {
		for _, m := range msgs {
			m.Priority = r.lane.lane
		}
		return
	}
	if !isInternalTopic(r.grant.Topic) {
		return
	}
	for _, m := range msgs {
		if t := m.sys[SysOriginTopic]; t != "" {
			m.Priority = originPriority(m, r.c.laneCount(t))
		}
	}
}
