package store

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Sync that took the held GC rounds to let them go, and is still
// syncing, must not close their iterator after a Restore dropped every
// file: Badger would then delete the file the round emptied by its number,
// which after the drop names the fresh value-log file the snapshot loads
// into. So a Restore waits for such a release to end before it drops
// anything.
func TestBadgerRestore_WaitsForAHeldRoundReleasedByASync(t *testing.T) {
	dir := t.TempDir()
	s, _, failing := heldRoundStore(t, dir)
	sn, err := s.Snapshot()
	require.NoError(t, err)
	var snap bytes.Buffer
	_, err = sn.WriteTo(&snap)
	require.NoError(t, err)
	sn.Release()
	failing.Store(false)

	heldCount := func() int {
		s.held.mu.Lock()
		defer s.held.mu.Unlock()
		return len(s.held.dones)
	}
	entered, proceed := make(chan struct{}), make(chan struct{})
	var blocked atomic.Bool
	list := s.wals.listLogs
	s.wals.listLogs = func() ([]int, error) {
		// Every Sync lists the logs, the release's own included.
		defer s.wals.touch()
		if heldCount() == 0 && blocked.CompareAndSwap(false, true) {
			close(entered) // the Sync's release took the rounds
			<-proceed
		}
		return list()
	}
	synced := make(chan error, 1)
	go func() { synced <- s.Sync() }()
	<-entered
	restored := make(chan error, 1)
	go func() { restored <- s.Restore(bytes.NewReader(snap.Bytes())) }()
	// Give the Restore every chance to drop the files under the held
	// round before the release goes on; with the fix it waits for it.
	select {
	case err := <-restored:
		t.Fatalf("the Restore ended while a release was under way: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	close(proceed)
	require.NoError(t, <-synced)
	require.NoError(t, <-restored)
	require.NoError(t, s.Sync())
	assert.Len(t, keptRecords(t, s), 400, "kept records after the restore")
	require.NoError(t, s.Close())

	s, err = OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	assert.Len(t, keptRecords(t, s), 400, "kept records after a reopen")
}
