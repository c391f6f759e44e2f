package equeue

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Priority for a PullConsumer. Its user fetches each lane as a queue of its
// own, so the gate sits in Fetch: a lane of a queue with priorities looks
// empty while a higher lane of the same queue, owned by the same consumer
// (the group allocates a queue's lanes together), has messages past the
// consumer's position. To know that, Fetch of a lower lane reads each
// higher lane from its position without waiting, and keeps what it read
// for that lane's next Fetch (nothing is read twice). A gated Fetch waits,
// up to its wait, for the higher lanes to be fetched empty. Once it has
// its lane's messages, it checks the higher lanes again (laneRecheck): a
// message stored in one after the first check and before its lane's
// messages were read goes first.

// lanePos is where a gated Fetch stands: the topic's lane count and the
// lane of the queue fetched.
type lanePos struct {
	n, lane, base int // lane count, lane, queue ID of lane 0
}

// lanesOf returns q's position among its queue's lanes, ok false when its
// topic has no priorities. pc.mu must be held.
func (pc *PullConsumer) lanesOf(q QueueRef) (lanePos, bool) {
	n := pc.lanes[q.Topic]
	if n <= 1 {
		return lanePos{}, false
	}
	return lanePos{n: n, lane: q.Queue % n, base: q.Queue - q.Queue%n}, true
}

// takeRead returns up to limit messages a gate check read ahead for q and
// moves the position past them; nil when none (those that expired since
// are dropped, see pruneAheadLocked). pc.mu must be held.
func (pc *PullConsumer) takeRead(q QueueRef, limit int) []*Message {
	pc.pruneAheadLocked(q)
	buf := pc.ahead[q]
	if len(buf.msgs) == 0 {
		return nil
	}
	k := len(buf.msgs)
	if limit > 0 {
		k = min(limit, k)
	}
	out := buf.msgs[:k:k]
	if rest := buf.msgs[k:]; len(rest) > 0 {
		pc.ahead[q] = readAhead{msgs: rest, next: buf.next}
		pc.positions[q] = rest[0].Offset
	} else {
		delete(pc.ahead, q)
		pc.positions[q] = buf.next
		pc.laneDrainedLocked()
	}
	return out
}

// laneDrainedLocked wakes gated fetches after a lane's read-ahead was taken
// or dropped. pc.mu must be held.
func (pc *PullConsumer) laneDrainedLocked() {
	if pc.drained != nil {
		close(pc.drained)
		pc.drained = nil
	}
}

// readAhead is what a gate check read of a higher lane: its messages, and
// where the lane's position goes once they were all fetched.
type readAhead struct {
	msgs []*Message
	next int64
}

// laneTurn waits, up to wait, until no higher lane of q's queue has
// messages past the consumer's position; false when it still has.
func (pc *PullConsumer) laneTurn(ctx context.Context, q QueueRef, at lanePos, max int, wait time.Duration) (bool, error) {
	var expire <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		expire = t.C
	}
	for {
		pc.mu.Lock()
		if pc.drained == nil {
			pc.drained = make(chan struct{})
		}
		drained, changed := pc.drained, pc.changed
		pc.mu.Unlock()
		busy, err := pc.higherBusy(ctx, q, at, max)
		if err != nil || !busy {
			return !busy, err
		}
		if expire == nil {
			return false, nil
		}
		select {
		case <-drained:
		case <-changed:
		case <-expire:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		case <-pc.ctx.Done():
			return false, ErrClosed
		}
	}
}

// higherBusy reports whether a higher lane of q's queue that the consumer
// owns has messages past its position, reading each (without waiting) when
// nothing read ahead says so already. A read that found nothing but moved
// the position short of the lane's end (the filter rejected, or expiry
// skipped, all it scanned, or the position was below the low watermark)
// says nothing of the rest of the lane: the lane is read on from there, or
// a lower lane would go before a message of it.
func (pc *PullConsumer) higherBusy(ctx context.Context, q QueueRef, at lanePos, max int) (bool, error) {
	for l := at.n - 1; l > at.lane; l-- {
		ref := QueueRef{Topic: q.Topic, Queue: at.base + l}
		for {
			pc.mu.Lock()
			pc.pruneAheadLocked(ref)
			g, owned := pc.grants[ref]
			pos, ahead := pc.positions[ref], len(pc.ahead[ref].msgs) > 0
			pc.mu.Unlock()
			if !owned {
				break
			}
			if ahead {
				return true, nil
			}
			res, err := pc.b.Pull(ctx, &PullRequest{Topic: ref.Topic, Queue: ref.Queue, Offset: pos, Max: max, Filter: pc.filters[ref.Topic],
				Group: pc.join.Group, Member: pc.join.Member, Epoch: g.Epoch})
			if errors.Is(err, ErrFenced) {
				break // the lane is being taken away
			}
			if err != nil {
				return false, err
			}
			markLane(res.Messages, l)
			pc.mu.Lock()
			cur, still := pc.grants[ref]
			still = still && cur.Epoch == g.Epoch && pc.positions[ref] == pos && len(pc.ahead[ref].msgs) == 0
			if still {
				if len(res.Messages) > 0 {
					pc.ahead[ref] = readAhead{msgs: res.Messages, next: res.NextOffset}
				} else {
					pc.positions[ref] = res.NextOffset
				}
			}
			pc.mu.Unlock()
			if !still {
				// A Fetch of the lane (or another check) moved it on while
				// this read ran: what it read is not waiting any more, and
				// no wake-up may follow, so the lane is looked at again
				// from where it stands now.
				continue
			}
			if len(res.Messages) > 0 {
				return true, nil
			}
			if res.NextOffset == pos || res.NextOffset >= res.MaxOffset {
				break // drained
			}
		}
	}
	return false, nil
}

// markLane sets the Priority of messages fetched from a lane.
func markLane(msgs []*Message, lane int) {
	for _, m := range msgs {
		m.Priority = lane
	}
}

// laneRecheck is the end of a Fetch of lane q that took msgs (from its
// pull, whether that waited or answered at once, or from what a check read
// ahead of q) and moved q's position past them. A higher lane of the
// queue may have received messages after the gate's check and before
// msgs were read, and such a message goes first: the higher lanes are
// checked again. When one has messages past the consumer's position,
// msgs are kept for q's next Fetch, and the gate is passed again, waiting
// for the higher lanes up to wait, what is left of the Fetch's; msgs (or
// what the read-ahead of q holds then) are returned only once it passes.
// With an Engine the check first looks at the higher lanes' ends, in
// memory (higherAtEndLocked): when each was fetched up to its end, none
// received anything, and nothing is read. The highest lane has nothing to
// check. pc.mu must be held; it is released.
func (pc *PullConsumer) laneRecheck(ctx context.Context, q QueueRef, at lanePos, max int, msgs []*Message, wait time.Duration) ([]*Message, error) {
	if at.lane == at.n-1 || pc.higherAtEndLocked(q, at) {
		pc.mu.Unlock()
		return msgs, nil
	}
	buf := pc.ahead[q]
	if len(buf.msgs) > 0 {
		if buf.msgs[0].Offset <= msgs[len(msgs)-1].Offset {
			// Another Fetch of q or a gate check moved q on meanwhile
			// and kept what it read: msgs go as they are, not ahead of
			// that.
			pc.mu.Unlock()
			return msgs, nil
		}
		// What is left of a read-ahead msgs were taken from.
		buf.msgs = append(slices.Clip(msgs), buf.msgs...)
	} else {
		buf = readAhead{msgs: msgs, next: pc.positions[q]}
	}
	pc.ahead[q] = buf
	pc.positions[q] = msgs[0].Offset
	pc.mu.Unlock()
	turn, err := pc.laneTurn(ctx, q, at, max, wait)
	if !turn || err != nil {
		return nil, err // msgs stay for the next Fetch of q
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if err := pc.stillHeldLocked(pc.grants[q]); err != nil {
		return nil, err
	}
	return pc.takeRead(q, max), nil
}

// higherAtEndLocked reports whether the broker is an Engine and every
// higher lane of q's queue that the consumer owns has nothing read ahead
// and its position at (or past) the lane's end, which the engine keeps in
// memory: no message was stored in such a lane past the position, so the
// lanes need no read to know it. False with any other broker. pc.mu must
// be held.
func (pc *PullConsumer) higherAtEndLocked(q QueueRef, at lanePos) bool {
	e := engineOf(pc.b)
	if e == nil {
		return false
	}
	for l := at.n - 1; l > at.lane; l-- {
		ref := QueueRef{Topic: q.Topic, Queue: at.base + l}
		if _, owned := pc.grants[ref]; !owned {
			continue
		}
		end, err := e.queueEnd(ref)
		if err != nil || len(pc.ahead[ref].msgs) > 0 || pc.positions[ref] < end {
			return false
		}
	}
	return true
}

// max0 returns d, or 0 when d is negative.
func max0(d time.Duration) time.Duration { return max(d, 0) }
