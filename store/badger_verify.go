package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// ErrDamaged marks records or metadata the store holds but cannot read back
// as they were written: VerifyRecords reports it, and so do reads of
// metadata and snapshots that meet such a metadata value (a damaged segment
// reads as corrupt records instead, see Read, and a snapshot carries it as
// damaged, see BadgerSnapshot.WriteTo).
var ErrDamaged = errors.New("store: damaged records")

// valueCopy returns a copy of item's value. Badger answers a value it
// cannot read from its value log (bytes gone, or a checksum that does not
// match) with no bytes and no error, only a log line; a value Badger knows
// to be longer than that is damaged, not empty.
func valueCopy(item *badger.Item) ([]byte, error) {
	v, err := item.ValueCopy(nil)
	if err == nil {
		err = unreadable(item, v)
	}
	return v, err
}

// unreadable reports, as ErrDamaged, a value v that Badger read back empty
// though it knows item's value to be longer.
func unreadable(item *badger.Item, v []byte) error {
	if len(v) == 0 && item.ValueSize() > 0 {
		return fmt.Errorf("%w: value of %d bytes unreadable in the value log", ErrDamaged, item.ValueSize())
	}
	return nil
}

// segmentCopy copies a segment's value. Unlike valueCopy it leaves a segment
// Badger cannot read back empty, as Badger gives it: it then fails to decode
// like any other damaged segment, and readers report its offsets as corrupt
// records instead of failing (Read).
func segmentCopy(item *badger.Item) ([]byte, error) {
	return item.ValueCopy(nil)
}

// VerifyRecords reads back every segment and every metadata value the
// store holds: a segment's framing and checksum are its own, and values in
// Badger's value log are checked against the checksum Badger keeps with
// each (the store opens Badger with value checksums verified on read). It
// returns nil when all of them are sound, an error matching ErrDamaged that
// names the first damaged key, one matching ErrUnsupportedFormat (not
// damage) that names the first segment of a later format version, or
// another error when the store cannot be read at all. A damaged segment a
// snapshot carried (BadgerSnapshot.WriteTo), which Restore wrote as it came,
// reads back as written: it is not damage of this store, and reading it
// again from the same snapshot would not mend it.
//
// A Sync makes everything written before it durable. Between two, a crash
// of the machine (not only of the process) may keep Badger's record of a
// key while losing its value's bytes if they were in the value log
// (segments above the value threshold: BadgerOptions.SegmentBytes, one
// large record, or a metadata value of ValueThreshold bytes or more), which
// its write-ahead log does not hold: Badger then reads back zeros or
// nothing. A caller that writes without a Sync per write verifies after an
// unclean stop, before anything reads.
func (s *Badger) VerifyRecords() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	return s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			key := item.Key()
			err := item.Value(func(v []byte) error {
				if err := unreadable(item, v); err != nil {
					return err
				}
				if len(key) > 0 && key[0] == recordSpace && !carriedDamage(v) {
					return decodeSegment(v, func(int, []byte) bool { return true })
				}
				return nil
			})
			if err == nil {
				continue
			}
			switch {
			case len(key) > 0 && key[0] == recordSpace && errors.Is(err, ErrUnsupportedFormat):
				q, off := parseRecordKey(key)
				return fmt.Errorf("segment of queue %d/%d at offset %d: %w", q.Topic, q.Queue, off, err)
			case len(key) > 0 && key[0] == recordSpace:
				q, off := parseRecordKey(key)
				return fmt.Errorf("%w: segment of queue %d/%d at offset %d: %w", ErrDamaged, q.Topic, q.Queue, off, err)
			case len(key) > 0 && key[0] == metaSpace:
				return fmt.Errorf("%w: value of metadata key %q: %w", ErrDamaged, key[1:], err)
			default:
				return fmt.Errorf("%w: value of key %q: %w", ErrDamaged, key, err)
			}
		}
		return nil
	})
}
