package store

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
)

// A commit whose memtable rotation fails (no file descriptor left for the
// next memtable's log) leaves Badger without a memtable until the store
// marks itself unusable (failedCommit). A Sync reaching Badger's Sync in
// between dereferenced the missing memtable: a panic that ended the
// process, and that, recovered, would leave Badger's lock held, so its
// Close waited forever. The Sync is made here from inside that window (a
// Restore's load commit, which rotates the memtable, with the descriptors
// at their limit): it fails with ErrUnusable, Badger's Sync does not
// panic, and Close returns.
func TestBadgerSync_BesideAFailedRotationFailsInsteadOfCrashing(t *testing.T) {
	opts := &BadgerOptions{MemTableSize: 1 << 20}
	src, err := OpenBadger(t.TempDir(), opts)
	require.NoError(t, err)
	val := make([]byte, 500) // in the memtable, under ValueThreshold
	for i := range 40 {
		b := &Batch{}
		for j := range 100 {
			b.Meta = append(b.Meta, MetaOp{Key: fmt.Appendf(nil, "k-%03d-%03d", i, j), Value: val})
		}
		require.NoError(t, src.Write(b))
	}
	sn, err := src.Snapshot()
	require.NoError(t, err)
	var snapshot bytes.Buffer // 2 MB: the load rotates the 1 MiB memtable
	_, err = sn.WriteTo(&snapshot)
	sn.Release()
	require.NoError(t, err)
	require.NoError(t, src.Close())

	s, err := OpenBadger(t.TempDir(), opts)
	require.NoError(t, err)
	var panicked atomic.Value
	entered := make(chan struct{}, 16)
	s.dbSync = func() (err error) {
		entered <- struct{}{}
		defer func() {
			if r := recover(); r != nil {
				panicked.Store(fmt.Sprint(r))
				err = fmt.Errorf("badger's Sync panicked: %v", r)
			}
		}()
		return s.db.Sync()
	}
	gated := make(chan struct{}, 16)
	s.syncGated = func() { gated <- struct{}{} }

	restore := fdlimit.Save(t)
	syncErr := make(chan error, 1)
	failed := false
	s.loadCommit = func(txn *badger.Txn) error {
		fdlimit.Shut(t) // no file can be opened during the commit
		cerr := txn.Commit()
		restore()
		if cerr == nil || failed {
			return cerr
		}
		failed = true
		// Badger is without a memtable now, and the store not marked
		// yet: a Sync starts, and this commit returns once the Sync
		// reached Badger's Sync or waits to.
		go func() { syncErr <- s.Sync() }()
		select {
		case <-entered:
		case <-gated:
		}
		return cerr
	}
	rerr := s.Restore(bytes.NewReader(snapshot.Bytes()))
	require.True(t, failed, "no load commit failed its rotation (Restore: %v)", rerr)
	require.ErrorIs(t, rerr, ErrUnusable)
	serr := <-syncErr
	require.Nil(t, panicked.Load(), "Badger's Sync met the missing memtable")
	require.ErrorIs(t, serr, ErrUnusable, "the Sync beside the failed rotation")
	assert.ErrorIs(t, s.Sync(), ErrUnusable, "a later Sync")
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	require.NoError(t, <-closed, "Close returns")
}

// The Syncs that flush the memtable logs themselves (the shortcut, after
// writes that put nothing in the value log) do not wait for a commit in
// progress: the engine writes its next batch while the previous one
// syncs. Here a commit's hold of rotateMu is held by the test throughout
// the Sync.
func TestBadgerSync_ShortcutDoesNotWaitForACommit(t *testing.T) {
	useShortcut(t)
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	write := func(k string) {
		require.NoError(t, s.Write(&Batch{Meta: []MetaOp{{Key: []byte(k), Value: []byte("v")}}}))
	}
	write("a")
	require.NoError(t, s.Sync()) // Badger's: the first after the open
	write("b")
	dbSyncs := countDBSyncs(s)
	dbSyncs()
	s.rotateMu.Lock()
	done := make(chan error, 1)
	go func() { done <- s.Sync() }()
	var serr error
	select {
	case serr = <-done:
	case <-time.After(30 * time.Second):
		s.rotateMu.Unlock()
		t.Fatal("the Sync waited for the commit in progress")
	}
	s.rotateMu.Unlock()
	require.NoError(t, serr)
	assert.Zero(t, dbSyncs(), "the shortcut, not Badger's Sync")
}
