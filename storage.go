package equeue

import "github.com/equeue-go/equeue/store"

// Store is the persistence the engine needs. store.Badger and store.Memory
// implement it; store's conformance suite holds both to the same behaviour.
// A custom Store must be safe for concurrent use and make Write atomic.
type Store interface {
	// Write applies b atomically. It need not be durable until Sync.
	Write(b *store.Batch) error
	// Sync makes every earlier Write durable.
	Sync() error
	// Read returns records of q with offsets in [from, to), ascending, at
	// most max records and about maxBytes of values (at least one record).
	// Records the store holds in a format version it cannot read (such as
	// store.Badger's segments of a later version) are not damage: Read
	// returns the records before them and fails with an error matching
	// store.ErrUnsupportedFormat when there are none.
	Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error)
	// Bounds returns q's first offset and last offset + 1; ok is false when
	// empty. It fails with an error matching store.ErrUnsupportedFormat when
	// q ends in records of a format version the store cannot read.
	Bounds(q store.QueueID) (first, next uint64, ok bool, err error)
	// DeleteRange deletes q's records with offsets in [from, to).
	DeleteRange(q store.QueueID, from, to uint64) error
	// DropQueue deletes every record of q.
	DropQueue(q store.QueueID) error
	// GetMeta returns the value of a metadata key or an error matching store.ErrNotFound.
	GetMeta(key []byte) ([]byte, error)
	// ScanMeta calls fn for each metadata key with the prefix, in key order.
	ScanMeta(prefix []byte, fn func(key, value []byte) error) error
	// Size returns the bytes the store occupies.
	Size() (int64, error)
	// Limits reports the largest batch Write accepts.
	Limits() store.Limits
	// Reclaim gives the space of deleted records back.
	Reclaim() error
	// Close flushes and releases the store.
	Close() error
}

var (
	_ Store = (*store.Badger)(nil)
	_ Store = (*store.Memory)(nil)
)
