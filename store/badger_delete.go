package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// deleteChunkSegments is the most segments one DeleteRange transaction
// deletes. A chunk runs under wmu, so it is what a concurrent Write may wait
// for: the chunk walks keys only and decodes at most the two segments at
// the ends of the range. 64 segments keep a waiting send's p99 within
// 1.1-2.2x of the same run without a deletion (256 did 1.8-4.1x), for
// ~25% more time per deletion (BenchmarkSendLatencyDuringRetention).
const deleteChunkSegments = 64

// DeleteRange deletes the records of q with offsets in [from, to): a
// segment inside the range is deleted, one reaching over an end is written
// back with the records outside the range. It works in transactions of at
// most deleteChunkSegments segments each and lets writes in between them,
// pausing after a chunk during which writes came in, so a large deletion
// does not stall writers; the deletion is therefore not atomic, and a
// failure may leave a prefix of the range deleted.
func (s *Badger) DeleteRange(q QueueID, from, to uint64) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	return s.deleteRange(q, from, to)
}

func (s *Badger) deleteRange(q QueueID, from, to uint64) error {
	for at := from; at < to; {
		writes := s.writes.Load()
		start := time.Now()
		next, err := s.deleteChunk(q, at, to)
		if err != nil {
			return fmt.Errorf("store: delete range [%d, %d) of %d/%d at %d: %w", from, to, q.Topic, q.Queue, at, err)
		}
		at = next
		if at < to && s.afterChunk != nil {
			s.afterChunk(at)
		}
		if at < to && s.writes.Load() != writes {
			// Writes are coming in: leave them three quarters of the
			// time, of the machine and of Badger's write pipeline.
			// Deletion is background work; a sender is waiting.
			time.Sleep(3 * time.Since(start))
		}
	}
	return nil
}

// deleteChunk deletes [from, to) from up to deleteChunkSegments segments
// of q in one transaction, with wmu held, and returns where the next chunk
// starts (to when the range is done). Segments are looked up under the
// lock, so a Write between two chunks is seen by the next.
func (s *Badger) deleteChunk(q QueueID, from, to uint64) (uint64, error) {
	s.yieldToWriters()
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.lostMemtable(); err != nil {
		return from, err
	}
	// A split segment costs two operations.
	chunk := min(s.chunkSegments, max(s.limits.MaxEntries/2, 1))
	// Tombstones, and the two edge segments written back.
	if err := s.space.admit(int64(chunk*64+2*s.segLimit+4096), false); err != nil {
		return from, err
	}
	s.beginUncounted() // its writes are not counted, and an edge segment may go to the value log
	defer s.endUncounted()
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	prefix := queuePrefix(q)

	// edges are the segments to decode and write back in part: the one
	// starting before from, if it reaches from, and the last one, if it
	// may reach past to. The others lie inside the range and are deleted
	// unread.
	type edge struct {
		start, end uint64
		v          []byte
		sound      bool
	}
	var edges []edge
	// head is the segment starting before from, if any: an edge if it
	// reaches from, which for a damaged one depends on where the next
	// segment starts (damagedEnd), known once the keys are walked.
	var head *edge
	n := 0
	// A segment starting at from is found with a point lookup first.
	// Badger's seek reads one live key beyond the one it lands on, and
	// backwards that means stepping over every tombstone below it: a
	// reverse seek from the first live segment of a queue whose head was
	// deleted walks all of those tombstones until compaction removes them.
	// Retention leaves the queue starting at a segment boundary, and each
	// chunk starts at one, so the lookup usually answers.
	_, err := txn.Get(recordKey(q, from))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		start, v, ok, err := segmentAtOrBefore(txn, prefix, q, from)
		if err != nil {
			return from, err
		}
		if ok && start < from {
			head = &edge{start: start, v: v}
			n++
		}
	case err != nil:
		return from, err
	}
	next := to
	// first and after are the first offsets of the first segments at or
	// after from and at or after to (noNextSegment when there is none).
	first, after := uint64(noNextSegment), uint64(noNextSegment)
	var inside []uint64
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
	for it.Seek(recordKey(q, from)); it.Valid(); it.Next() {
		start, err := recordOffset(it.Item().Key())
		if err != nil {
			it.Close()
			return from, err
		}
		first = min(first, start)
		if start >= to {
			after = start
			break
		}
		if n == chunk {
			next = start
			break
		}
		inside = append(inside, start)
		n++
	}
	it.Close()
	if head != nil && !newerSegmentVersion(head.v) { // a later version's: kept whole
		bound, err := boundAfter(txn, q, head.start, head.v, first)
		if err != nil {
			return from, err
		}
		head.end, head.sound = segmentEnd(head.start, head.v, bound)
		if head.end > from {
			edges = append(edges, *head)
			if len(inside) > 0 {
				// Written back in part, it takes its transaction alone:
				// with the last segment's part too, two segments of up
				// to SegmentBytes each may be more than Badger takes in
				// one, and the deletion would fail at every retry.
				inside, next = nil, inside[0]
			}
		}
	}
	if len(edges) == 0 && len(inside) == 0 {
		return next, nil
	}
	// A segment followed by one starting below to ends before it; the
	// last segment of the range may reach past to. A damaged one reaches
	// as far as damagedEnd says, as Read and Bounds take it.
	if next == to && len(inside) > 0 {
		last := inside[len(inside)-1]
		v, err := segmentValue(txn, q, last)
		if err != nil {
			return from, err
		}
		bound, err := boundAfter(txn, q, last, v, after)
		if err != nil {
			return from, err
		}
		switch end, sound := segmentEnd(last, v, bound); {
		case newerSegmentVersion(v) && after != to:
			// Of a later format version, its end unknown: it may
			// reach past to, and its records cannot be split. It is
			// kept whole.
			inside = inside[:len(inside)-1]
		case newerSegmentVersion(v):
			// The next segment starts at to: it ends before.
		case end > to:
			edges = append(edges, edge{last, end, v, sound})
			inside = inside[:len(inside)-1]
		}
	}
	for _, start := range inside {
		if err := txn.Delete(recordKey(q, start)); err != nil {
			return from, err
		}
	}
	var kept []Entry
	for _, e := range edges {
		if err := txn.Delete(recordKey(q, e.start)); err != nil {
			return from, err
		}
		if !e.sound {
			// Its records are lost already: the offsets outside the
			// range stay, as the records with no value they read as.
			kept = append(kept, damagedRecords(q, e.start, e.end, from, to)...)
			continue
		}
		err := decodeSegment(e.v, func(i int, rec []byte) bool {
			if off := e.start + uint64(i); off < from || off >= to {
				kept = append(kept, Entry{Queue: q, Offset: off, Value: rec})
			}
			return true
		})
		if err != nil {
			return from, err
		}
	}
	if len(kept) > 0 {
		size := 0
		for _, e := range kept {
			size += len(e.Value) + segmentRecordOverhead + segmentOverhead
		}
		var tally txnTally // not counted: the chunk is uncounted work
		if _, _, _, err := s.putSegments(txn, q, kept, make([]byte, 0, len(kept)*recordKeyLen), make([]byte, 0, size), &tally); err != nil {
			return from, err
		}
	}
	if err := s.rotating(txn.Commit); err != nil {
		return from, err
	}
	return next, nil
}

// yieldToWriters lets the Writes waiting for wmu take it before the next
// chunk does: sync.Mutex would often hand it back to the goroutine that just
// released it, and a writer would wait for several chunks. The wait is
// bounded, so a steady stream of writes cannot starve a deletion.
func (s *Badger) yieldToWriters() {
	for i := 0; i < 1000 && s.writersWaiting.Load() > 0; i++ {
		runtime.Gosched()
	}
}

// segmentValue returns a copy of the value of q's segment starting at start.
func segmentValue(txn *badger.Txn, q QueueID, start uint64) ([]byte, error) {
	item, err := txn.Get(recordKey(q, start))
	if err != nil {
		return nil, err
	}
	return segmentCopy(item)
}

// DropQueue deletes every record of q, in chunks as DeleteRange does, so
// writes to other queues go on meanwhile, then q's end mark.
func (s *Badger) DropQueue(q QueueID) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.deleteRange(q, 0, math.MaxUint64); err != nil {
		return fmt.Errorf("store: drop queue %d/%d: %w", q.Topic, q.Queue, err)
	}
	if err := s.dropEndMark(q); err != nil {
		return fmt.Errorf("store: drop queue %d/%d: end mark: %w", q.Topic, q.Queue, err)
	}
	return nil
}

// dropEndMark deletes q's end mark, which would otherwise bound a segment
// written to q again (boundAfter), and forgets q's end.
func (s *Badger) dropEndMark(q QueueID) error {
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.lostMemtable(); err != nil {
		return err
	}
	delete(s.ends, q)
	if s.inMemory {
		return nil
	}
	s.beginUncounted() // its tombstone is not counted
	defer s.endUncounted()
	return s.rotating(func() error {
		return s.db.Update(func(txn *badger.Txn) error { return txn.Delete(endMarkKey(q)) })
	})
}

// quietFor is how long Reclaim watches for writes before it flushes the
// memtables.
const quietFor = 20 * time.Millisecond

// Reclaim gives the space of deleted records back: it compacts every level
// of the LSM tree into one, so tombstones and the keys they delete leave
// it, then runs value-log garbage collection until a round rewrites
// nothing. It does nothing in memory, where there is no value log.
//
// Tombstones still in the memtables are compacted only once the memtables
// are flushed. Badger flushes them on demand only by blocking every write
// until the flush is done (DropPrefix), which takes up to ~100 ms per full
// memtable, and flattening rewrites the whole tree, whose I/O delays the
// fsyncs of concurrent sends (p99 3-9x, max ~50 ms measured). So Reclaim
// flushes and flattens only when no Write ran for quietFor; on a busy store
// the writes drive Badger's own compaction, value-log GC still runs, and the
// next Reclaim takes what this one left.
//
// After a failed fsync of the store (see Sync) Reclaim fails with it and
// reclaims nothing: it could not make what it moves durable.
//
// Close stops a running Reclaim, which then returns nil: before the flush,
// before the flattening, and between two GC rounds. Close waits for the
// step in progress only (a GC round's sync keeps the values it moved; a
// flattening cannot be cut short), not for the rounds left, which on a
// large store take minutes; the next Reclaim takes what this one left.
func (s *Badger) Reclaim() error { return s.ReclaimContext(context.Background()) }

// ReclaimContext is Reclaim, also stopped, where Close would stop it, once
// ctx is done; it then returns an error matching ctx's. A caller whose own
// stop waits for the Reclaim (a node or engine closing) passes a context
// its stop cancels.
func (s *Badger) ReclaimContext(ctx context.Context) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if s.inMemory {
		return nil
	}
	if err := s.failedSync(); err != nil {
		// A GC round would delete files whose values it could not make
		// durable elsewhere.
		return fmt.Errorf("store: reclaim: %w", err)
	}
	s.reclaimMu.Lock()
	defer s.reclaimMu.Unlock()
	// A round before whose moved values are not durable yet: no other
	// round until they are.
	if err := s.releaseHeld(); err != nil {
		return fmt.Errorf("store: reclaim: %w", err)
	}
	// Flushing and flattening rewrite the LSM tree; on a busy store their
	// I/O delays every fsync of the writes coming in, and those writes
	// drive Badger's own compaction anyway. So both run only on a quiet
	// store; a later pass reclaims what this one left.
	if stop, err := s.reclaimStopped(ctx); stop {
		return err
	}
	if s.quiet() {
		if stop, err := s.reclaimStopped(ctx); stop {
			return err
		}
		if err := s.flushMemtables(); err != nil {
			return fmt.Errorf("store: reclaim: flush: %w", err)
		}
		if stop, err := s.reclaimStopped(ctx); stop {
			return err
		}
		if err := s.flatten(); err != nil {
			return fmt.Errorf("store: reclaim: flatten: %w", err)
		}
	}
	for {
		if stop, err := s.reclaimStopped(ctx); stop {
			return err
		}
		err := s.gcRound()
		switch {
		case err == nil:
			continue
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return nil
		default:
			return fmt.Errorf("store: reclaim: %w", err)
		}
	}
}

// reclaimStopped reports whether a Reclaim is to stop before its next
// step, with what it returns: nil when the store is closing, ctx's error
// when ctx is done.
func (s *Badger) reclaimStopped(ctx context.Context) (bool, error) {
	if s.closing.Load() {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return true, fmt.Errorf("store: reclaim: %w", err)
	}
	return false, nil
}

// gcRound runs one round of value-log garbage collection and returns
// Badger's answer.
//
// A round copies the live values of one value-log file to the current one
// (and their keys to the memtable), without a sync, and then deletes the
// file at once — unless an iterator is open, in which case the deletion
// waits until the last one closes. A machine crash after the deletion and
// before the next Sync would lose the moved values: records acknowledged as
// durable long ago whose only synced copy was in the deleted file. So the
// round runs with an iterator open, and the store syncs the moved values
// (reclaimSync) before it closes the iterator and lets the file go. When
// that sync fails, Reclaim returns its error; the file goes as Badger
// would have let it go anyway.
func (s *Badger) gcRound() error {
	if err := s.space.admit(s.gcNeed, false); err != nil {
		return err
	}
	// The values it moves go through the memtables and the value log,
	// and the iterator holds the memtable log of the round's start.
	s.beginUncounted()
	defer s.endUncounted()
	if s.gcStarted != nil {
		s.gcStarted()
	}
	// A Write may have left Badger without a memtable since Reclaim
	// began (or its last round): opening the iterator would then
	// dereference it.
	if err := s.lostMemtable(); err != nil {
		return err
	}
	txn := s.db.NewTransaction(false)
	it, err := s.newIterator(txn, badger.IteratorOptions{Prefix: flushSentinel})
	if err != nil {
		return err
	}
	held := false
	done := func() {
		it.Close()
		txn.Discard()
	}
	defer func() {
		if !held {
			done()
		}
	}()
	err = s.runGCAlone(0.5)
	if err == nil {
		if serr := s.reclaimSync(); serr != nil {
			// A sync that stopped before its fsyncs left the moved
			// values where no fsync reached them: the iterator, and
			// with it the emptied file, is kept until a Sync succeeds.
			if errors.Is(serr, ErrSyncIncomplete) {
				held = true
				s.held.add(done)
			}
			return fmt.Errorf("sync the values moved: %w", serr)
		}
	}
	return err
}

// runGCAlone runs Badger's value-log GC round (runGC) with wmu held,
// and marks the store unusable when the round left Badger without a
// memtable.
//
// A round commits the values it moves through Badger's write channel
// (its rewrite calls Badger's batchSet and waits for each commit, so every
// one of them is done when the round returns). Outside wmu, a Write could
// share Badger's write batch with such a commit: when the rewrite's
// memtable rotation failed, a Write ahead of it in the batch was stored
// but got the error, and the store answers a failed Write as "nothing
// stored"; a Write behind it met the missing memtable in Badger's commit
// (log.Fatal), and the round's next lookup met it too (a nil
// dereference). The engine has no "outcome unknown" answer for a Write
// the store fails (only for a failed fsync), so the round holds wmu
// instead, as every other commit of the store does: a failed commit of the
// round is alone in its batch, and the store is marked before a Write
// reaches Badger. The cost is that Writes wait for a round (one value-log
// file sampled, and its live values moved when it is picked); a store
// whose segments stay under ValueThreshold (the default) keeps little in
// the value log, and a round with nothing to move returns after sampling.
func (s *Badger) runGCAlone(discardRatio float64) (err error) {
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.lostMemtable(); err != nil {
		return err // a Write lost it while this round waited for wmu
	}
	// A Sync needing Badger's waits for the round (rotating): the round
	// commits the values it moves, and any of its commits may rotate.
	return s.rotating(func() error { return s.runGC(discardRatio) })
}

// quiet reports whether no Write was running or started for quietFor.
func (s *Badger) quiet() bool {
	before := s.writes.Load()
	if s.writing.Load() > 0 {
		return false
	}
	time.Sleep(quietFor)
	return s.writes.Load() == before && s.writing.Load() == 0
}

// flushSentinel is a key outside the record and metadata spaces, written
// only to make DropPrefix flush the memtables.
var flushSentinel = []byte{0xfe, 'f', 'l', 'u', 's', 'h'}

// flushMemtables makes Badger flush its memtables to level 0 by dropping
// a sentinel key. Badger refuses writes meanwhile, so Write is held off by
// dropMu instead of failing.
func (s *Badger) flushMemtables() error {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	if err := s.lostMemtable(); err != nil {
		return err
	}
	s.beginUncounted() // a new memtable
	defer s.endUncounted()
	if err := s.rotating(func() error {
		return s.db.Update(func(txn *badger.Txn) error { return txn.Set(flushSentinel, nil) })
	}); err != nil {
		return err
	}
	// Badger's drop sets up a new memtable: when it cannot, it is left
	// without one, as after a failed commit.
	return s.rotating(func() error { return s.db.DropPrefix(flushSentinel) })
}

// flatten compacts the LSM tree into one level (Badger's Flatten). Its
// failure is checked for a lost memtable as a failed commit is: the store
// is then marked unusable rather than left to a later read or write.
func (s *Badger) flatten() error {
	return s.failedCommit(s.db.Flatten(1))
}
