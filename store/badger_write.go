package store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

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

	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	if len(b.Entries) > 0 {
		s.writersWaiting.Add(1)
		s.wmu.Lock()
		s.writersWaiting.Add(-1)
		defer s.wmu.Unlock()
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	if err := s.writeRecords(txn, b.Entries); err != nil {
		return writeError(err)
	}
	for i := range b.Meta {
		op := &b.Meta[i]
		var err error
		if op.Delete {
			err = txn.Delete(metaKey(op.Key))
		} else {
			err = txn.SetEntry(badger.NewEntry(metaKey(op.Key), op.Value))
		}
		if err != nil {
			return writeError(err)
		}
	}
	if err := txn.Commit(); err != nil {
		return writeError(err)
	}
	return nil
}

// writeRecords adds entries to txn as segments, queue by queue. An append
// past a queue's known end is packed as it comes; a write into or before
// existing records merges with the segments it overlaps. Call with wmu held.
func (s *Badger) writeRecords(txn *badger.Txn, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	sorted := make([]Entry, len(entries))
	copy(sorted, entries)
	// Stable: of two entries for one offset, the later one wins below.
	slices.SortStableFunc(sorted, func(a, b Entry) int {
		if c := cmp.Compare(a.Queue.Topic, b.Queue.Topic); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Queue.Queue, b.Queue.Queue); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	// Keys and segment values are handed to the transaction, which keeps
	// them until the commit: both buffers are sized up front so they never move.
	keys := make([]byte, 0, len(sorted)*recordKeyLen)
	size := 0
	for i := range sorted {
		size += len(sorted[i].Value) + segmentRecordOverhead + segmentOverhead
	}
	vals := make([]byte, 0, size)
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
			var err error
			if end, err = queueEnd(txn, q); err != nil {
				return err
			}
		}
		lo, hi := group[0].Offset, group[len(group)-1].Offset+1
		if lo < end {
			merged, err := s.takeOverlap(txn, q, lo, hi)
			if err != nil {
				return err
			}
			group = mergeRecords(merged, group)
		}
		var err error
		if keys, vals, err = s.putSegments(txn, q, group, keys, vals); err != nil {
			return err
		}
		s.ends[q] = max(end, hi)
	}
	return nil
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
func (s *Badger) putSegments(txn *badger.Txn, q QueueID, group []Entry, keys, vals []byte) ([]byte, []byte, error) {
	recs := make([][]byte, 0, len(group))
	for i := 0; i < len(group); {
		recs = append(recs[:0], group[i].Value)
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
			recs = append(recs, group[j].Value)
		}
		k0, v0 := len(keys), len(vals)
		keys = appendRecordKey(keys, q, group[i].Offset)
		if len(vals)+size > cap(vals) {
			// Records merged from existing segments need more room: start a
			// new buffer rather than move the values already handed to txn.
			vals = make([]byte, 0, max(size, cap(vals)))
			v0 = 0
		}
		vals = encodeSegment(vals, recs)
		if err := txn.SetEntry(badger.NewEntry(keys[k0:len(keys):len(keys)], vals[v0:len(vals):len(vals)])); err != nil {
			return keys, vals, err
		}
		i = j
	}
	return keys, vals, nil
}

// takeOverlap deletes, in txn, every segment of q holding an offset in
// [lo, hi) and returns all of their records (those outside [lo, hi) too),
// ascending, for the caller to write back.
func (s *Badger) takeOverlap(txn *badger.Txn, q QueueID, lo, hi uint64) ([]Entry, error) {
	var out []Entry
	err := scanSegments(txn, q, lo, hi, func(start uint64, v []byte) error {
		if err := txn.Delete(recordKey(q, start)); err != nil {
			return err
		}
		return decodeSegment(v, func(i int, rec []byte) bool {
			out = append(out, Entry{Queue: q, Offset: start + uint64(i), Value: rec})
			return true
		})
	})
	return out, err
}

// scanSegments calls fn with the first offset and a copy of the value of
// every segment of q that may hold an offset in [lo, hi): the one starting

func writeError(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return fmt.Errorf("%w: %v", ErrBatchTooLarge, err)
	}
	return fmt.Errorf("store: write: %w", err)
}

// Sync makes every earlier Write durable.
func (s *Badger) Sync() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	return nil
}
