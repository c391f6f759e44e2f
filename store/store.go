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

import "errors"

// QueueID names one queue of one topic inside the store.
type QueueID struct {
	Topic uint32
	Queue uint32
}

// Entry is one record to append to a queue.
type Entry struct {
	Queue  QueueID
	Offset uint64
	Value  []byte
}

// MetaOp is one metadata change applied in the same atomic write as entries.
type MetaOp struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// Batch is applied atomically by Write: every entry and metadata change, or
// none of them.
type Batch struct {
	Entries []Entry
	Meta    []MetaOp
}

// Record is one record read back from a queue.
type Record struct {
	Offset uint64
	Value  []byte
}

// Limits says how large one atomic Batch may be. A zero field means no limit.
type Limits struct {
	// MaxEntries is the most entries plus metadata ops in one Batch.
	MaxEntries int
	// MaxBytes is the most bytes (keys plus values) in one Batch.
	MaxBytes int
}

var (
	// ErrNotFound is returned by GetMeta when the key does not exist.
	ErrNotFound = errors.New("store: not found")
	// ErrClosed is returned by any call on a closed store.
	ErrClosed = errors.New("store: closed")
	// ErrBatchTooLarge is returned by Write when a batch exceeds Limits.
	ErrBatchTooLarge = errors.New("store: batch too large")
)
