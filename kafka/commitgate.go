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
// The commits in the gate are waited for without the coordinator's lock
// (coordinator.settle), so a store write that hangs holds up its own
// group only: the gate is shut meanwhile, and a commit of that group that
// comes then waits, also without the lock, until it reopens. The lock is
// taken again before the change, and no commit enters while it is held.
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
// for is made.
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

// wait returns once the commits in the gate left; the caller holds the
// coordinator's lock, so that none enters meanwhile. Calls that change
// owners settle the gate first (coordinator.settle), and the coordinator's tick
// changes a group only with its gate empty, so this returns at once but on
// a change of leadership (forgetAll).
func (g *commitGate) wait() {
	if ch := g.drain(); ch != nil {
		<-ch
	}
	g.reopen()
}

// awaited reports whether a change of owners waits for commits in the
// gate (for tests).
func (g *commitGate) awaited() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shut != nil && g.n > 0
}

// gates lists the commit gates of the group named: its classic group's
// and its KIP-848 group's, as far as c knows them. The caller holds c's
// lock.
func (c *coordinator) gates(group string) []*commitGate {
	var out []*commitGate
	if g := c.groups[group]; g != nil {
		out = append(out, &g.commits)
	}
	if g := c.cgroups[group]; g != nil {
		out = append(out, &g.commits)
	}
	return out
}

// commitsSettled reports whether the named group's commit gates are
// empty; the caller holds c's lock, so that none enters until it releases
// it.
func (c *coordinator) commitsSettled(group string) bool {
	for _, g := range c.gates(group) {
		if !g.empty() {
			return false
		}
	}
	return true
}

// settle reports whether the named group's commit gates are empty, so
// that a change of who owns its partitions may be made before c is
// unlocked; the caller holds c's lock. If they are not, settle shuts them,
// waits without c's lock for the commits in them to leave (or for ctx to
// end), locks c again, reopens them and returns false: the caller checks
// its change again (the group may have changed meanwhile) and calls settle
// again. Only the group's own calls thus wait for its store writes, not
// every group's.
func (c *coordinator) settle(ctx context.Context, group string) bool {
	var shut []*commitGate
	var wait <-chan struct{}
	for _, g := range c.gates(group) {
		if ch := g.drain(); ch != nil {
			shut, wait = append(shut, g), ch
		}
	}
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
	// unlocked, after the change the caller makes next.
	for _, g := range shut {
		g.reopen()
	}
	return false
}
