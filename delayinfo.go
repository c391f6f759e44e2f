package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
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
// (its fsync failed) until a reopen.
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
	info := DelayedInfo{Complete: true}
	names := map[uint32]string{}
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
		return DelayedInfo{}, err
	}
	return info, nil
}
