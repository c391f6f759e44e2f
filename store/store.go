// Package store holds the persistence layer of equeue: a Badger-backed
// store for engines opened on a directory, an in-memory store with the same
// behaviour, and the conformance suite both pass.
//
// The store is deliberately ignorant of messages. It keeps, per queue, an
// ordered sequence of opaque records addressed by a dense uint64 offset, plus
// a flat key/value space for metadata (topics, committed offsets, indexes).
// Message encoding, checksums and offset assignment belong to the engine.
//
// Every method is safe for concurrent use. Values returned to callers are
// copies the caller may keep and modify.
package store

import (
	"errors"
	"fmt"
	"math"
)

// QueueID names one queue of one topic inside the store.
type QueueID struct {
	// Topic is the engine's numeric ID of the topic.
	Topic uint32
	// Queue is the queue number within the topic.
	Queue uint32
}

// Entry is one record to append to a queue.
type Entry struct {
	// Queue is the queue the record belongs to.
	Queue QueueID
	// Offset addresses the record inside its queue. It must be below
	// math.MaxUint64, so that "last offset + 1" is always representable.
	Offset uint64
	// Value is the encoded record; the store keeps it as given.
	Value []byte
}

// MetaOp is one metadata change applied in the same atomic write as entries.
type MetaOp struct {
	// Key is the metadata key.
	Key []byte
	// Value is the new value of Key (ignored when Delete is set).
	Value []byte
	// Delete removes Key instead of setting it.
	Delete bool
}

// Batch is applied atomically by Write: every entry and metadata change, or
// none of them.
type Batch struct {
	// Entries are the records to append.
	Entries []Entry
	// Meta are the metadata changes written with them.
	Meta []MetaOp
}

// Record is one record read back from a queue.
type Record struct {
	// Offset is the record's offset in its queue.
	Offset uint64
	// Value is the record as it was written.
	Value []byte
}

// Limits says how large one atomic Batch may be. A zero field means no limit.
//
// Limits count what a Batch carries. An entry at an offset a Badger store
// already holds also rewrites, in the same transaction, the whole segment
// holding that offset (BadgerOptions.SegmentBytes), which no Limits can
// know of: a batch of such entries within Limits may then need more than
// one transaction, and Write refuses it with ErrBatchTooLarge, storing
// none of it. Appends past a queue's end, the only records the engine
// writes, rewrite nothing.
type Limits struct {
	// MaxEntries is the most entries plus metadata ops in one Batch.
	MaxEntries int
	// MaxBytes is the most bytes (keys plus values) in one Batch: an Entry
	// counts ValueCost of its Value, a MetaOp the length of its Key plus its
	// Value. See Limits.Cost.
	MaxBytes int
	// ValueThreshold, when positive, is the value length from which an entry
	// value is kept out of line (Badger's value log) and counts only
	// PointerCost bytes against MaxBytes.
	ValueThreshold int
	// MaxValueSize, when positive, is the largest single entry value.
	MaxValueSize int
}

// PointerCost is what an out-of-line value weighs against MaxBytes.
const PointerCost = 12

// ValueCost is what an entry value of n bytes weighs against MaxBytes.
func (l Limits) ValueCost(n int) int {
	if l.ValueThreshold > 0 && n >= l.ValueThreshold {
		return PointerCost
	}
	return n
}

// Cost returns what b weighs against l: the number of entries plus
// metadata ops, and the bytes they carry (ValueCost of entry values,
// metadata keys and metadata values).
func (l Limits) Cost(b *Batch) (ops, bytes int) {
	if b == nil {
		return 0, 0
	}
	for i := range b.Entries {
		bytes += l.ValueCost(len(b.Entries[i].Value))
	}
	for i := range b.Meta {
		bytes += len(b.Meta[i].Key) + len(b.Meta[i].Value)
	}
	return len(b.Entries) + len(b.Meta), bytes
}

// MaxKeyBytes bounds the metadata keys of what a replicated store's leader
// proposes (KeysFit): below what Badger takes (BadgerMaxKeyBytes), which
// Write enforces in every store.
const MaxKeyBytes = 60000

// Allows reports whether b is within l, counting as Limits.Cost does. A zero
// field of l does not limit.
func (l Limits) Allows(b *Batch) bool {
	if l.MaxValueSize > 0 {
		for i := range b.Entries {
			if len(b.Entries[i].Value) > l.MaxValueSize {
				return false
			}
		}
	}
	ops, bytes := l.Cost(b)
	if l.MaxEntries > 0 && ops > l.MaxEntries {
		return false
	}
	if l.MaxBytes > 0 && bytes > l.MaxBytes {
		return false
	}
	return true
}

// BadgerMaxKeyBytes is the longest metadata key Badger itself takes (its
// limit is 65,000 bytes with the store's one-byte prefix). Every store's
// Write refuses a batch with a longer one, as Badger would, so that nodes
// of a replicated store, of every version, treat an entry alike.
const BadgerMaxKeyBytes = 65000 - 1

// KeysFit reports whether every metadata key of b is at most MaxKeyBytes.
func KeysFit(b *Batch) bool { return keysAtMost(b, MaxKeyBytes) }

// KeysFitBadger reports whether every metadata key of b is at most
// BadgerMaxKeyBytes.
func KeysFitBadger(b *Batch) bool { return keysAtMost(b, BadgerMaxKeyBytes) }

func keysAtMost(b *Batch, n int) bool {
	if b == nil {
		return true
	}
	for i := range b.Meta {
		if len(b.Meta[i].Key) > n {
			return false
		}
	}
	return true
}

// checkBatch validates b against l before anything is written.
func checkBatch(b *Batch, l Limits) error {
	if !KeysFitBadger(b) {
		return fmt.Errorf("%w: a metadata key is longer than %d bytes", ErrBatchTooLarge, BadgerMaxKeyBytes)
	}
	if !l.Allows(b) {
		ops, bytes := l.Cost(b)
		return fmt.Errorf("%w: %d ops and %d bytes, limits are %d ops and %d bytes",
			ErrBatchTooLarge, ops, bytes, l.MaxEntries, l.MaxBytes)
	}
	for i := range b.Entries {
		if b.Entries[i].Offset == math.MaxUint64 {
			return fmt.Errorf("store: entry %d of queue %d/%d: offset %d is reserved",
				i, b.Entries[i].Queue.Topic, b.Entries[i].Queue.Queue, b.Entries[i].Offset)
		}
	}
	return nil
}

var (
	// ErrNotFound is returned by GetMeta when the key does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrClosed is returned by any call on a closed store.
	ErrClosed = errors.New("store: closed")
	// ErrBatchTooLarge is returned by Write when a batch exceeds Limits,
	// or when the segments a write into existing records rewrites make it
	// larger than one transaction (Limits). Nothing of the batch is stored.
	ErrBatchTooLarge = errors.New("store: batch too large")
	// ErrLocked is returned by OpenBadger when another open store (in this
	// process or another one) holds the directory.
	ErrLocked = errors.New("store: directory is in use by another open store")
)

// ErrUnsupportedFormat is returned (wrapped, naming the version) when a
// segment carries a format version this build cannot read, such as one a
// newer store wrote before an older one opened the directory. Such a
// segment is not damage: Read stops before it, and no write or deletion
// rewrites it.
var ErrUnsupportedFormat = errors.New("store: unsupported segment format version")
