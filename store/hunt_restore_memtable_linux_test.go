package store_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
	"github.com/equeue-go/equeue/store"
)

// A Restore drops everything first, and Badger's drop sets up a new
// memtable: when it could not (no file descriptor left for its log),
// Badger was left without a memtable, but Restore failed without marking
// the store, and the next Write met the missing memtable in Badger's
// commit, which ended the process ("Assert failed"). Such a Restore now
// fails with ErrUnusable, and so does every later call but Close.
func TestHuntStore_RestoreThatLosesTheMemtableMakesTheStoreUnusable(t *testing.T) {
	restore := fdlimit.Save(t)
	lost := 0
	// The limit lower and lower below the lowest free descriptor (every
	// one under it taken): the drop, which closes files before it opens
	// others, fails at one step or another of it, the new memtable's log
	// among them.
	for short := 1; short <= 12; short++ {
		s, err := store.OpenBadger(t.TempDir(), &store.BadgerOptions{MemTableSize: 1 << 20})
		require.NoError(t, err)
		q := store.QueueID{Topic: 1}
		require.NoError(t, s.Write(&store.Batch{
			Entries: []store.Entry{{Queue: q, Offset: 0, Value: []byte("x")}},
			Meta:    []store.MetaOp{{Key: []byte("m"), Value: []byte("v")}},
		}))
		sn, err := s.Snapshot()
		require.NoError(t, err)
		var snapshot bytes.Buffer
		_, err = sn.WriteTo(&snapshot)
		sn.Release()
		require.NoError(t, err)

		fdlimit.Leave(t, -short)
		rerr := s.Restore(bytes.NewReader(snapshot.Bytes()))
		restore()

		werr := s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("m"), Value: []byte("w")}}})
		if errors.Is(rerr, store.ErrUnusable) {
			lost++
			require.ErrorIs(t, werr, store.ErrUnusable, "a Write after a Restore that made the store unusable")
		}
		require.NoError(t, s.Close())
	}
	require.NotZero(t, lost, "no Restore lost the memtable")
}
