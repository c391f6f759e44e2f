package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
	"github.com/equeue-go/equeue/store"
)

// A Restore loads the snapshot through Badger's write batches, which
// committed up to 16 transactions at once without waiting for the one
// before: when one of them had to set the full memtable aside and could
// not create the next one's log (no file descriptor left), a commit sent
// behind it before it failed would meet the missing memtable in Badger's
// commit, which ends the process ("Assert failed"). The load now commits
// one transaction at a time, so the failed commit is the last: Restore
// fails with ErrUnusable, and so does every later call but Close. (The
// window is narrow: this test ran without the crash before the change
// too; it holds the outcome of a load that loses the memtable.)
func TestHuntStore_RestoreLoadThatLosesTheMemtable(t *testing.T) {
	opts := &store.BadgerOptions{MemTableSize: 1 << 20}
	src, err := store.OpenBadger(t.TempDir(), opts)
	require.NoError(t, err)
	val := make([]byte, 500) // in the memtable, under ValueThreshold
	for i := 0; i < 100; i++ {
		b := &store.Batch{}
		for j := 0; j < 100; j++ {
			b.Meta = append(b.Meta, store.MetaOp{Key: fmt.Appendf(nil, "k-%d-%d", i, j), Value: val})
		}
		require.NoError(t, src.Write(b))
	}
	sn, err := src.Snapshot()
	require.NoError(t, err)
	var snapshot bytes.Buffer // 5 MB: the load sets several memtables aside
	_, err = sn.WriteTo(&snapshot)
	sn.Release()
	require.NoError(t, err)
	require.NoError(t, src.Close())

	restore := fdlimit.Save(t)
	lost := 0
	// From a limit below descriptors the store holds (the drop closes
	// some) to a few free: the load runs out of them at one rotation or
	// another. Room counts the free descriptors below the limit, holes
	// that earlier closes left included.
	for room := -6; room <= 8; room++ {
		s, err := store.OpenBadger(t.TempDir(), opts)
		require.NoError(t, err)
		require.NoError(t, s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("m"), Value: []byte("v")}}}))
		fdlimit.Leave(t, room)
		rerr := s.Restore(bytes.NewReader(snapshot.Bytes()))
		restore()

		werr := s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("m"), Value: []byte("w")}}})
		if errors.Is(rerr, store.ErrUnusable) {
			lost++
			require.ErrorIs(t, werr, store.ErrUnusable, "room %d: a Write after a Restore that made the store unusable", room)
		}
		require.NoError(t, s.Close())
	}
	require.NotZero(t, lost, "no Restore lost the memtable")
}
