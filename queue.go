package equeue

import (
	"sync"
	"sync/atomic"

	"github.com/equeue-go/equeue/store"
)

// queue is the live state of one queue: its offset bounds and the waiters of
// long-poll pulls. Offsets are dense: every offset in [min, next) was written
// (but those Open found lost from the store, which hold no record: queueend.go).
type queue struct {
	topic *topic
	id    int
	key   store.QueueID

	mu   sync.Mutex
	min  int64         // lowest offset still stored (low watermark)
	next int64         // one past the last durable, visible offset
	wake chan struct{} // closed and replaced when next advances
	// parked are in-process runners waiting for the next append (park.go).
	parked map[*parkSlot]struct{}

	// wnext is the next offset to assign; only the writer goroutine touches it.
	wnext int64

	writable atomic.Bool

	appended      atomic.Uint64 // messages appended since open, counted when reported stored
	appendedBytes atomic.Uint64
	sentBack      atomic.Uint64 // send-backs stored for this queue since open, delayed ones included

	bytes byteAccount // stored bytes, for TopicLimits.MaxBytes (topiclimits_bytes.go)

	corrupt offsetRuns // corrupt records reads found, each counted once (corruptseen.go)

	// lost are the offsets known to hold no record (queuelost.go), and
	// lostStored whether a key of them may be stored; guarded by mu.
	lost       lostRanges
	lostStored bool
}

func newQueue(t *topic, id int, min, next int64) *queue {
	q := &queue{
		topic: t,
		id:    id,
		key:   store.QueueID{Topic: t.id, Queue: uint32(id)},
		min:   min,
		next:  next,
		wnext: next,
		wake:  make(chan struct{}),
	}
	q.writable.Store(true)
	q.bytes.init(min, next)
	return q
}

// bounds returns the low watermark, the next offset and the channel that is
// closed when next moves.
func (q *queue) bounds() (min, next int64, wake <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.min, q.next, q.wake
}

// publish makes offsets below next visible and wakes waiting pulls.
func (q *queue) publish(next int64) {
	var fire map[*parkSlot]struct{}
	q.mu.Lock()
	if next > q.next {
		q.next = next
		close(q.wake)
		q.wake = make(chan struct{})
		fire = q.takeParkedLocked()
	}
	q.mu.Unlock()
	fireParked(fire)
}

// raiseEnd raises q's end, and the writer's next offset, to next, past
// offsets lost from the store (queueend.go), which it adds to q's lost
// ranges, and returns the end it had. Open calls it before the writer
// starts.
func (q *queue) raiseEnd(next int64) (was int64, raised bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	was = q.next
	if next <= was {
		return was, false
	}
	q.next, q.wnext = next, next
	q.lost = q.lost.with(was, next, q.min)
	q.bytes.raise(next)
	return was, true
}

// setMin raises the low watermark.
func (q *queue) setMin(min int64) {
	q.mu.Lock()
	if min > q.min {
		q.min = min
	}
	q.mu.Unlock()
}

// release wakes every waiter, for example when the topic is deleted.
func (q *queue) release() {
	q.mu.Lock()
	close(q.wake)
	q.wake = make(chan struct{})
	fire := q.takeParkedLocked()
	q.mu.Unlock()
	fireParked(fire)
}
