package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

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
//
// The memtables set aside never fill Badger's flush queue here: Badger
// retries a flush that found no descriptor free until one is, and a
// commit that had to wait for that flush, with the limit held until
// Restore returned, waited forever. With one CPU the load often took the
// last descriptor for a memtable before the flush ran.
func TestHuntStore_RestoreLoadThatLosesTheMemtable(t *testing.T) {
	opts := store.BadgerOptions{MemTableSize: 1 << 20}
	src, err := store.OpenBadger(t.TempDir(), &opts)
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

	// More memtables may wait for a flush than the load sets aside: no
	// commit waits for a flush, and each rotation takes a descriptor.
	opts.NumMemtables = 16
	restore := fdlimit.Save(t)
	lost := 0
	// From a limit below descriptors the store holds (the drop closes
	// some) to a few free: the load runs out of them at one rotation or
	// another. Room counts the free descriptors below the limit, holes
	// that earlier closes left included.
	for room := -6; room <= 8; room++ {
		dir := t.TempDir()
		s, err := store.OpenBadger(dir, &opts)
		require.NoError(t, err)
		require.NoError(t, s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("m"), Value: []byte("v")}}}))
		fdlimit.Leave(t, room)
		restored := make(chan error, 1)
		go func() { restored <- s.Restore(bytes.NewReader(snapshot.Bytes())) }()
		var rerr error
		select {
		case rerr = <-restored:
			restore()
		case <-time.After(2 * time.Minute):
			restore()
			require.FailNow(t, "Restore does not return", "room %d", room)
		}

		werr := s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("m"), Value: []byte("w")}}})
		if errors.Is(rerr, store.ErrUnusable) {
			require.ErrorIs(t, werr, store.ErrUnusable, "room %d: a Write after a Restore that made the store unusable", room)
		}
		require.NoError(t, s.Close())
		if !errors.Is(rerr, store.ErrUnusable) {
			continue
		}
		// The drop may lose the memtable too: the load lost it when the
		// mark of a restore in progress, durable before the load, is
		// there after a reopen.
		s, err = store.OpenBadger(dir, &opts)
		require.NoError(t, err, "room %d", room)
		cut, err := s.RestoreCutShort()
		require.NoError(t, err, "room %d", room)
		require.NoError(t, s.Close())
		if cut {
			lost++
		}
	}
	require.NotZero(t, lost, "no Restore's load lost the memtable")
}
