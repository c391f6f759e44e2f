package store

import (
	"io/fs"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Sync whose listing of the memtable logs fails (no file descriptor
// left: EMFILE) ran no fsync that failed: the OS dropped no page, and the
// logs it did not flush are still dirty in the page cache. So the Sync
// fails, but the store is not failed for good: the next Sync lists the
// logs again, flushes them, and succeeds. A failed fsync of a log still
// fails every later Sync (TestBadger_SyncAfterAFailedFsyncFails).
func TestBadgerSync_ListingWithoutADescriptorIsRetried(t *testing.T) {
	for _, shortcut := range []bool{false, true} {
		name := "badger sync"
		if shortcut {
			name = "shortcut"
		}
		t.Run(name, func(t *testing.T) {
			if shortcut {
				useShortcut(t)
			} else {
				t.Cleanup(setWALOnlySync(false))
			}
			dir := t.TempDir()
			s, err := OpenBadger(dir, nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			q := QueueID{Topic: 1}
			require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 0, Value: []byte("a")}}}))
			require.NoError(t, s.Sync())

			var failing atomic.Bool
			var lists atomic.Int64
			list := s.wals.listLogs
			s.wals.listLogs = func() ([]int, error) {
				lists.Add(1)
				if failing.CompareAndSwap(true, false) {
					return nil, &fs.PathError{Op: "open", Path: dir, Err: syscall.EMFILE}
				}
				return list()
			}
			require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 1, Value: []byte("b")}}}))
			s.wals.touch() // as after a rotation: the Sync lists the logs
			failing.Store(true)
			err = s.Sync()
			require.ErrorIs(t, err, syscall.EMFILE, "the Sync whose listing failed fails")
			assert.ErrorIs(t, err, ErrSyncIncomplete)
			require.False(t, failing.Load(), "the Sync listed the logs")

			listed := lists.Load()
			require.NoError(t, s.Sync(), "the next Sync tries again")
			assert.Greater(t, lists.Load(), listed, "and lists the logs it could not list")
			require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 2, Value: []byte("c")}}}))
			require.NoError(t, s.Sync())
		})
	}
}
