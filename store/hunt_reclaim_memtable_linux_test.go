package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/fdlimit"
)

// TestHuntStore_ReclaimAfterAFailedRotationFailsInsteadOfCrashing: a
// Write whose memtable rotation failed while a Reclaim ran its value-log
// GC rounds (Writes go on meanwhile) left Badger without a memtable, and
// Reclaim's next round opened its iterator on the missing memtable: a
// nil dereference in Reclaim's goroutine (the engine's background
// reclaim), which ended the process. Reclaim now checks for a lost
// memtable before each round and fails with ErrUnusable.
func TestHuntStore_ReclaimAfterAFailedRotationFailsInsteadOfCrashing(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), &BadgerOptions{MemTableSize: 1 << 20})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q := QueueID{Topic: 1}
	val := make([]byte, 500)
	batch := func(from uint64) *Batch {
		b := &Batch{}
		for off := from; off < from+10; off++ {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: val})
		}
		return b
	}
	require.NoError(t, s.Write(batch(0)))

	restore := fdlimit.Save(t)
	var werr error
	// The first GC round (always rewriting something here) starts; a
	// Write then loses the memtable before the next one.
	rounds := 0
	s.gcStarted = func() {
		rounds++
		if rounds != 1 {
			return
		}
		for off := uint64(10); off < 100_000; off += 10 {
			// No descriptor left to open, shut again before each
			// Write: one closed since would let the rotation through.
			fdlimit.Shut(t)
			if werr = s.Write(batch(off)); werr != nil {
				break
			}
		}
		restore()
	}
	s.runGC = func(float64) error { return nil }
	rerr := s.ReclaimContext(t.Context())
	require.ErrorIs(t, werr, ErrUnusable, "the Write needing a new memtable file")
	require.ErrorIs(t, rerr, ErrUnusable, "Reclaim after the memtable was lost")
}
