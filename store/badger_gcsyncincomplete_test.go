package store

import (
	"io/fs"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldRoundStore opens a store in dir whose value-log GC moves live
// values, and runs a Reclaim whose sync of them cannot list the memtable
// logs. It returns the store, the value-log files before the round, and
// what makes every listing fail (or not) from then on.
func heldRoundStore(t *testing.T, dir string) (*Badger, map[string]bool, *atomic.Bool) {
	t.Helper()
	s, err := OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	q, kept := QueueID{Topic: 3, Queue: 1}, QueueID{Topic: 3, Queue: 2}
	value := make([]byte, 100)
	write := func(queue QueueID, from, to uint64) {
		for off := from; off < to; off += 1000 {
			b := &Batch{}
			for o := off; o < min(off+1000, to); o++ {
				b.Entries = append(b.Entries, Entry{Queue: queue, Offset: o, Value: value})
			}
			require.NoError(t, s.Write(b))
		}
	}
	for i := range uint64(40) {
		write(kept, i*10, i*10+10)
		write(q, i*1000, i*1000+1000)
	}
	require.NoError(t, s.Sync())
	before := vlogFileSet(t, dir)
	require.Greater(t, len(before), 2)
	require.NoError(t, s.DeleteRange(q, 0, 40_000))

	failing := &atomic.Bool{}
	list := s.wals.listLogs
	s.wals.listLogs = func() ([]int, error) {
		if failing.Load() {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: syscall.EMFILE}
		}
		return list()
	}
	rs := s.reclaimSync
	s.reclaimSync = func() error {
		failing.Store(true)
		return rs()
	}
	err = s.Reclaim()
	require.ErrorIs(t, err, ErrSyncIncomplete, "the round's sync could not list the logs")
	s.reclaimSync = rs
	return s, before, failing
}

var heldRoundOpts = BadgerOptions{ValueThreshold: 64, ValueLogFileSize: 1 << 20}

// keptRecords reads the records of the queue heldRoundStore keeps.
func keptRecords(t *testing.T, s *Badger) []Record {
	t.Helper()
	recs, err := s.Read(QueueID{Topic: 3, Queue: 2}, 0, 1000, 1000, 0)
	require.NoError(t, err)
	return recs
}

// A value-log GC round whose sync of the moved values stops before its
// fsyncs (ErrSyncIncomplete: the memtable logs could not be listed) has
// not made those values durable: the logs of the memtables they went
// through are still unsynced. The files the round emptied must then stay
// on disk until a Sync makes the moved values durable: deleted at once, a
// crash before the next Sync would lose records acknowledged long ago,
// whose only synced copy was in them.
func TestBadgerReclaim_IncompleteSyncKeepsTheEmptiedFiles(t *testing.T) {
	dir := t.TempDir()
	s, before, failing := heldRoundStore(t, dir)
	defer func() { require.NoError(t, s.Close()) }()
	after := vlogFileSet(t, dir)
	for f := range before {
		assert.True(t, after[f], "%s deleted while the values moved out of it are not durable", f)
	}
	require.Error(t, s.Sync(), "a Sync that still cannot list the logs")
	after = vlogFileSet(t, dir)
	for f := range before {
		assert.True(t, after[f], "%s deleted by a Sync that failed", f)
	}
	require.ErrorIs(t, s.Reclaim(), ErrSyncIncomplete, "no other round while one is held")

	failing.Store(false)
	require.NoError(t, s.Sync(), "a Sync that lists the logs makes the moved values durable")
	after = vlogFileSet(t, dir)
	var gone []string
	for f := range before {
		if !after[f] {
			gone = append(gone, f)
		}
	}
	assert.NotEmpty(t, gone, "once durable elsewhere, the emptied files go")
	assert.Len(t, keptRecords(t, s), 400, "kept records after GC")
	require.NoError(t, s.Reclaim(), "a later Reclaim runs")
}

// Close with a round held, its logs still not listable, neither hangs
// nor loses the moved values: Badger's close writes the memtables out.
func TestBadgerReclaim_CloseLetsAHeldRoundGo(t *testing.T) {
	dir := t.TempDir()
	s, _, _ := heldRoundStore(t, dir)
	require.NoError(t, s.Close())
	s, err := OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	assert.Len(t, keptRecords(t, s), 400, "kept records after a reopen")
}

// Close with a round held and its logs still not listable keeps the
// files the round emptied: the moved values are not known durable until
// Badger's close has written the memtables out, and a crash during that
// close would otherwise find neither copy. The next open's GC takes the
// file again.
func TestBadgerReclaim_CloseWhoseSyncFailsKeepsTheEmptiedFiles(t *testing.T) {
	dir := t.TempDir()
	s, before, _ := heldRoundStore(t, dir)
	require.NoError(t, s.Close())
	after := vlogFileSet(t, dir)
	for f := range before {
		assert.True(t, after[f], "%s deleted by a Close whose sync of the moved values failed", f)
	}
	s, err := OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	assert.Len(t, keptRecords(t, s), 400, "kept records after a reopen")
	require.NoError(t, s.Reclaim(), "the next open's Reclaim runs")
}
