package equeue

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Dedup entries in the store. The entries one store write records for one
// topic are kept under a few metadata keys, groups, each holding a run of
// them:
//
//	ug/ | topic id (4, BE) | sequence (8, BE)  ->  version (1 or 2) | base time, unix nanos (8, BE) | entries
//	entry: uvarint ID length | ID | uvarint queue | zigzag varint offset | zigzag varint (time - base)
//
// The sequence counts the groups the engine ever wrote, so a topic's groups
// are in the store in the order they were written and a reopened window
// holds its entries in the order it held them before (the newest entry of
// an ID recorded twice is the later one). Expiry deletes a group once it
// has walked past every entry in it (planExpiry). A write of a thousand
// 36-byte IDs thus adds 42 keys to the store, not a thousand: a key
// per ID made a window's sends several times slower than sends without
// one, nearly all of it Badger writing and compacting those keys.
//
// A group stays below the store's value threshold (store.Limits), as
// record segments do: a longer value would go to Badger's value log, a
// second file for every Sync to flush. A write with more IDs than one
// group holds writes several groups for the topic, in order. Only an ID
// long enough to reach the threshold alone (about 1,000 bytes by default)
// makes a group of its own there; one whose bytes a machine crash lost is
// forgotten at the next Open (loadDedup).
//
// Stores written before groups hold one key per ID (dedup.go's legacy
// format); Open moves those into groups (migrateDedup).

var keyDedupGroupPrefix = []byte("ug/")

// The first byte of a group's value is its version: 1, or 2 for a group
// holding the place of a delayed message in its send (an offset below -1,
// dedup_delayplace.go), which version 1 has not. A group without one is
// written as version 1, which engines before places read.
const (
	dedupGroupVersion1 = 1
	dedupGroupVersion  = 2
)

const (
	dedupGroupKeyLen = 3 + 4 + 8 // prefix, topic id, sequence
	dedupGroupHeader = 1 + 8     // version, base time
	// dedupEntryMax bounds an entry's bytes besides its ID, as a write
	// records it: the ID's length, queue and offset as varints, and the
	// time from the group's base, which is 0, in one byte.
	dedupEntryMax = binary.MaxVarintLen32 + binary.MaxVarintLen32 + binary.MaxVarintLen64 + 1
)

func dedupGroupKey(topicID uint32, seq uint64) []byte {
	k := make([]byte, 0, dedupGroupKeyLen)
	k = append(k, keyDedupGroupPrefix...)
	k = binary.BigEndian.AppendUint32(k, topicID)
	return binary.BigEndian.AppendUint64(k, seq)
}

// parseDedupGroupKey returns a group key's topic id and sequence.
func parseDedupGroupKey(k []byte) (topicID uint32, seq uint64, err error) {
	if len(k) != dedupGroupKeyLen {
		return 0, 0, fmt.Errorf("%w: dedup group key %q", ErrCorrupt, k)
	}
	p := len(keyDedupGroupPrefix)
	return binary.BigEndian.Uint32(k[p:]), binary.BigEndian.Uint64(k[p+4:]), nil
}

// newDedupGroupValue starts a group's value with base time base.
func newDedupGroupValue(base time.Time, room int) []byte {
	v := make([]byte, 0, dedupGroupHeader+room)
	v = append(v, dedupGroupVersion1)
	return binary.BigEndian.AppendUint64(v, uint64(base.UnixNano()))
}

// appendDedupGroupEntry adds one entry to a group's value started with
// base time base.
func appendDedupGroupEntry[S string | []byte](v []byte, base int64, id S, d dedupEntry) []byte {
	v = binary.AppendUvarint(v, uint64(len(id)))
	v = append(v, id...)
	v = binary.AppendUvarint(v, uint64(d.queue))
	v = binary.AppendVarint(v, d.offset)
	return binary.AppendVarint(v, d.at.UnixNano()-base)
}

// decodeDedupGroup calls fn for each entry of a group's value, in order,
// and returns how many there were. id is valid only during the call. A
// damaged value is refused with ErrCorrupt; one of a version this code does
// not know with ErrUnsupportedFormat too, naming the version.
func decodeDedupGroup(v []byte, fn func(id []byte, d dedupEntry)) (int, error) {
	if len(v) < dedupGroupHeader {
		return 0, fmt.Errorf("%w: dedup group of %d bytes", ErrCorrupt, len(v))
	}
	switch {
	case v[0] == 0: // no version is 0: bytes lost as zeros
		return 0, fmt.Errorf("%w: dedup group of version 0", ErrCorrupt)
	case v[0] != dedupGroupVersion1 && v[0] != dedupGroupVersion:
		return 0, fmt.Errorf("%w: %w: dedup group of format version %d; this version of equeue reads versions %d and %d",
			ErrCorrupt, ErrUnsupportedFormat, v[0], dedupGroupVersion1, dedupGroupVersion)
	}
	base := int64(binary.BigEndian.Uint64(v[1:]))
	b := v[dedupGroupHeader:]
	n := 0
	for len(b) > 0 {
		idLen, w := binary.Uvarint(b)
		if w <= 0 || idLen > uint64(len(b)-w) {
			return n, fmt.Errorf("%w: dedup group entry %d: ID length", ErrCorrupt, n)
		}
		b = b[w:]
		id := b[:idLen]
		b = b[idLen:]
		queue, w := binary.Uvarint(b)
		if w <= 0 || queue > 1<<31-1 {
			return n, fmt.Errorf("%w: dedup group entry %d: queue", ErrCorrupt, n)
		}
		b = b[w:]
		offset, w := binary.Varint(b)
		if w <= 0 || (offset < -1 && v[0] == dedupGroupVersion1) {
			return n, fmt.Errorf("%w: dedup group entry %d: offset", ErrCorrupt, n)
		}
		b = b[w:]
		delta, w := binary.Varint(b)
		if w <= 0 {
			return n, fmt.Errorf("%w: dedup group entry %d: time", ErrCorrupt, n)
		}
		b = b[w:]
		fn(id, dedupEntry{queue: int(queue), offset: offset, at: time.Unix(0, base+delta)})
		n++
	}
	return n, nil
}

// dedupGroupBuild is a group a batch writes: the entries it records for
// one topic.
type dedupGroupBuild struct {
	idx  *dedupIndex
	meta int // its put in the batch's meta
	n    int
}

// groupFor returns b's last group for idx's topic, or a new one (newGroup).
func (e *Engine) groupFor(b *batchState, idx *dedupIndex, ids []string) *dedupGroupBuild {
	for i := len(b.groups) - 1; i >= 0; i-- {
		if b.groups[i].idx == idx {
			return &b.groups[i]
		}
	}
	return e.newGroup(b, idx, ids)
}

// newGroup adds a group for idx's topic to b, with its put: its sequence
// is the next one after the groups written before and the ones b added
// already. Its value has room for ids, up to the store's value threshold.
func (e *Engine) newGroup(b *batchState, idx *dedupIndex, ids []string) *dedupGroupBuild {
	room := 0
	for _, id := range ids {
		if id == "" {
			continue // not recorded (dedupIDsOf)
		}
		room += len(id) + 8 // most entries: lengths, queue and time in a byte each, the offset in five
	}
	if l := dedupGroupLimit(e.limits); l > 0 {
		room = min(room, l)
	}
	seq := e.dedupSeq + uint64(len(b.groups))
	b.meta = append(b.meta, store.MetaOp{Key: dedupGroupKey(idx.topic, seq), Value: newDedupGroupValue(b.now, room)})
	b.groups = append(b.groups, dedupGroupBuild{idx: idx, meta: len(b.meta) - 1})
	return &b.groups[len(b.groups)-1]
}

// dedupGroupLimit is the length a group's value stays below: the store's
// value threshold or, where the store keeps every value inline (Badger in
// memory), the largest value it takes; 0 for none.
func dedupGroupLimit(l store.Limits) int {
	if l.ValueThreshold > 0 {
		return l.ValueThreshold
	}
	return l.MaxValueSize
}

// dedupCost bounds the store cost of recording ids in groups kept below
// limit (dedupGroupLimit; 0: none): their entries at their longest (S
// bytes, the longest one E), and the groups they start. Each group holds
// at least one entry, so there are at most as many as the IDs ("", a
// message whose ID the engine generated, records none). A group closes only
// when its next entry would bring it to the limit L, so each group the IDs
// start after the first follows one of theirs that holds more than
// L - header - E bytes, and that, with the entry starting the next one,
// holds at least L - header: counting each entry at most twice the second
// way, they start at most 1 + 2S/(L - header) groups.
func dedupCost(ids []string, limit int) (ops, bytes int) {
	s, longest, n := 0, 0, 0
	for _, id := range ids {
		if id == "" {
			continue // not recorded (dedupIDsOf)
		}
		n++
		s += len(id) + dedupEntryMax
		longest = max(longest, len(id)+dedupEntryMax)
	}
	ops = n
	if room := limit - dedupGroupHeader; limit > 0 && room > 0 {
		ops = min(ops, 1+2*s/room)
		if room > longest {
			ops = min(ops, 1+s/(room-longest))
		}
	} else {
		ops = min(ops, 1)
	}
	return ops, s + ops*(dedupGroupKeyLen+dedupGroupHeader)
}

// commitGroups makes memory follow b's groups once b's write returned:
// each index learns its new group, and the sequence moves past them.
func (e *Engine) commitGroups(b *batchState) {
	for i, g := range b.groups {
		g.idx.groups = append(g.idx.groups, dedupGroup{seq: e.dedupSeq + uint64(i), n: g.n})
	}
	e.dedupSeq += uint64(len(b.groups))
}
