package store

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Badger creates a new memtable log (.mem) at each memtable rotation and
// a new value-log file (.vlog) when the current one is full, and fsyncs
// neither's directory entry: after a machine crash the file, and every
// write in it that a Sync had acknowledged, may be gone. So a Sync fsyncs
// the store's directory once after each change to those files (Open makes
// a new memtable too), and not again while nothing new was created.
func TestBadgerSync_FsyncsTheDirectoryOnceAfterANewLogFile(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), &BadgerOptions{MemTableSize: 1 << 20, ValueLogFileSize: 1 << 20, ValueThreshold: 256})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	var dirSyncs atomic.Int64
	syncDir := s.wals.syncDir
	s.wals.syncDir = func() error {
		dirSyncs.Add(1)
		return syncDir()
	}
	small := func(n int, prefix string) {
		for i := range n {
			b := &Batch{}
			for j := range 100 {
				b.Meta = append(b.Meta, MetaOp{Key: fmt.Appendf(nil, "%s-%d-%d", prefix, i, j), Value: make([]byte, 100)})
			}
			require.NoError(t, s.Write(b))
		}
	}

	small(1, "a")
	require.NoError(t, s.Sync())
	require.EqualValues(t, 1, dirSyncs.Load(), "the memtable log Open created")
	small(1, "b")
	require.NoError(t, s.Sync())
	require.EqualValues(t, 1, dirSyncs.Load(), "no new file: no fsync of the directory")

	// Values in the value log: 2.5 MB makes new value-log files, while
	// their pointers stay within the memtable.
	mem := s.wals.fid
	q := QueueID{Topic: 1}
	for off := uint64(0); off < 2500; off += 50 {
		b := &Batch{}
		for o := off; o < off+50; o++ {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: o, Value: make([]byte, 1000)})
		}
		require.NoError(t, s.Write(b))
	}
	require.NoError(t, s.Sync())
	require.Equal(t, mem, s.wals.fid, "no memtable rotation in this step")
	require.EqualValues(t, 2, dirSyncs.Load(), "the new value-log files")
	require.NoError(t, s.Sync())
	require.EqualValues(t, 2, dirSyncs.Load(), "once per change")

	small(250, "c") // 2.5 MB through 1 MiB memtables
	require.NoError(t, s.Sync())
	require.Greater(t, s.wals.fid, mem, "the memtable rotated")
	require.EqualValues(t, 3, dirSyncs.Load(), "the new memtable logs")
	small(1, "d")
	require.NoError(t, s.Sync())
	require.EqualValues(t, 3, dirSyncs.Load(), "once per change")
}
