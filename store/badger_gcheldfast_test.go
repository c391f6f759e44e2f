package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A held GC round's moved values need no Badger Sync of their own: the
// round's sync that stopped short had done Badger's (the value log and
// the active memtable's log) before it failed to list the memtable logs,
// and what it left unflushed is in those logs, which any Sync that
// succeeds flushes from the last look's newest on, the shortcut's
// included. The Sync letting the round go used to make a full Badger
// Sync after its own, under the lock that keeps a Restore off, so every
// Sync while a round was held paid for two. Now the Sync's own work, begun
// after it took the round, lets it go.
func TestBadgerSync_LetsAHeldRoundGoWithItsOwnSync(t *testing.T) {
	useShortcut(t)
	dir := t.TempDir()
	s, before, failing := heldRoundStore(t, dir)
	defer func() { require.NoError(t, s.Close()) }()
	// The round ended after its own Badger Sync began: the next Sync is
	// Badger's whatever it holds. Still unable to list the logs, it fails.
	require.ErrorIs(t, s.Sync(), ErrSyncIncomplete)

	failing.Store(false)
	syncs := countDBSyncs(s)
	require.NoError(t, s.Sync())
	assert.Equal(t, 0, syncs(), "the memtable logs flushed are all the held round needs")
	after := vlogFileSet(t, dir)
	var gone []string
	for f := range before {
		if !after[f] {
			gone = append(gone, f)
		}
	}
	assert.NotEmpty(t, gone, "the Sync let the round's emptied files go")

	require.NoError(t, s.Close())
	s, err := OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	assert.Len(t, keptRecords(t, s), 400, "kept records after a reopen")
}
