package equeue

import (
	"encoding/binary"
	"hash/maphash"
	"sync/atomic"
	"time"
)

// The in-memory copy of one topic's dedup window. A window holds every ID
// sent in it, so a topic with an hour's window at 10,000 messages a second
// holds 36 million: its copy must be small and hold no pointers (the
// collector would scan every one of them in each cycle). It keeps:
//
//   - a log of the entries in the order they were recorded (so about the
//     order of their times, which expiry walks from the oldest): each one's
//     time, queue, offset and ID bytes, packed into byte chunks that are
//     freed as expiry passes them;
//   - a map from a 64-bit hash of each ID to the position of its newest
//     entry in the log, the ID itself compared in the log, so that a hash
//     two IDs share never answers one for the other;
//   - for an ID whose hash another live ID holds, a map from the ID to its
//     position (empty unless two of the IDs in a window collide).
//
// About 60–90 bytes per ID plus the ID's length (dedupindex_test.go),
// against about 300 when each entry was a map entry with its own string.

// dedupChunkMin and dedupChunkMax bound the log's chunks: a topic with
// little traffic holds a small chunk, a busy one chunks of 1 MiB.
const (
	dedupChunkMin = 4 << 10
	dedupChunkMax = 1 << 20
)

// dedupFixed is an entry's bytes before its ID: time (unix nanoseconds),
// offset, queue.
const dedupFixed = 8 + 8 + 4

type dedupIndex struct {
	topic  uint32
	window time.Duration

	seed  maphash.Seed
	weak  bool              // tests: a hash that collides often (weakHash)
	slots map[uint64]uint64 // hash -> position of its entry
	more  map[string]uint64 // IDs whose hash another live ID holds
	live  int               // IDs in slots and more
	count *atomic.Int64     // the engine's count of IDs in every index (Stats.DedupIDs); nil in tests
	// deleted is the topic's deletion flag (nil in tests): the window of
	// a deleted topic is dropped whole (planExpiry).
	deleted *atomic.Bool
	peak    int // the most IDs live since the maps were last rebuilt

	// chunks[i] is chunk number first+i; a position is a chunk number in
	// the high 32 bits and an offset in it in the low 32.
	chunks    [][]byte
	first     uint64 // chunks[0]'s number
	nextChunk uint64 // the number the next chunk gets
	head      uint64 // position of the oldest entry expiry has not passed
	tail      uint64 // position the next entry is appended at

	// groups are the store's keys holding the log's entries (dedup_group.go),
	// oldest first: each holds the next n entries of the log from the first
	// entry of groups[0]. passed counts the entries of those groups that
	// expiry has walked past (all before head); a group's key is deleted
	// once all of its entries are passed.
	groups []dedupGroup
	passed int
}

// dedupGroup is one stored group of a log's entries.
type dedupGroup struct {
	seq uint64
	n   int
}

func newDedupIndex(topic uint32, window time.Duration) *dedupIndex {
	return &dedupIndex{topic: topic, window: window, seed: maphash.MakeSeed(), slots: map[uint64]uint64{}}
}

// hash returns id's hash: the process's own seed, so no stored or sent ID
// can be chosen to collide.
func (x *dedupIndex) hash(id string) uint64 {
	if x.weak {
		return weakHash(id)
	}
	return maphash.String(x.seed, id)
}

func (x *dedupIndex) hashBytes(id []byte) uint64 {
	if x.weak {
		return weakHash(id)
	}
	return maphash.Bytes(x.seed, id)
}

// weakHash collides for every two IDs of the same length and first byte
// (tests).
func weakHash[S string | []byte](id S) uint64 {
	if len(id) == 0 {
		return 0
	}
	return uint64(len(id))<<8 | uint64(id[0]&3)
}

// dedupPos is a log position: chunk number and offset in it.
func dedupPos(chunk uint64, off int) uint64 { return chunk<<32 | uint64(off) }

// norm returns pos, or when pos is the end of a chunk that a later chunk
// follows, that chunk's start: the same place in the log.
func (x *dedupIndex) norm(pos uint64) uint64 {
	for n := pos >> 32; n >= x.first && n+1 < x.first+uint64(len(x.chunks)); n++ {
		if int(pos&(1<<32-1)) < len(x.chunks[n-x.first]) {
			break
		}
		pos = dedupPos(n+1, 0)
	}
	return pos
}

// entry reads the entry at pos (an entry's position, not the tail) and
// the position after it.
func (x *dedupIndex) entry(pos uint64) (d dedupEntry, id []byte, next uint64) {
	pos = x.norm(pos)
	c, off := x.chunks[pos>>32-x.first], int(pos&(1<<32-1))
	b := c[off:]
	d.at = time.Unix(0, int64(binary.LittleEndian.Uint64(b)))
	d.offset = int64(binary.LittleEndian.Uint64(b[8:]))
	d.queue = int(binary.LittleEndian.Uint32(b[16:]))
	n, w := binary.Uvarint(b[dedupFixed:])
	start := dedupFixed + w
	id = b[start : start+int(n)]
	return d, id, x.norm(dedupPos(pos>>32, off+start+int(n)))
}

// appendEntry adds an entry at the log's tail and returns its position.
func (x *dedupIndex) appendEntry(id string, d dedupEntry) uint64 {
	need := dedupFixed + binary.MaxVarintLen64 + len(id)
	if n := len(x.chunks); n == 0 || cap(x.chunks[n-1])-len(x.chunks[n-1]) < need {
		size := dedupChunkMin
		if n > 0 {
			size = min(2*cap(x.chunks[n-1]), dedupChunkMax)
		} else {
			x.first = x.nextChunk
		}
		x.chunks = append(x.chunks, make([]byte, 0, max(size, need)))
		x.tail = dedupPos(x.nextChunk, 0)
		x.nextChunk++
		if n == 0 {
			x.head = x.tail
		}
	}
	last := &x.chunks[len(x.chunks)-1]
	pos := x.tail
	b := binary.LittleEndian.AppendUint64(*last, uint64(d.at.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(d.offset))
	b = binary.LittleEndian.AppendUint32(b, uint32(d.queue))
	b = binary.AppendUvarint(b, uint64(len(id)))
	b = append(b, id...)
	*last = b
	x.tail = dedupPos(pos>>32, len(b))
	return pos
}

// oldest returns the position of the oldest entry expiry has not passed;
// false when there is none.
func (x *dedupIndex) oldest() (uint64, bool) {
	if len(x.chunks) == 0 {
		return 0, false
	}
	pos := x.norm(x.head)
	return pos, pos != x.tail
}

// following returns the position after the entry at pos; false at the tail.
func (x *dedupIndex) following(pos uint64) (uint64, bool) {
	_, _, next := x.entry(pos)
	return next, next != x.tail
}

// get returns id's newest entry.
func (x *dedupIndex) get(id string) (dedupEntry, bool) {
	if pos, ok := x.find(id); ok {
		d, _, _ := x.entry(pos)
		return d, true
	}
	return dedupEntry{}, false
}

// find returns the position of id's newest entry.
func (x *dedupIndex) find(id string) (uint64, bool) {
	if len(x.more) > 0 {
		if pos, ok := x.more[id]; ok {
			return pos, true
		}
	}
	pos, ok := x.slots[x.hash(id)]
	if !ok {
		return 0, false
	}
	if _, got, _ := x.entry(pos); string(got) != id {
		return 0, false // another ID with the same hash
	}
	return pos, true
}

// add records d as id's newest entry.
func (x *dedupIndex) add(id string, d dedupEntry) {
	pos := x.appendEntry(id, d)
	if _, ok := x.more[id]; ok {
		x.more[id] = pos
		return
	}
	h := x.hash(id)
	old, ok := x.slots[h]
	if ok {
		if _, got, _ := x.entry(old); string(got) != id {
			if x.more == nil {
				x.more = map[string]uint64{}
			}
			x.more[id] = pos
			x.grow(1)
			return
		}
	} else {
		x.grow(1)
	}
	x.slots[h] = pos
}

// grow adds n (or removes -n) IDs to the index's count and the engine's.
func (x *dedupIndex) grow(n int) {
	x.live += n
	x.peak = max(x.peak, x.live)
	if x.count != nil {
		x.count.Add(int64(n))
	}
}

// current reports whether the entry at pos, of id, is still id's newest
// (not replaced by a later one, not removed).
func (x *dedupIndex) current(pos uint64, id []byte) bool {
	if len(x.more) > 0 {
		if p, ok := x.more[string(id)]; ok {
			return p == pos
		}
	}
	p, ok := x.slots[x.hashBytes(id)]
	return ok && p == pos
}

// remove forgets the entry at pos, of id, unless a later one replaced it.
func (x *dedupIndex) remove(pos uint64, id string) {
	if p, ok := x.more[id]; ok {
		if p == pos {
			delete(x.more, id)
			x.grow(-1)
		}
		return
	}
	h := x.hash(id)
	if p, ok := x.slots[h]; ok && p == pos {
		delete(x.slots, h)
		x.grow(-1)
	}
}

// advance moves the log's head to pos (an entry's position or the tail),
// freeing the chunks before it, and every chunk once the log is empty.
func (x *dedupIndex) advance(pos uint64) {
	pos = x.norm(pos)
	x.head = pos
	for len(x.chunks) > 0 && pos>>32 > x.first {
		x.chunks[0] = nil
		x.chunks = x.chunks[1:]
		x.first++
	}
	if pos == x.tail && x.live == 0 {
		x.chunks = nil // an idle topic keeps no chunk
	}
	if x.peak > dedupShrinkMin && x.live < x.peak/4 {
		x.shrink()
	}
}

// dedupShrinkMin is the size below which the maps are not rebuilt.
const dedupShrinkMin = 4096

// shrink rebuilds the maps for the IDs live now: Go's maps keep the room
// of the most entries they ever held, so after a burst expires its room
// would be held for good. A rebuild copies a quarter of the peak or less,
// once per three quarters of it expired.
func (x *dedupIndex) shrink() {
	slots := make(map[uint64]uint64, x.live)
	for h, pos := range x.slots {
		slots[h] = pos
	}
	x.slots = slots
	if len(x.more) > 0 {
		more := make(map[string]uint64, len(x.more))
		for id, pos := range x.more {
			more[id] = pos
		}
		x.more = more
	} else {
		x.more = nil
	}
	x.peak = x.live
}

// size returns the IDs the index holds.
func (x *dedupIndex) size() int { return x.live }

// ends returns, for each queue the log's entries name, one past the
// highest offset they hold there: offsets the window proves were given
// out (queueend.go). Entries of delayed messages hold none. It walks the
// log once, replaced and expired entries too: each was stored where it
// says.
func (x *dedupIndex) ends() map[int]int64 {
	ends := map[int]int64{}
	for pos, ok := x.oldest(); ok; {
		d, _, next := x.entry(pos)
		if d.offset >= 0 {
			ends[d.queue] = max(ends[d.queue], d.offset+1)
		}
		pos, ok = next, next != x.tail
	}
	return ends
}
