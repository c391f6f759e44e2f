package store

import (
	"errors"

	"github.com/dgraph-io/badger/v4"
)

// restoreLoad loads a snapshot's keys into Badger in plain transactions,
// committed one at a time: a transaction is committed, and the commit
// waited for, when the next key would take it past Badger's limits, and a
// new one begun. Badger's WriteBatch, which the load used before, sends a
// full transaction's commit and goes on; even with one commit pending at
// a time, its throttle let one more commit follow a failed one before the
// failure was seen. Here a failed commit is the last: the load stops at
// it, and failedCommit marks the store when that commit left Badger
// without a memtable.
type restoreLoad struct {
	s   *Badger
	txn *badger.Txn
}

func newRestoreLoad(s *Badger) *restoreLoad {
	return &restoreLoad{s: s, txn: s.db.NewTransaction(true)}
}

// set adds key and val to the transaction, committing it first when they
// do not fit in it. A key and value too large for a transaction of their
// own fail with Badger's ErrTxnTooBig.
func (l *restoreLoad) set(key, val []byte) error {
	err := l.txn.Set(key, val)
	if !errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	if err := l.commit(); err != nil {
		return err
	}
	l.txn = l.s.db.NewTransaction(true)
	return l.txn.Set(key, val)
}

// commit commits the transaction and waits for it; the load is over
// (cancel does nothing) whatever the outcome.
func (l *restoreLoad) commit() error {
	txn := l.txn
	l.txn = nil
	if l.s.loadCommit != nil {
		return l.s.rotating(func() error { return l.s.loadCommit(txn) })
	}
	return l.s.rotating(txn.Commit)
}

// cancel discards the transaction not committed, if any.
func (l *restoreLoad) cancel() {
	if l.txn != nil {
		l.txn.Discard()
		l.txn = nil
	}
}
