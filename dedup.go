package equeue

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Deduplication. For a topic with a dedup window, the writer remembers
// producer-supplied message IDs with where they were stored: in memory
// (dedup_index.go) and in the store, in groups of the entries one write
// records for one topic (dedup_group.go). A group is written in the same
// store write as its messages, so after a crash the index and the queues
// agree. A delayed send is checked and recorded against its destination
// topic when it is sent (it has no offset until it is moved: its entry
// holds its place in its send instead, dedup_delayplace.go), so a delayed
// duplicate is answered as a duplicate at once. The writer
// owns the in-memory copy and changes it only after the write that
// carries the change returned.
//
// Before groups, each ID had a key of its own (the legacy format, read
// only to move it into groups at Open):
//
//	u/ | topic id (4, BE) | message id  ->  queue (4) | offset (8) | stored-at unix nanos (8)

var keyDedupPrefix = []byte("u/")

// dedupValueLen is the length of a legacy entry's value.
const dedupValueLen = 20

// dedupExpireMax bounds the entries one batch's expiry walks past, so a
// window expiring millions of IDs at once does not hold the writer (a
// few hundred microseconds per batch; a variable for tests).
var dedupExpireMax = 4096

type dedupEntry struct {
	queue int
	// offset is the message's offset; below 0 while it waits in the
	// delay log: its place in its delayed send, or -1 for none
	// (dedup_delayplace.go).
	offset int64
	at     time.Time
}

// dedupMetaKey and dedupValue are a legacy entry's key and value.
func dedupMetaKey[S string | []byte](topicID uint32, id S) []byte {
	k := make([]byte, 0, len(keyDedupPrefix)+4+len(id))
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

// loadDedup restores the dedup indexes of topics that have a window, from
// their groups in the order they were written, then moves entries of the
// legacy format into groups. Expired entries are loaded too: the writer
// deletes them. Groups of topics that are gone or have no window are
// deleted here, in writes within the store's limits.
func (e *Engine) loadDedup() error {
	e.dedup = map[uint32]*dedupIndex{}
	e.dedupSeq = 0
	var stale []store.MetaOp
	err := e.scanMetaDamaged(keyDedupGroupPrefix, func(k, v []byte, damaged error) error {
		tid, seq, err := parseDedupGroupKey(k)
		if err != nil {
			return err
		}
		e.dedupSeq = max(e.dedupSeq, seq+1)
		t := e.topicByID(tid)
		if t == nil || t.dedup <= 0 {
			stale = append(stale, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		n := 0
		if damaged == nil {
			n, damaged = decodeDedupGroup(v, func([]byte, dedupEntry) {}) // all or nothing
		}
		switch {
		case errors.Is(damaged, ErrUnsupportedFormat):
			// Written by a later version: forgetting its IDs would store
			// their messages again, so the engine does not open.
			return fmt.Errorf("topic %q, group %d: %w", t.name, seq, damaged)
		case damaged != nil:
			// Its bytes are lost (a machine crash cut Badger's value log,
			// where a group holding one long ID is kept) or damaged: its
			// IDs are forgotten, as the records lost with them are
			// reported corrupt, and the engine opens.
			e.log.Error("dedup group lost: its message IDs are no longer deduplicated",
				"topic", t.name, "group", seq, "err", damaged)
			e.stats.dedupLost.Add(1)
			stale = append(stale, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		case n == 0:
			stale = append(stale, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		x := e.dedupFor(t)
		_, _ = decodeDedupGroup(v, func(id []byte, d dedupEntry) { x.add(string(id), d) })
		x.groups = append(x.groups, dedupGroup{seq: seq, n: n})
		return nil
	})
	if err != nil {
		return err
	}
	e.deleteStale(stale)
	return e.migrateDedup()
}

// scanMetaDamaged scans the store's metadata going on past values it
// cannot read back, where the store can (store.DamagedMetaScanner).
func (e *Engine) scanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	if ds, ok := e.st.(store.DamagedMetaScanner); ok {
		return ds.ScanMetaDamaged(prefix, fn)
	}
	return e.st.ScanMeta(prefix, func(k, v []byte) error { return fn(k, v, nil) })
}

// writeMetaAtOpen writes ops in writes within the store's limits, straight
// to the store: Open calls it before the writer starts.
func (e *Engine) writeMetaAtOpen(ops []store.MetaOp) error {
	maxOps, maxBytes := e.batchLimits()
	for len(ops) > 0 {
		n, size := 0, 0
		for n < len(ops) && n < maxOps && size+len(ops[n].Key)+len(ops[n].Value) <= maxBytes {
			size += len(ops[n].Key) + len(ops[n].Value)
			n++
		}
		if err := e.st.Write(&store.Batch{Meta: ops[:max(n, 1)]}); err != nil {
			return err
		}
		ops = ops[max(n, 1):]
	}
	return nil
}

// migrateDedup moves the entries of the legacy format into groups: each
// write deletes some entries' keys and puts a group holding them, so a
// crash in between leaves every entry in one format or the other. The
// entries of a topic go in the order of their times (the store hands them
// over in ID order; expiry walks from the oldest) and after the groups
// already there. Entries of topics that are gone or have no window are
// deleted; so are entries the store cannot read back or that are garbled,
// counted in Stats().CorruptRecords (their IDs are no longer
// deduplicated).
func (e *Engine) migrateDedup() error {
	type loaded struct {
		topic   uint32
		d       dedupEntry
		idStart int
		idEnd   int
	}
	var (
		recs  []loaded
		ids   []byte
		stale []store.MetaOp
	)
	err := e.scanMetaDamaged(keyDedupPrefix, func(k, v []byte, damaged error) error {
		if len(k) >= len(keyDedupPrefix)+4 {
			tid := binary.BigEndian.Uint32(k[len(keyDedupPrefix):])
			if t := e.topicByID(tid); t == nil || t.dedup <= 0 {
				stale = append(stale, store.MetaOp{Key: slices.Clone(k), Delete: true})
				return nil
			}
		}
		if damaged == nil && (len(k) < len(keyDedupPrefix)+4 || len(v) != dedupValueLen) {
			damaged = fmt.Errorf("%w: dedup entry %q", ErrCorrupt, k)
		}
		if damaged == nil {
			// A queue or offset no engine wrote, which a group would not
			// take (decodeDedupGroup): garbled as much as a wrong length.
			if queue, offset := binary.BigEndian.Uint32(v), int64(binary.BigEndian.Uint64(v[4:])); queue > 1<<31-1 || offset < -1 {
				damaged = fmt.Errorf("%w: dedup entry %q: queue %d, offset %d", ErrCorrupt, k, queue, offset)
			}
		}
		if damaged != nil {
			// Lost: its ID is no longer deduplicated (a resend within the
			// window may be stored again), which refusing every Open
			// would not mend. Counted, logged and deleted.
			e.stats.corrupt.Add(1)
			e.log.Error("dedup entry lost: its message ID is no longer deduplicated", "key", fmt.Sprintf("%q", k), "err", damaged)
			stale = append(stale, store.MetaOp{Key: slices.Clone(k), Delete: true})
			return nil
		}
		tid := binary.BigEndian.Uint32(k[len(keyDedupPrefix):])
		queue, offset := binary.BigEndian.Uint32(v), int64(binary.BigEndian.Uint64(v[4:]))
		d := dedupEntry{queue: int(queue), offset: offset, at: time.Unix(0, int64(binary.BigEndian.Uint64(v[12:])))}
		start := len(ids)
		ids = append(ids, k[len(keyDedupPrefix)+4:]...)
		recs = append(recs, loaded{topic: tid, d: d, idStart: start, idEnd: len(ids)})
		return nil
	})
	if err != nil {
		return err
	}
	e.deleteStale(stale)
	slices.SortStableFunc(recs, func(a, b loaded) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), a.d.at.Compare(b.d.at))
	})
	maxOps, maxBytes := e.batchLimits()
	limit := dedupGroupLimit(e.limits)
	for len(recs) > 0 {
		tid, base := recs[0].topic, recs[0].d.at
		baseNanos := base.UnixNano()
		value := newDedupGroupValue(base, 0)
		ops := []store.MetaOp{{Key: dedupGroupKey(tid, e.dedupSeq)}}
		size := dedupGroupKeyLen + len(value)
		n := 0
		for n < len(recs) && recs[n].topic == tid {
			r := recs[n]
			id := ids[r.idStart:r.idEnd]
			cost := 2*(len(keyDedupPrefix)+4+len(id)) + dedupEntryMax
			if n > 0 && (len(ops)+1 > maxOps || size+cost > maxBytes) {
				break
			}
			before := len(value)
			value = appendDedupGroupEntry(value, baseNanos, id, r.d)
			if n > 0 && limit > dedupGroupHeader && len(value) >= limit {
				value = value[:before] // below the value threshold, as dedupRecord keeps groups
				break
			}
			ops = append(ops, store.MetaOp{Key: dedupMetaKey(tid, id), Delete: true})
			size += cost
			n++
		}
		ops[0].Value = value
		seq := e.dedupSeq
		if err := e.st.Write(&store.Batch{Meta: ops}); err != nil {
			// A read-only store, or one that refuses writes now: the
			// entries stay in the former format, and in memory as groups
			// with no key of their own; the next Open moves them.
			e.log.Warn("dedup: could not move entries of the former format into groups; the next open tries again", "err", err)
			n, seq = len(recs), dedupNoKey
		}
		for start := 0; start < n; { // one topic's run of entries at a time
			end := start
			for end < n && recs[end].topic == recs[start].topic {
				end++
			}
			x := e.dedupFor(e.topicByID(recs[start].topic))
			for _, r := range recs[start:end] {
				x.add(string(ids[r.idStart:r.idEnd]), r.d)
			}
			x.groups = append(x.groups, dedupGroup{seq: seq, n: end - start})
			start = end
		}
		if seq != dedupNoKey {
			e.dedupSeq++
		}
		recs = recs[n:]
	}
	return nil
}

// dedupNoKey is the sequence of a group with no key in the store: entries
// of the former format that Open could not move (a read-only store).
// Expiry forgets such a group without a write.
const dedupNoKey = ^uint64(0)

// deleteStale deletes entries of topics that are gone, or lost, at Open. A
// store that refuses (a read-only one) keeps them: they are harmless, and
// the next Open tries again.
func (e *Engine) deleteStale(ops []store.MetaOp) {
	if err := e.writeMetaAtOpen(ops); err != nil {
		e.log.Warn("dedup: could not delete stale entries; the next open tries again", "entries", len(ops), "err", err)
	}
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
// the same batch first (inBatch), then the index.
func (e *Engine) dedupLookup(b *batchState, t *topic, id string) (d dedupEntry, inBatch, ok bool) {
	if d, ok := b.pending[dedupRef{t.id, id}]; ok {
		return d, true, true
	}
	idx := e.dedup[t.id]
	if idx == nil {
		return dedupEntry{}, false, false
	}
	d, ok = idx.get(id)
	if !ok || b.now.Sub(d.at) > idx.window {
		return dedupEntry{}, false, false
	}
	return d, false, true
}

// dedupCheck reports whether c is a duplicate: whether its topic's window
// holds every message's ID where c would have put it, as one earlier
// append stored them (in one queue, at consecutive offsets in c's order;
// delayed, at consecutive places of one delayed send, or for entries
// without a place in one queue at one time: dedup_delayplace.go). It
// then fills c with the original position. An append whose IDs the
// window holds in part, or all but stored apart, is refused with
// ErrPartialDuplicate: storing it would store the IDs held again, and no
// one position answers for them. An append with a message whose ID the
// engine generated is neither.
func (e *Engine) dedupCheck(b *batchState, c *command) (bool, error) {
	t := c.dedupTopic()
	if t.dedup <= 0 || len(c.dedupIDs) == 0 || c.dedupBypass {
		return false, nil
	}
	ids := c.dedupIDs
	if slices.Contains(ids, "") {
		// A message whose ID the engine generated: its append is never a
		// duplicate, a retry of it could not be recognised (dedupIDsOf).
		return false, nil
	}
	n := len(ids)
	// The last message's entry is its own in an append stored as c (an ID
	// c holds twice has its later message's): it gives where c starts.
	last, lastPending, lastHeld := e.dedupFind(b, t, ids[n-1])
	// Where c starts: an offset of last's queue, or an index in last's
	// delayed send (dedup_delayplace.go); none for a delayed entry
	// without a place.
	_, lastPos, placed := entryPlace(last)
	base := lastPos - int64(n-1)
	held, inBatch := 0, false
	first, odd := -1, -1 // the first message held, and the first held out of place
	var repeats []int    // messages whose ID the append holds again later (repeatsStoredApart)
	for i, id := range ids {
		d, pending, ok := last, lastPending, lastHeld
		if i < n-1 {
			d, pending, ok = e.dedupFind(b, t, id)
		}
		if !ok {
			continue
		}
		if held++; first < 0 {
			first = i
		}
		inBatch = inBatch || pending
		if odd < 0 && (!lastHeld || !inRun(ids, i, d, last, base)) {
			odd = i
		}
		if _, pos, _ := entryPlace(d); placed && pos != base+int64(i) {
			repeats = append(repeats, i)
		}
	}
	if odd < 0 && held == n && placed {
		odd = e.repeatsStoredApart(b, t, ids, last, base, repeats)
	}
	switch {
	case held == 0:
		return false, nil
	case held < n:
		return false, fmt.Errorf("%w: %q's window holds %d of the append's %d message IDs, %q among them",
			ErrPartialDuplicate, t.name, held, n, ids[first])
	case odd >= 0:
		return false, fmt.Errorf("%w: %q's window holds the append's message IDs, but not as one append stored them (%q)",
			ErrPartialDuplicate, t.name, ids[odd])
	}
	c.duplicate, c.dupInBatch = true, inBatch
	c.dupQueue, c.first, c.storedAt = last.queue, base, last.at
	if last.offset < 0 {
		c.first = -1 // delayed: answered as its send was
	}
	return true, nil
}

// dedupFind is dedupLookup of the ID of one message of an append: none
// for an ID too long to be recorded (dedupRecord).
func (e *Engine) dedupFind(b *batchState, t *topic, id string) (d dedupEntry, inBatch, ok bool) {
	if len(id) > MaxIDBytes {
		return dedupEntry{}, false, false
	}
	return e.dedupLookup(b, t, id)
}

// inRun reports whether d, the entry of ids[i], is where an append of ids
// stored message i, given the entry of its last message and where the
// append starts (base: an offset, or an index in a delayed send).
func inRun(ids []string, i int, d, last dedupEntry, base int64) bool {
	if d.queue != last.queue {
		return false
	}
	lastSend, _, placed := entryPlace(last)
	send, pos, ok := entryPlace(d)
	switch {
	case !placed:
		// Delayed, without a place: its queue and time alone decide.
		return d.offset < 0 && d.at.Equal(last.at)
	case !ok || send != lastSend || (last.offset < 0 && !d.at.Equal(last.at)):
		return false
	}
	want := base + int64(i)
	if pos != want {
		// An ID that the append holds again later has that message's entry.
		for j := len(ids) - 1; j > i; j-- {
			if ids[j] == ids[i] {
				want = base + int64(j)
				break
			}
		}
	}
	return pos == want
}

// dedupRecord adds c's IDs to b: to its group for c's topic now, to the
// index when b's write returned. first is where c's first message went:
// its offset, or for a delayed send its delay-log slot.
func (e *Engine) dedupRecord(b *batchState, c *command, queue int, first int64) {
	t := c.dedupTopic()
	if t.dedup <= 0 || len(c.dedupIDs) == 0 {
		return
	}
	idx := e.dedupFor(t)
	if b.pending == nil { // apply sizes it for the batch
		b.pending = make(map[dedupRef]dedupEntry, len(c.dedupIDs))
	}
	var g *dedupGroupBuild
	base := b.now.UnixNano()
	limit := dedupGroupLimit(e.limits)
	for i, id := range c.dedupIDs {
		if id == "" {
			continue // the engine generated the message's ID (dedupIDsOf)
		}
		if len(id) > MaxIDBytes {
			// Only a stored message sent again (a send-back or a redrive
			// of one stored before IDs had a limit) can carry one: new
			// sends are refused (validateMessage). It is not
			// deduplicated.
			continue
		}
		d := dedupEntry{queue: queue, offset: -1, at: b.now}
		switch {
		case c.kind == cmdDelay:
			d.offset = delayedOffset(first, i) // first is its delay-log slot
		case first >= 0:
			d.offset = first + int64(i)
		}
		b.pending[dedupRef{t.id, id}] = d
		b.dedup = append(b.dedup, dedupPut{idx: idx, id: id, d: d})
		if g == nil {
			g = e.groupFor(b, idx, c.dedupIDs[i:])
		}
		m := &b.meta[g.meta]
		before := len(m.Value)
		m.Value = appendDedupGroupEntry(m.Value, base, id, d)
		if limit > dedupGroupHeader && len(m.Value) >= limit && g.n > 0 {
			// The group would reach the store's value threshold (and go
			// to Badger's value log, a second file for every Sync): the
			// entry starts a new one.
			entry := m.Value[before:]
			m.Value = m.Value[:before]
			g = e.newGroup(b, idx, c.dedupIDs[i:])
			m = &b.meta[g.meta]
			m.Value = append(m.Value, entry...)
		}
		if d.offset < -1 {
			m.Value[0] = dedupGroupVersion // a delayed message's place
		}
		g.n++
	}
}

// planExpiry adds to b the expiry of index entries past their window:
// walking at most dedupExpireMax entries, topics in id order, and deleting
// the groups whose entries were all walked past, at most ops operations
// and bytes bytes of them. Entries of IDs this batch records again are
// passed but not removed (their new entry replaces the old). It reports
// whether expired entries or groups are left for a later batch.
func (e *Engine) planExpiry(b *batchState, ops, bytes int) (more bool) {
	if len(e.dedup) == 0 {
		return false
	}
	tids := make([]uint32, 0, len(e.dedup))
	for tid := range e.dedup {
		tids = append(tids, tid)
	}
	slices.Sort(tids)
	walk := dedupExpireMax
	for _, tid := range tids {
		x := e.dedup[tid]
		// A deleted topic's window is over: all of it goes, and then the
		// index itself (dropDeletedIndexes, once the batch is stored).
		gone := x.deleted != nil && x.deleted.Load()
		if gone && x.size() == 0 && len(x.groups) == 0 {
			b.dropIdx = append(b.dropIdx, tid)
			continue
		}
		pos, ok := x.oldest()
		walked := 0
		for ok {
			if walk == 0 {
				more = true
				break
			}
			d, id, _ := x.entry(pos)
			if !gone && b.now.Sub(d.at) <= x.window {
				break
			}
			if x.current(pos, id) && !b.recordsAgain(tid, id) {
				b.expired = append(b.expired, dedupPut{idx: x, id: string(id), d: d, pos: pos})
			} // else replaced, or recorded again by this batch
			pos, ok = x.following(pos)
			walked++
			walk--
		}
		if walked > 0 && !ok {
			pos = x.tail
		}
		passed, groups := x.passed+walked, 0
		for groups < len(x.groups) && passed >= x.groups[groups].n {
			if g := x.groups[groups]; g.seq != dedupNoKey {
				if ops < 1 || bytes < dedupGroupKeyLen {
					more = true
					break
				}
				ops, bytes = ops-1, bytes-dedupGroupKeyLen
				b.meta = append(b.meta, store.MetaOp{Key: dedupGroupKey(tid, g.seq), Delete: true})
			}
			passed -= x.groups[groups].n
			groups++
		}
		if walked > 0 || groups > 0 {
			b.expiredOrder = append(b.expiredOrder, expiredPrefix{idx: x, to: pos, moved: walked > 0, passed: passed, groups: groups})
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
	idx    *dedupIndex
	to     uint64 // the log position the batch's expiry reached
	moved  bool   // to is past the index's head
	passed int    // the index's passed after the batch
	groups int    // groups the batch deletes, from the index's oldest
}

// commitDedup applies b's index changes to memory once b's write returned:
// the expired entries go, the recorded ones come, and then each log's head
// moves past what expired (an entry recorded again is replaced before the
// chunk holding its old entry can be freed) and its deleted groups go.
func (e *Engine) commitDedup(b *batchState) {
	for _, p := range b.expired {
		p.idx.remove(p.pos, p.id)
	}
	for _, p := range b.dedup {
		p.idx.add(p.id, p.d)
	}
	for _, p := range b.expiredOrder {
		if p.moved {
			p.idx.advance(p.to)
		}
		p.idx.passed = p.passed
		p.idx.groups = p.idx.groups[p.groups:]
		if len(p.idx.groups) == 0 {
			p.idx.groups = nil
		}
	}
	e.commitGroups(b)
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
