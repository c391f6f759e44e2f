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
// crash the index and the queues agree. The writer owns the in-memory copy.

var keyDedupPrefix = []byte("u/")

type dedupEntry struct {
	queue  int
	offset int64
	at     time.Time
}

type dedupIndex struct {
	window  time.Duration
	entries map[string]dedupEntry
	order   []dedupKey // insertion order, for expiry
}

type dedupKey struct {
	id string
	at time.Time
}

func dedupMetaKey(topicID uint32, id string) []byte {
	k := slices.Clone(keyDedupPrefix)
	k = binary.BigEndian.AppendUint32(k, topicID)
	return append(k, id...)
}

func dedupValue(d dedupEntry) []byte {
	v := binary.BigEndian.AppendUint32(nil, uint32(d.queue))
	v = binary.BigEndian.AppendUint64(v, uint64(d.offset))
	return binary.BigEndian.AppendUint64(v, uint64(d.at.UnixNano()))
}

// loadDedup restores the dedup indexes of topics that have a window, and
// deletes expired entries.
func (e *Engine) loadDedup() error {
	e.dedup = map[uint32]*dedupIndex{}
	now := time.Now()
	var expired []store.MetaOp
	err := e.st.ScanMeta(keyDedupPrefix, func(k, v []byte) error {
		if len(k) < len(keyDedupPrefix)+4 || len(v) != 20 {
			return fmt.Errorf("%w: dedup entry %q", ErrCorrupt, k)
		}
		tid := binary.BigEndian.Uint32(k[len(keyDedupPrefix):])
		id := string(k[len(keyDedupPrefix)+4:])
		d := dedupEntry{queue: int(binary.BigEndian.Uint32(v)), offset: int64(binary.BigEndian.Uint64(v[4:])), at: time.Unix(0, int64(binary.BigEndian.Uint64(v[12:])))}
		t := e.topicByID(tid)
		if t == nil || t.dedup <= 0 || now.Sub(d.at) > t.dedup {
			expired = append(expired, store.MetaOp{Key: slices.Clone(k), Delete: true})
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
	if len(expired) > 0 {
		return e.st.Write(&store.Batch{Meta: expired})
	}
	return nil
}

func (e *Engine) dedupFor(t *topic) *dedupIndex {
	idx := e.dedup[t.id]
	if idx == nil {
		idx = &dedupIndex{window: t.dedup, entries: map[string]dedupEntry{}}
		e.dedup[t.id] = idx
	}
	return idx
}

func (x *dedupIndex) add(id string, d dedupEntry) {
	x.entries[id] = d
	x.order = append(x.order, dedupKey{id: id, at: d.at})
}

// expire drops entries older than the window and returns their deletions.
func (x *dedupIndex) expire(topicID uint32, now time.Time) []store.MetaOp {
	var ops []store.MetaOp
	i := 0
	for ; i < len(x.order) && now.Sub(x.order[i].at) > x.window; i++ {
		k := x.order[i]
		if d, ok := x.entries[k.id]; ok && d.at.Equal(k.at) {
			delete(x.entries, k.id)
			ops = append(ops, store.MetaOp{Key: dedupMetaKey(topicID, k.id), Delete: true})
		}
	}
	x.order = x.order[i:]
	return ops
}

// dedupCheck runs in the writer before offsets are assigned: it reports
// whether every ID of r is already known in its topic's window (and then
// fills r with the original position).
func (e *Engine) dedupCheck(r *appendReq, now time.Time) bool {
	t := r.q.topic
	if t.dedup <= 0 || len(r.dedupIDs) == 0 {
		return false
	}
	idx := e.dedupFor(t)
	var first dedupEntry
	for i, id := range r.dedupIDs {
		d, ok := idx.entries[id]
		if !ok || now.Sub(d.at) > idx.window {
			return false
		}
		if i == 0 {
			first = d
		}
	}
	r.duplicate = true
	r.dupQueue, r.first, r.storedAt = first.queue, first.offset, first.at
	return true
}

// dedupRecord remembers the IDs r was just assigned and returns the index
// writes; undo reverts the in-memory part when the store write fails.
func (e *Engine) dedupRecord(r *appendReq, now time.Time) (ops []store.MetaOp, undo func()) {
	t := r.q.topic
	if t.dedup <= 0 || len(r.dedupIDs) == 0 {
		return nil, func() {}
	}
	idx := e.dedupFor(t)
	prev := map[string]*dedupEntry{}
	for i, id := range r.dedupIDs {
		if old, ok := idx.entries[id]; ok {
			prev[id] = &old
		} else {
			prev[id] = nil
		}
		d := dedupEntry{queue: r.q.id, offset: r.first + int64(i), at: now}
		idx.add(id, d)
		ops = append(ops, store.MetaOp{Key: dedupMetaKey(t.id, id), Value: dedupValue(d)})
	}
	return ops, func() {
		for id, old := range prev {
			if old == nil {
				delete(idx.entries, id)
			} else {
				idx.entries[id] = *old
			}
		}
	}
}
