package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"
)

// Found by a second review of the Sync shortcut; each test failed on the
// code before its fix.

// A Sync beside uncounted work (a GC round, a Restore)
// relists and clears stale while the work still runs; the work then
// rotates the memtable twice, hidden from the quick check (the round's own
// iterator keeps F's log, F+1 is written out and deleted), and a counted
// Write lands in F+2, which is set aside (F+3 active). The next Sync (or
// the round's own reclaimSync) is Badger's, which flushes F+3 only;
// afterSync sees no rotation and no listing due, so F+2 stays unflushed.
func TestBadgerSync_ListsWhileUncountedWorkRuns(t *testing.T) {
	dir := t.TempDir()
	mk := func(fid int) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%05d%s", fid, memSuffix)), nil, 0o644))
	}
	mk(5)
	w, err := newWALSync(dir, 8<<20)
	require.NoError(t, err)
	var flushed []int
	w.flush = func(fid int) error { flushed = append(flushed, fid); return nil }
	s := &Badger{wals: w, dbSync: func() error { return nil }} // dbSync flushes the active log (F+3)
	s.syncedGen.Store(1)
	s.vlogGen.Store(1)

	s.beginUncounted()               // a GC round starts; its iterator holds memtable 5
	require.NoError(t, s.syncLogs()) // a Sync beside it: Badger's, lists, clears stale
	mk(6)
	mk(7)
	mk(8)
	require.NoError(t, os.Remove(filepath.Join(dir, fmt.Sprintf("%05d%s", 6, memSuffix))))
	s.wals.wrote(600) // a small Write that went into 7 and returned
	flushed = nil
	require.NoError(t, s.syncLogs()) // or the round's reclaimSync (syncAll)
	s.endUncounted()
	require.Contains(t, flushed, 7, "memtable 7's log, set aside since the last listing, left unflushed by a Sync that returned nil")
}

// A write into existing records rewrites the whole segments it overlaps
// (and deletes their keys); the count once took only the batch's own
// records. With segments near a large ValueThreshold, a
// 1-byte overwrite adds ~64 KiB to the memtable and counts ~0.5 KiB, so a
// quarter of a memtable counted is dozens of memtables written: two
// rotations hide behind a log held by a reader, and the shortcut flushes
// F's log only.
func TestBadgerSync_CountsTheSegmentsAnOverwriteRewrites(t *testing.T) {
	needDirtyPageCounts(t)
	useShortcut(t)
	o := DefaultBadgerOptions()
	o.MemTableSize = 1 << 20
	o.ValueThreshold = 64 << 10
	o.SegmentBytes = o.ValueThreshold - 1
	dir := t.TempDir()
	s, err := OpenBadger(dir, &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q := QueueID{Topic: 1}
	const perSeg, segs = 600, 24
	for k := range segs {
		var b Batch
		for i := range perSeg {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: uint64(k*perSeg + i), Value: bytes.Repeat([]byte{byte(i)}, 100)})
		}
		require.NoError(t, s.Write(&b))
	}
	require.NoError(t, s.flushMemtables())
	require.NoError(t, s.Sync())
	require.NoError(t, s.Sync()) // a shortcut now, after a listing: fid = F
	dbSyncs := countDBSyncs(s)
	F := s.wals.fid
	// A reader (a Read, a snapshot being streamed) holds F's log.
	txn := s.db.NewTransaction(false)
	it := txn.NewIterator(badger.DefaultIteratorOptions)
	defer func() { it.Close(); txn.Discard() }()
	hidden := false
	for n := 0; n < 400; n++ {
		k := n % segs
		require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: uint64(k*perSeg + 7), Value: []byte{byte(n)}}}}))
		fids, _ := s.wals.list()
		_, errF := os.Stat(s.wals.path(F))
		_, errF1 := os.Stat(s.wals.path(F + 1))
		if errF == nil && os.IsNotExist(errF1) && len(fids) > 0 && fids[len(fids)-1] >= F+2 {
			hidden = true
			break
		}
	}
	require.True(t, hidden, "no double rotation hidden by the reader in 400 writes: the test shows nothing")
	t.Logf("written counted %d of relistAt %d", s.wals.written.Load(), s.wals.relistAt)
	require.NoError(t, s.Sync())
	took := dbSyncs()
	dirty := map[string]uint64{}
	for name, d := range dirtyLogPages(t, dir) {
		if strings.HasSuffix(name, memSuffix) && d > 0 {
			dirty[name] = d
		}
	}
	names := make([]string, 0, len(dirty))
	for n := range dirty {
		names = append(names, n)
	}
	slices.Sort(names)
	require.Empty(t, dirty, "memtable logs dirty after a Sync that returned nil (Badger Syncs: %d): %v", took, names)
}
