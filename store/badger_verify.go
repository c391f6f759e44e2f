package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// ErrDamaged marks records the store holds but cannot read back as they
// were written (VerifyRecords).
var ErrDamaged = errors.New("store: damaged records")

// VerifyRecords reads back every segment the store holds and checks its
// framing and checksum. It returns nil when all of them are sound, an error
// matching ErrDamaged that names the first damaged segment, or another
// error when the store cannot be read at all.
//
// A Sync makes everything written before it durable. Between two, a crash
// of the machine (not only of the process) may keep Badger's record of a
// segment's key while losing the segment's bytes if they were in the value
// log (segments above the value threshold: BadgerOptions.SegmentBytes, or
// one large record), which its write-ahead log does not hold: Badger then
// reads back zeros or nothing. A caller that writes without a Sync per
// write verifies after an unclean stop, before anything reads.
func (s *Badger) VerifyRecords() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: []byte{recordSpace}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			err := item.Value(func(v []byte) error {
				return decodeSegment(v, func(int, []byte) bool { return true })
			})
			if err != nil {
				q, off := parseRecordKey(item.Key())
				return fmt.Errorf("%w: segment of queue %d/%d at offset %d: %w", ErrDamaged, q.Topic, q.Queue, off, err)
			}
		}
		return nil
	})
}
