package cluster

import (
	"sync"
	"time"
)

// firstIndexReadBound is how long Status waits for the read of the first
// index of the node's Raft log that it starts: past it, Status answers
// with the index last read, and the read goes on in the background.
const firstIndexReadBound = time.Second

// firstIndexReader reads the first index of a node's Raft log for Status,
// which must answer though the log's disk does not (a hung disk holds a
// read of raft-boltdb's file, or of raft-wal's segments): one read at a
// time, in a goroutine of its own, whose result is kept.
type firstIndexReader struct {
	read func() (uint64, error)

	mu      sync.Mutex
	last    uint64        // the index of the last read that succeeded
	reading chan struct{} // not nil while a read is on its way; closed when it ends
	until   time.Time     // when the read on its way has had its bound
}

// get returns the log's first index. It starts a read when none is on
// its way; it waits for the read on its way, whoever started it, until
// firstIndexReadBound after its start at most: a call arriving while the
// read is quick answers with what it finds, and one arriving while it is
// held past its bound (the store does not answer) does not wait. It then
// returns the index the last successful read found (0 before one did).
func (r *firstIndexReader) get() uint64 {
	r.mu.Lock()
	if r.reading == nil {
		r.reading = make(chan struct{})
		r.until = time.Now().Add(firstIndexReadBound)
		go r.readOnce(r.reading)
	}
	done, wait := r.reading, time.Until(r.until)
	r.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// readOnce reads the first index, keeps it when the read succeeded, and
// closes done.
func (r *firstIndexReader) readOnce(done chan struct{}) {
	first, err := r.read()
	r.mu.Lock()
	if err == nil {
		r.last = first
	}
	r.reading = nil
	r.mu.Unlock()
	close(done)
}
