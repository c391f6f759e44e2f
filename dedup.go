package equeue

import (
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

func dedupKeyLen(id string) int { return len(keyDedupPrefix) + 4 + len(id) }

type dedupEntry struct {
	queue  int
	offset int64 // -1 while the message waits in the delay log
	at     time.Time
}

type dedupIndex struct {
	topic   uint32
	window  time.Duration
	entries map[string]dedupEntry
	order   []dedupKey // insertion order, for expiry
}

type dedupKey struct {
	id string
	at time.Time
}

func dedupMetaKey(topicID uint32, id string) []byte {
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
	err := e.st.ScanMeta(keyDedupPrefix, func(k, v []byte) error {
		if len(k) < len(keyDedupPrefix)+4 || len(v) != dedupValueLen {
			return fmt.Errorf("%w: dedup entry %q", ErrCorrupt, k)
		}
		tid := binary.BigEndian.Uint32(k[len(keyDedupPrefix):])
		id := string(k[len(keyDedupPrefix)+4:])
		d := dedupEntry{queue: int(binary.BigEndian.Uint32(v)), offset: int64(binary.BigEndian.Uint64(v[4:])), at: time.Unix(0, int64(binary.BigEndian.Uint64(v[12:])))}
		t := e.topicByID(tid)
		if t == nil || t.dedup <= 0 {
			stale = append(stale, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		e.dedupFor(t).add(id, d)
		return nil
	})
	if err != nil {
		return err
	}
	for _, idx := range e.dedup {
		slices.SortFunc(idx.order, func(a, b dedupKey) int { return a.at.Compare(b.at) })
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
		idx = &dedupIndex{topic: t.id, window: t.dedup, entries: map[string]dedupEntry{}}
		e.dedup[t.id] = idx
	}
	return idx
}

func (x *dedupIndex) add(id string, d dedupEntry) {
	x.entries[id] = d
	x.order = append(x.order, dedupKey{id: id, at: d.at})
}

// dedupRef names one ID of one topic.
type dedupRef struct {
	topic uint32
	id    string
}

// dedupPut is an index entry a batch writes (or, for expiry, deletes).
type dedupPut struct {
	idx *dedupIndex
	id  string
	d   dedupEntry
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
	d, ok := idx.entries[id]
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
		i := 0
		for ; i < len(x.order) && b.now.Sub(x.order[i].at) > x.window; i++ {
			k := x.order[i]
			d, ok := x.entries[k.id]
			if !ok || !d.at.Equal(k.at) {
				continue // replaced or already deleted: nothing to write
			}
			if _, again := b.pending[dedupRef{tid, k.id}]; again {
				continue
			}
			cost := dedupKeyLen(k.id)
			if ops < 1 || bytes < cost {
				more = true
				break
			}
			ops, bytes = ops-1, bytes-cost
			b.meta = append(b.meta, store.MetaOp{Key: dedupMetaKey(tid, k.id), Delete: true})
			b.expired = append(b.expired, dedupPut{idx: x, id: k.id, d: d})
		}
		if i > 0 {
			b.expiredOrder = append(b.expiredOrder, expiredPrefix{x, i})
		}
		if more {
			return true
		}
	}
	return false
}

type expiredPrefix struct {
	idx *dedupIndex
	n   int // order entries the batch consumed
}

// commitDedup applies b's index changes to memory once b's write returned.
func (b *batchState) commitDedup() {
	for _, p := range b.expired {
		if d, ok := p.idx.entries[p.id]; ok && d.at.Equal(p.d.at) {
			delete(p.idx.entries, p.id)
		}
	}
	for _, p := range b.expiredOrder {
		p.idx.order = p.idx.order[p.n:]
	}
	for _, p := range b.dedup {
		p.idx.add(p.id, p.d)
	}
}
