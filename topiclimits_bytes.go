package equeue

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// The stored-bytes account behind TopicLimits.MaxBytes.
//
// Every queue counts the bytes of the records the writer appends to it
// (added, at the writer's next offset). A queue's account becomes exact
// ("known") once base is set so that base+added is the bytes of the records
// in [min, next): at open for topics with a MaxBytes, or when a MaxBytes is
// set later, by reading the queue's records once; a queue that starts empty
// is known from the start. Trims that move a known queue's low watermark
// read the records they cut and take their bytes off base. Nothing of it is
// stored: the store's records are the account, and memory changes only
// after the write it follows (the writer's batch, or the watermark).

// byteAccount is one queue's stored-bytes account.
type byteAccount struct {
	added atomic.Int64 // by the writer, when it wrote the batch
	mu    sync.Mutex   // pairs shown with shownNext, for counting
	// shown is the part of added that readers see: the bytes of the
	// batches published (durableBatch), whose records the store holds,
	// up to shownNext. On an AsyncWriter the writer adds a batch before
	// the store holds it, so a count reads the store up to shownNext only.
	shown     int64
	shownNext int64
	// base is written under the topic's retain.mu.
	base  atomic.Int64
	known atomic.Bool
}

// init starts the account of a queue whose writer offset is next; a queue
// with no stored record is known from the start.
func (a *byteAccount) init(min, next int64) {
	a.shownNext = next
	a.known.Store(min >= next)
}

// commit adds what a stored batch appended to the queue. Only the writer
// calls it, after the store write returned (on an AsyncWriter, once the
// store has it queued).
func (a *byteAccount) commit(bytes int64) { a.added.Add(bytes) }

// publish notes that a committed batch, which appended bytes to the queue
// up to next, is stored and published to readers. Only the completer calls
// it, in write order.
func (a *byteAccount) publish(bytes, next int64) {
	a.mu.Lock()
	a.shown += bytes
	a.shownNext = max(a.shownNext, next)
	a.mu.Unlock()
}

// raise moves the account's end past offsets lost from the store
// (queueend.go), which hold no bytes. Open calls it before the writer starts.
func (a *byteAccount) raise(next int64) {
	a.mu.Lock()
	a.shownNext = next
	a.mu.Unlock()
}

// snapshot returns an offset below which the store holds every record
// counted, and the bytes added below it.
func (a *byteAccount) snapshot() (next, added int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.shownNext, a.shown
}

// stored returns the bytes of the queue's records, exact when known.
func (a *byteAccount) stored() int64 { return a.base.Load() + a.added.Load() }

// recBytes is the bytes recs count against MaxBytes.
func recBytes(recs [][]byte) int64 {
	var n int64
	for _, r := range recs {
		n += int64(len(r))
	}
	return n
}

// maxBytesOf returns t's MaxBytes, 0 when it sets none.
func (t *topic) maxBytesOf() int64 {
	if l := t.limits.Load(); l != nil {
		return l.MaxBytes
	}
	return 0
}

// storedBytes returns the bytes stored in t's queues, exact when every
// queue's account is known.
func (t *topic) storedBytes() int64 {
	var n int64
	for _, q := range t.queueList() {
		n += q.bytes.stored()
	}
	return n
}

// countBytes makes the account of every queue of t known, reading the
// records of those that are not (see byteAccount). t.retain.mu must be
// held, so that no trim moves a low watermark meanwhile.
func (e *Engine) countBytes(t *topic) error {
	for _, q := range t.queueList() {
		if q.bytes.known.Load() {
			continue
		}
		next, added := q.bytes.snapshot()
		min, _, _ := q.bounds()
		n, err := e.rangeBytes(q, min, next)
		if err != nil {
			return err
		}
		q.bytes.base.Store(n - added)
		q.bytes.known.Store(true)
	}
	return nil
}

// rangeBytes returns the bytes of q's records in [from, to).
func (e *Engine) rangeBytes(q *queue, from, to int64) (int64, error) {
	var n int64
	err := e.eachRecordSize(q, from, to, func(size int64) bool { n += size; return true })
	return n, err
}

// eachRecordSize calls fn with the size of the record at each offset of
// q in [from, to), in offset order, until fn returns false. An offset
// holding no record, one lost before the engine opened (queueend.go), has
// size 0. The callers hold the topic's retain.mu, so no trim deletes
// records meanwhile.
func (e *Engine) eachRecordSize(q *queue, from, to int64, fn func(size int64) bool) error {
	for from < to {
		recs, err := e.st.Read(q.key, uint64(from), uint64(to), 1024, 4<<20)
		if err != nil {
			return fmt.Errorf("equeue: count the bytes of %s/%d: %w", q.topic.name, q.id, unsupportedSegment(err))
		}
		for _, r := range recs {
			for ; from < int64(r.Offset); from++ {
				if !fn(0) {
					return nil
				}
			}
			if !fn(int64(len(r.Value))) {
				return nil
			}
			from++
		}
		if len(recs) == 0 {
			for ; from < to; from++ {
				if !fn(0) {
					return nil
				}
			}
		}
	}
	return nil
}

// cut takes n bytes of the records a trim cut (read before it deleted
// them) off a known account; a trim that did not count (the topic has no
// MaxBytes) leaves the account unknown, recounted when one is set. The
// topic's retain.mu must be held.
func (a *byteAccount) cut(n int64, counted bool) {
	if !counted {
		a.known.Store(false)
	} else if a.known.Load() {
		a.base.Add(-n)
	}
}
