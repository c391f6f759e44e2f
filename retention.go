package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
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
	// MaxBytes, when positive, deletes the oldest tenth of every queue's
	// messages on each pass while the store is larger than this. The store's size falls
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
	// Deleted counts the messages the pass's own cuts deleted: those
	// below the watermarks it moved, and those of a cut of an earlier
	// pass whose delete failed, once they are deleted (each is counted
	// once). What the pass deletes that a topic limit's trim
	// (OverflowDropOldest) cut and failed to delete, or that was found
	// below a watermark at open, is the trim's or the crash's: deleted,
	// but not counted here.
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
				// What it did before it failed, and what it owes: no
				// result tells of them.
				e.log.Error("retention pass failed", "err", err, "deleted", res.Deleted, "queues", res.Queues)
				e.logOwed()
			} else if res.Deleted > 0 {
				e.log.Info("retention pass", "deleted", res.Deleted, "queues", res.Queues)
			}
		}
	}
}

// ApplyRetention runs one retention pass with policy p now: it moves each
// queue's low watermark (stored, so pulls below it report PullOffsetMoved
// across restarts), deletes the records below it and gives the space back.
//
// The watermark is stored before the records are deleted, so a queue's next
// offset survives a crash even when every record is deleted. Records a
// failed or interrupted delete left below the watermark are deleted by the
// next pass, and on open. A queue whose pass fails does not stop the
// others: the pass goes on to every queue and returns the errors joined,
// with the result of what it did.
func (e *Engine) ApplyRetention(ctx context.Context, p RetentionPolicy) (RetentionResult, error) {
	return e.applyRetention(ctx, p, time.Now())
}

// applyRetention is ApplyRetention with now as the time that MaxAge counts
// back from.
func (e *Engine) applyRetention(ctx context.Context, p RetentionPolicy, now time.Time) (RetentionResult, error) {
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
	// A queue whose pass fails (a delete the store keeps refusing, records
	// of a newer format in a counted range) does not hold back the others:
	// every topic is tried, and the errors are returned together.
	var errs []error
	for _, t := range topics {
		if cerr := ctx.Err(); cerr != nil {
			errs = append(errs, cerr)
			break
		}
		errs = append(errs, e.retainTopic(ctx, t, p, now, oversize, &res))
	}
	err := errors.Join(errs...)
	// Deleted records, and those of topics deleted since the last pass,
	// give their space back.
	pending := e.reclaimPending.Swap(false) // taken either way: one Reclaim covers both
	if res.Deleted > 0 || pending {
		if rerr := e.reclaim(ctx); rerr != nil {
			e.reclaimPending.Store(true)
			if err == nil {
				err = fmt.Errorf("equeue: reclaim after retention: %w", rerr)
			}
		}
	}
	return res, err
}

// retainTopic applies p to t's queues. Passes over one topic take turns.
func (e *Engine) retainTopic(ctx context.Context, t *topic, p RetentionPolicy, now time.Time, oversize bool, res *RetentionResult) error {
	t.retain.mu.Lock()
	defer t.retain.mu.Unlock()
	if t.deleted.Load() {
		return nil
	}
	if l := t.limits.Load(); l != nil && l.RetentionAge != 0 {
		p.MaxAge = l.RetentionAge
	}
	var floors *floorView // the topic's groups, read once for its queues
	if t.keepUnconsumed(p.KeepUnconsumed) {
		floors = &floorView{topic: t.name}
	}
	var errs []error
	for _, q := range t.queueList() {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if err := e.retainQueue(t, q, p, now, oversize, floors, res); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// retainQueue applies p to q, a queue of t; floors, when not nil, keeps
// what the groups counting for t have not consumed. t.retain.mu must be
// held.
func (e *Engine) retainQueue(t *topic, q *queue, p RetentionPolicy, now time.Time, oversize bool, floors *floorView, res *RetentionResult) error {
	// What earlier cuts left below the watermark goes first: retention's
	// own are counted now (each once), a trim's are not retention's.
	e.keepOwed(q)
	swept, err := e.sweep(q)
	if err != nil {
		return err
	}
	if swept > 0 {
		e.reclaimPending.Store(true) // this pass gives their space back
	}
	owed, err := e.countOwed(q)
	res.Deleted += owed // counted also when its key's delete is not known durable
	if err != nil {
		return err
	}
	min, next, _ := q.bounds()
	cutoff := min
	if p.MaxAge > 0 {
		off, err := e.offsetForTime(q, now.Add(-p.MaxAge))
		if err != nil {
			return err
		}
		cutoff = off
	}
	if oversize && next > min {
		// A tenth of the messages the queue stores: offsets known lost
		// hold none, and a cut counted in them could take nothing.
		_, _, lost := q.extent()
		cutoff = max(cutoff, lost.skip(min, max(lost.held(min, next)/10, 1)))
	}
	var hold floorHold
	defer hold.release()
	if floors != nil {
		// Held until the watermark moved: a group that starts to count
		// for t meanwhile waits, and starts from the new watermark.
		floor, ok := e.groups.floorFor(floors, QueueRef{Topic: t.name, Queue: q.id}, cutoff, &hold)
		if !ok {
			return nil // groups kept joining t: the next pass tries again
		}
		cutoff = floor
	}
	// A watermark that reaches offsets known lost passes them: nothing is
	// stored there, and no record there would ever come due to move it
	// (queuelost.go). The time search above notes them as it reads.
	_, _, lost := q.extent()
	cutoff = lost.past(cutoff)
	if cutoff <= min {
		return nil
	}
	if err := e.deleteBelow(q, min, cutoff, lost.held(min, cutoff), &hold); err != nil {
		return err
	}
	res.Deleted += lost.held(min, cutoff)
	res.Queues++
	return nil
}

// deleteBelow raises q's low watermark to cutoff, then deletes the records
// below, n messages. If the delete fails, the range is remembered for the
// next pass, which counts the n messages once they are deleted
// (oweRetention, which stores them for a reopen).
// hold is released once the watermark moved, before the records are
// deleted. q.topic.retain.mu must be held.
func (e *Engine) deleteBelow(q *queue, min, cutoff, n int64, hold *floorHold) error {
	var cut int64 // bytes of the records cut, for a topic's MaxBytes
	counted := q.bytes.known.Load() && q.topic.maxBytesOf() > 0
	if counted {
		n, err := e.rangeBytes(q, min, cutoff)
		if err != nil {
			return err
		}
		cut = n
	}
	applied, err := e.storeMeta(store.MetaOp{Key: watermarkKey(q.key), Value: binary.BigEndian.AppendUint64(nil, uint64(cutoff))})
	if !applied {
		return fmt.Errorf("equeue: store watermark of %s/%d: %w", q.topic.name, q.id, err)
	}
	q.topic.minMoves.Add(1) // odd while a low watermark moves (TopicInfo.Messages)
	q.setMin(cutoff)
	q.bytes.cut(cut, counted)
	q.topic.minMoves.Add(1)
	hold.release()
	if err != nil {
		// The watermark may not be durable: delete nothing yet, the next
		// pass (or open) does.
		q.topic.retain.unswept(q.id, min)
		e.oweRetention(q, n)
		return notDurable(err, "watermark of %s/%d", q.topic.name, q.id)
	}
	e.deleteRedrivenBelow(q, cutoff)
	if err := e.st.DeleteRange(q.key, uint64(min), uint64(cutoff)); err != nil {
		q.topic.retain.unswept(q.id, min)
		e.oweRetention(q, n)
		return fmt.Errorf("equeue: delete %s/%d below %d: %w", q.topic.name, q.id, cutoff, err)
	}
	return nil
}

// sweep deletes what an earlier failed delete left below q's watermark and
// returns how many offsets it covered: retention's leftovers among them
// are owed no more, only to count (retainState.deleted), whether a
// retention pass or a trim sweeps. q.topic.retain.mu must be held.
func (e *Engine) sweep(q *queue) (int64, error) {
	from, ok := q.topic.retain.pending[q.id]
	if !ok {
		return 0, nil
	}
	min, _, _ := q.bounds()
	if err := e.st.DeleteRange(q.key, uint64(from), uint64(min)); err != nil {
		return 0, fmt.Errorf("equeue: delete %s/%d below its watermark %d: %w", q.topic.name, q.id, min, err)
	}
	delete(q.topic.retain.pending, q.id)
	q.topic.retain.deleted(q.id)
	return max(min-from, 0), nil
}

// retainState is one topic's retention bookkeeping.
type retainState struct {
	mu sync.Mutex
	// pending maps a queue ID to the lowest offset that may still be
	// stored below the queue's low watermark, after a delete failed.
	pending map[int]int64
	// owed maps a queue ID to the messages of retention's cuts that a
	// failed delete left stored below the watermark (a trim's leftovers
	// are in pending only); due, to those of its cuts deleted since (by a
	// pass, a trim or open). Neither is counted in a RetentionResult yet:
	// the pass that finds them deleted counts them, once. Their sum is
	// stored (owedKey) for a reopen while stored holds the queue ID.
	owed, due map[int]int64
	stored    map[int]bool
}

// owe notes that n messages of a retention cut of queue q are left to
// count once deleted. mu must be held.
func (r *retainState) owe(q int, n int64) {
	if n <= 0 {
		return
	}
	if r.owed == nil {
		r.owed = map[int]int64{}
	}
	r.owed[q] += n
}

// deleted notes that what was left below queue q's watermark is deleted:
// what retention owed of it is due, to be counted. mu must be held.
func (r *retainState) deleted(q int) {
	n, ok := r.owed[q]
	if !ok {
		return
	}
	delete(r.owed, q)
	if r.due == nil {
		r.due = map[int]int64{}
	}
	r.due[q] += n
}

// uncounted returns the messages of retention's cuts of queue q that no
// RetentionResult counted yet, deleted or not. mu must be held.
func (r *retainState) uncounted(q int) int64 { return r.owed[q] + r.due[q] }

// owedOf returns the messages of retention's cuts of queue q left below
// its watermark, and those not counted yet (these among them). mu must be
// held.
func (r *retainState) owedOf(q int) (owed, uncounted int64) {
	return r.owed[q], r.uncounted(q)
}

// unswept notes that q's records from offset from up to the watermark may
// still be stored. mu must be held.
func (r *retainState) unswept(q int, from int64) {
	if r.pending == nil {
		r.pending = map[int]int64{}
	}
	if cur, ok := r.pending[q]; !ok || from < cur {
		r.pending[q] = from
	}
}

// contextReclaimer is a Store whose Reclaim can be stopped early
// (store.Badger's ReclaimContext).
type contextReclaimer interface {
	ReclaimContext(ctx context.Context) error
}

// reclaim runs the store's Reclaim, stopped (when the store can stop one)
// once ctx is done or Close starts: Close waits for a retention pass, and
// a reclaim of a large store runs for minutes.
func (e *Engine) reclaim(ctx context.Context) error {
	r, ok := e.st.(contextReclaimer)
	if !ok {
		return e.st.Reclaim()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(e.bgCtx, cancel)()
	return r.ReclaimContext(ctx)
}
