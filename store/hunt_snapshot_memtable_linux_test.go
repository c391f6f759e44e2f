package store

import (
	"io"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"
)

// loseMemtableUnmarked leaves Badger without a memtable the way a failed
// Write does (a commit that must set the full memtable aside finds no file
// descriptor for the next one's log), but commits straight to Badger, so
// the store is not marked: the window between a commit losing the
// memtable and failedCommit marking the store, in which other calls may
// already have passed acquire.
func loseMemtableUnmarked(t *testing.T, s *Badger) {
	t.Helper()
	restore := lowerFileLimit(t)
	val := make([]byte, 500) // in the memtable, under ValueThreshold
	var err error
	for i := 0; i < 10_000 && err == nil; i++ {
		shutFileLimit(t) // again: a hole a compaction made since would let the rotation through
		err = s.db.Update(func(txn *badger.Txn) error {
			return txn.Set(metaKey([]byte{byte(i), byte(i >> 8)}), val)
		})
	}
	restore()
	require.Error(t, err, "no commit failed")
	require.True(t, s.memtableLost(), "the failed commit did not lose the memtable")
	require.NoError(t, s.lostMemtable(), "not marked yet")
}

// TestHuntStore_SnapshotWriteToAfterALostMemtable: a snapshot's WriteTo
// opened its iterator straight on Badger: one starting after a Write lost
// the memtable, before the store was marked, dereferenced the missing
// memtable and ended the process. It fails with ErrUnusable, and the
// snapshot can still be released and the store closed.
func TestHuntStore_SnapshotWriteToAfterALostMemtable(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), &BadgerOptions{MemTableSize: 1 << 20})
	require.NoError(t, err)
	q := QueueID{Topic: 1}
	require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 0, Value: []byte("x")}}}))
	sn, err := s.Snapshot()
	require.NoError(t, err)
	loseMemtableUnmarked(t, s)

	_, err = sn.WriteTo(io.Discard)
	require.ErrorIs(t, err, ErrUnusable)
	require.ErrorIs(t, s.lostMemtable(), ErrUnusable, "the store is marked")
	sn.Release()
	require.NoError(t, s.Close())
}
