package equeue

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/equeue-go/equeue/store"
)

// What retention's own cuts owe a RetentionResult (retainState.owed and
// due: messages a failed delete left below a watermark, deleted or not
// since) is stored, one key per queue, so that a reopen does not forget
// it: the first pass after open counts what open or a trim deleted, and
// what it deletes itself. The key is written when a cut's delete fails
// and deleted by the pass that counts it; a topic's deletion deletes its
// keys with its watermarks.

// keyOwedPrefix is followed by a queue's topic and queue IDs; the value is
// the messages retention owes of the queue, a big-endian uint64.
var keyOwedPrefix = []byte("owed/")

// owedKey is the metadata key of what retention owes of q.
func owedKey(q store.QueueID) []byte {
	k := slices.Clone(keyOwedPrefix)
	k = binary.BigEndian.AppendUint32(k, q.Topic)
	return binary.BigEndian.AppendUint32(k, q.Queue)
}

// parseOwedKey returns the queue of an owedKey.
func parseOwedKey(k []byte) (store.QueueID, bool) {
	p := len(keyOwedPrefix)
	if len(k) != p+8 {
		return store.QueueID{}, false
	}
	return store.QueueID{Topic: binary.BigEndian.Uint32(k[p:]), Queue: binary.BigEndian.Uint32(k[p+4:])}, true
}

// oweRetention notes that n messages of a retention cut of q are left
// below its watermark by a failed delete, and stores what retention owes
// of q. A store that refuses that write too leaves it in memory only
// (logged), until the next pass stores it (keepOwed).
// q.topic.retain.mu must be held.
func (e *Engine) oweRetention(q *queue, n int64) {
	q.topic.retain.owe(q.id, n)
	e.storeOwed(q)
}

// keepOwed stores what retention owes of q when only memory holds it (its
// write failed), before the pass tries q again: should this pass fail too,
// a reopen still counts it. q.topic.retain.mu must be held.
func (e *Engine) keepOwed(q *queue) {
	r := &q.topic.retain
	if !r.stored[q.id] && r.uncounted(q.id) > 0 {
		e.storeOwed(q)
	}
}

// storeOwed stores what retention owes of q, uncounted. q.topic.retain.mu
// must be held.
func (e *Engine) storeOwed(q *queue) {
	r := &q.topic.retain
	total := r.uncounted(q.id)
	if total <= 0 {
		return
	}
	applied, err := e.storeMeta(store.MetaOp{Key: owedKey(q.key), Value: binary.BigEndian.AppendUint64(nil, uint64(total))})
	if applied {
		if r.stored == nil {
			r.stored = map[int]bool{}
		}
		r.stored[q.id] = true
	}
	if err != nil {
		e.log.Warn("storing what retention's failed delete left; a reopen may not count it", "topic", q.topic.name, "queue", q.id, "err", err)
	}
}

// countOwed returns what retention owed of q that is deleted now, for the
// pass to count, having deleted its stored key: a pass that cannot delete
// the key counts nothing yet, so that no later pass counts the messages a
// second time. A delete of the key that reached the store but may not be
// durable (a failed fsync: a crash may leave the key, and a reopen count
// the messages again) counts them, with an error saying so
// (ErrIndeterminate). q.topic.retain.mu must be held, and the pass has
// swept q.
func (e *Engine) countOwed(q *queue) (int64, error) {
	r := &q.topic.retain
	if _, left := r.pending[q.id]; left {
		return 0, nil // not deleted yet
	}
	n := r.due[q.id]
	var unsure error
	if r.stored[q.id] {
		applied, err := e.storeMeta(store.MetaOp{Key: owedKey(q.key), Delete: true})
		if !applied {
			return 0, fmt.Errorf("equeue: forget what retention owed of %s/%d: %w", q.topic.name, q.id, err)
		}
		delete(r.stored, q.id)
		unsure = notDurable(err, "forget what retention owed of %s/%d", q.topic.name, q.id)
	}
	delete(r.due, q.id)
	return n, unsure
}

// owedDeletes returns the store operations that delete t's stored owed
// keys, with t. t.retain.mu must be held.
func owedDeletes(t *topic) []store.MetaOp {
	var ops []store.MetaOp
	for _, q := range t.queueList() {
		if t.retain.stored[q.id] {
			ops = append(ops, store.MetaOp{Key: owedKey(q.key), Delete: true})
		}
	}
	return ops
}

// loadOwed reads what retention owed of each queue at the last close:
// owed still when open left records below the queue's watermark
// (pending), due otherwise. Keys of queues no topic has are deleted; a
// value that cannot be read is counted as nothing (logged) and deleted by
// the next pass.
func (e *Engine) loadOwed() error {
	var ops []store.MetaOp
	err := e.st.ScanMeta(keyOwedPrefix, func(k, v []byte) error {
		var q *queue
		if id, ok := parseOwedKey(k); ok {
			if t := e.topicIDs[id.Topic]; t != nil {
				q, _ = t.queue(int(id.Queue))
			}
		}
		if q == nil {
			ops = append(ops, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		r := &q.topic.retain
		if r.stored == nil {
			r.stored = map[int]bool{}
		}
		r.stored[q.id] = true
		var n int64
		if len(v) == 8 && binary.BigEndian.Uint64(v) <= 1<<62 {
			n = int64(binary.BigEndian.Uint64(v))
		} else {
			e.log.Warn("what retention owed of a queue is unreadable: it is not counted", "topic", q.topic.name, "queue", q.id)
		}
		if n > 0 {
			r.owe(q.id, n)
			if _, left := r.pending[q.id]; !left {
				r.deleted(q.id)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := e.writeMetaAtOpen(ops); err != nil {
		// Stale keys are harmless: the next open tries again.
		e.log.Warn("deleting what retention owed of deleted topics; the next open tries again", "keys", len(ops), "err", err)
	}
	return nil
}

// logOwed logs, for each topic, the messages of retention's cuts that a
// failed delete left and no RetentionResult counted yet, and whether that
// count is stored for a reopen (a write of it may have failed too): an
// operator reading a failed pass's error learns what it owes.
func (e *Engine) logOwed() {
	e.mu.RLock()
	topics := make([]*topic, 0, len(e.topics))
	for _, t := range e.topics {
		topics = append(topics, t)
	}
	e.mu.RUnlock()
	for _, t := range topics {
		var n int64
		stored := true
		t.retain.mu.Lock()
		for _, q := range t.queueList() {
			if u := t.retain.uncounted(q.id); u > 0 {
				n += u
				stored = stored && t.retain.stored[q.id]
			}
		}
		t.retain.mu.Unlock()
		if n > 0 {
			e.log.Warn("retention owes messages a failed delete left", "topic", t.name, "messages", n, "stored", stored)
		}
	}
}
