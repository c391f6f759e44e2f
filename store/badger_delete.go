package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// DeleteRange deletes the records of q with offsets in [from, to): a
// segment inside the range is deleted, one reaching over an end is written
// back with the records outside the range. It works in transactions of at
// most Limits().MaxEntries segments each.
func (s *Badger) DeleteRange(q QueueID, from, to uint64) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	for from < to {
		var done bool
		var err error
		from, done, err = s.deleteChunk(q, from, to)
		if err != nil {
			return fmt.Errorf("store: delete range [%d, %d) of %d/%d: %w", from, to, q.Topic, q.Queue, err)
		}
		if done {
			return nil
		}
	}
	return nil
}

// deleteChunk deletes [from, to) from up to MaxEntries/2 segments of q in
// one transaction and returns where the next chunk starts.
func (s *Badger) deleteChunk(q QueueID, from, to uint64) (uint64, bool, error) {
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	chunk := max(s.limits.MaxEntries/2, 1) // a split segment costs two operations
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	var (
		kept  []Entry
		n     int
		next  = to
		errCh = errors.New("chunk full")
	)
	err := scanSegments(txn, q, from, to, func(start uint64, v []byte) error {
		if n == chunk {
			next = start
			return errCh
		}
		n++
		if err := txn.Delete(recordKey(q, start)); err != nil {
			return err
		}
		return decodeSegment(v, func(i int, rec []byte) bool {
			if off := start + uint64(i); off < from || off >= to {
				kept = append(kept, Entry{Queue: q, Offset: off, Value: rec})
			}
			return true
		})
	})
	if err != nil && err != errCh {
		return from, false, err
	}
	if n == 0 {
		return to, true, nil
	}
	if len(kept) > 0 {
		size := 0
		for _, e := range kept {
			size += len(e.Value) + segmentRecordOverhead + segmentOverhead
		}
		if _, _, err := s.putSegments(txn, q, kept, make([]byte, 0, len(kept)*recordKeyLen), make([]byte, 0, size)); err != nil {
			return from, false, err
		}
	}
	if err := txn.Commit(); err != nil {
		return from, false, err
	}
	return next, next >= to, nil
}

// DropQueue deletes every record of q with Badger's DropPrefix. Writes wait
// until it is done.
func (s *Badger) DropQueue(q QueueID) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	s.wmu.Lock()
	delete(s.ends, q)
	s.wmu.Unlock()
	if err := s.db.DropPrefix(queuePrefix(q)); err != nil {
		return fmt.Errorf("store: drop queue %d/%d: %w", q.Topic, q.Queue, err)
	}
	return nil
}

// Reclaim runs value-log garbage collection until a round rewrites nothing.
// It does nothing in memory, where there is no value log.
func (s *Badger) Reclaim() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if s.inMemory {
		return nil
	}
	// Flush the memtables (Badger flushes them for DropPrefix, so drop a
	// sentinel key written for the purpose), compact every level into one so
	// tombstones and the keys they delete leave the LSM tree, then rewrite
	// value-log files that are mostly garbage.
	if err := s.flushMemtables(); err != nil {
		return fmt.Errorf("store: reclaim: flush: %w", err)
	}
	s.dropMu.RLock()
	err := s.db.Flatten(1)
	s.dropMu.RUnlock()
	if err != nil {
		return fmt.Errorf("store: reclaim: flatten: %w", err)
	}
	for {
		s.dropMu.RLock()
		err := s.db.RunValueLogGC(0.5)
		s.dropMu.RUnlock()
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

// flushSentinel is a key outside the record and metadata spaces, written
// only to make DropPrefix flush the memtables.
var flushSentinel = []byte{0xfe, 'f', 'l', 'u', 's', 'h'}

func (s *Badger) flushMemtables() error {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(flushSentinel, nil) }); err != nil {
		return err
	}
	return s.db.DropPrefix(flushSentinel)
}
