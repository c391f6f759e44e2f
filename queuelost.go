package equeue

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/equeue-go/equeue/store"
)

// Lost ranges. Offsets between a queue's store end and the end Open raised
// it to hold no record (queueend.go), and neither do offsets a restart
// found in the middle of a queue once sends went on past them. A queue
// keeps the ranges of its offsets it knows to be lost, so that counts of
// stored messages (TopicLimits.MaxMessages, TopicInfo.Messages, a group's
// lag) leave them out, and a low watermark that reaches them passes them:
// nothing is stored there, and a watermark that stopped at their start
// would stay there, for no record in them ever comes due.
//
// Open stores the ranges of a queue whose end it raised (lostKey), before
// any send can go past them, and loads them again at every open: once
// sends went on past a range, the store's end no longer shows it. A stored
// range also proves its offsets were given out (raiseQueueEnds). A time
// search (offsetForTime) that reads past offsets with no record notes them
// too, in memory only: retention finds them again as it reads.
//
// Only counts (a rejecting MaxMessages's among them), trims and retention
// read the ranges; pulls and the rest of sends do not.

// maxLostRanges bounds the lost ranges a queue keeps. Each is the trace of
// one damage event (or one range a time search read over); more than a few
// between a queue's low watermark and its end is unlikely. Past the bound
// the earliest ranges are kept: retention and trims reach them first, and
// a later one left out is counted as stored only until a time search reads
// over it.
const maxLostRanges = 4

// keyLostPrefix is the prefix of the metadata keys of queues' lost ranges:
// one key per queue (lostKey), deleted with its topic.
var keyLostPrefix = []byte("lost/")

// lostKey is the metadata key of q's lost ranges.
func lostKey(q store.QueueID) []byte {
	k := slices.Clone(keyLostPrefix)
	k = binary.BigEndian.AppendUint32(k, q.Topic)
	return binary.BigEndian.AppendUint32(k, q.Queue)
}

// parseLostKey returns the queue lostKey made k for.
func parseLostKey(k []byte) (store.QueueID, bool) {
	p := len(keyLostPrefix)
	if len(k) != p+8 {
		return store.QueueID{}, false
	}
	return store.QueueID{Topic: binary.BigEndian.Uint32(k[p:]), Queue: binary.BigEndian.Uint32(k[p+4:])}, true
}

// lostRange is a range [from, to) of a queue's offsets known to hold no
// record.
type lostRange struct{ from, to int64 }

// in returns how many offsets of [lo, hi) r covers.
func (r lostRange) in(lo, hi int64) int64 {
	return max(min(r.to, hi)-max(r.from, lo), 0)
}

// lostRanges are a queue's lost ranges in offset order, none empty and no
// two touching, at most maxLostRanges. A list is never changed once made
// (with makes a new one), so a copy read under the queue's lock stays
// valid after it. The zero value is empty.
type lostRanges []lostRange

// in returns how many offsets of [lo, hi) l covers.
func (l lostRanges) in(lo, hi int64) int64 {
	var n int64
	for _, r := range l {
		n += r.in(lo, hi)
	}
	return n
}

// held returns how many offsets of [lo, hi) hold records as far as l
// tells: the messages a queue with those bounds stores.
func (l lostRanges) held(lo, hi int64) int64 {
	return max(hi-lo-l.in(lo, hi), 0)
}

// past returns off, or the end of the range of l that off falls in.
func (l lostRanges) past(off int64) int64 {
	for _, r := range l {
		if off >= r.from && off < r.to {
			return r.to
		}
	}
	return off
}

// skip returns the low watermark that cutting n held offsets from off
// leaves: past every range of l the cut reaches.
func (l lostRanges) skip(off, n int64) int64 {
	o := l.past(off)
	for _, r := range l {
		if r.to <= o {
			continue
		}
		if o+n < r.from {
			break
		}
		// o is below r: past moved it out of any range, and ranges do not
		// touch.
		n -= r.from - o
		o = r.to
	}
	return o + n
}

// nextStart returns the start of the first range of l above off, or the
// largest offset when there is none.
func (l lostRanges) nextStart(off int64) int64 {
	for _, r := range l {
		if r.from > off {
			return r.from
		}
	}
	return math.MaxInt64
}

// covers reports whether one range of l holds all of [from, to).
func (l lostRanges) covers(from, to int64) bool {
	for _, r := range l {
		if r.from <= from && to <= r.to {
			return true
		}
	}
	return false
}

// with returns a new list of l's ranges and [from, to), less what lies
// below low (a low watermark: offsets there may be gone to retention),
// merged where they touch and cut to the earliest maxLostRanges.
func (l lostRanges) with(from, to, low int64) lostRanges {
	all := append(make(lostRanges, 0, len(l)+1), l...)
	all = append(all, lostRange{from, to})
	kept := all[:0]
	for _, r := range all {
		if r.from = max(r.from, low); r.from < r.to {
			kept = append(kept, r)
		}
	}
	slices.SortFunc(kept, func(a, b lostRange) int { return cmp.Compare(a.from, b.from) })
	out := kept[:0]
	for _, r := range kept {
		if n := len(out); n > 0 && r.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, r.to)
			continue
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil
	}
	return out[:min(len(out), maxLostRanges)]
}

// end returns the end of l's last range, 0 for none.
func (l lostRanges) end() int64 {
	if len(l) == 0 {
		return 0
	}
	return l[len(l)-1].to
}

// encode returns l as lostKey's value: each range's from and to, big
// endian.
func (l lostRanges) encode() []byte {
	b := make([]byte, 0, 16*len(l))
	for _, r := range l {
		b = binary.BigEndian.AppendUint64(b, uint64(r.from))
		b = binary.BigEndian.AppendUint64(b, uint64(r.to))
	}
	return b
}

// decodeLostRanges returns the ranges encode wrote as v, normalized with
// low; ok is false when v is not of encode's form.
func decodeLostRanges(v []byte, low int64) (l lostRanges, ok bool) {
	if len(v)%16 != 0 || len(v) > 16*maxLostRanges {
		return nil, false
	}
	for ; len(v) > 0; v = v[16:] {
		from, to := int64(binary.BigEndian.Uint64(v)), int64(binary.BigEndian.Uint64(v[8:]))
		if from < 0 || to <= from {
			return nil, false
		}
		l = l.with(from, to, low)
	}
	return l, true
}

// extent returns q's low watermark and next offset with the ranges of
// offsets known to hold no record.
func (q *queue) extent() (min, next int64, lost lostRanges) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.min, q.next, q.lost
}

// noteLost notes that q stores no record in [from, to). Only offsets at or
// above the low watermark count: those below may be gone to retention.
// Ranges the watermark has passed make room for it.
func (q *queue) noteLost(from, to int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if from = max(from, q.min); from >= to || q.lost.covers(from, to) {
		return
	}
	q.lost = q.lost.with(from, to, q.min)
}

// loadLost loads the lost ranges stored for each queue, after loadTopics
// set the queues' bounds. A key the low watermark has passed, or of no
// live queue, or that cannot be read, is deleted (a range it held is then
// counted as stored, as before ranges were kept); one partly passed is
// stored again without what was passed. Open calls it before the writer
// starts.
func (e *Engine) loadLost() error {
	var ops []store.MetaOp
	err := e.st.ScanMeta(keyLostPrefix, func(k, v []byte) error {
		var q *queue
		if id, ok := parseLostKey(k); ok {
			if t := e.topicIDs[id.Topic]; t != nil {
				q, _ = t.queue(int(id.Queue))
			}
		}
		if q == nil {
			ops = append(ops, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		l, ok := decodeLostRanges(v, q.min)
		if !ok {
			e.log.Warn("lost offsets of a queue unreadable: they are counted as stored", "topic", q.topic.name, "queue", q.id)
		}
		switch {
		case len(l) == 0:
			ops = append(ops, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		case !slices.Equal(l.encode(), v):
			ops = append(ops, store.MetaOp{Key: slices.Clone(k), Value: l.encode()})
		}
		q.lost, q.lostStored = l, true
		return nil
	})
	if err != nil {
		return err
	}
	if err := e.writeMetaAtOpen(ops); err != nil {
		// Stale keys are harmless: the next open tries again.
		e.log.Warn("deleting lost ranges the watermark passed; the next open tries again", "keys", len(ops), "err", err)
	}
	return nil
}

// storeLost stores the lost ranges of qs, whose ends Open raised, and
// makes them durable: the writer has not started, so no send has gone
// past them yet. A failure is logged: the ranges stay known until Close,
// and an open that finds no send past them raises the ends again. A
// failed fsync also stops every later write, as any failed fsync of the
// engine does (storefailure.go): no later one would vouch for them.
func (e *Engine) storeLost(qs []*queue) {
	if len(qs) == 0 {
		return
	}
	ops := make([]store.MetaOp, 0, len(qs))
	for _, q := range qs {
		q.mu.Lock()
		ops = append(ops, store.MetaOp{Key: lostKey(q.key), Value: q.lost.encode()})
		q.lostStored = true // maybe stored: the topic's deletion deletes it
		q.mu.Unlock()
	}
	err := e.writeMetaAtOpen(ops)
	if err == nil {
		err = e.syncStore()
	}
	if err != nil {
		e.log.Warn("storing the lost offsets of queues: once sends pass them, a later open counts them as stored", "queues", len(qs), "err", err)
	}
}

// lostDeletes returns the deletes of the lost-range keys of t's queues
// that may have one.
func lostDeletes(t *topic) []store.MetaOp {
	var ops []store.MetaOp
	for _, q := range t.queueList() {
		q.mu.Lock()
		if q.lostStored {
			ops = append(ops, store.MetaOp{Key: lostKey(q.key), Delete: true})
		}
		q.mu.Unlock()
	}
	return ops
}
