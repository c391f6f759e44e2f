package equeue

import (
	"context"
	"fmt"
	"time"

	"github.com/equeue-go/equeue/store"
)

// appendReq is one call's worth of records for one queue, handed to the
// writer goroutine. The writer fills first/storedAt/err and then calls done.
type appendReq struct {
	q       *queue
	recs    [][]byte
	bytes   int
	sync    bool
	barrier bool // no records: completes once everything queued before it is written
	// meta is written atomically with the records; metaFor, when set, adds
	// metadata that depends on the offsets the writer assigns.
	meta    []store.MetaOp
	metaFor func(first int64) []store.MetaOp
	// delayed requests go to the delay log; firstDue is their earliest time.
	delayed  bool
	firstDue time.Time
	// dedupIDs are the producer-supplied IDs of a topic with a dedup window.
	dedupIDs  []string
	duplicate bool
	dupQueue  int

	first    int64
	storedAt time.Time
	err      error
	done     func(*appendReq) // called by the writer when set
	doneCh   chan struct{}    // else closed by the writer

	rec1 [1][]byte // backing arrays for one-message appends
	id1  [1]string
}

// Writer batching bounds used when the store sets no limit.
const (
	defaultMaxBatchEntries = 8192
	defaultMaxBatchBytes   = 8 << 20
)

func (e *Engine) batchLimits() (entries, bytes int) {
	entries, bytes = defaultMaxBatchEntries, defaultMaxBatchBytes
	if e.limits.MaxEntries > 0 && e.limits.MaxEntries < entries {
		entries = e.limits.MaxEntries
	}
	if e.limits.MaxBytes > 0 && e.limits.MaxBytes < bytes {
		bytes = e.limits.MaxBytes
	}
	return entries, bytes
}

// groupCommitLinger bounds how long the writer waits for the senders of
// its previous batch to come back before it writes and fsyncs a batch. Without
// it, senders acknowledged together split into two cohorts that alternate
// between waiting on an fsync and queueing, halving every group commit.
const groupCommitLinger = 200 * time.Microsecond

// runWriter is the single writer: it merges queued appends into one store
// write (group commit), syncs once when any of them asks for it, then
// publishes the new offsets and completes every request.
func (e *Engine) runWriter() {
	defer e.writerWG.Done()
	maxEntries, maxBytes := e.batchLimits()
	var (
		batch  []*appendReq
		carry  *appendReq
		prev   int // recent synced batch size: the senders likely to return
		linger = time.NewTimer(time.Hour)
	)
	linger.Stop()
	defer linger.Stop()
	for {
		batch = batch[:0]
		first := carry
		carry = nil
		if first == nil {
			r, ok := <-e.writeCh
			if !ok {
				return
			}
			first = r
		}
		batch = append(batch, first)
		n, size := len(first.recs), first.bytes
		needSync := first.sync
		lingering, expired, closed := false, false, false
	gather:
		for n < maxEntries && size < maxBytes {
			var (
				r  *appendReq
				ok bool
			)
			select {
			case r, ok = <-e.writeCh:
			default:
				// Queue empty: wait a little for returning senders only when an
				// fsync is coming and fewer requests than last time are here.
				if expired || !needSync || len(batch) >= prev {
					break gather
				}
				if !lingering {
					lingering = true
					linger.Reset(groupCommitLinger)
				}
				if !e.awaitSenders(min(prev-len(batch), cap(e.writeCh)), linger.C) {
					lingering, expired = false, true
				}
				continue
			}
			if !ok {
				closed = true
				break gather
			}
			if n+len(r.recs) > maxEntries || size+r.bytes > maxBytes {
				carry = r
				break gather
			}
			batch = append(batch, r)
			n += len(r.recs)
			size += r.bytes
			needSync = needSync || r.sync
		}
		if lingering && !linger.Stop() {
			<-linger.C
		}
		e.commit(batch)
		switch {
		case !needSync:
			prev = 0
		case len(batch) >= prev:
			prev = len(batch)
		default:
			// Remember the largest recent cohort and let it decay slowly, so
			// a batch that came up short does not lower the target for good.
			prev--
		}
		if closed && carry == nil {
			// Drain what is left after close.
			continue
		}
	}
}

// awaitSenders sleeps until want requests are queued or expire fires (then
// it reports false). Senders queue without waking the writer one by one —
// on two cores those wake-ups cost as much as the senders' own work — and
// the one that brings the queue to want wakes it (see enqueued).
func (e *Engine) awaitSenders(want int, expire <-chan time.Time) bool {
	select {
	case <-e.lingerWake: // a late signal meant for an earlier wait
	default:
	}
	e.lingerWant.Store(int32(want))
	if len(e.writeCh) >= want { // queued before want was published
		e.lingerWant.Store(0)
		return true
	}
	select {
	case <-e.lingerWake:
		return true
	case <-expire:
		e.lingerWant.Store(0)
		return false
	}
}

// enqueued is called after a request was put on writeCh. When the writer
// lingers for the queue to reach a length and it has, it wakes the writer.
// A sender that queued before the writer published its wait is counted by
// the writer's own length check, so no wake-up is lost.
func (e *Engine) enqueued() {
	if want := e.lingerWant.Load(); want > 0 && len(e.writeCh) >= int(want) && e.lingerWant.CompareAndSwap(want, 0) {
		select {
		case e.lingerWake <- struct{}{}:
		default:
		}
	}
}

type touched struct {
	q    *queue
	orig int64
}

func (e *Engine) commit(batch []*appendReq) {
	now := time.Now()
	var (
		entries  []store.Entry
		meta     []store.MetaOp
		queues   []touched
		undos    []func()
		needSync bool
	)
	for tid, idx := range e.dedup {
		meta = append(meta, idx.expire(tid, now)...)
	}
	for _, r := range batch {
		if r.barrier || len(r.recs) == 0 {
			continue
		}
		if r.q.topic.deleted.Load() {
			r.err = fmt.Errorf("%w: %q was deleted", ErrTopicNotFound, r.q.topic.name)
			continue
		}
		if e.dedupCheck(r, now) {
			continue
		}
		q := r.q
		if !containsQueue(queues, q) {
			queues = append(queues, touched{q: q, orig: q.wnext})
		}
		r.first = q.wnext
		r.storedAt = now
		for _, rec := range r.recs {
			sealRecord(rec, now)
			entries = append(entries, store.Entry{Queue: q.key, Offset: uint64(q.wnext), Value: rec})
			q.wnext++
		}
		ops, undo := e.dedupRecord(r, now)
		meta = append(meta, ops...)
		undos = append(undos, undo)
		meta = append(meta, r.meta...)
		if r.metaFor != nil {
			meta = append(meta, r.metaFor(r.first)...)
		}
		needSync = needSync || r.sync
	}
	var err error
	if len(entries) > 0 || len(meta) > 0 {
		err = e.st.Write(&store.Batch{Entries: entries, Meta: meta})
		if err == nil && needSync {
			err = e.st.Sync()
		}
	}
	if err != nil {
		e.log.Error("append failed", "messages", len(entries), "err", err)
		for _, t := range queues {
			t.q.wnext = t.orig
		}
		for _, u := range undos {
			u()
		}
	} else {
		for _, t := range queues {
			t.q.publish(t.q.wnext)
			n := uint64(t.q.wnext - t.orig)
			t.q.appended.Add(n)
		}
	}
	for _, r := range batch {
		switch {
		case r.barrier || r.err != nil:
		case err != nil:
			// A duplicate may refer to a message of this very batch: fail it too.
			r.err = err
		case r.duplicate:
		default:
			r.q.appendedBytes.Add(uint64(r.bytes))
		}
		if r.done != nil {
			r.done(r)
		} else {
			close(r.doneCh)
		}
	}
}

func containsQueue(ts []touched, q *queue) bool {
	for _, t := range ts {
		if t.q == q {
			return true
		}
	}
	return false
}

// barrier returns once every append queued before it has been written.
func (e *Engine) barrier(ctx context.Context) error {
	ch := make(chan struct{})
	r := &appendReq{barrier: true, done: func(*appendReq) { close(ch) }}
	select {
	case e.writeCh <- r:
		e.enqueued()
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
