package kafka

import (
	"context"
	"sync"
)

// commitGate orders a group's offset commits with the changes that hand
// its partitions to other members, as Kafka's coordinator does by checking
// and appending a commit under the group's lock. A commit enters the gate
// while the coordinator's lock is still held by its check, and leaves it
// once its store write returned; a change of owners (a classic group's new
// generation or its end, a KIP-848 partition given to a member) is made
// only with the gate empty. A commit checked against the old owners thus
// never lands after one of the new owners': it would move the offset back.
//
// The coordinator keeps one gate per group name (coordinator.gate),
// whatever the group's protocol and whether it knows the group yet: a
// commit without a generation to a group no member joined is stored
// before the first generation that a join makes begins, and a gate with
// commits in it outlives a group forgotten meanwhile (emptyGroupKeep,
// forgetAll).
//
// The commits in the gate are waited for without the coordinator's lock
// (coordinator.settle), so a store write that hangs holds up its own
// group only: the gate is shut meanwhile, and a commit of that group that
// comes then waits, also without the lock, until it reopens. The lock is
// taken again before the change, and no commit enters while it is held.
// The coordinator's tick, which waits for no group, shuts the gate and
// leaves its change to a later round, the first to find the gate empty:
// that round reopens it (coordinator.reopenDrainedGates) and makes the
// change before the commits that waited are let in.
type commitGate struct {
	mu      sync.Mutex
	n       int           // commits in the gate
	shut    chan struct{} // non-nil while shut: closed when it reopens
	drained chan struct{} // non-nil while one waits for n to drop to 0: closed then
}

// enter admits a checked commit; the caller holds the coordinator's lock.
// A shut gate admits none: enter then returns a channel closed when the
// gate reopens, for the caller to wait on without the coordinator's lock
// before it checks its commit again.
func (g *commitGate) enter() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		return g.shut
	}
	g.n++
	return nil
}

// leave ends a commit's store write.
func (g *commitGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.drained != nil {
		close(g.drained)
		g.drained = nil
	}
}

// drain returns nil if the gate is empty; otherwise it shuts the gate and
// returns a channel closed once the commits in it left. The caller holds
// the coordinator's lock, and reopens the gate once the change it waited
// for is made (settle), or leaves that to the round of the coordinator's
// tick that makes it (reopenDrainedGates).
func (g *commitGate) drain() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		return nil
	}
	if g.shut == nil {
		g.shut = make(chan struct{})
	}
	if g.drained == nil {
		g.drained = make(chan struct{})
	}
	return g.drained
}

// reopen admits commits again; the caller holds the coordinator's lock.
func (g *commitGate) reopen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

// empty reports whether no commit is in the gate; the caller holds the
// coordinator's lock, so that none enters until it releases it.
func (g *commitGate) empty() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n == 0
}

// idle reports whether the gate has no commit in it and nothing waits on
// it: it holds nothing then, and the coordinator may forget it.
func (g *commitGate) idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n == 0 && g.shut == nil && g.drained == nil
}

// awaited reports whether a change of owners waits for commits in the
// gate (for tests).
func (g *commitGate) awaited() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shut != nil && g.n > 0
}

// gate returns the commit gate of the group named, made if c has none;
// the caller holds c's lock.
func (c *coordinator) gate(group string) *commitGate {
	g := c.commits[group]
	if g == nil {
		g = &commitGate{}
		c.commits[group] = g
	}
	return g
}

// reopenDrainedGates reopens the gates that are shut with no commit left
// in them; the caller holds c's lock. The coordinator's tick calls it
// first: a change it left to this round because commits were in flight
// (tick) is made before c is unlocked, so the commits that waited at the
// gate enter after it. A change that waits in settle checks the gate
// again once it has c's lock, as it does after reopening the gate itself:
// the tick reopens a gate only once the commits a settle waits for left
// (its wait has ended then), so a commit it lets in before that settle
// has c's lock again costs the settle one more wait, for that commit
// only, which it shuts the gate for. The tick also reopens a gate that a
// settle left shut with commits in it (settle).
func (c *coordinator) reopenDrainedGates() {
	for _, g := range c.commits {
		if g.empty() {
			g.reopen()
		}
	}
}

// forgetIdleGates drops the gates that hold nothing (idle); the caller
// holds c's lock. None is referred to outside c then: the next commit to
// the group makes its gate again.
func (c *coordinator) forgetIdleGates() {
	for name, g := range c.commits {
		if g.idle() {
			delete(c.commits, name)
		}
	}
}

// commitsSettled reports whether the named group's commit gate is empty;
// the caller holds c's lock, so that none enters until it releases it.
func (c *coordinator) commitsSettled(group string) bool {
	g := c.commits[group]
	return g == nil || g.empty()
}

// settle reports whether the named group's commit gate is empty, so that
// a change of who owns its partitions may be made before c is unlocked;
// the caller holds c's lock. If it is not, settle shuts it, waits without
// c's lock for the commits in it to leave (or for ctx to end), locks c
// again, reopens it if it is empty and returns false: the caller checks
// its change again (the group may have changed meanwhile) and calls
// settle again. Only the group's own calls thus wait for its store
// writes, not every group's.
func (c *coordinator) settle(ctx context.Context, group string) bool {
	g := c.commits[group]
	if g == nil {
		return true
	}
	wait := g.drain()
	if wait == nil {
		return true
	}
	c.mu.Unlock()
	select {
	case <-wait:
	case <-ctx.Done():
	}
	c.lock()
	// Reopened under c's lock: a commit let in now enters only once c is
	// unlocked, after the change the caller makes next. Only if empty: a
	// commit in it now entered after the wait ended (the tick reopened
	// it) or is one this settle gave up on (ctx ended), and another
	// settle that shut the gate may be waiting for it. Reopened, the gate
	// would let further commits in under that settle, which a stream of
	// them, each sent before the one before was stored, could keep
	// waiting for as long as it went on. The settle whose wait ends with
	// the gate empty, or else the tick (reopenDrainedGates), reopens it.
	if g.empty() {
		g.reopen()
	}
	return false
}
