package equeue

import (
	"bytes"
	"slices"
	"time"
)

// An append that holds an ID more than once. The window keeps one entry
// per ID, its latest message's position, so the window vouches only for
// the last message of such an ID in an append of it (inRun): [x, x] fits
// an x sent alone at offset o as well as [x, x] stored at o-1 and o. The
// messages the window cannot vouch for are checked against the records
// themselves (repeatsStoredApart): [x, x] is a duplicate only when the
// record before x's is an x too.

// repeatsStoredApart returns the first of repeats, messages of an append
// of ids whose ID the append holds again later, that the records show
// was not stored where a duplicate of the append would put it, or -1. The
// append would start at base in the run of last, the entry of its last
// message: an offset of last's queue of t, or an index in last's delayed
// send, whose records wait in the delay log from the send's first slot
// (a negative base: before the run's start, so not stored as one append).
// A record this batch writes is read from the batch; one that is gone
// (retention deleted it, or a delayed one was moved to its queue), or
// not readable yet (a write still replicating), cannot be checked: the
// window's entries alone decide, as for an append without repeats.
func (e *Engine) repeatsStoredApart(b *batchState, t *topic, ids []string, last dedupEntry, base int64, repeats []int) int {
	if base < 0 {
		return 0
	}
	if len(repeats) == 0 {
		return -1
	}
	key, start := delayLogID, base
	if send, _, _ := entryPlace(last); last.offset >= 0 {
		q, err := t.queue(last.queue)
		if err != nil {
			return -1 // no such queue to read: the window's entries decide
		}
		key = q.key
	} else {
		// The slot's low bits (delayedOffset): past them, the record
		// read is another send's, sealed at another time, which checks
		// nothing (below).
		start += send
	}
	from, to := uint64(start)+uint64(repeats[0]), uint64(start)+uint64(repeats[len(repeats)-1])+1
	values := make(map[uint64][]byte, len(repeats))
	for _, en := range b.entries {
		if en.Queue == key && en.Offset >= from && en.Offset < to {
			values[en.Offset] = en.Value
		}
	}
	if len(values) < len(repeats) {
		// Stored by earlier writes. A read that fails checks nothing.
		recs, _ := e.st.Read(key, from, to, int(to-from), 0)
		for _, r := range recs {
			if _, ok := values[r.Offset]; !ok {
				values[r.Offset] = r.Value
			}
		}
	}
	for _, i := range repeats {
		v, ok := values[uint64(start)+uint64(i)]
		if !ok || (last.offset < 0 && !sealedAt(v, last.at)) {
			// Not there, or a delay-log slot given out again (the log
			// reopens at its end, at 0 once all was moved): another
			// send's record, which checks nothing.
			continue
		}
		if m, err := decodeRecord(v); err == nil && m.ID != ids[i] {
			return i
		}
	}
	return -1
}

// sealedAt reports whether rec is a record sealed at at, as the write
// that stored a send at at sealed each of its records.
func sealedAt(rec []byte, at time.Time) bool {
	again := slices.Clone(rec)
	sealRecord(again, at)
	return bytes.Equal(again, rec)
}
