package store

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"
)

// After a failed fsync the OS may have marked the pages it could not write
// as clean, so a later fsync succeeds without writing them (see the
// engine's storefailure.go): no later Sync may vouch for the writes made
// before it. The engine stops writing when its own Sync fails, but a
// Reclaim syncs too, for the values a value-log GC round moved, and a
// failure there only failed the Reclaim. Found by review: the next Sync
// then did Badger's Sync again, which succeeded, and the engine answered
// the sends it covered "stored", on a log that may end at the lost pages.
// Every Sync after a failed one now fails with the first failure, until
// the store is opened again.
func TestBadger_SyncAfterAFailedFsyncFails(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBadger(dir, nil)
	require.NoError(t, err)
	q := QueueID{Topic: 1}
	write := func(off uint64) {
		t.Helper()
		require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: off, Value: []byte("record")}}}))
	}
	write(0)
	require.NoError(t, s.Sync())

	boom := errors.New("fsync: input/output error")
	var failing atomic.Bool
	dbSync := s.dbSync
	s.dbSync = func() error {
		if failing.CompareAndSwap(true, false) { // this call only
			return boom
		}
		return dbSync()
	}
	var rounds atomic.Int64
	s.runGC = func(float64) error {
		if rounds.Add(1) == 1 {
			return nil // a round that moved values: they are synced
		}
		return badger.ErrNoRewrite
	}
	failing.Store(true)
	require.ErrorIs(t, s.Reclaim(), boom, "the failed sync of the moved values fails Reclaim")
	require.False(t, failing.Load(), "Reclaim's sync failed")

	write(1) // a send's write, made after the failure
	require.ErrorIs(t, s.Sync(), boom, "a Sync after a failed fsync vouches for nothing")
	require.ErrorIs(t, s.Sync(), boom, "nor does the one after it")

	// Nor does the store move values it could not make durable, or drop
	// what it holds for a snapshot it could not sync.
	was := rounds.Load()
	require.ErrorIs(t, s.Reclaim(), boom)
	require.Equal(t, was, rounds.Load(), "no GC round after a failed fsync")
	err = s.Restore(bytes.NewReader(nil))
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, err, ErrRestoreRefused)
	_, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.Equal(t, []any{uint64(2), true}, []any{next, ok}, "the store keeps its records")
	require.NoError(t, s.Close())

	s, err = OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	write(2)
	require.NoError(t, s.Sync(), "a store opened again syncs")
}
