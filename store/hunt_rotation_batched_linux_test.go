package store_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
	"github.com/equeue-go/equeue/store"
)

// Badger commits the transactions that arrive together as one batch,
// making room in the memtable before each: when the room for one of them
// needs a new memtable and its log cannot be created, the transactions of
// the batch before it are stored (in the memtable set aside) though they
// get the error too, and a transaction queued behind the batch meets the
// missing memtable in Badger's commit, which ends the process with
// log.Fatal. Concurrent metadata Writes (dedup, topics, offsets) met both.
// Every Write that fails must have stored nothing, the process stays up,
// and the calls after the failure get ErrUnusable.
func TestHuntStore_FailedRotationAmongConcurrentWrites(t *testing.T) {
	val := make([]byte, 500)
	for attempt := 0; attempt < 5; attempt++ {
		dir := t.TempDir()
		s, err := store.OpenBadger(dir, &store.BadgerOptions{MemTableSize: 1 << 20})
		require.NoError(t, err)

		restore := fdlimit.Save(t)

		const writers = 8
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			failed []string // keys of the Writes that failed
		)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20_000; i++ {
					key := fmt.Appendf(nil, "k-%d-%d", w, i)
					// No descriptor left to open, shut again before
					// each Write: one closed since would let a
					// rotation through.
					fdlimit.Shut(t)
					err := s.Write(&store.Batch{Meta: []store.MetaOp{{Key: key, Value: val}}})
					if err == nil {
						continue
					}
					mu.Lock()
					failed = append(failed, string(key))
					mu.Unlock()
					return
				}
			}()
		}
		wg.Wait()
		restore()
		_, err = s.GetMeta([]byte("k-0-0"))
		require.ErrorIs(t, err, store.ErrUnusable, "attempt %d", attempt)
		require.NoError(t, s.Close())

		s, err = store.OpenBadger(dir, &store.BadgerOptions{MemTableSize: 1 << 20})
		require.NoError(t, err)
		require.Len(t, failed, writers, "attempt %d: every writer ends on a failure", attempt)
		for _, k := range failed {
			_, err := s.GetMeta([]byte(k))
			require.ErrorIs(t, err, store.ErrNotFound, "attempt %d: %s was answered not stored", attempt, k)
		}
		require.NoError(t, s.Close())
	}
}
