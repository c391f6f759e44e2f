// Package faultstore wraps a store with injectable failures and delays, so
// tests can prove what the engine promises when a Write, a Sync or a range
// delete fails or stalls.
//
// A failed Write never reaches the wrapped store (the batch is "not stored");
// a failed Sync happens after the earlier Writes were applied (they are
// "stored but not known durable"), which is what a real fsync error leaves.
package faultstore

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// Store is the engine's store interface, which FS wraps and implements.
type Store = equeue.Store

var _ Store = (*FS)(nil)

// ErrInjected is the error the convenience methods inject.
var ErrInjected = errors.New("faultstore: injected failure")

// FS is a Store whose Write, Sync and DeleteRange can be made to fail or
// wait. The zero hooks pass every call through. Safe for concurrent use.
type FS struct {
	Store

	mu          sync.Mutex
	writeHook   func(b *store.Batch) error
	syncHook    func() error
	deleteHook  func(q store.QueueID, from, to uint64) error
	failWrites  int
	failSyncs   int
	failDeletes int
	writeDelay  time.Duration
	syncDelay   time.Duration

	writes, syncs, writeFails, syncFails atomic.Int64
}

// New wraps s.
func New(s Store) *FS { return &FS{Store: s} }

// FailWrites makes the next n Writes return ErrInjected without writing.
func (f *FS) FailWrites(n int) { f.mu.Lock(); f.failWrites = n; f.mu.Unlock() }

// FailSyncs makes the next n Syncs return ErrInjected (after the Writes
// before them were applied).
func (f *FS) FailSyncs(n int) { f.mu.Lock(); f.failSyncs = n; f.mu.Unlock() }

// FailDeletes makes the next n DeleteRange calls return ErrInjected without deleting.
func (f *FS) FailDeletes(n int) { f.mu.Lock(); f.failDeletes = n; f.mu.Unlock() }

// OnWrite sets a hook called before each Write; a non-nil error fails that
// Write without writing. nil removes the hook.
func (f *FS) OnWrite(h func(b *store.Batch) error) { f.mu.Lock(); f.writeHook = h; f.mu.Unlock() }

// OnSync sets a hook called before each Sync; a non-nil error fails that Sync.
func (f *FS) OnSync(h func() error) { f.mu.Lock(); f.syncHook = h; f.mu.Unlock() }

// OnDeleteRange sets a hook called before each DeleteRange; a non-nil error
// fails it without deleting.
func (f *FS) OnDeleteRange(h func(q store.QueueID, from, to uint64) error) {
	f.mu.Lock()
	f.deleteHook = h
	f.mu.Unlock()
}

// Delay makes every Write and Sync wait the given time first.
func (f *FS) Delay(write, sync time.Duration) {
	f.mu.Lock()
	f.writeDelay, f.syncDelay = write, sync
	f.mu.Unlock()
}

// Writes counts Write calls since New, failed ones included.
func (f *FS) Writes() int64 { return f.writes.Load() }

// Syncs counts Sync calls since New, failed ones included.
func (f *FS) Syncs() int64 { return f.syncs.Load() }

// WriteFailures counts the Write calls that were made to fail.
func (f *FS) WriteFailures() int64 { return f.writeFails.Load() }

// SyncFailures counts the Sync calls that were made to fail.
func (f *FS) SyncFailures() int64 { return f.syncFails.Load() }

// Write applies b unless a failure is due.
func (f *FS) Write(b *store.Batch) error {
	f.writes.Add(1)
	f.mu.Lock()
	hook, delay := f.writeHook, f.writeDelay
	fail := f.failWrites > 0
	if fail {
		f.failWrites--
	}
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	var err error
	if fail {
		err = ErrInjected
	} else if hook != nil {
		err = hook(b)
	}
	if err != nil {
		f.writeFails.Add(1)
		return err
	}
	return f.Store.Write(b)
}

// Sync syncs unless a failure is due.
func (f *FS) Sync() error {
	f.syncs.Add(1)
	f.mu.Lock()
	hook, delay := f.syncHook, f.syncDelay
	fail := f.failSyncs > 0
	if fail {
		f.failSyncs--
	}
	f.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	var err error
	if fail {
		err = ErrInjected
	} else if hook != nil {
		err = hook()
	}
	if err != nil {
		f.syncFails.Add(1)
		return err
	}
	return f.Store.Sync()
}

// DeleteRange deletes unless a failure is due.
func (f *FS) DeleteRange(q store.QueueID, from, to uint64) error {
	f.mu.Lock()
	hook := f.deleteHook
	fail := f.failDeletes > 0
	if fail {
		f.failDeletes--
	}
	f.mu.Unlock()
	if fail {
		return ErrInjected
	}
	if hook != nil {
		if err := hook(q, from, to); err != nil {
			return err
		}
	}
	return f.Store.DeleteRange(q, from, to)
}

// NewerFormatBody is the body of the messages that NewerFormat stores as
// an engine of a later record format would.
var NewerFormatBody = []byte("written by a newer engine")

// NewerFormat is a write hook (OnWrite) that stores the record of every
// message whose body is NewerFormatBody under record format version 3,
// which this build does not know: what a directory holds after an engine of
// a later format version wrote to it and an older one opened it again.
func NewerFormat(b *store.Batch) error {
	for i, en := range b.Entries {
		if len(en.Value) > 0 && bytes.HasSuffix(en.Value, NewerFormatBody) {
			v := bytes.Clone(en.Value)
			v[0] = 3
			b.Entries[i].Value = v
		}
	}
	return nil
}

// DamagedBody is the body of the messages that Damaged stores damaged.
var DamagedBody = []byte("damaged on the disk")

// Damaged is a write hook (OnWrite) that flips a bit in the last byte of
// the record of every message whose body is DamagedBody, so that the
// record fails its checksum: what a disk that damaged it leaves.
func Damaged(b *store.Batch) error {
	for i, en := range b.Entries {
		if len(en.Value) > 0 && bytes.HasSuffix(en.Value, DamagedBody) {
			v := bytes.Clone(en.Value)
			v[len(v)-1] ^= 0x01
			b.Entries[i].Value = v
		}
	}
	return nil
}
