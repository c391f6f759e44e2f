package store_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
	"github.com/equeue-go/equeue/store"
)

// Reads made while a Write's memtable rotation fails (the engine's pulls
// run alongside its writes) may start before the store knows Badger lost
// its memtable: Badger's read then dereferences the missing memtable in
// the reader's goroutine, which ended the process. Such a read fails with
// ErrUnusable instead.
func TestHuntStore_ReadsDuringAFailedRotationFailInsteadOfCrashing(t *testing.T) {
	dir := t.TempDir()
	s, err := store.OpenBadger(dir, &store.BadgerOptions{MemTableSize: 1 << 20})
	require.NoError(t, err)
	q := store.QueueID{Topic: 1}
	require.NoError(t, s.Write(&store.Batch{
		Entries: []store.Entry{{Queue: q, Offset: 0, Value: []byte("x")}},
		Meta:    []store.MetaOp{{Key: []byte("m"), Value: []byte("v")}},
	}))

	restore := fdlimit.Save(t)

	var (
		done    atomic.Bool
		wg      sync.WaitGroup
		readErr [4]error
	)
	for r := range readErr {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				var err error
				switch r % 3 {
				case 0:
					_, err = s.GetMeta([]byte("m"))
				case 1:
					_, _, _, err = s.Bounds(q)
				default:
					_, err = s.Read(q, 0, 1, 1, 1<<10)
				}
				if err != nil {
					readErr[r] = err
					return
				}
			}
		}()
	}
	// Batches of ten 500-byte records, as in
	// TestHuntStore_FailedMemtableRotationLeavesTheStoreClosable: a
	// rotation within a few hundred Writes (one record per Write took
	// ten times as many, the readers spinning all along).
	val := make([]byte, 500)
	var werr error
	for off := uint64(1); off < 100_000 && werr == nil; off += 10 {
		b := &store.Batch{}
		for o := off; o < off+10; o++ {
			b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: o, Value: val})
		}
		fdlimit.Shut(t) // before each Write: closes since free descriptors
		werr = s.Write(b)
	}
	done.Store(true)
	wg.Wait()
	restore()
	require.ErrorIs(t, werr, store.ErrUnusable)
	for _, err := range readErr {
		if err != nil {
			require.ErrorIs(t, err, store.ErrUnusable)
		}
	}
	require.NoError(t, s.Close())
}
