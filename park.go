package equeue

import (
	"slices"
	"sync"
)

// Parking: an idle in-process consumer holds no goroutine for its queues. A
// runner whose pull found the end of its queue leaves a parkSlot on the
// queue and its pull loop returns; the next append to the queue (or the
// queue's deletion) starts the loop again, and the runner's stop ends it.
// Nothing waits in between: the slot is a callback, and the runner's stop
// (stopPulling) ends its parking. Over the network (package remote) the
// pull loops long-poll instead.

// parkSlot is one parked runner's place on its queue.
type parkSlot struct {
	q *queue
	r *runner
}

// parkAt leaves s on ref's queue, to be fired at the next append; false
// when messages at or past off are visible already or the queue is gone
// (then the caller pulls again, or learns that the queue is gone).
func (e *Engine) parkAt(ref QueueRef, off int64, s *parkSlot) bool {
	q, err := e.queueOf(ref)
	if err != nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next > off {
		return false
	}
	if q.parked == nil {
		q.parked = map[*parkSlot]struct{}{}
	}
	q.parked[s] = struct{}{}
	s.q = q
	return true
}

// remove removes s from its queue if it is still there.
func (s *parkSlot) remove() {
	s.q.mu.Lock()
	delete(s.q.parked, s)
	s.q.mu.Unlock()
}

// takeParkedLocked empties q's parked slots for the caller to fire; q.mu is held.
func (q *queue) takeParkedLocked() map[*parkSlot]struct{} {
	p := q.parked
	q.parked = nil
	return p
}

// fireParked resumes the parked runners of one append (or deletion), in
// one goroutine so the writer does not wait for them.
func fireParked(slots map[*parkSlot]struct{}) {
	if len(slots) == 0 {
		return
	}
	go func() {
		for s := range slots {
			s.r.c.unpark(s, true)
		}
	}()
}

// parking is a consumer's side of parking: who owns each parked runner.
type parking struct {
	mu     sync.Mutex
	closed bool        // set by Close after cancelling: nothing resumes any more
	slots  []*parkSlot // runners parked now (a handful: one per owned queue)
}

// park leaves r on its queue at off. It returns parked when the pull loop
// must return (the runner resumes later), and retry when messages are
// visible already (the loop goes on pulling). Neither: the runner stopped.
func (c *Consumer) park(e *Engine, r *runner, off int64) (parked, retry bool) {
	c.parking.mu.Lock()
	defer c.parking.mu.Unlock()
	if c.parking.closed || r.ctx.Err() != nil {
		return false, false
	}
	s := &parkSlot{r: r}
	if !e.parkAt(r.grant.QueueRef, off, s) {
		return false, true
	}
	r.next = off
	r.slot = s
	c.parking.slots = append(c.parking.slots, s)
	return true, false
}

// unpark ends s's parking, once: at an append (appended) the pull loop
// starts again unless the runner stopped meanwhile; at the runner's stop the
// runner ends, closing its done channel as its pull loop would have.
func (c *Consumer) unpark(s *parkSlot, appended bool) {
	r := s.r
	c.parking.mu.Lock()
	if r.slot != s {
		c.parking.mu.Unlock()
		return // the other side came first
	}
	r.slot = nil
	c.parking.slots = slices.DeleteFunc(c.parking.slots, func(o *parkSlot) bool { return o == s })
	if !appended {
		s.remove()
	}
	resume := appended && !c.parking.closed && r.ctx.Err() == nil
	if resume {
		// The append stored a message beyond what the lane pulled: its
		// lane is busy from now on, as one not pulled yet, so that no
		// lower lane of its queue goes first while its pull is under way.
		// The resumed loop's pull says otherwise, or its stop.
		r.laneBusy(true)
		// Under the lock: Close sets closed under it before it waits for
		// the consumer's goroutines, so this Add comes before that Wait.
		c.goFunc(r.pullLoop)
	}
	c.parking.mu.Unlock()
	if !resume {
		close(r.done)
	}
}

// stopParked ends r if it is parked (its pull loop is not running).
func (c *Consumer) stopParked(r *runner) {
	c.parking.mu.Lock()
	s := r.slot
	c.parking.mu.Unlock()
	if s != nil {
		c.unpark(s, false)
	}
}

// closeParking ends every runner still parked and makes every later unpark
// end its runner instead of resuming it; Close calls it after cancelling
// the runners, before it waits for the consumer's goroutines.
func (c *Consumer) closeParking() {
	c.parking.mu.Lock()
	c.parking.closed = true
	left := slices.Clone(c.parking.slots)
	c.parking.mu.Unlock()
	for _, s := range left {
		c.unpark(s, false)
	}
}

// parkedCount reports how many runners are parked now.
func (c *Consumer) parkedCount() int {
	c.parking.mu.Lock()
	defer c.parking.mu.Unlock()
	return len(c.parking.slots)
}
