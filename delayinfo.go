package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// DelayedInfo summarises the messages waiting for their delivery time.
type DelayedInfo struct {
	// Pending is how many delayed messages were counted. When Complete is
	// false the count stopped at the scan limit and more are pending.
	Pending int
	// Complete is false when counting stopped at the scan limit.
	Complete bool
	// Next lists the earliest pending messages, soonest first.
	Next []DelayedEntry
}

// DelayedEntry is one pending delayed message.
type DelayedEntry struct {
	// DeliverAt is when the message becomes visible in its queue.
	DeliverAt time.Time
	QueueRef
}

// maxDelayedCount bounds how many index keys one Delayed call counts.
const maxDelayedCount = 100_000

// Delayed reports how many delayed messages are pending (counting at most
// 100,000) and the delivery times and queues of the earliest max of them
// (0 means 32, at most 1024). A message whose topic was deleted is counted
// with an empty topic name; an entry of the delay index that the store
// cannot read back, or whose key or value is garbled, is left out (the
// scheduler drops and counts it). As pulls, it shows only sends the engine
// knows stored: not one still being written, nor one of unknown outcome
// (its fsync failed) until a reopen. A due message being moved into its
// queue is counted until the move is visible to pulls, so an acknowledged
// delayed message is always either counted here or in its queue. When
// the move's fsync failed, its outcome is unknown until a reopen (the
// message is in its queue, not shown until then, or still pending): it is
// counted until then, under its topic's name, and no longer once its
// topic is deleted, its message gone with the topic either way. A move
// under way when its topic is deleted is counted, under an empty topic
// name, until the scheduler drops its message: the count of a deleted
// topic's messages never rises again.
func (e *Engine) Delayed(ctx context.Context, max int) (DelayedInfo, error) {
	return e.delayed(ctx, max, nil)
}

// delayed is Delayed counting only messages whose topic keep accepts (all
// when keep is nil).
func (e *Engine) delayed(ctx context.Context, max int, keep func(topic string) bool) (DelayedInfo, error) {
	if max < 0 || max > 1024 {
		return DelayedInfo{}, fmt.Errorf("%w: delayed list size %d is outside 0..1024", ErrInvalidArgument, max)
	}
	if max == 0 {
		max = 32
	}
	if err := e.enter(ctx); err != nil {
		return DelayedInfo{}, err
	}
	defer e.leave()
	// A move in flight has deleted its index key, or may delete it while
	// the index is read, before its message is visible: the scan skips
	// the keys of registered moves, and the moves registered once it is
	// done are counted instead (delay_inflight.go), with those refused
	// after the scan skipped their keys. A move registered after the scan
	// counted its key is not counted again (delayListing).
	names := map[uint32]string{}
	l := e.sched.startListing()
	info, visible, err := e.delayedScan(ctx, max, keep, names, l)
	moves := e.sched.endListing(l)
	if err != nil {
		return DelayedInfo{}, err
	}
	// The scheduler reads the index from the store: it may move a
	// message whose send is still being written, or of unknown outcome
	// (its fsync failed), which the listing does not show.
	_, stored, _ := e.sched.log.bounds()
	for _, m := range moves {
		if m.seq >= stored {
			continue // its send is not known stored
		}
		if _, late := l.late[m.seq]; late && m.seq < visible {
			continue // its key was counted by the scan
		}
		name, seen := names[m.topic]
		if !seen {
			if t := e.topicByID(m.topic); t != nil {
				name = t.name
			}
			names[m.topic] = name
		}
		if name == "" && m.unknown {
			// Its topic was deleted and its outcome is unknown: its
			// message went with the topic, moved into one of its
			// queues or pending for a topic no longer there. A move
			// still under way is counted, as the index key it puts
			// back if the writer refuses it (for the deleted topic),
			// until the scheduler drops it: the count of a deleted
			// topic only goes down.
			continue
		}
		if keep != nil && !keep(name) {
			continue
		}
		if info.Pending >= maxDelayedCount {
			info.Complete = false
			break
		}
		info.Pending++
		en := m.entry
		en.Topic = name
		info.Next = append(info.Next, en)
	}
	slices.SortStableFunc(info.Next, func(a, b DelayedEntry) int { return a.DeliverAt.Compare(b.DeliverAt) })
	if len(info.Next) > max {
		info.Next = info.Next[:max]
	}
	return info, nil
}

// delayedScan counts the delayed messages of the delay index whose
// topic keep accepts, but for those of moves in flight, and lists the
// earliest max of them; names caches topic names by ID, and l tells the
// scheduler which keys the scan visited. It also returns the end of the
// delay log's slots known stored that it counted below.
func (e *Engine) delayedScan(ctx context.Context, max int, keep func(topic string) bool, names map[uint32]string, l *delayListing) (DelayedInfo, int64, error) {
	info := DelayedInfo{Complete: true}
	// The delay log's slots below its visible end are of sends the
	// engine answered stored (durableBatch publishes it, as a queue's).
	_, visible, _ := e.sched.log.bounds()
	err := e.scanMetaDamaged(keyDelayPrefix, func(k, v []byte, damaged error) error {
		at, seq, ok := parseDelayKey(k)
		if damaged != nil || !ok || len(v) != delayIndexValueLen {
			// Its value cannot be read back, or its key or value is
			// garbled: the scheduler drops (and counts) it as corrupt
			// when it reaches it.
			return nil
		}
		if info.Pending >= maxDelayedCount {
			info.Complete = false
			return errStopScan
		}
		if info.Pending%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if e.sched.visit(l, k, seq) {
			return nil // counted with the moves in flight
		}
		if seq >= visible {
			return nil // not known stored (yet)
		}
		id := binary.BigEndian.Uint32(v)
		name, seen := names[id]
		if !seen {
			if t := e.topicByID(id); t != nil {
				name = t.name
			}
			names[id] = name
		}
		if keep != nil && !keep(name) {
			return nil
		}
		info.Pending++
		if len(info.Next) >= max {
			return nil
		}
		info.Next = append(info.Next, DelayedEntry{DeliverAt: at, QueueRef: QueueRef{Topic: name, Queue: int(binary.BigEndian.Uint32(v[4:]))}})
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return DelayedInfo{}, 0, err
	}
	return info, visible, nil
}
