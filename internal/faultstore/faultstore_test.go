package faultstore_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

func TestFS_FailuresAndPassThrough(t *testing.T) {
	f := faultstore.New(store.NewMemory())
	defer f.Close()
	q := store.QueueID{Topic: 1, Queue: 0}
	batch := func(off uint64) *store.Batch {
		return &store.Batch{Entries: []store.Entry{{Queue: q, Offset: off, Value: []byte("v")}}}
	}

	f.FailWrites(1)
	require.ErrorIs(t, f.Write(batch(0)), faultstore.ErrInjected)
	_, _, ok, err := f.Bounds(q)
	require.NoError(t, err)
	require.False(t, ok, "a failed Write writes nothing")

	f.FailSyncs(1)
	require.NoError(t, f.Write(batch(0)))
	require.ErrorIs(t, f.Sync(), faultstore.ErrInjected)
	_, next, ok, err := f.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok, "a failed Sync leaves the earlier Write applied")
	require.Equal(t, uint64(1), next)
	require.NoError(t, f.Sync())

	boom := errors.New("boom")
	f.OnWrite(func(b *store.Batch) error {
		if len(b.Entries) > 0 && b.Entries[0].Offset == 1 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, f.Write(batch(1)), boom)
	require.NoError(t, f.Write(batch(2)))
	f.OnWrite(nil)

	f.FailDeletes(1)
	require.ErrorIs(t, f.DeleteRange(q, 0, 3), faultstore.ErrInjected)
	first, _, _, err := f.Bounds(q)
	require.NoError(t, err)
	require.Equal(t, uint64(0), first)

	require.Equal(t, int64(4), f.Writes())
	require.Equal(t, int64(2), f.WriteFailures())
	require.Equal(t, int64(2), f.Syncs())
	require.Equal(t, int64(1), f.SyncFailures())
}
