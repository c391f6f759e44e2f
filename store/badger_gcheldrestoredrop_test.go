package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldSnapshot returns a snapshot of s.
func heldSnapshot(t *testing.T, s *Badger) []byte {
	t.Helper()
	sn, err := s.Snapshot()
	require.NoError(t, err)
	defer sn.Release()
	var snap bytes.Buffer
	_, err = sn.WriteTo(&snap)
	require.NoError(t, err)
	return snap.Bytes()
}

var errInjectedDrop = errors.New("injected: drop failed")

// A Restore with a GC round held, whose moved values are still not
// durable, must not let the round's emptied file go before its drop
// succeeded: when the drop then fails, the store keeps everything it held,
// and that file is the only synced copy of the moved values. It used to
// let the round go first, and a failed drop left the store with the file
// deleted and the moved values in logs no fsync reached.
func TestBadgerRestore_FailedDropKeepsTheHeldRoundsFile(t *testing.T) {
	dir := t.TempDir()
	s, before, failing := heldRoundStore(t, dir)
	snap := heldSnapshot(t, s)
	s.dropAll = func() error { return errInjectedDrop }

	err := s.Restore(bytes.NewReader(snap))
	require.ErrorIs(t, err, ErrRestoreRefused, "refused while the moved values cannot be made durable")
	require.ErrorIs(t, err, ErrSyncIncomplete)
	after := vlogFileSet(t, dir)
	for f := range before {
		assert.True(t, after[f], "%s deleted by a Restore whose drop failed, the moved values not durable", f)
	}
	assert.Len(t, keptRecords(t, s), 400, "the store is as before the Restore")

	failing.Store(false)
	require.NoError(t, s.Sync(), "a Sync that lists the logs makes the moved values durable")
	require.NoError(t, s.Close())
	s, err = OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	assert.Len(t, keptRecords(t, s), 400, "kept records after a reopen")
}

// With the logs listable again, a Restore whose drop fails leaves the
// store as it was: the round, let go once a sync made its moved values
// durable, takes nothing with it.
func TestBadgerRestore_FailedDropAfterTheHeldRoundSynced(t *testing.T) {
	dir := t.TempDir()
	s, _, failing := heldRoundStore(t, dir)
	snap := heldSnapshot(t, s)
	failing.Store(false)
	s.dropAll = func() error { return errInjectedDrop }

	require.ErrorIs(t, s.Restore(bytes.NewReader(snap)), errInjectedDrop)
	assert.Len(t, keptRecords(t, s), 400, "the store is as before the Restore")
	require.NoError(t, s.Close())
	s, err := OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	assert.Len(t, keptRecords(t, s), 400, "kept records after a reopen")
}
