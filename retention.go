package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/equeue-go/equeue/store"
)

// DefaultRetentionAge is how long messages are kept by default.
const DefaultRetentionAge = 72 * time.Hour

// RetentionPolicy says which stored messages the engine deletes. The zero
// value keeps messages for 72 hours, with no size limit, checked every minute.
type RetentionPolicy struct {
	// MaxAge deletes messages stored longer ago than this. Zero means 72 h;
	// negative means no age limit.
	MaxAge time.Duration
	// MaxBytes, when positive, deletes the oldest tenth of every queue on
	// each pass while the store is larger than this. The store's size falls
	// only as Badger compacts, so the limit is approximate.
	MaxBytes int64
	// KeepUnconsumed deletes only messages every group subscribed to the
	// topic has committed past.
	KeepUnconsumed bool
	// Interval is the time between background passes. Zero means 1 min;
	// negative disables the background pass (ApplyRetention still works).
	Interval time.Duration
}

func (p RetentionPolicy) withDefaults() RetentionPolicy {
	if p.MaxAge == 0 {
		p.MaxAge = DefaultRetentionAge
	}
	if p.Interval == 0 {
		p.Interval = time.Minute
	}
	return p
}

// RetentionResult reports one retention pass.
type RetentionResult struct {
	// Deleted counts messages deleted.
	Deleted int64
	// Queues counts queues whose low watermark moved.
	Queues int
}

// runRetention applies Options.Retention every Interval until Close.
func (e *Engine) runRetention() {
	p := e.opts.Retention
	if p.Interval < 0 {
		return
	}
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		select {
		case <-e.closing:
			return
		case <-t.C:
			res, err := e.ApplyRetention(e.bgCtx, p)
			if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled) {
				e.log.Error("retention pass failed", "err", err)
			} else if res.Deleted > 0 {
				e.log.Info("retention pass", "deleted", res.Deleted, "queues", res.Queues)
			}
		}
	}
}

// ApplyRetention runs one retention pass with policy p now: it moves each
// queue's low watermark (stored, so pulls below it report PullOffsetMoved
// across restarts), deletes the records below it and gives the space back.
func (e *Engine) ApplyRetention(ctx context.Context, p RetentionPolicy) (RetentionResult, error) {
	if err := e.enter(ctx); err != nil {
		return RetentionResult{}, err
	}
	defer e.leave()
	p = p.withDefaults()
	var res RetentionResult
	oversize := false
	if p.MaxBytes > 0 {
		size, err := e.st.Size()
		if err != nil {
			return res, err
		}
		oversize = size > p.MaxBytes
	}
	e.mu.RLock()
	topics := make([]*topic, 0, len(e.topics))
	for _, t := range e.topics {
		topics = append(topics, t)
	}
	e.mu.RUnlock()
	now := time.Now()
	for _, t := range topics {
		for _, q := range t.queueList() {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			min, next, _ := q.bounds()
			cutoff := min
			if p.MaxAge > 0 {
				off, err := e.offsetForTime(q, now.Add(-p.MaxAge))
				if err != nil {
					return res, err
				}
				cutoff = off
			}
			if oversize && next > min {
				cutoff = max(cutoff, min+max((next-min)/10, 1))
			}
			if p.KeepUnconsumed {
				cutoff = e.groups.consumedBelow(QueueRef{Topic: t.name, Queue: q.id}, cutoff)
			}
			if cutoff <= min {
				continue
			}
			if err := e.deleteBelow(q, min, cutoff); err != nil {
				return res, err
			}
			res.Deleted += cutoff - min
			res.Queues++
		}
	}
	if res.Deleted > 0 {
		if err := e.st.Reclaim(); err != nil {
			return res, fmt.Errorf("equeue: reclaim after retention: %w", err)
		}
	}
	return res, nil
}

// deleteBelow raises q's low watermark to cutoff, then deletes the records below.
func (e *Engine) deleteBelow(q *queue, min, cutoff int64) error {
	if err := e.writeMeta(store.MetaOp{Key: watermarkKey(q.key), Value: binary.BigEndian.AppendUint64(nil, uint64(cutoff))}); err != nil {
		return fmt.Errorf("equeue: store watermark of %s/%d: %w", q.topic.name, q.id, err)
	}
	q.setMin(cutoff)
	if err := e.st.DeleteRange(q.key, uint64(min), uint64(cutoff)); err != nil {
		return fmt.Errorf("equeue: delete %s/%d below %d: %w", q.topic.name, q.id, cutoff, err)
	}
	return nil
}

// consumedBelow lowers cutoff to the smallest offset some group subscribed
// to q's topic still needs.
func (c *coordinator) consumedBelow(q QueueRef, cutoff int64) int64 {
	c.mu.Lock()
	gs := make([]*group, 0, len(c.groups))
	for _, g := range c.groups {
		gs = append(gs, g)
	}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		subscribed := false
		for _, s := range g.subs {
			subscribed = subscribed || s.Topic == q.Topic
		}
		if subscribed {
			found := false
			for k, off := range g.offsets {
				if k.q == q {
					found = true
					cutoff = min(cutoff, off)
				}
			}
			if !found {
				cutoff = 0 // the group has not started on this queue yet
			}
		}
		g.mu.Unlock()
	}
	return cutoff
}
