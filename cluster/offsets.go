package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/equeue-go/equeue/store"
)

// The FSM verifies the offsets of every applied append. The leader's
// engine assigns them from its memory, which tenure fencing keeps right;
// the check makes a mistake there (or a forged entry) harmless: a batch
// whose appends to a queue do not start exactly at the queue's next offset
// on this replica, or are not dense, is refused as a whole. Every replica
// holds the same store when it applies the entry, so every replica refuses
// it alike, and the refusal also ends the tenure (see fsm.refuse): the
// leader's engine, whose memory disagrees with the store, is replaced by
// one that reads its offsets back from the store.
//
// A queue's next offset is what the engine itself recovers it as on open:
// one past the last stored record, or the queue's low watermark when that
// is higher (all records trimmed). The FSM keeps it in memory per queue,
// filled from the store the first time a queue is appended to, advanced by
// each applied batch, and forgotten (to be read again) when records of the
// queue are deleted or a snapshot is restored; so it is always the value
// the store gives, on every replica, whatever each one restarted.
//
// The engine's delay log is not a queue users read by offset: its slots
// leave holes when due messages move out of order, and an engine that opens
// on an empty log starts it at 0 again. Its appends must only not overlap
// what it holds: they start at or above its next slot and increase.

// errOffsetMismatch is returned (as the FSM's answer to the leader's
// write) when a batch's appends do not continue their queues: the entry
// was refused on every node, nothing of it is stored.
var errOffsetMismatch = errors.New("cluster: appended offsets do not continue their queue")

// delayLog is the engine's delay log (its topic IDs start at 1).
var delayLog = store.QueueID{}

// watermarkPrefix is the engine's metadata key of a queue's low
// watermark, followed by the topic and queue IDs (big-endian uint32 each).
var watermarkPrefix = []byte("wm/")

// offsets holds each queue's next offset as this replica's store has it.
type offsets struct {
	st   *store.Badger
	next map[store.QueueID]uint64
}

// watermarkKey is the engine's metadata key of q's low watermark.
func watermarkKey(q store.QueueID) []byte {
	k := binary.BigEndian.AppendUint32(append([]byte(nil), watermarkPrefix...), q.Topic)
	return binary.BigEndian.AppendUint32(k, q.Queue)
}

func newOffsets(st *store.Badger) *offsets {
	return &offsets{st: st, next: map[store.QueueID]uint64{}}
}

// reset forgets every queue (after a restore).
func (o *offsets) reset() { clear(o.next) }

// forget drops q, whose records were deleted: its next offset is read
// from the store again when needed.
func (o *offsets) forget(q store.QueueID) { delete(o.next, q) }

// load returns q's next offset, from memory or from the store.
func (o *offsets) load(q store.QueueID) (uint64, error) {
	if n, ok := o.next[q]; ok {
		return n, nil
	}
	_, next, ok, err := o.st.Bounds(q)
	if err != nil {
		return 0, err
	}
	if !ok {
		next = 0
	}
	if q != delayLog {
		v, err := o.st.GetMeta(watermarkKey(q))
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return 0, err
		case len(v) == 8:
			next = max(next, binary.BigEndian.Uint64(v))
		default:
			return 0, fmt.Errorf("cluster: watermark of %v: %d bytes", q, len(v))
		}
	}
	return next, nil
}

// check verifies b's appends against the queues' next offsets. pending,
// when not nil, holds the next offsets left by batches checked before b
// and not yet stored (the FSM writes several entries at once): it comes
// before memory and the store. check returns the next offsets b leaves
// (to pass to advance once b is stored), or an error matching
// errOffsetMismatch when b must be refused; any other error is a store
// failure.
func (o *offsets) check(b *store.Batch, pending map[store.QueueID]uint64) (map[store.QueueID]uint64, error) {
	if len(b.Entries) == 0 {
		return nil, nil
	}
	after := make(map[store.QueueID]uint64, 1)
	for i := range b.Entries {
		en := &b.Entries[i]
		want, seen := after[en.Queue]
		if !seen {
			want, seen = pending[en.Queue]
		}
		if !seen {
			n, err := o.load(en.Queue)
			if err != nil {
				return nil, fmt.Errorf("cluster: next offset of %v: %w", en.Queue, err)
			}
			want = n
		}
		switch {
		case en.Queue == delayLog && en.Offset >= want:
		case en.Offset != want:
			return nil, fmt.Errorf("%w: queue %d/%d expects offset %d, the entry appends at %d",
				errOffsetMismatch, en.Queue.Topic, en.Queue.Queue, want, en.Offset)
		}
		after[en.Queue] = en.Offset + 1
	}
	return after, nil
}

// advance records the next offsets of the stored batch b (after is what
// check returned). A watermark b writes may raise a queue's next offset:
// that queue is read from the store again when needed.
//
// b may be several checked batches written together (their entries and
// metadata in log order, after their merged results): the outcome is the
// same as advancing them one by one as long as no batch after one that
// writes a watermark appends to its queue, which the FSM ensures by
// writing a batch with a watermark last in its group.
func (o *offsets) advance(b *store.Batch, after map[store.QueueID]uint64) {
	for q, n := range after {
		o.next[q] = n
	}
	for i := range b.Meta {
		if q, ok := watermarkQueue(b.Meta[i].Key); ok {
			o.forget(q)
		}
	}
}

// watermarkQueue reports whether k is a queue's watermark key, and which.
func watermarkQueue(k []byte) (store.QueueID, bool) {
	if len(k) != len(watermarkPrefix)+8 || string(k[:len(watermarkPrefix)]) != string(watermarkPrefix) {
		return store.QueueID{}, false
	}
	return store.QueueID{Topic: binary.BigEndian.Uint32(k[len(watermarkPrefix):]), Queue: binary.BigEndian.Uint32(k[len(watermarkPrefix)+4:])}, true
}

// writesWatermark reports whether b writes (or deletes) a queue's watermark.
func writesWatermark(b *store.Batch) bool {
	for i := range b.Meta {
		if _, ok := watermarkQueue(b.Meta[i].Key); ok {
			return true
		}
	}
	return false
}

// refuse answers a batch entry (at index) that failed the offset check:
// nothing of it is stored, and the tenure it belongs to ends here, on every
// replica alike: the state, stored with the applied index, names no tenure,
// so the FSM ignores every later write of the tenure and the leader starts
// a new one. What it returns is the answer the leader's write gets.
func (f *fsm) refuse(index uint64, s fsmState, cause error) any {
	f.log.Warn("raft entry refused; the leader's tenure ends", "index", index, "tenure", s.tenure, "err", cause)
	next := s
	next.applied, next.tenure = index, 0
	if err := f.st.Write(&store.Batch{Meta: []store.MetaOp{{Key: stateKey, Value: next.encode()}}}); err != nil {
		return f.fail(fmt.Errorf("cluster: apply entry %d: %w", index, err))
	}
	f.setState(next)
	if f.onTenure != nil {
		f.onTenure(next)
	}
	return cause
}
