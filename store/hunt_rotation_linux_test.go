package store_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
	"github.com/equeue-go/equeue/store"
)

// A Write that makes Badger set its full memtable aside fails when the
// file of the next memtable cannot be created (here: no file descriptor
// left, as on a server at its open-files limit). Badger is then left
// without a memtable to write to: the store's next read or write
// panicked on it (a commit would stop the process with log.Fatal). The
// store refuses every call but Close with ErrUnusable instead, and a
// reopen holds every Write that succeeded and nothing of the one that
// failed.
func TestHuntStore_FailedMemtableRotationLeavesTheStoreClosable(t *testing.T) {
	dir := t.TempDir()
	s, err := store.OpenBadger(dir, &store.BadgerOptions{MemTableSize: 1 << 20})
	require.NoError(t, err)
	q := store.QueueID{Topic: 1}
	val := make([]byte, 500)
	batch := func(from uint64) *store.Batch {
		b := &store.Batch{}
		for off := from; off < from+10; off++ {
			b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off, Value: val})
		}
		return b
	}

	restore := fdlimit.Save(t)
	var (
		failedAt uint64
		werr     error
	)
	// 1 MiB memtables of 5 KB writes: a rotation within a few hundred.
	for off := uint64(0); off < 100_000; off += 10 {
		// No descriptor left to open, shut again before each Write: one
		// that Badger's flushes and compactions closed meanwhile would
		// let the rotation through.
		fdlimit.Shut(t)
		if werr = s.Write(batch(off)); werr != nil {
			failedAt = off
			break
		}
	}
	restore()
	require.Error(t, werr, "a Write needing a new memtable file fails")

	_, _, _, err = s.Bounds(q)
	require.ErrorIs(t, err, store.ErrUnusable)
	_, err = s.Read(q, 0, 10, 10, 1<<20)
	require.ErrorIs(t, err, store.ErrUnusable)
	require.ErrorIs(t, s.Write(batch(failedAt)), store.ErrUnusable)
	require.ErrorIs(t, s.Sync(), store.ErrUnusable)
	require.NoError(t, s.Close())

	s, err = store.OpenBadger(dir, &store.BadgerOptions{MemTableSize: 1 << 20})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	first, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(0), first)
	require.Equal(t, failedAt, next, "every Write that succeeded, nothing of the one that failed")
	require.NoError(t, s.Write(batch(next)), "writes go on after the reopen")
}
