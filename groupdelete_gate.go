package equeue

import (
	"context"
	"fmt"
	"sync/atomic"
)

// A group's deletion and a redrive's send of one of its dead letters are
// ordered by the group's sbGate (redriveOne) while the engine holds the
// group in memory. A group it does not hold (its keys went with a
// DeleteGroup cut short, or its metadata was never stored, so that only
// its dead letters are left) has no such gate, nor has a group between
// the moment its deletion took it out of memory and the end of that
// deletion. A ToTopic redrive of such a group, unordered with its
// deletion, would send a dead letter of a deleted group back to its topic
// after DeleteGroup returned, and write a redriven mark that outlives the
// group. So each deletion holds its group's name gate exclusively, from
// before its keys are listed until its topics are gone, and every
// redrive's send holds it shared (also for a group in memory: one made
// since such a deletion began has a gate the deletion never takes). The
// name gate is taken before the group's sbGate. A SendBack holds it
// shared too, until its copy and mark are queued: DeleteTopic of the
// group's retry or dead-letter topic takes the name gate, not the
// group's sbGate, and would otherwise delete the topic and its marks
// between the SendBack's checks and its write, which would then make the
// topic again and store a mark of the deleted one.
//
// A join holds the gate shared as well, from before it creates the
// group's retry topic until the group it makes (or finds) is in memory
// with its member: a deletion that found no group in memory, or that
// took the group out of memory, would otherwise delete that retry topic
// from under the group the join makes next, and the join's group would
// run without it until a send-back made it again. So a join waits for a
// deletion under way, and a deletion waits for the joins under way and
// then finds their group (refused with ErrGroupHasMembers unless forced).

// nameGate orders the deletion of a group (and of its retry and
// dead-letter topics) with the joins of its name, its send-backs and the
// redrives' sends of its dead letters, whether or not the engine holds
// the group in memory. Deletions hold it exclusively, the others shared,
// and it is had in the order it is asked for (gateLock): a deletion
// waiting for the holders keeps the joins and sends that come after it
// waiting, so that a stream of them does not starve it, and one whose
// context ends leaves the queue at once, holding nothing up.
type nameGate struct {
	gateLock
	// refs counts the deletions, joins and sends that hold or wait for it;
	// guarded by coordinator.mu. The gate is dropped at zero.
	refs int
}

// nameGate returns the gate of group name, for the caller to lock and
// then give back with dropNameGate.
func (c *coordinator) nameGate(name string) *nameGate {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.nameGates[name]
	if g == nil {
		if c.nameGates == nil {
			c.nameGates = map[string]*nameGate{}
		}
		g = &nameGate{}
		c.nameGates[name] = g
	}
	g.refs++
	return g
}

// dropNameGate gives back g, the gate of group name, once unlocked.
func (c *coordinator) dropNameGate(name string, g *nameGate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g.refs--; g.refs == 0 && c.nameGates[name] == g {
		delete(c.nameGates, name)
	}
}

// fenceGroupName locks group name's gate for its deletion; unfence
// unlocks it, once the group's topics are deleted. The writes that sends
// holding it queued (a redrive that gave up on its context leaves its
// write queued) are waited for by the deletion's barrier, before it lists
// the group's keys (deleteGroupKeys), so that it finds their marks. It
// waits for the sends, joins and deletions holding the gate as long as
// ctx lets it: one that ctx ends returns ctx's error, the deletion not
// begun, and asks nothing more of the gate.
func (e *Engine) fenceGroupName(ctx context.Context, name string) (unfence func(), err error) {
	return e.lockNameGate(ctx, name, false, nil)
}

// shareNameGate holds group name's gate shared for a join, which may
// make the group; release gives it back. It waits, as long as ctx lets it,
// for a deletion of the group under way (or asked for before it) to end:
// that wait counts among the waits for a held name
// (coordinator.holdWaits).
func (e *Engine) shareNameGate(ctx context.Context, name string) (release func(), err error) {
	return e.lockNameGate(ctx, name, true, &e.groups.holdWaits)
}

// lockNameGate locks group name's gate, shared or exclusively, waiting
// for it as long as ctx lets it; a wait is counted in waits when it is
// not nil. A wait that ctx ends returns ctx's error and leaves the
// gate's queue: those behind it do not wait for it. unlock gives the
// gate back.
func (e *Engine) lockNameGate(ctx context.Context, name string, shared bool, waits *atomic.Int64) (unlock func(), err error) {
	c := e.groups
	g := c.nameGate(name)
	if err := g.lock(ctx, shared, waits); err != nil {
		c.dropNameGate(name, g)
		return nil, err
	}
	return func() {
		g.unlock(shared)
		c.dropNameGate(name, g)
	}, nil
}

// holdOffDeletion holds off the deletion of group until release is
// called, for a redrive's send of one of its dead letters of dlq: g is the
// group as the redrive found it, nil when the engine did not hold it. A
// group deleted meanwhile gets nothing: ErrGroupNotFound. The name's gate
// is held in every case: a deletion that began while the engine did not
// hold the group takes no gate of a group made since under the name, and
// deletes dlq all the same. So the send is refused once dlq, the group's
// dead-letter topic, is gone; a group in memory (a member joined) is held
// off by its own gate as well. It waits for a deletion under way as long
// as ctx lets it, and returns an error matching ctx's when ctx ends first.
func (e *Engine) holdOffDeletion(ctx context.Context, g *group, group string, dlq *topic) (release func(), err error) {
	unlockName, err := e.lockNameGate(ctx, group, true, nil)
	if err != nil {
		return nil, fmt.Errorf("equeue: redrive of group %q waits for its deletion: %w", group, err)
	}
	if g == nil {
		g, _ = e.groups.group(group)
	}
	if g == nil {
		if err := e.checkDLQCurrent(group, dlq); err != nil {
			unlockName()
			return nil, err
		}
		return unlockName, nil
	}
	if err := g.sbGate.lock(ctx, true, nil); err != nil {
		unlockName()
		return nil, fmt.Errorf("equeue: redrive of group %q waits for a change of its offsets: %w", group, err)
	}
	release = func() {
		g.sbGate.unlock(true)
		unlockName()
	}
	if !e.groups.current(g) {
		release()
		return nil, fmt.Errorf("%w: %q was deleted during the redrive", ErrGroupNotFound, group)
	}
	if err := e.checkDLQCurrent(group, dlq); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// checkDLQCurrent returns an error matching ErrGroupNotFound and
// ErrTopicNotFound when dlq is no longer group's dead-letter topic.
func (e *Engine) checkDLQCurrent(group string, dlq *topic) error {
	if t, ok := e.lookupTopic(DLQTopic(group)); !ok || t != dlq || dlq.deleted.Load() {
		return fmt.Errorf("%w: %w: the dead letters of %q were deleted during the redrive", ErrGroupNotFound, ErrTopicNotFound, group)
	}
	return nil
}
