package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// at or before lo, if it reaches lo, and those starting in (lo, hi). The
// segments are collected first, so fn may write to txn.
func scanSegments(txn *badger.Txn, q QueueID, lo, hi uint64, fn func(start uint64, v []byte) error) error {
	type seg struct {
		start uint64
		v     []byte
	}
	var segs []seg
	prefix := queuePrefix(q)
	if start, v, ok, err := segmentAtOrBefore(txn, prefix, q, lo); err != nil {
		return err
	} else if ok && start < lo {
		if n, err := segmentCount(v); err != nil || start+uint64(n) > lo {
			segs = append(segs, seg{start, v})
		}
	}
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
	for it.Seek(recordKey(q, lo)); it.Valid(); it.Next() {
		start, err := recordOffset(it.Item().Key())
		if err != nil {
			it.Close()
			return err
		}
		if start >= hi {
			break
		}
		v, err := segmentCopy(it.Item())
		if err != nil {
			it.Close()
			return err
		}
		segs = append(segs, seg{start, v})
	}
	it.Close()
	for _, sg := range segs {
		if err := fn(sg.start, sg.v); err != nil {
			return err
		}
	}
	return nil
}

// segmentAtOrBefore returns the first offset and a copy of the value of the
// last segment of q starting at or before off.
func segmentAtOrBefore(txn *badger.Txn, prefix []byte, q QueueID, off uint64) (uint64, []byte, bool, error) {
	return lastSegment(txn, prefix, q, off, true)
}

// lastSegment is segmentAtOrBefore; withValue false skips the value copy
// (the value returned is then nil).
func lastSegment(txn *badger.Txn, prefix []byte, q QueueID, off uint64, withValue bool) (uint64, []byte, bool, error) {
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix, Reverse: true})
	defer it.Close()
	it.Seek(recordKey(q, off))
	if !it.Valid() {
		return 0, nil, false, nil
	}
	start, err := recordOffset(it.Item().Key())
	if err != nil || !withValue {
		return start, nil, err == nil, err
	}
	v, err := segmentCopy(it.Item())
	if err != nil {
		return 0, nil, false, err
	}
	return start, v, true, nil
}

// queueEnd returns one past the last offset of q (0 when q is empty). A
// last segment whose count cannot be read ends at q's end mark written
// with it (boundAfter), and is otherwise taken to hold one record
// (damagedEnd); one of a later format version fails with an error matching
// ErrUnsupportedFormat: taking it for one record would have the next
// append written into its offsets.
func queueEnd(txn *badger.Txn, q QueueID) (uint64, error) {
	start, v, ok, err := segmentAtOrBefore(txn, queuePrefix(q), q, ^uint64(0))
	if err != nil || !ok {
		return 0, err
	}
	if _, err := segmentCount(v); errors.Is(err, ErrUnsupportedFormat) {
		return 0, fmt.Errorf("last segment at %d: %w", start, err)
	}
	bound, err := boundAfter(txn, q, start, v, noNextSegment)
	if err != nil {
		return 0, err
	}
	return damagedEnd(start, v, bound), nil // its count, when it can be read
}

// Read returns records of q with offsets in [from, to), ascending, bounded
// by max records and maxBytes of values (the record that reaches maxBytes is
// included). It starts at the segment holding from and walks forward; each
// segment's value is copied once and its records are slices of that copy.
// A segment that cannot be decoded yields a record with no value for each
// offset it may hold (damagedEnd), which the engine reports as corrupt and
// skips. A segment of a later format version is not damage: Read returns
// the records before it and stops there, and fails with an error matching
// ErrUnsupportedFormat when there are none.
func (s *Badger) Read(q QueueID, from, to uint64, max, maxBytes int) ([]Record, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	if from >= to {
		return nil, nil
	}
	var out []Record
	if max > 0 {
		out = make([]Record, 0, min(max, 256))
	}
	full := func(sum int) bool {
		return (max > 0 && len(out) >= max) || (maxBytes > 0 && sum >= maxBytes)
	}
	// hintAt and hintEnd bound the last segment read, for the next Read's
	// seek (see readHints).
	var hintAt, hintEnd uint64
	err := s.view(func(txn *badger.Txn) error {
		prefix := queuePrefix(q)
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
		defer it.Close()
		if err := seekSegment(txn, it, prefix, q, s.hints.seekFor(q, from), from); err != nil {
			return err
		}
		sum := 0
		for it.Valid() && !full(sum) {
			start, err := recordOffset(it.Item().Key())
			if err != nil {
				return err
			}
			if start >= to {
				break
			}
			v, err := segmentCopy(it.Item())
			if err != nil {
				return err
			}
			it.Next()
			hintAt, hintEnd = start, start
			if n, err := segmentCount(v); err == nil {
				hintEnd = start + uint64(n)
			}
			derr := decodeSegment(v, func(i int, rec []byte) bool {
				off := start + uint64(i)
				if off < from {
					return true
				}
				if off >= to {
					return false
				}
				if len(rec) == 0 {
					rec = nil // as Badger gives an empty value
				}
				out = append(out, Record{Offset: off, Value: rec})
				sum += len(rec)
				return !full(sum)
			})
			if derr == nil {
				continue
			}
			if errors.Is(derr, ErrUnsupportedFormat) {
				if len(out) == 0 {
					return fmt.Errorf("segment at %d: %w", start, derr)
				}
				break
			}
			// Damaged: its offsets are damagedEnd's, the same that
			// Bounds counts for a last segment.
			next := uint64(noNextSegment)
			if it.Valid() {
				if n, err := recordOffset(it.Item().Key()); err == nil && n > start {
					next = n
				}
			}
			next, err = boundAfter(txn, q, start, v, next)
			if err != nil {
				return err
			}
			end := damagedEnd(start, v, next)
			for off := max64(start, from); off < end && off < to && !full(sum); off++ {
				out = append(out, Record{Offset: off})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read %d/%d: %w", q.Topic, q.Queue, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	if next := out[len(out)-1].Offset + 1; next > hintAt && next < hintEnd {
		s.hints.set(q, next, hintAt)
	} else {
		s.hints.forget(q)
	}
	return out, nil
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Bounds finds the first offset of q with a forward seek to the queue's
// prefix and the end from the last segment, found with a reverse seek.
func (s *Badger) Bounds(q QueueID) (first, next uint64, ok bool, err error) {
	if err := s.acquire(); err != nil {
		return 0, 0, false, err
	}
	defer s.release()
	prefix := queuePrefix(q)
	err = s.view(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
		it.Seek(recordKey(q, 0))
		if !it.Valid() {
			it.Close()
			return nil
		}
		first, err = recordOffset(it.Item().Key())
		it.Close()
		if err != nil {
			return err
		}
		next, err = queueEnd(txn, q)
		ok = err == nil
		return err
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("store: bounds %d/%d: %w", q.Topic, q.Queue, err)
	}
	if !ok {
		return 0, 0, false, nil
	}
	return first, next, true, nil
}

// GetMeta returns a copy of the metadata value of key, or ErrNotFound.
func (s *Badger) GetMeta(key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	var v []byte
	err := s.view(func(txn *badger.Txn) error {
		item, err := txn.Get(metaKey(key))
		if err != nil {
			return err
		}
		v, err = valueCopy(item)
		return err
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("store: get meta %q: %w", key, err)
	}
	return v, nil
}

// scanChunk is how many metadata pairs ScanMeta copies per transaction.
const scanChunk = 256

// ScanMeta calls fn, in key order, for every metadata key with the prefix.
// Pairs are copied out in chunks and fn runs outside any transaction or
// lock, so it may call back into the store; a scan is therefore not one
// snapshot: keys written during it may or may not be seen.
func (s *Badger) ScanMeta(prefix []byte, fn func(key, value []byte) error) error {
	return s.scanMeta(prefix, false, func(k, v []byte, _ error) error { return fn(k, v) })
}

// DamagedMetaScanner is a store whose metadata scan can go on past a value
// it cannot read back: fn then gets the key, no value and an error
// matching ErrDamaged (a machine crash lost the value's bytes from
// Badger's value log while its key survived).
type DamagedMetaScanner interface {
	// ScanMetaDamaged calls fn, in key order, for every metadata key with
	// the prefix, as ScanMeta does; for a value it cannot read back, with
	// a nil value and the error.
	ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error
}

// ScanMetaDamaged is ScanMeta going on past values it cannot read back
// (DamagedMetaScanner).
func (s *Badger) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	return s.scanMeta(prefix, true, fn)
}

func (s *Badger) scanMeta(prefix []byte, tolerate bool, fn func(key, value []byte, damaged error) error) error {
	type kv struct {
		k, v    []byte
		damaged error
	}
	full := metaKey(prefix)
	seek := full
	batch := make([]kv, 0, scanChunk)
	for {
		if err := s.acquire(); err != nil {
			return err
		}
		batch = batch[:0]
		err := s.view(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = full
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek(seek); it.Valid() && len(batch) < scanChunk; it.Next() {
				item := it.Item()
				v, err := valueCopy(item)
				if err != nil {
					if !tolerate || !errors.Is(err, ErrDamaged) {
						return fmt.Errorf("key %q: %w", item.Key()[1:], err)
					}
					v, err = nil, fmt.Errorf("key %q: %w", item.Key()[1:], err)
				}
				batch = append(batch, kv{item.KeyCopy(nil)[1:], v, err})
			}
			return nil
		})
		s.release()
		if err != nil {
			return fmt.Errorf("store: scan meta %q: %w", prefix, err)
		}
		for _, e := range batch {
			if err := fn(e.k, e.v, e.damaged); err != nil {
				return err
			}
		}
		if len(batch) < scanChunk {
			return nil
		}
		// The smallest key after the last one seen.
		seek = append(metaKey(batch[len(batch)-1].k), 0)
	}
}
