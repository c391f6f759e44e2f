package store

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
)

// gcRotationStore opens a store whose first value-log file holds a
// third of live values, interleaved with deleted ones, so that
// Reclaim's value-log GC moves more of them than one memtable holds: its
// rewrite must set a memtable aside and create the next one.
func gcRotationStore(t *testing.T, dir string) (*Badger, QueueID) {
	t.Helper()
	s, err := OpenBadger(dir, gcRotationOptions())
	require.NoError(t, err)
	kept, gone := QueueID{Topic: 1, Queue: 1}, QueueID{Topic: 1, Queue: 2}
	value := make([]byte, 100)
	write := func(q QueueID, from, to uint64) {
		b := &Batch{}
		for o := from; o < to; o++ {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: o, Value: value})
		}
		require.NoError(t, s.Write(b))
	}
	const steps = 150
	for i := uint64(0); i < steps; i++ {
		write(kept, i*300, i*300+300)
		write(gone, i*600, i*600+600)
	}
	require.NoError(t, s.Sync())
	require.NoError(t, s.DeleteRange(gone, 0, steps*600))
	return s, kept
}

// gcRotationOptions: 1 MiB memtables, values of 100 bytes in the value
// log, in files of 16 MiB.
func gcRotationOptions() *BadgerOptions {
	return &BadgerOptions{MemTableSize: 1 << 20, ValueThreshold: 64, ValueLogFileSize: 16 << 20}
}

// lowerFileLimit leaves the process no file descriptor to open (given
// back in a cleanup too) and returns what gives it back.
func lowerFileLimit(t *testing.T) (restore func()) {
	t.Helper()
	restore = fdlimit.Save(t)
	fdlimit.Shut(t)
	return restore
}

// TestHuntStore_GCRoundThatLosesTheMemtableMakesTheStoreUnusable: a
// value-log GC round commits the values it moves through Badger's writes;
// when one of those commits had to set the memtable aside and could not
// create the next one's log, Badger was left without a memtable, but
// Reclaim failed with a plain error and left the store usable: the next
// read dereferenced the missing memtable and the next write ended the
// process in Badger's commit. Reclaim now probes, as a Write does, and the
// store refuses every call but Close with ErrUnusable.
func TestHuntStore_GCRoundThatLosesTheMemtableMakesTheStoreUnusable(t *testing.T) {
	s, kept := gcRotationStore(t, t.TempDir())
	var restore func()
	s.gcStarted = func() {
		if restore == nil {
			restore = lowerFileLimit(t)
		}
	}
	rerr := s.Reclaim()
	require.NotNil(t, restore, "no GC round ran")
	restore()
	require.Error(t, rerr, "a GC round needing a new memtable file")
	require.True(t, s.memtableLost(), "the GC round did not lose the memtable: the test sets nothing up")
	require.ErrorIs(t, rerr, ErrUnusable)
	require.ErrorIs(t, s.lostMemtable(), ErrUnusable, "the store is marked")
	_, _, _, err := s.Bounds(kept)
	require.ErrorIs(t, err, ErrUnusable)
	require.ErrorIs(t, s.Write(&Batch{Meta: []MetaOp{{Key: []byte("k"), Value: []byte("v")}}}), ErrUnusable)
	require.NoError(t, s.Close())
}

// TestHuntStore_WritesBesideAGCRoundThatLosesTheMemtable: Badger commits
// the transactions that arrive together as one batch, and a GC round's
// commits went to it outside wmu: a Write sharing a batch with a rewrite
// whose memtable rotation failed was stored (it came first) though it got
// the error, which the store answers as "nothing stored". Every Write that
// fails must have stored nothing.
func TestHuntStore_WritesBesideAGCRoundThatLosesTheMemtable(t *testing.T) {
	dir := t.TempDir()
	s, _ := gcRotationStore(t, dir)
	const writers = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		failed  []string // keys of the Writes that failed
		restore func()
	)
	s.gcStarted = func() {
		if restore != nil {
			return
		}
		restore = lowerFileLimit(t)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				val := make([]byte, 40)
				// Until a Write fails: every one does once the store
				// is marked unusable.
				for i := 0; ; i++ {
					key := fmt.Appendf(nil, "k-%d-%d", w, i)
					if err := s.Write(&Batch{Meta: []MetaOp{{Key: key, Value: val}}}); err != nil {
						mu.Lock()
						failed = append(failed, string(key))
						mu.Unlock()
						return
					}
				}
			}()
		}
	}
	rerr := s.Reclaim()
	wg.Wait()
	require.NotNil(t, restore, "no GC round ran")
	restore()
	require.ErrorIs(t, rerr, ErrUnusable)
	require.Len(t, failed, writers, "every writer ends on a failure")
	require.NoError(t, s.Close())

	s, err := OpenBadger(dir, gcRotationOptions())
	require.NoError(t, err)
	for _, k := range failed {
		_, err := s.GetMeta([]byte(k))
		require.ErrorIs(t, err, ErrNotFound, "%s was answered not stored", k)
	}
	require.NoError(t, s.Close())
}
