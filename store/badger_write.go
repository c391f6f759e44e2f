package store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

// Write applies b in one read-write transaction. Records are packed into
// segments (see segment.go): consecutive offsets of one queue share a key.
func (s *Badger) Write(b *Batch) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	s.writes.Add(1)
	s.writing.Add(1)
	defer s.writing.Add(-1)
	if b == nil || len(b.Entries)+len(b.Meta) == 0 {
		return nil
	}
	if err := checkBatch(b, s.limits); err != nil {
		return err
	}
	if err := s.space.admit(writeNeed(b), len(b.Entries) > 0); err != nil {
		return err
	}

	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	// Every Write takes wmu, one of metadata only too: no other commit of
	// the store is then in Badger's write batch with it, or queued behind
	// it, when it fails on a lost memtable (failedCommit).
	s.writersWaiting.Add(1)
	s.wmu.Lock()
	s.writersWaiting.Add(-1)
	defer s.wmu.Unlock()
	if err := s.lostMemtable(); err != nil {
		return err // while this Write waited for wmu
	}
	var bufs *writeBufs
	if len(b.Entries) > 0 {
		bufs = writeBufPool.Get().(*writeBufs)
		defer bufs.put() // deferred before Discard: runs after it
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	var tally txnTally
	if err := s.writeRecords(txn, b.Entries, bufs, &tally); err != nil {
		return writeError(err, tally.rewrote) // nothing reached Badger: ends stay
	}
	for i := range b.Meta {
		op := &b.Meta[i]
		var err error
		if op.Delete {
			err = txn.Delete(metaKey(op.Key))
			tally.add(1+len(op.Key), 0, s.valueThreshold)
		} else {
			err = txn.SetEntry(badger.NewEntry(metaKey(op.Key), op.Value))
			tally.add(1+len(op.Key), len(op.Value), s.valueThreshold)
		}
		if err != nil {
			return writeError(err, tally.rewrote)
		}
	}
	if tally.big {
		s.vlogMu.RLock()
	}
	// Until failedCommit marked the store, if the commit's rotation
	// failed: no Badger Sync meets the missing memtable (rotating).
	s.rotateMu.Lock()
	defer s.rotateMu.Unlock()
	err := txn.Commit()
	if tally.big {
		s.vlogGen.Add(1)
		s.vlogMu.RUnlock()
	}
	// Counted once in the memtables: a listing meanwhile saw it there, so
	// the count errs high, never low (walSync.syncActive).
	if s.wals != nil {
		s.wals.wrote(tally.bytes + memtableEntryOverhead) // and the transaction's end mark
	}
	if bufs != nil {
		s.settleEnds(bufs.ends, err == nil)
	}
	if err != nil {
		return s.failedCommit(writeError(err, tally.rewrote))
	}
	return nil
}

// queueEndAfter is where a queue ends once the write being made commits.
type queueEndAfter struct {
	// q is the queue written.
	q QueueID
	// end is one past the last offset q holds after the write.
	end uint64
}

// settleEnds makes ends follow a write's commit, with wmu held: the queues'
// ends after it (writeRecords) once it committed. A failed commit forgets
// them instead: Badger may have applied part of it, and the next write
// looks them up. A write that failed before its commit leaves ends as they
// were: nothing of it reached Badger. An end raised by a write that is not
// stored would have the next write to its queue set the queue's end mark
// past every record stored (badger_endmark.go).
func (s *Badger) settleEnds(after []queueEndAfter, committed bool) {
	for _, a := range after {
		if committed {
			s.ends[a.q] = a.end
		} else {
			delete(s.ends, a.q)
		}
	}
}

// memtableEntryOverhead bounds what Badger adds to a memtable for one
// entry besides its key and value, in its log and its skiplist: a node
// with its tower, the log entry's header and checksum, the key's version,
// the value's metadata.
const memtableEntryOverhead = 256

// txnTally is what one transaction hands to Badger: whether a value may go
// to the value log (at least the value threshold long), and a bound of
// the bytes it adds to the memtables (walSync.wrote). Every set and
// delete is counted as the transaction makes it, segments rewritten and
// keys deleted by a write into existing records included.
type txnTally struct {
	big   bool
	bytes int64
	// rewrote counts the existing segments taken to be written back.
	rewrote int
}

// add counts one entry of txn: its key's and value's lengths.
func (t *txnTally) add(key, value int, threshold int64) {
	t.bytes += int64(key+value) + memtableEntryOverhead
	if int64(value) >= threshold {
		t.big = true
	}
}

// writeRecords adds entries to txn as segments, queue by queue. An append
// past a queue's known end is packed as it comes; a write into or before
// existing records merges with the segments it overlaps. Call with wmu held.
// The keys and values given to txn are in bufs, which must not be reused
// before txn is committed or discarded. Where each queue ends after txn is
// put in bufs.ends, for the caller to settle once txn's commit returned
// (settleEnds): ends itself does not change.
func (s *Badger) writeRecords(txn *badger.Txn, entries []Entry, bufs *writeBufs, tally *txnTally) error {
	if len(entries) == 0 {
		return nil
	}
	// Keys and segment values are handed to the transaction, which keeps
	// them until the commit: both buffers are sized up front so they never
	// move.
	bufs.ends = bufs.ends[:0]
	sorted := byQueue(entries, bufs.sorted[:0])
	bufs.sorted = sorted
	size := 0
	for i := range sorted {
		size += len(sorted[i].Value) + segmentRecordOverhead + segmentOverhead
	}
	keys := grow(bufs.keys, len(sorted)*recordKeyLen)
	vals := grow(bufs.vals, size)
	bufs.keys, bufs.vals = keys, vals
	for i := 0; i < len(sorted); {
		q := sorted[i].Queue
		j := i
		for j < len(sorted) && sorted[j].Queue == q {
			j++
		}
		group := lastWins(sorted[i:j])
		i = j
		end, known := s.ends[q]
		if !known {
			// Not written to since open, or the last write to it failed.
			var err error
			if end, err = queueEnd(txn, q); err != nil {
				return err
			}
		}
		hi := group[len(group)-1].Offset + 1
		if group[0].Offset < end {
			// Only the segments holding an offset the group writes are
			// taken, run of consecutive offsets by run: the segments in
			// the gaps between them stay as they are. A segment that
			// two runs reach is taken by the first; the transaction's
			// iterators no longer see it for the next.
			var merged []Entry
			for r := 0; r < len(group) && group[r].Offset < end; {
				e := r + 1
				for e < len(group) && group[e].Offset == group[e-1].Offset+1 {
					e++
				}
				taken, err := s.takeOverlap(txn, q, group[r].Offset, group[e-1].Offset+1, tally)
				if err != nil {
					return err
				}
				merged = append(merged, taken...)
				r = e
			}
			group = mergeRecords(merged, group)
		}
		var (
			mark bool
			err  error
		)
		if keys, vals, mark, err = s.putSegments(txn, q, group, keys, vals, tally); err != nil {
			return err
		}
		if mark {
			if err := s.setEndMark(txn, q, max(end, hi), tally); err != nil {
				return err
			}
		}
		bufs.ends = append(bufs.ends, queueEndAfter{q: q, end: max(end, hi)})
	}
	return nil
}

// writeBufs are the buffers of one writeRecords: the entries in queue
// order, the keys and values handed to the transaction, and the ends of
// the queues it writes.
type writeBufs struct {
	sorted []Entry
	keys   []byte
	vals   []byte
	ends   []queueEndAfter
}

// maxPooledWriteBuf bounds the value buffer kept for the next write, so
// that one large write does not pin its buffers.
const maxPooledWriteBuf = 256 << 10

var writeBufPool = sync.Pool{New: func() any { return new(writeBufs) }}

// put gives b back for a later write. Call it only once the transaction
// given b's keys and values was committed or discarded: Badger keeps them
// until then. Large buffers are dropped, and records are not kept alive.
func (b *writeBufs) put() {
	clear(b.sorted)
	b.sorted = b.sorted[:0]
	b.ends = b.ends[:0]
	if cap(b.vals) > maxPooledWriteBuf {
		*b = writeBufs{}
	}
	writeBufPool.Put(b)
}

// grow returns buf emptied, with room for at least n bytes.
func grow(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, 0, n)
	}
	return buf[:0]
}

// byQueue returns entries ordered by queue, then offset, stably: of two
// entries for one offset the later stays later, and wins (lastWins). The
// engine's writes hold a few queues whose entries come in offset order, so
// such a write is bucketed by queue in one pass; any other is sorted. The
// result is built in the array of dst, which must be empty.
func byQueue(entries []Entry, dst []Entry) []Entry {
	var (
		buckets [maxQueueBuckets]queueBucket
		n       int
	)
	for i := range entries {
		e := &entries[i]
		b := 0
		for b < n && buckets[b].q != e.Queue {
			b++
		}
		switch {
		case b < n:
			if e.Offset < buckets[b].last {
				return sortEntries(append(dst, entries...))
			}
			buckets[b].count++
			buckets[b].last = e.Offset
		case n == maxQueueBuckets:
			return sortEntries(append(dst, entries...))
		default:
			buckets[n] = queueBucket{q: e.Queue, count: 1, last: e.Offset}
			n++
		}
	}
	if n <= 1 {
		return append(dst, entries...) // one queue, in order
	}
	bs := buckets[:n]
	slices.SortFunc(bs, func(a, b queueBucket) int { return compareQueues(a.q, b.q) })
	at := len(dst)
	for i := range bs {
		bs[i].next, at = at, at+bs[i].count
	}
	dst = slices.Grow(dst, len(entries))[:at]
	for i := range entries {
		e := &entries[i]
		b := 0
		for bs[b].q != e.Queue {
			b++
		}
		dst[bs[b].next] = *e
		bs[b].next++
	}
	return dst
}

// maxQueueBuckets is the most queues byQueue buckets; a write to more is
// sorted.
const maxQueueBuckets = 16

type queueBucket struct {
	q     QueueID
	count int
	next  int
	last  uint64
}

func compareQueues(a, b QueueID) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Queue, b.Queue)
}

// sortEntries sorts entries by queue, then offset, stably.
func sortEntries(entries []Entry) []Entry {
	slices.SortStableFunc(entries, func(a, b Entry) int {
		if c := compareQueues(a.Queue, b.Queue); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	return entries
}

// lastWins drops all but the last of entries with equal offsets from a
// group sorted stably by offset.
func lastWins(group []Entry) []Entry {
	out := group[:0]
	for i := range group {
		if i+1 < len(group) && group[i+1].Offset == group[i].Offset {
			continue
		}
		out = append(out, group[i])
	}
	return out
}

// mergeRecords merges the records of existing segments with new entries,
// both sorted by offset; a new entry replaces an existing record.
func mergeRecords(old, fresh []Entry) []Entry {
	out := make([]Entry, 0, len(old)+len(fresh))
	i, j := 0, 0
	for i < len(old) || j < len(fresh) {
		switch {
		case j == len(fresh) || (i < len(old) && old[i].Offset < fresh[j].Offset):
			out = append(out, old[i])
			i++
		case i < len(old) && old[i].Offset == fresh[j].Offset:
			i++ // replaced by fresh[j]
		default:
			out = append(out, fresh[j])
			j++
		}
	}
	return out
}

// putSegments packs group (one queue, ascending, distinct offsets) into
// segments of consecutive offsets and sets them in txn. Segment keys and
// values are appended to keys and vals, which must have room for them.
// Each segment is counted in tally. mark reports whether the last segment
// needs an end mark (needsEndMark).
func (s *Badger) putSegments(txn *badger.Txn, q QueueID, group []Entry, keys, vals []byte, tally *txnTally) (_, _ []byte, mark bool, _ error) {
	for i := 0; i < len(group); {
		// size bounds the encoded segment: header and checksum at their
		// largest, and each record with its length.
		size := 1 + binary.MaxVarintLen32 + 4 + uvarintLen(uint64(len(group[i].Value))) + len(group[i].Value)
		j := i + 1
		for ; j < len(group) && group[j].Offset == group[j-1].Offset+1; j++ {
			n := uvarintLen(uint64(len(group[j].Value))) + len(group[j].Value)
			if size+n > s.segLimit {
				break
			}
			size += n
		}
		k0, v0 := len(keys), len(vals)
		keys = appendRecordKey(keys, q, group[i].Offset)
		if len(vals)+size > cap(vals) {
			// Records merged from existing segments need more room: start a
			// new buffer rather than move the values already handed to txn.
			vals = make([]byte, 0, max(size, cap(vals)))
			v0 = 0
		}
		vals = encodeSegmentOf(vals, group[i:j])
		tally.add(len(keys)-k0, len(vals)-v0, s.valueThreshold)
		mark = s.needsEndMark(len(vals)-v0, j-i)
		if err := txn.SetEntry(badger.NewEntry(keys[k0:len(keys):len(keys)], vals[v0:len(vals):len(vals)])); err != nil {
			return keys, vals, mark, err
		}
		i = j
	}
	return keys, vals, mark, nil
}

// takeOverlap deletes, in txn, every segment of q holding an offset in
// [lo, hi) and returns all of their records (those outside [lo, hi) too),
// ascending, for the caller to write back. A damaged segment gives its
// offsets (damagedEnd) as records with no value, as Read reports them:
// its records are lost already, and refusing the write would refuse every
// later one into those offsets too. A segment of a later format version
// is not lost: the write fails with an error matching ErrUnsupportedFormat.
func (s *Badger) takeOverlap(txn *badger.Txn, q QueueID, lo, hi uint64, tally *txnTally) ([]Entry, error) {
	var out []Entry
	err := scanSegments(txn, q, lo, hi, func(start uint64, v []byte) error {
		if err := txn.Delete(recordKey(q, start)); err != nil {
			return err
		}
		tally.add(recordKeyLen, 0, s.valueThreshold)
		tally.rewrote++
		derr := decodeSegment(v, func(i int, rec []byte) bool {
			out = append(out, Entry{Queue: q, Offset: start + uint64(i), Value: rec})
			return true
		})
		if derr == nil {
			return nil
		}
		if errors.Is(derr, ErrUnsupportedFormat) {
			return fmt.Errorf("write into the segment at %d: %w", start, derr)
		}
		next, err := nextSegment(txn, q, start)
		if err == nil {
			next, err = boundAfter(txn, q, start, v, next)
		}
		if err != nil {
			return err
		}
		out = append(out, damagedRecords(q, start, damagedEnd(start, v, next), 0, 0)...)
		return nil
	})
	return out, err
}

// nextSegment returns the first offset of the segment of q after the one
// starting at start, or noNextSegment.
func nextSegment(txn *badger.Txn, q QueueID, start uint64) (uint64, error) {
	if start+1 == noNextSegment {
		return noNextSegment, nil
	}
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: queuePrefix(q)})
	defer it.Close()
	it.Seek(recordKey(q, start+1))
	if !it.Valid() {
		return noNextSegment, nil
	}
	return recordOffset(it.Item().Key())
}

// scanSegments calls fn with the first offset and a copy of the value of
// every segment of q that may hold an offset in [lo, hi): the one starting

// writeError names the failure of a Write whose transaction rewrote
// rewrote existing segments.
func writeError(err error, rewrote int) error {
	if errors.Is(err, badger.ErrTxnTooBig) && rewrote > 0 {
		// Within Limits, which cannot count the segments a write into
		// existing records rewrites whole (Limits).
		return fmt.Errorf("%w: it writes into existing records, and rewriting the segments holding them (%d at least) takes more than one transaction (%v): write them in smaller batches",
			ErrBatchTooLarge, rewrote, err)
	}
	if errors.Is(err, badger.ErrTxnTooBig) {
		return fmt.Errorf("%w: %v", ErrBatchTooLarge, err)
	}
	return fmt.Errorf("store: write: %w", err)
}

// Sync makes every earlier Write durable. Once an fsync of the store
// failed (in a Sync, or in the Reclaim or Restore that syncs what it
// moved), every later Sync fails with that first failure until the store
// is opened again: the OS may have dropped the pages it could not write,
// and a later fsync that succeeds would not write them again (see
// failedSync). A Sync that stopped before any fsync failed (it could not
// list the directory or open a memtable log) fails with an error matching
// ErrSyncIncomplete and leaves later Syncs free to succeed.
func (s *Badger) Sync() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.syncLetsGo(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	return nil
}

// syncLogs is Sync's work, for a caller that holds acquire. When every
// piece of work that may have written to Badger's value log (vlogMu) was
// done before a Badger Sync that succeeded started, and none runs now, it
// flushes the memtables' logs only (walSync.syncActive), holding off such
// work until it is done; otherwise it does syncAll.
func (s *Badger) syncLogs() error {
	if err := s.failedSync(); err != nil {
		return err
	}
	if s.wals != nil && walOnlySync && s.vlogMu.TryLock() {
		if s.syncedGen.Load() >= s.vlogGen.Load() {
			err := s.wals.syncActive()
			s.vlogMu.Unlock()
			if !errors.Is(err, errNoActiveLog) {
				return s.noteSync(err)
			}
		} else {
			s.vlogMu.Unlock()
		}
	}
	return s.syncAll()
}

// syncAll is Badger's Sync (the active memtable's log and the value log),
// then the logs of the memtables set aside since the last call
// (badger_walsync.go).
func (s *Badger) syncAll() error {
	if err := s.failedSync(); err != nil {
		return err
	}
	gen := s.vlogGen.Load() // work ended by now was committed before the Sync starts
	if err := s.badgerSync(); err != nil {
		if errors.Is(err, ErrUnusable) {
			return err // no fsync made: no failure to keep
		}
		return s.noteSync(err)
	}
	for {
		was := s.syncedGen.Load()
		if was >= gen || s.syncedGen.CompareAndSwap(was, gen) {
			break
		}
	}
	if s.wals != nil {
		return s.noteSync(s.wals.afterSync())
	}
	return nil
}

// noteSync returns err, the outcome of an fsync of the store, and keeps
// the first failure for failedSync. A Sync that stopped before its fsyncs
// (ErrSyncIncomplete: a log it could not list or open) lost no page, and
// is not kept: the next Sync tries again.
func (s *Badger) noteSync(err error) error {
	if err != nil && !errors.Is(err, ErrSyncIncomplete) {
		s.syncFailed.CompareAndSwap(nil, &err)
	}
	return err
}

// failedSync returns an error wrapping the first fsync failure of the
// store since it opened, or nil. After a failed fsync the OS may have
// marked the pages it could not write as clean (Linux does), so a later
// fsync succeeds without writing them: the writes made before the failure
// are not durable whatever a later Sync says, and Badger's logs may end at
// the lost pages, taking every later write with them in a crash. So no
// Sync succeeds after one failed, whichever call made the fsync (a Sync,
// a Reclaim syncing the values a GC round moved, a Restore); opening the
// store again replays it from what the disk holds.
func (s *Badger) failedSync() error {
	if p := s.syncFailed.Load(); p != nil {
		return fmt.Errorf("an earlier fsync failed, and no Sync succeeds until the store is opened again: %w", *p)
	}
	return nil
}

// beginUncounted starts work that may write to the value log or to the
// memtables outside the counted writes (vlogMu); endUncounted ends it.
// Both make the next Sync list the memtable logs: such work can rotate
// the memtable unseen, even twice while a reader holds the first one's
// log.
func (s *Badger) beginUncounted() {
	s.vlogMu.RLock()
	if s.wals != nil {
		s.wals.busy.Add(1)
		s.wals.touch()
	}
}

func (s *Badger) endUncounted() {
	if s.wals != nil {
		s.wals.touch()
		s.wals.busy.Add(-1)
	}
	s.vlogGen.Add(1)
	s.vlogMu.RUnlock()
}

// walOnlySync enables syncLogs' shortcut. It relies on an fsync of a
// memtable's log file flushing what Badger wrote through its memory
// mapping, which Linux's page cache guarantees.
var walOnlySync = runtime.GOOS == "linux"
