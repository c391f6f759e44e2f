package watermill

import (
	"sync"
	"time"
)

// publishCalls counts a Publisher's Publish calls in progress, and of them
// those inside Marshaler.Marshal, for Close. Close waits for every call up
// to CloseTimeout, then cuts them off: it ends the contexts of their sends
// and waits only for the calls outside Marshal. A Marshal that never
// returns, which no context can end, thus cannot hold Close; a call whose
// Marshal returns after the cut, or that would begin one, fails without
// sending.
type publishCalls struct {
	mu sync.Mutex
	// closed is set when Close begins: no Publish call starts after it.
	closed bool
	// cut is set when Close stops waiting for the calls inside Marshal.
	cut bool
	// calls is the number of Publish calls in progress.
	calls int
	// marshaling is the number of those inside Marshal.
	marshaling int
	// changed is closed, and replaced, at every change of calls or
	// marshaling once closed is set (only Close waits for a change).
	changed chan struct{}
}

func newPublishCalls() *publishCalls {
	return &publishCalls{changed: make(chan struct{})}
}

// notify wakes Close's wait; with mu held.
func (c *publishCalls) notify() {
	if c.closed {
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// begin counts a Publish call; false after Close began.
func (c *publishCalls) begin() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.calls++
	return true
}

// end uncounts a Publish call that begin counted.
func (c *publishCalls) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls--
	c.notify()
}

// enterMarshal counts a call as inside Marshal; false, counting nothing,
// once Close cut the calls off: the call must then send nothing.
func (c *publishCalls) enterMarshal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return false
	}
	c.marshaling++
	c.notify()
	return true
}

// leaveMarshal counts a call as out of Marshal again; false when Close cut
// the calls off meanwhile: the call must then send nothing.
func (c *publishCalls) leaveMarshal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marshaling--
	c.notify()
	return !c.cut
}

// close refuses new calls; false when it was done already.
func (c *publishCalls) close() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := !c.closed
	c.closed = true
	return first
}

// cutOff has the calls inside Marshal, and those yet to begin one, fail
// without sending.
func (c *publishCalls) cutOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
}

// wait returns true once no call is in progress, or, after cutOff, none
// is outside Marshal; false if timeout fires first (a nil timeout never
// does).
func (c *publishCalls) wait(timeout <-chan time.Time) bool {
	for {
		c.mu.Lock()
		busy := c.calls
		if c.cut {
			busy -= c.marshaling
		}
		changed := c.changed
		c.mu.Unlock()
		if busy == 0 {
			return true
		}
		select {
		case <-changed:
		case <-timeout:
			return false
		}
	}
}
