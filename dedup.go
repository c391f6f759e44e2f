package equeue

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Deduplication. For a topic with a dedup window, the writer remembers
// producer-supplied message IDs with where they were stored:
//
//	u/ | topic id (4, BE) | message id  ->  queue (4) | offset (8) | stored-at unix nanos (8)
//
// The entry is written in the same store write as the message, so after a
// crash the index and the queues agree. A delayed send is checked and
// recorded against its destination topic when it is sent (its offset is -1:
// it has none until it is moved), so a delayed duplicate is answered as a
// duplicate at once. The writer owns the in-memory copy and changes it only
// after the write that carries the change returned.

var keyDedupPrefix = []byte("u/")

// dedupValueLen is the length of an index value.
const dedupValueLen = 20

func dedupKeyLen[S string | []byte](id S) int { return len(keyDedupPrefix) + 4 + len(id) }

type dedupEntry struct {
	queue  int
	offset int64 // -1 while the message waits in the delay log
	at     time.Time
}

func dedupMetaKey[S string | []byte](topicID uint32, id S) []byte {
	k := make([]byte, 0, dedupKeyLen(id))
	k = append(k, keyDedupPrefix...)
	k = binary.BigEndian.AppendUint32(k, topicID)
	return append(k, id...)
}

func dedupValue(d dedupEntry) []byte {
	v := make([]byte, 0, dedupValueLen)
	v = binary.BigEndian.AppendUint32(v, uint32(d.queue))
	v = binary.BigEndian.AppendUint64(v, uint64(d.offset))
	return binary.BigEndian.AppendUint64(v, uint64(d.at.UnixNano()))
}

// loadDedup restores the dedup indexes of topics that have a window. Expired
// entries are loaded too: the writer deletes them, a batch's room at a
// time. Entries of topics that are gone or have no window are deleted here,
// in writes within the store's limits.
func (e *Engine) loadDedup() error {
	e.dedup = map[uint32]*dedupIndex{}
	var stale []store.MetaOp
	// Badger hands the entries over in key order; the index wants them in
	// the order of their times (expiry walks it from the oldest), so they
	// are held packed, IDs in one buffer, and sorted first.
	type loaded struct {
		topic   uint32
		queue   uint32
		offset  int64
		at      int64
		idStart int
		idEnd   int
	}
	var (
		recs []loaded
		ids  []byte
	)
	err := e.st.ScanMeta(keyDedupPrefix, func(k, v []byte) error {
		if len(k) < len(keyDedupPrefix)+4 || len(v) != dedupValueLen {
			return fmt.Errorf("%w: dedup entry %q", ErrCorrupt, k)
		}
		tid := binary.BigEndian.Uint32(k[len(keyDedupPrefix):])
		if t := e.topicByID(tid); t == nil || t.dedup <= 0 {
			stale = append(stale, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		start := len(ids)
		ids = append(ids, k[len(keyDedupPrefix)+4:]...)
		recs = append(recs, loaded{
			topic: tid, queue: binary.BigEndian.Uint32(v), offset: int64(binary.BigEndian.Uint64(v[4:])),
			at: int64(binary.BigEndian.Uint64(v[12:])), idStart: start, idEnd: len(ids),
		})
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(recs, func(a, b loaded) int { return cmp.Compare(a.at, b.at) })
	for _, r := range recs {
		e.dedupFor(e.topicByID(r.topic)).add(string(ids[r.idStart:r.idEnd]), dedupEntry{queue: int(r.queue), offset: r.offset, at: time.Unix(0, r.at)})
	}
	maxOps, maxBytes := e.batchLimits()
	for len(stale) > 0 {
		n, size := 0, 0
		for n < len(stale) && n < maxOps && size+len(stale[n].Key) <= maxBytes {
			size += len(stale[n].Key)
			n++
		}
		if err := e.st.Write(&store.Batch{Meta: stale[:max(n, 1)]}); err != nil {
			return err
		}
		stale = stale[max(n, 1):]
	}
	return nil
}

func (e *Engine) dedupFor(t *topic) *dedupIndex {
	idx := e.dedup[t.id]
	if idx == nil {
		idx = newDedupIndex(t.id, t.dedup)
		idx.count = &e.stats.dedup
		idx.deleted = &t.deleted
		e.dedup[t.id] = idx
	}
	return idx
}

// dedupRef names one ID of one topic.
type dedupRef struct {
	topic uint32
	id    string
}

// dedupPut is an index entry a batch writes (or, for expiry, deletes:
// then pos is its position in the index's log).
type dedupPut struct {
	idx *dedupIndex
	id  string
	d   dedupEntry
	pos uint64
}

// dedupLookup finds id in t's window as of b: entries recorded earlier in
// the same batch first, then the index.
func (e *Engine) dedupLookup(b *batchState, t *topic, id string) (dedupEntry, bool) {
	if d, ok := b.pending[dedupRef{t.id, id}]; ok {
		return d, true
	}
	idx := e.dedup[t.id]
	if idx == nil {
		return dedupEntry{}, false
	}
	d, ok := idx.get(id)
	if !ok || b.now.Sub(d.at) > idx.window {
		return dedupEntry{}, false
	}
	return d, true
}

// dedupCheck reports whether every ID of c is already in its topic's window
// (and then fills c with the original position).
func (e *Engine) dedupCheck(b *batchState, c *command) bool {
	t := c.dedupTopic()
	if t.dedup <= 0 || len(c.dedupIDs) == 0 || c.dedupBypass {
		return false
	}
	var first dedupEntry
	for i, id := range c.dedupIDs {
		if len(id) > MaxIDBytes {
			return false // never recorded (dedupRecord)
		}
		d, ok := e.dedupLookup(b, t, id)
		if !ok {
			return false
		}
		if i == 0 {
			first = d
		}
	}
	c.duplicate = true
	c.dupQueue, c.first, c.storedAt = first.queue, first.offset, first.at
	return true
}

// dedupRecord adds c's IDs to b: the index writes now, the in-memory entries
// when b's write returned.
func (e *Engine) dedupRecord(b *batchState, c *command, queue int, first int64) {
	t := c.dedupTopic()
	if t.dedup <= 0 || len(c.dedupIDs) == 0 {
		return
	}
	idx := e.dedupFor(t)
	if b.pending == nil {
		b.pending = map[dedupRef]dedupEntry{}
	}
	for i, id := range c.dedupIDs {
		if len(id) > MaxIDBytes {
			// Only a stored message sent again (a send-back or a redrive
			// of one stored before IDs had a limit) can carry one: new
			// sends are refused (validateMessage). Its key would be too
			// long for the store, so it is not deduplicated.
			continue
		}
		d := dedupEntry{queue: queue, offset: -1, at: b.now}
		if first >= 0 {
			d.offset = first + int64(i)
		}
		b.pending[dedupRef{t.id, id}] = d
		b.dedup = append(b.dedup, dedupPut{idx: idx, id: id, d: d})
		b.meta = append(b.meta, store.MetaOp{Key: dedupMetaKey(t.id, id), Value: dedupValue(d)})
	}
}

// planExpiry adds to b the deletion of index entries past their window, at
// most ops operations and bytes bytes of them, topics in id order. IDs this
// batch records again are skipped (their new entry replaces the old). It
// reports whether expired entries are left for a later batch.
func (e *Engine) planExpiry(b *batchState, ops, bytes int) (more bool) {
	if len(e.dedup) == 0 {
		return false
	}
	tids := make([]uint32, 0, len(e.dedup))
	for tid := range e.dedup {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	for _, tid := range tids {
		x := e.dedup[tid]
		// A deleted topic's window is over: all of it goes, and then the
		// index itself (dropDeletedIndexes, once the batch is stored).
		gone := x.deleted != nil && x.deleted.Load()
		if gone && x.size() == 0 {
			b.dropIdx = append(b.dropIdx, tid)
			continue
		}
		pos, ok := x.oldest()
		passed := false
		for ok {
			d, id, _ := x.entry(pos)
			if !gone && b.now.Sub(d.at) <= x.window {
				break
			}
			if x.current(pos, id) && !b.recordsAgain(tid, id) {
				cost := dedupKeyLen(id)
				if ops < 1 || bytes < cost {
					more = true
					break
				}
				ops, bytes = ops-1, bytes-cost
				b.meta = append(b.meta, store.MetaOp{Key: dedupMetaKey(tid, id), Delete: true})
				b.expired = append(b.expired, dedupPut{idx: x, id: string(id), d: d, pos: pos})
			} // else replaced, or recorded again by this batch: nothing to write
			pos, ok = x.following(pos)
			passed = true
		}
		if passed {
			if !ok {
				pos = x.tail
			}
			b.expiredOrder = append(b.expiredOrder, expiredPrefix{x, pos})
		}
		if more {
			return true
		}
	}
	return false
}

// recordsAgain reports whether b records id of topic tid (its new entry
// replaces the one expiring).
func (b *batchState) recordsAgain(tid uint32, id []byte) bool {
	if len(b.pending) == 0 {
		return false
	}
	_, again := b.pending[dedupRef{tid, string(id)}]
	return again
}

type expiredPrefix struct {
	idx *dedupIndex
	to  uint64 // the log position the batch's expiry reached
}

// commitDedup applies b's index changes to memory once b's write returned:
// the expired entries go, the recorded ones come, and then each log's head
// moves past what expired (an entry recorded again is replaced before the
// chunk holding its old entry can be freed).
func (b *batchState) commitDedup() {
	for _, p := range b.expired {
		p.idx.remove(p.pos, p.id)
	}
	for _, p := range b.dedup {
		p.idx.add(p.id, p.d)
	}
	for _, p := range b.expiredOrder {
		p.idx.advance(p.to)
	}
}

// dropDeletedIndexes forgets the indexes of deleted topics that b found
// empty, once b is stored and unless b recorded into them after all (a
// send that passed its topic's deletion check just before the topic was
// deleted): then a later batch expires those entries first.
func (e *Engine) dropDeletedIndexes(b *batchState) {
	for _, tid := range b.dropIdx {
		if x := e.dedup[tid]; x != nil && x.size() == 0 {
			delete(e.dedup, tid)
		}
	}
}
