package equeue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Offsets of groups whose membership is coordinated outside the engine, such
// as the Kafka listener's classic-protocol groups (package kafka): the
// listener decides who consumes what, the engine stores what they consumed.
// Such offsets sit beside those of native groups, under the same keys, so
// they survive restarts, show in Groups and Group, and are dropped with
// their topic like any other.

// CommitGroupOffsets stores the next offset to consume of each queue for a
// group that has no native members, creating the group when it is new. It
// returns ErrInvalidName for a bad group name, ErrInvalidArgument for a
// negative offset or one past its queue's end, ErrTopicNotFound or
// ErrQueueNotFound for a queue that does not exist, and ErrFenced when native consumers are members of the group
// (their own commits rule its offsets); in those cases nothing was stored.
// An error matching ErrIndeterminate means the offsets were written but may
// not be durable. The engine's view changes only after the store write returned.
func (e *Engine) CommitGroupOffsets(ctx context.Context, name string, offsets map[QueueRef]int64) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := ValidateName(name); err != nil {
		return err
	}
	names := make([]string, 0, len(offsets))
	for ref, off := range offsets {
		if off < 0 {
			return fmt.Errorf("%w: negative offset %d for %s", ErrInvalidArgument, off, ref)
		}
		if err := e.checkCommitEnd(ref, off); err != nil {
			return err
		}
		names = append(names, ref.Topic)
	}
	if len(offsets) == 0 {
		return nil
	}
	// A commit that moves an offset back deletes every send-back mark of
	// its queue (sendbackmark.go). A native member that has just left may
	// still be queueing a send-back: like a reset, such a commit first
	// fences the group's send-backs, so that none leaves a mark behind it.
	var fenced *group // the group whose send-backs this call holds fenced
	defer func() {
		if fenced != nil {
			fenced.sbGate.unlock(false)
		}
	}()
	if g, err := e.groups.group(name); err == nil {
		g.mu.Lock()
		back := g.movesBackTo(offsets)
		g.mu.Unlock()
		if back {
			if err := e.fenceSendBacks(ctx, g); err != nil {
				return fmt.Errorf("equeue: commit offsets of %q: %w", name, err)
			}
			fenced = g
		}
	}
	for {
		g, held, err := e.commitGroupOffsets(name, names, offsets, fenced)
		if held != nil {
			// The group is being deleted: commit once it is, into the
			// group made anew (groupdelete_hold.go).
			if fenced != nil {
				fenced.sbGate.unlock(false)
				fenced = nil
			}
			if err := e.groups.awaitHold(ctx, held); err != nil {
				return err
			}
			continue
		}
		if g == nil {
			return err
		}
		// An offset moved on since the look above, or the group is
		// another: fence the one the commit found, and commit again.
		if fenced != nil {
			fenced.sbGate.unlock(false)
			fenced = nil
		}
		if err := e.fenceSendBacks(ctx, g); err != nil {
			return fmt.Errorf("equeue: commit offsets of %q: %w", name, err)
		}
		fenced = g
	}
}

// movesBackTo reports whether offsets move one of g's committed offsets
// back. g.mu must be held.
func (g *group) movesBackTo(offsets map[QueueRef]int64) bool {
	for ref, off := range offsets {
		if cur, ok := g.offsets[offsetKey{q: ref}]; ok && off < cur {
			return true
		}
	}
	return false
}

// commitGroupOffsets is CommitGroupOffsets once the send-backs of fenced
// are fenced. When the commit moves an offset of a group other than
// fenced back, it stores nothing and returns that group, to be fenced.
// When the group is being deleted, it stores nothing and returns the
// deletion's hold (groupdelete_hold.go), to be waited for.
func (e *Engine) commitGroupOffsets(name string, names []string, offsets map[QueueRef]int64, fenced *group) (refence *group, held chan struct{}, err error) {
	gate := e.gateTopics(names)
	defer gate.release()
	for ref := range offsets {
		if err := gate.check(ref.Topic); err != nil {
			return nil, nil, err
		}
	}
	c := e.groups
	g, created, held := c.lockForCommit(name)
	if held != nil {
		return nil, held, nil
	}
	if len(g.members) > 0 {
		g.mu.Unlock()
		g.commitMu.Unlock()
		return nil, nil, fmt.Errorf("%w: group %q has native members", ErrFenced, name)
	}
	if g != fenced && g.movesBackTo(offsets) {
		g.mu.Unlock()
		g.commitMu.Unlock()
		return g, nil, nil
	}
	// A group coordinated outside has no native members to come and go:
	// a commit is its sign of use (Options.GroupIdleTTL counts from it, or
	// from a later KeepGroup), even one that changes nothing.
	g.lastUsed = time.Now()
	var (
		passes []markPass
		offs   []store.MetaOp // the offsets, after the marks' deletions
	)
	for ref, off := range offsets {
		k := offsetKey{q: ref}
		// Marks left by native members the commit passes (sendbackmark.go).
		passed := g.marksPassed(k, off)
		if cur, ok := g.offsets[k]; ok && cur == off && len(g.attempts[k]) == 0 && len(passed) == 0 {
			continue
		}
		cur, had := g.offsets[k]
		passes = append(passes, markPass{k: k, off: off, passed: passed, back: had && off < cur})
		offs = append(offs, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(off, nil)})
	}
	// As many marks as fit in the write, the live ones of an offset moved
	// back first (planMarks).
	ops, set := g.planMarks(passes)
	ops = append(ops, offs...)
	g.mu.Unlock()
	err = e.deleteMarksBeforeMovingBack(g, set)
	if err == nil {
		err = e.storeOffsets(g, ops, set)
	}
	if err != nil && !errors.Is(err, ErrIndeterminate) && created {
		// Still under commitMu: a commit that found g meanwhile stores
		// its offsets only after g is dropped, in the name's next group.
		g.mu.Lock()
		if len(g.members) == 0 && len(g.offsets) == 0 {
			c.mu.Lock()
			if c.groups[name] == g {
				delete(c.groups, name)
			}
			c.mu.Unlock()
			c.floors.remove(g)
		}
		g.mu.Unlock()
	}
	g.commitMu.Unlock() // deleteMarksAfter takes it per write
	if err != nil {
		return nil, nil, fmt.Errorf("equeue: commit offsets of %q: %w", name, err)
	}
	e.deleteMarksAfter(g, set)
	return nil, nil, nil
}

// KeepGroup tells the engine that a group coordinated outside it (see
// CommitGroupOffsets) is in use although it commits nothing: its
// consumers are live but have no offset to move, as on a quiet topic, where
// Kafka clients commit nothing. Options.GroupIdleTTL counts the group's idle
// time from its last commit or KeepGroup call, whichever is later, so a
// coordinator that calls it, more often than the TTL, while the group has
// members keeps the group and its offsets for as long as it has them. Only
// memory changes, as with the idle time commits give: nothing is written,
// and after a restart idle time counts from Open. It returns
// ErrInvalidName for a bad group name and ErrGroupNotFound for a group the
// engine does not know (one that never committed, or was deleted).
func (e *Engine) KeepGroup(ctx context.Context, group string) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := ValidateName(group); err != nil {
		return err
	}
	g, err := e.groups.group(group)
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.lastUsed = time.Now()
	g.mu.Unlock()
	return nil
}

// GroupOffsets returns a group's committed offsets (the next offset to
// consume) of every queue it has one for; an unknown group has none. Offsets
// of broadcasting members, which are per member, are not included. It
// returns ErrInvalidName for a bad group name, whether or not the engine
// knows a group of that name.
func (e *Engine) GroupOffsets(ctx context.Context, group string) (map[QueueRef]int64, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	if err := ValidateName(group); err != nil {
		return nil, err
	}
	out := map[QueueRef]int64{}
	g, err := e.groups.group(group)
	if errors.Is(err, ErrGroupNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, off := range g.offsets {
		if k.member == "" {
			out[k.q] = off
		}
	}
	return out, nil
}

// externalQueues lists, sorted, the queues of a group coordinated outside
// the engine (one without subscriptions) that it has committed offsets for:
// what Group lists and ResetOffsets moves for it. A native group has none.
// g.mu must be held.
func (g *group) externalQueues() []QueueRef {
	if len(g.subs) > 0 {
		return nil
	}
	return g.offsetQueues()
}

// offsetQueues lists, sorted, the queues a clustering group has committed
// offsets for: what a group without subscriptions (one whose members the
// engine does not know) consumes. g.mu must be held.
func (g *group) offsetQueues() []QueueRef {
	var refs []QueueRef
	for k := range g.offsets {
		if k.member == "" {
			refs = append(refs, k.q)
		}
	}
	sortRefs(refs)
	return refs
}
