package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Badger's Sync flushes only the active memtable's log. A write that went
// into a memtable Badger then set aside as full must be flushed by the
// store's Sync too: after a rotation, Sync flushes the log of every
// memtable that was active since the last Sync, and a failure to do so is
// Sync's failure.
func TestBadgerSync_FlushesTheLogsOfMemtablesSetAside(t *testing.T) {
	dir := t.TempDir()
	o := DefaultBadgerOptions()
	o.MemTableSize = 1 << 20
	s, err := OpenBadger(dir, &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NotNil(t, s.wals)

	var (
		mu     sync.Mutex
		synced []string
		fail   error
	)
	s.wals.syncFile = func(path string) error {
		mu.Lock()
		defer mu.Unlock()
		synced = append(synced, filepath.Base(path))
		if fail != nil {
			return fail
		}
		return fsyncFile(path)
	}
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := synced
		synced = nil
		return out
	}

	start := s.wals.fid
	require.Positive(t, start, "the active memtable's log is known at open")
	require.NoError(t, s.Sync())
	require.Empty(t, took(), "no rotation: Badger's own Sync covers the active log")

	// writeUntil writes until Badger has created memtable log fid.
	q := QueueID{Topic: 1}
	var off uint64
	writeUntil := func(fid int) {
		for written := 0; ; written++ {
			require.Less(t, written, 10_000, "no memtable rotation")
			var b Batch
			for range 8 {
				b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: bytes.Repeat([]byte{byte(off)}, 100)})
				off++
			}
			require.NoError(t, s.Write(&b))
			if _, err := os.Stat(s.wals.path(fid)); err == nil {
				return
			}
		}
	}
	writeUntil(start + 2)
	require.NoError(t, s.Sync())
	got := took()
	require.GreaterOrEqual(t, len(got), 2)
	require.Equal(t, filepath.Base(s.wals.path(start)), got[0], "the log active at the last Sync is flushed")
	require.Equal(t, filepath.Base(s.wals.path(start+1)), got[1])
	require.Greater(t, s.wals.fid, start+1)

	require.NoError(t, s.Sync())
	require.Empty(t, took(), "nothing set aside since")

	// A log that cannot be flushed fails Sync.
	mu.Lock()
	fail = errors.New("test: flush failed")
	mu.Unlock()
	writeUntil(s.wals.fid + 1)
	require.ErrorContains(t, s.Sync(), "test: flush failed")
}
