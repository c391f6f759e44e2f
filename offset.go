package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/equeue-go/equeue/store"
)

func beUint64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }

func offsetValue(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// offsetKeyFor is the committed-offset key of a member for q: per member in
// broadcasting groups, shared in clustering groups.
func (g *group) offsetKeyFor(memberID string, q QueueRef) offsetKey {
	if g.model == Broadcasting {
		return offsetKey{member: memberID, q: q}
	}
	return offsetKey{q: q}
}

// CommitOffsets stores the next offset to consume of queues the member owns.
// Offsets of queues it does not own under the given epoch are refused with
// ErrFenced; the others are stored.
func (e *Engine) CommitOffsets(ctx context.Context, req *CommitRequest) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if req == nil {
		return fmt.Errorf("%w: nil commit request", ErrInvalidArgument)
	}
	g, err := e.groups.memberGroup(req.Group, req.Member)
	if err != nil {
		return err
	}
	g.mu.Unlock()
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	var (
		ops  []store.MetaOp
		errs []error
	)
	for _, oc := range req.Offsets {
		if err := g.checkGrant(req.Member, oc.Grant); err != nil {
			errs = append(errs, err)
			continue
		}
		if oc.Offset < 0 {
			errs = append(errs, fmt.Errorf("%w: negative offset %d for %s", ErrInvalidArgument, oc.Offset, oc.QueueRef))
			continue
		}
		k := g.offsetKeyFor(req.Member, oc.QueueRef)
		if cur, ok := g.offsets[k]; ok && cur == oc.Offset {
			continue
		}
		g.offsets[k] = oc.Offset
		ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(oc.Offset)})
	}
	g.mu.Unlock()
	if len(ops) > 0 {
		if err := e.writeMeta(ops...); err != nil {
			errs = append(errs, fmt.Errorf("equeue: commit offsets of %q: %w", req.Group, err))
		}
	}
	return errors.Join(errs...)
}

// FetchOffsets returns the next offset to consume of each granted queue. A
// queue the group has no offset for starts where the group's ConsumeFrom
// says, and that start is stored at once so a restart does not skip ahead.
func (e *Engine) FetchOffsets(ctx context.Context, groupName, memberID string, queues []Grant) ([]int64, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	g, err := e.groups.memberGroup(groupName, memberID)
	if err != nil {
		return nil, err
	}
	g.mu.Unlock()
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	out := make([]int64, len(queues))
	var ops []store.MetaOp
	for i, q := range queues {
		if err := g.checkGrant(memberID, q); err != nil {
			g.mu.Unlock()
			return nil, err
		}
		k := g.offsetKeyFor(memberID, q.QueueRef)
		if off, ok := g.offsets[k]; ok {
			out[i] = off
			continue
		}
		off, err := e.startOffset(q.QueueRef, g.from, g.fromTime)
		if err != nil {
			g.mu.Unlock()
			return nil, err
		}
		g.offsets[k] = off
		out[i] = off
		ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(off)})
	}
	g.mu.Unlock()
	if len(ops) > 0 {
		if err := e.writeMeta(ops...); err != nil {
			return nil, fmt.Errorf("equeue: store start offsets of %q: %w", groupName, err)
		}
	}
	return out, nil
}

func (e *Engine) queueOf(ref QueueRef) (*queue, error) {
	t, ok := e.lookupTopic(ref.Topic)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrTopicNotFound, ref.Topic)
	}
	return t.queue(ref.Queue)
}

// startOffset resolves where a group with no offset starts in q.
func (e *Engine) startOffset(ref QueueRef, from ConsumeFrom, at time.Time) (int64, error) {
	q, err := e.queueOf(ref)
	if err != nil {
		return 0, err
	}
	min, next, _ := q.bounds()
	switch from {
	case ConsumeFromDefault, ConsumeFromEarliest:
		return min, nil
	case ConsumeFromTimestamp:
		return e.offsetForTime(q, at)
	default: // ConsumeFromLatest
		return next, nil
	}
}

// offsetForTime returns the first offset of q stored at or after t (the
// queue's end when none is), by binary search over stored timestamps.
func (e *Engine) offsetForTime(q *queue, t time.Time) (int64, error) {
	min, next, _ := q.bounds()
	var readErr error
	i := sort.Search(int(next-min), func(i int) bool {
		if readErr != nil {
			return true
		}
		recs, err := e.st.Read(q.key, uint64(min)+uint64(i), uint64(next), 1, 0)
		if err != nil {
			readErr = err
			return true
		}
		if len(recs) == 0 {
			return true
		}
		m, err := decodeRecord(recs[0].Value)
		if err != nil {
			return false // skip a corrupt record: treat it as older
		}
		return !m.StoredAt.Before(t)
	})
	if readErr != nil {
		return 0, readErr
	}
	return min + int64(i), nil
}

// ResetTarget says where ResetOffsets moves a group.
type ResetTarget int

const (
	// ResetToEarliest moves every queue to its oldest stored message.
	ResetToEarliest ResetTarget = iota
	// ResetToLatest moves every queue to its end: pending messages are skipped.
	ResetToLatest
	// ResetToTime moves every queue to its first message stored at or after Time.
	ResetToTime
	// ResetToOffsets sets the explicit Offsets given; other queues keep theirs.
	ResetToOffsets
)

// ResetRequest describes an offset reset.
type ResetRequest struct {
	To      ResetTarget
	Time    time.Time
	Offsets map[QueueRef]int64
}

// ResetOffsets moves a group's committed offsets (for every member of a
// broadcasting group). The change is stored, and live members are fenced off
// their current grants so they restart from the new offsets at once.
func (e *Engine) ResetOffsets(ctx context.Context, groupName string, req ResetRequest) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	g, err := e.groups.group(groupName)
	if err != nil {
		return err
	}
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queues) == 0 {
		g.queues = e.groups.subscribedQueues(g, g.queues)
	}
	targets := map[QueueRef]int64{}
	switch req.To {
	case ResetToEarliest, ResetToLatest, ResetToTime:
		from := map[ResetTarget]ConsumeFrom{ResetToEarliest: ConsumeFromEarliest, ResetToLatest: ConsumeFromLatest, ResetToTime: ConsumeFromTimestamp}[req.To]
		for _, q := range g.queues {
			off, err := e.startOffset(q, from, req.Time)
			if err != nil {
				return err
			}
			targets[q] = off
		}
	case ResetToOffsets:
		for ref, off := range req.Offsets {
			q, err := e.queueOf(ref)
			if err != nil {
				return err
			}
			min, next, _ := q.bounds()
			if off < min || off > next {
				return fmt.Errorf("%w: offset %d for %s outside [%d, %d]", ErrInvalidArgument, off, ref, min, next)
			}
			targets[ref] = off
		}
	default:
		return fmt.Errorf("%w: unknown reset target %d", ErrInvalidArgument, req.To)
	}
	var keys []offsetKey
	if g.model == Broadcasting {
		members := map[string]bool{}
		for k := range g.offsets {
			members[k.member] = true
		}
		for id := range g.members {
			members[id] = true
		}
		for id := range members {
			for q := range targets {
				keys = append(keys, offsetKey{member: id, q: q})
			}
		}
	} else {
		for q := range targets {
			keys = append(keys, offsetKey{q: q})
		}
	}
	ops := make([]store.MetaOp, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, store.MetaOp{Key: offsetMetaKey(g.name, k), Value: offsetValue(targets[k.q])})
	}
	if err := e.writeMeta(ops...); err != nil {
		return fmt.Errorf("equeue: reset offsets of %q: %w", groupName, err)
	}
	for _, k := range keys {
		g.offsets[k] = targets[k.q]
	}
	// Fence every current grant: owners must drop what they hold and refetch.
	clear(g.owners)
	e.groups.rebalance(g)
	g.resetEpoch = g.epoch
	g.notify()
	e.log.Info("group offsets reset", "group", groupName, "queues", len(targets))
	return nil
}
