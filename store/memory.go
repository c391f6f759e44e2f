package store

import (
	"math"
	"slices"
	"sort"
	"sync"
)

// recordKeySize is what one record's address (topic, queue, offset) counts
// for in Memory.Size: the bytes the same address takes as a big-endian key.
const recordKeySize = 4 + 4 + 8

// Memory is a Store that keeps everything in process memory. It behaves like
// Badger in every observable way except durability: nothing outlives the
// value, and Sync and Reclaim do nothing.
//
// Each queue is a slice of records sorted by offset, so appends in offset
// order are amortised O(1) and reads are a binary search. Metadata lives in
// an ordered map (ordered.go), so a scan that stops early costs what it
// reads, not the number of keys under its prefix.
type Memory struct {
	limits Limits

	mu     sync.RWMutex
	closed bool
	queues map[QueueID][]Record
	meta   *orderedMap
	size   int64
}

// NewMemory returns an empty in-memory store whose Limits equal those of a
// Badger store opened with DefaultBadgerOptions, so an engine splits batches
// the same way on both.
func NewMemory() *Memory {
	return NewMemoryWithLimits(defaultLimits())
}

// NewMemoryWithLimits returns an empty in-memory store that accepts batches
// within l. A zero field of l means no limit on that axis.
func NewMemoryWithLimits(l Limits) *Memory {
	return &Memory{
		limits: l,
		queues: make(map[QueueID][]Record),
		meta:   newOrderedMap(defaultLeafSize),
	}
}

// clone copies b; an empty b gives nil, as Badger does.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// Write applies b atomically. Values and keys are copied before the store
// is locked, so the caller may reuse b as soon as Write returns.
func (m *Memory) Write(b *Batch) error {
	if b == nil {
		b = &Batch{}
	}
	if err := checkBatch(b, m.limits); err != nil {
		if m.isClosed() {
			return ErrClosed
		}
		return err
	}
	entries := make([]Entry, len(b.Entries))
	for i, e := range b.Entries {
		entries[i] = Entry{Queue: e.Queue, Offset: e.Offset, Value: clone(e.Value)}
	}
	ops := make([]MetaOp, len(b.Meta))
	for i, op := range b.Meta {
		ops[i] = MetaOp{Key: op.Key, Value: clone(op.Value), Delete: op.Delete}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, e := range entries {
		m.put(e)
	}
	for _, op := range ops {
		k := string(op.Key) // copies the key; b is not modified during Write
		var old []byte
		var had bool
		if op.Delete {
			old, had = m.meta.Delete(k)
		} else {
			old, had = m.meta.Set(k, op.Value)
			m.size += int64(len(k) + len(op.Value))
		}
		if had {
			m.size -= int64(len(k) + len(old))
		}
	}
	return nil
}

// put stores one record, keeping the queue sorted. m.mu is held.
func (m *Memory) put(e Entry) {
	recs := m.queues[e.Queue]
	n := len(recs)
	if n == 0 || recs[n-1].Offset < e.Offset {
		m.queues[e.Queue] = append(recs, Record{Offset: e.Offset, Value: e.Value})
		m.size += int64(recordKeySize + len(e.Value))
		return
	}
	i := lowerBound(recs, e.Offset)
	if recs[i].Offset == e.Offset {
		m.size += int64(len(e.Value) - len(recs[i].Value))
		recs[i].Value = e.Value
		return
	}
	m.queues[e.Queue] = slices.Insert(recs, i, Record{Offset: e.Offset, Value: e.Value})
	m.size += int64(recordKeySize + len(e.Value))
}

// lowerBound returns the index of the first record with an offset >= off.
func lowerBound(recs []Record, off uint64) int {
	return sort.Search(len(recs), func(i int) bool { return recs[i].Offset >= off })
}

// Sync does nothing: Memory is not durable.
func (m *Memory) Sync() error {
	if m.isClosed() {
		return ErrClosed
	}
	return nil
}

// Read returns copies of the records of q with offsets in [from, to),
// ascending, bounded by max records and maxBytes of values (the record that
// reaches maxBytes is included).
func (m *Memory) Read(q QueueID, from, to uint64, max, maxBytes int) ([]Record, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	if from >= to {
		return nil, nil
	}
	recs := m.queues[q]
	var out []Record
	sum := 0
	for i := lowerBound(recs, from); i < len(recs) && recs[i].Offset < to; i++ {
		out = append(out, Record{Offset: recs[i].Offset, Value: clone(recs[i].Value)})
		sum += len(recs[i].Value)
		if (max > 0 && len(out) >= max) || (maxBytes > 0 && sum >= maxBytes) {
			break
		}
	}
	return out, nil
}

// Bounds returns the first offset of q and the last offset + 1.
func (m *Memory) Bounds(q QueueID) (first, next uint64, ok bool, err error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, 0, false, ErrClosed
	}
	recs := m.queues[q]
	if len(recs) == 0 {
		return 0, 0, false, nil
	}
	return recs[0].Offset, recs[len(recs)-1].Offset + 1, true, nil
}

// memDeleteChunk is the most records DeleteRange and DropQueue delete from
// the head of a queue in one hold of the lock, so writers wait for a chunk
// at most, not for the whole range.
const memDeleteChunk = 8192

// DeleteRange deletes the records of q with offsets in [from, to). A range
// at the head of the queue (what retention deletes) goes in chunks of
// memDeleteChunk records with the lock released in between; a range inside
// the queue goes at once, since removing it moves the records after it.
func (m *Memory) DeleteRange(q QueueID, from, to uint64) error {
	for {
		done, err := m.deleteChunk(q, from, to)
		if err != nil || done {
			return err
		}
	}
}

// deleteChunk deletes the first chunk of [from, to) and reports whether the
// range is done.
func (m *Memory) deleteChunk(q QueueID, from, to uint64) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, ErrClosed
	}
	if from >= to {
		return true, nil
	}
	recs := m.queues[q]
	i, j := lowerBound(recs, from), lowerBound(recs, to)
	if i == j {
		return true, nil
	}
	done := true
	if i == 0 && j > memDeleteChunk {
		j, done = memDeleteChunk, false
	}
	for _, r := range recs[i:j] {
		m.size -= int64(recordKeySize + len(r.Value))
	}
	switch {
	case j-i == len(recs):
		delete(m.queues, q)
	case i == 0:
		// Trimming the head is the common case (retention); re-slicing
		// keeps it O(deleted). The dropped values are cleared so the
		// garbage collector can take them; the array itself is released
		// when a later append reallocates it.
		clear(recs[:j])
		m.queues[q] = recs[j:]
	default:
		m.queues[q] = slices.Delete(recs, i, j)
	}
	return done, nil
}

// DropQueue deletes every record of q, in chunks as DeleteRange does.
func (m *Memory) DropQueue(q QueueID) error {
	return m.DeleteRange(q, 0, math.MaxUint64)
}

// GetMeta returns a copy of the metadata value of key, or ErrNotFound.
func (m *Memory) GetMeta(key []byte) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	v, ok := m.meta.Get(string(key))
	if !ok {
		return nil, ErrNotFound
	}
	return clone(v), nil
}

// ScanMeta copies metadata pairs out in chunks, the first of memScanFirst
// pairs (a scan is often stopped at its first keys), each further one
// twice as large up to memScanChunk.
const (
	memScanFirst = 16
	memScanChunk = 256
)

// ScanMeta calls fn, in key order, for every metadata key with the prefix.
// Pairs are copied out under the lock in chunks, each found by a seek past
// the last key seen, and fn runs without the lock, so fn may call back into
// the store; a scan that fn stops early costs what it read, whatever number
// of keys follow. As on Badger, a scan is not one snapshot: keys written
// during it may or may not be seen.
func (m *Memory) ScanMeta(prefix []byte, fn func(key, value []byte) error) error {
	type kv struct {
		k string
		v []byte
	}
	p := string(prefix)
	from := p
	limit := memScanFirst
	batch := make([]kv, 0, limit)
	for {
		batch = batch[:0]
		m.mu.RLock()
		if m.closed {
			m.mu.RUnlock()
			return ErrClosed
		}
		m.meta.Ascend(from, p, func(k string, v []byte) bool {
			batch = append(batch, kv{k, clone(v)})
			return len(batch) < limit
		})
		m.mu.RUnlock()
		for _, e := range batch {
			if err := fn([]byte(e.k), e.v); err != nil {
				return err
			}
		}
		if len(batch) < limit {
			return nil
		}
		from = batch[len(batch)-1].k + "\x00" // the smallest key after the last one seen
		limit = min(2*limit, memScanChunk)
	}
}

// Size returns the sum of the lengths of all keys and values; a record's key
// counts as 16 bytes (topic, queue, offset).
func (m *Memory) Size() (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, ErrClosed
	}
	return m.size, nil
}

// Limits reports the largest batch Write accepts.
func (m *Memory) Limits() Limits { return m.limits }

// Reclaim does nothing: deleted records are released to the garbage
// collector as they are deleted.
func (m *Memory) Reclaim() error {
	if m.isClosed() {
		return ErrClosed
	}
	return nil
}

// Close releases the data. It is idempotent; every other call after Close
// returns ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.queues = nil
	m.meta = nil
	m.size = 0
	return nil
}

func (m *Memory) isClosed() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.closed
}
