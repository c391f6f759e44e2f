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
// negative offset, ErrTopicNotFound or ErrQueueNotFound for a queue that does
// not exist, and ErrFenced when native consumers are members of the group
// (their own commits rule its offsets); in those cases nothing was stored.
// An error matching ErrIndeterminate means the offsets were written but may
// not be durable. The engine's view changes only after the store write returned.
func (e *Engine) CommitGroupOffsets(ctx context.Context, group string, offsets map[QueueRef]int64) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := ValidateName(group); err != nil {
		return err
	}
	names := make([]string, 0, len(offsets))
	for ref, off := range offsets {
		if off < 0 {
			return fmt.Errorf("%w: negative offset %d for %s", ErrInvalidArgument, off, ref)
		}
		if _, err := e.queueOf(ref); err != nil {
			return err
		}
		names = append(names, ref.Topic)
	}
	if len(offsets) == 0 {
		return nil
	}
	gate := e.gateTopics(names)
	defer gate.release()
	for ref := range offsets {
		if err := gate.check(ref.Topic); err != nil {
			return err
		}
	}
	c := e.groups
	c.mu.Lock()
	g, created := c.groups[group], false
	if g == nil {
		g, created = newGroup(groupMeta{Name: group}), true
		g.trackLeft = e.opts.GroupIdleTTL > 0
		c.groups[group] = g
	}
	c.mu.Unlock()
	g.commitMu.Lock()
	g.mu.Lock()
	if len(g.members) > 0 {
		g.mu.Unlock()
		g.commitMu.Unlock()
		return fmt.Errorf("%w: group %q has native members", ErrFenced, group)
	}
	// A group coordinated outside has no native members to come and go:
	// a commit is its sign of use (Options.GroupIdleTTL counts from it),
	// even one that changes nothing.
	g.lastUsed = time.Now()
	var (
		ops  []store.MetaOp
		set  []offsetSet
		room = markDeletesPerWrite
	)
	for ref, off := range offsets {
		k := offsetKey{q: ref}
		// Marks left by native members the commit passes (sendbackmark.go).
		passed := g.marksPassed(k, off)
		if cur, ok := g.offsets[k]; ok && cur == off && len(g.attempts[k]) == 0 && len(passed) == 0 {
			continue
		}
		cur, had := g.offsets[k]
		var s offsetSet
		ops, s = g.passMarks(ops, &room, k, off, passed)
		s.back = had && off < cur
		set = append(set, s)
		ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(off, nil)})
	}
	g.mu.Unlock()
	err := e.deleteMarksBeforeMovingBack(g, set)
	if err == nil {
		err = e.storeOffsets(g, ops, set)
	}
	g.commitMu.Unlock() // deleteMarksAfter takes it per write
	if err != nil && !errors.Is(err, ErrIndeterminate) && created {
		g.mu.Lock()
		empty := len(g.members) == 0 && len(g.offsets) == 0
		g.mu.Unlock()
		if empty {
			c.mu.Lock()
			if c.groups[group] == g {
				delete(c.groups, group)
			}
			c.mu.Unlock()
		}
	}
	if err != nil {
		return fmt.Errorf("equeue: commit offsets of %q: %w", group, err)
	}
	e.deleteMarksAfter(g, set)
	return nil
}

// GroupOffsets returns a group's committed offsets (the next offset to
// consume) of every queue it has one for; an unknown group has none. Offsets
// of broadcasting members, which are per member, are not included.
func (e *Engine) GroupOffsets(ctx context.Context, group string) (map[QueueRef]int64, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
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
