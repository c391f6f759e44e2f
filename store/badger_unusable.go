package store

import (
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// ErrUnusable is returned (wrapped with the failure that caused it) by
// every call but Close on a Badger store left without a memtable to write
// to: a Write that had to set a full memtable aside failed to create the
// next one (no file descriptor or disk space left for its log). Badger
// cannot read or write any more then; the write that failed, committed
// on its own, stored nothing, every earlier Write is kept, and closing and
// opening the store again makes it usable.
var ErrUnusable = errors.New("store: unusable until reopened: a failed write left Badger without a memtable")

// failedCommit is called with the error of a failed Badger commit (err
// may be nil: it is then returned as is). A commit that had to set the
// full memtable aside and could not create the next one's log leaves
// Badger with no memtable at all: its next read or write would
// dereference nil (and a commit would end the process with log.Fatal).
// Badger does not say so, so the store asks it with a read that would
// fail that way; when it
// does, the store refuses every later call but Close with ErrUnusable,
// and so does the write that failed (which, committed on its own, stored
// nothing: Badger makes room before it writes a transaction to a
// memtable). Every commit of the store (a value-log GC round's too:
// runGCAlone) holds wmu (or dropMu for writing)
// and calls failedCommit before it lets go, so the failed commit was
// alone in Badger's write batch and no other one reaches Badger's commit
// before the store is marked.
func (s *Badger) failedCommit(err error) error {
	if err == nil || !s.memtableLost() {
		return err
	}
	unusable := fmt.Errorf("%w: %w", ErrUnusable, err)
	if s.unusable.CompareAndSwap(nil, &unusable) {
		return unusable
	}
	return fmt.Errorf("%w: %w", *s.unusable.Load(), err)
}

// lostMemtable returns the error that makes the store unusable, or nil.
// A call checks it as it starts (acquire), and a commit checks it again
// once it holds wmu (or dropMu for writing): it may have waited there
// while the commit before it left Badger without a memtable.
func (s *Badger) lostMemtable() error {
	if p := s.unusable.Load(); p != nil {
		return *p
	}
	return nil
}

// memtableLost reports whether Badger has lost its memtable: a point read
// of a key the store never writes panics then.
func (s *Badger) memtableLost() (lost bool) {
	defer func() {
		if recover() != nil {
			lost = true
		}
	}()
	_ = s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(memtableProbeKey)
		return err
	})
	return false
}

// memtableProbeKey is a key no store writes (metadata keys, records and
// marks all start with another byte): memtableLost reads it.
var memtableProbeKey = []byte{0xff, 'p', 'r', 'o', 'b', 'e'}

// view is Badger's View for the store's reads. A read that passed acquire
// before a failed commit left Badger without a memtable (the store is
// marked once the commit returns) panics in Badger: view recovers that
// panic, marks the store unusable, and fails with ErrUnusable. Any other
// panic goes on.
func (s *Badger) view(fn func(txn *badger.Txn) error) (err error) {
	defer s.recoverLost(&err)
	return s.db.View(fn)
}

// recoverLost, deferred, recovers a panic of Badger's missing memtable:
// it marks the store unusable and sets *err to ErrUnusable. Any other
// panic goes on.
func (s *Badger) recoverLost(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if !s.memtableLost() {
		panic(r)
	}
	lost := fmt.Errorf("%w: a read met the missing memtable", ErrUnusable)
	s.unusable.CompareAndSwap(nil, &lost)
	*err = s.lostMemtable()
}

// newIterator is txn.NewIterator for a read that may meet Badger's
// missing memtable (view). On ErrUnusable, txn holds an iterator that was
// never made: it is to be left, not discarded (Badger panics on a
// discard with an iterator open).
func (s *Badger) newIterator(txn *badger.Txn, opt badger.IteratorOptions) (it *badger.Iterator, err error) {
	defer s.recoverLost(&err)
	return txn.NewIterator(opt), nil
}

// badgerSync is Badger's Sync (dbSync), which dereferences the memtable:
// on a store known to be without one (a failed rotation) it fails with
// ErrUnusable instead, as a Close letting a held GC round go
// (badger_gcheld.go) would reach it. It holds rotateMu for reading, so no
// rotation can fail between its check and its end: a commit that may
// rotate waits for it, and it waits for such a commit until failedCommit
// has marked the store. Without that, Badger's Sync met the missing
// memtable with a nil dereference, with its lock held (recovering the
// panic would leave Badger's Close waiting for that lock forever).
func (s *Badger) badgerSync() error {
	if !s.rotateMu.TryRLock() {
		if s.syncGated != nil {
			s.syncGated()
		}
		s.rotateMu.RLock()
	}
	defer s.rotateMu.RUnlock()
	if err := s.lostMemtable(); err != nil {
		return err
	}
	return s.dbSync()
}

// rotating runs call, a Badger call that may set the memtable aside and
// create the next one (a commit, a drop, a value-log GC round), with
// rotateMu held, and returns its error checked by failedCommit: no Badger
// Sync runs between a failed rotation and the mark of the store. A panic
// of Badger's missing memtable in call (recoverLost) marks the store too.
func (s *Badger) rotating(call func() error) (err error) {
	s.rotateMu.Lock()
	defer s.rotateMu.Unlock()
	defer s.recoverLost(&err)
	return s.failedCommit(call())
}
