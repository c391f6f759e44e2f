package store

import (
	"encoding/binary"
	"errors"

	"github.com/dgraph-io/badger/v4"
)

// End marks. A queue ends one past the last offset of its last segment,
// whose count is read from the segment's value. A segment at least
// ValueThreshold long (BadgerOptions.SegmentBytes above it, or one large
// record) is kept in Badger's value log, where its value can be lost while
// its key stays: Badger cuts its last value-log file at the first entry
// that fails its checksum when it opens, so one flipped byte loses every
// entry after it, and a machine crash loses what was not synced. The count
// goes with the value, and taking such a last segment for one record
// (damagedEnd) would give its other offsets, stored and acknowledged, to
// the next appends.
//
// So a write whose last segment of a queue goes to the value log holding
// more than one record (needsEndMark) also sets, in the same transaction,
// the queue's end mark to where the queue ends after it: a key of its own
// whose 8-byte value stays in the LSM tree, out of the value log's reach.
// A last segment whose count cannot be read ends at the mark when the mark
// is above its first offset, as the one written with it is; a mark at or
// below its first offset was written before it and says nothing of it.
// DropQueue deletes the mark; Restore sets the marks of what it loads.
//
// Other last segments need no mark: one in the LSM tree keeps its count,
// and a lost one of one record is taken for one record already. So writes
// that keep their segments in the LSM tree, as the default options do, and
// large records alone in their segments set none; and a transaction sets
// at most one mark for every two records it writes, well within the count
// of operations Badger takes that Limits leaves.

// endMarkLen is the length of an end mark's value.
const endMarkLen = 8

func endMarkKey(q QueueID) []byte {
	k := make([]byte, 0, queuePrefixLen)
	k = append(k, endSpace)
	k = binary.BigEndian.AppendUint32(k, q.Topic)
	return binary.BigEndian.AppendUint32(k, q.Queue)
}

// needsEndMark reports whether a queue whose last segment is of n bytes and
// holds count records needs an end mark.
func (s *Badger) needsEndMark(n, count int) bool {
	return !s.inMemory && count > 1 && int64(n) >= s.valueThreshold
}

// setEndMark sets, in txn, q's end mark to end.
func (s *Badger) setEndMark(txn *badger.Txn, q QueueID, end uint64, tally *txnTally) error {
	k := endMarkKey(q)
	v := binary.BigEndian.AppendUint64(make([]byte, 0, endMarkLen), end)
	tally.add(len(k), len(v), s.valueThreshold)
	return txn.SetEntry(badger.NewEntry(k, v))
}

// boundAfter returns where the segment of q starting at start, with value
// v, ends at the latest, given next, the first offset of the segment after
// it (noNextSegment if none), for damagedEnd and segmentEnd: next, unless
// the segment is the last and its count cannot be read, when q's end mark
// above start is (see End marks), if there is one.
func boundAfter(txn *badger.Txn, q QueueID, start uint64, v []byte, next uint64) (uint64, error) {
	if next != noNextSegment {
		return next, nil
	}
	if _, err := segmentCount(v); err == nil || errors.Is(err, ErrUnsupportedFormat) {
		return next, nil
	}
	item, err := txn.Get(endMarkKey(q))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return next, nil
	}
	if err != nil {
		return 0, err
	}
	var end uint64
	err = item.Value(func(v []byte) error {
		if len(v) == endMarkLen {
			end = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if end > start && end != noNextSegment {
		return end, nil
	}
	return next, nil
}
