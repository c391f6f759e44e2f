package store

import (
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// readHints remembers, per queue, where the last Read stopped: the next
// offset and the first offset of the segment holding it. A consumer's next
// pull starts there, so Read can seek forward to that segment at once
// instead of first looking it up with a reverse seek (a second Badger
// iterator per read). A hint is only a starting point: Read uses it only
// when the segment it names still starts there, and segments never
// overlap, so a stale hint costs the lookup and never a record.
type readHints struct {
	mu sync.Mutex
	m  map[QueueID]readHint
}

type readHint struct {
	next, start uint64
}

// seekFor returns where a Read of q from offset from should seek: the
// remembered segment start when the last Read of q stopped at from, else
// from itself.
func (h *readHints) seekFor(q QueueID, from uint64) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.m[q]; ok && r.next == from {
		return r.start
	}
	return from
}

// set records that the next Read of q is expected at next, inside (or at
// the start of) the segment starting at start.
func (h *readHints) set(q QueueID, next, start uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[QueueID]readHint)
	}
	h.m[q] = readHint{next: next, start: start}
}

// forget drops the hint of q.
func (h *readHints) forget(q QueueID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, q)
}

// seekSegment positions it (a forward iterator over q's records) at the
// segment holding from, or the first one after it: at seek when a segment
// starts exactly there (seek <= from), else at the last segment starting at
// or before from, found with a reverse seek.
func seekSegment(txn *badger.Txn, it *badger.Iterator, prefix []byte, q QueueID, seek, from uint64) error {
	it.Seek(recordKey(q, seek))
	if it.Valid() {
		if start, err := recordOffset(it.Item().Key()); err == nil && start == seek {
			return nil
		}
	}
	start, _, ok, err := lastSegment(txn, prefix, q, from, false)
	if err != nil {
		return err
	}
	if ok && start != seek {
		it.Seek(recordKey(q, start))
	}
	return nil
}
