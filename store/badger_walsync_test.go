package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// walRecorder replaces w's flushes with a record of them.
type walRecorder struct {
	mu    sync.Mutex
	fids  []int
	fail  error
	inner func(string) error
}

func recordWALSyncs(w *walSync, inner func(string) error) *walRecorder {
	r := &walRecorder{inner: inner}
	w.syncFile = func(path string) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		fid, _ := memFid(filepath.Base(path))
		r.fids = append(r.fids, fid)
		if r.fail != nil {
			return r.fail
		}
		if r.inner != nil {
			return r.inner(path)
		}
		return nil
	}
	return r
}

func (r *walRecorder) took() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.fids
	r.fids = nil
	return out
}

// The tracker's decisions on a directory it does not own: which logs a
// Sync flushes after rotations, with logs deleted in between.
func TestWALSync_FlushesTheLogsSetAside(t *testing.T) {
	dir := t.TempDir()
	w := &walSync{dir: dir}
	touch := func(fids ...int) {
		for _, fid := range fids {
			require.NoError(t, os.WriteFile(w.path(fid), nil, 0o600))
		}
	}
	remove := func(fids ...int) {
		for _, fid := range fids {
			require.NoError(t, os.Remove(w.path(fid)))
		}
	}
	touch(3)
	w, err := newWALSync(dir)
	require.NoError(t, err)
	require.Equal(t, 3, w.fid)
	r := recordWALSyncs(w, nil)

	require.NoError(t, w.afterSync())
	require.Empty(t, r.took(), "no rotation")

	touch(4, 5)
	require.NoError(t, w.afterSync())
	require.Equal(t, []int{3, 4}, r.took(), "the logs active since the last look, not the newest")
	require.Equal(t, 5, w.fid)

	// 5 is held by a reader after its flush, 6 came and went, 7 is active:
	// the quick check sees nothing, the periodic listing does.
	touch(6, 7)
	remove(6)
	require.NoError(t, w.afterSync())
	require.Empty(t, r.took())
	w.scan = time.Now().Add(-2 * walRescan)
	require.NoError(t, w.afterSync())
	require.Equal(t, []int{5}, r.took())
	require.Equal(t, 7, w.fid)

	// The last active log is gone: a rotation for sure.
	touch(8, 9)
	remove(7, 8)
	require.NoError(t, w.afterSync())
	require.Empty(t, r.took(), "7 and 8 are tables now")
	require.Equal(t, 9, w.fid)

	// A flush that fails fails the Sync.
	r.fail = errors.New("test: flush failed")
	touch(10)
	require.ErrorContains(t, w.afterSync(), "test: flush failed")
}

// With Badger: after memtable rotations, the store's Sync has looked at the
// newest log and flushed only logs set aside since its last Sync.
func TestBadgerSync_FlushesTheLogsOfMemtablesSetAside(t *testing.T) {
	dir := t.TempDir()
	o := DefaultBadgerOptions()
	o.MemTableSize = 1 << 20
	s, err := OpenBadger(dir, &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NotNil(t, s.wals)
	r := recordWALSyncs(s.wals, fsyncFile)
	start := s.wals.fid
	require.Positive(t, start, "the active memtable's log is known at open")
	require.NoError(t, s.Sync())
	require.Empty(t, r.took(), "no rotation: Badger's own Sync covers the active log")

	q := QueueID{Topic: 1}
	var off uint64
	for written := 0; ; written++ {
		require.Less(t, written, 10_000, "no memtable rotation")
		var b Batch
		for range 8 {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: bytes.Repeat([]byte{byte(off)}, 100)})
			off++
		}
		require.NoError(t, s.Write(&b))
		if _, err := os.Stat(s.wals.path(start + 2)); err == nil {
			break
		}
	}
	require.NoError(t, s.Sync())
	require.GreaterOrEqual(t, s.wals.fid, start+2, "the Sync saw the rotations")
	for _, fid := range r.took() {
		require.GreaterOrEqual(t, fid, start)
		require.Less(t, fid, s.wals.fid, "the newest log is Badger's to sync")
	}
	require.NoError(t, s.Sync())
	require.Empty(t, r.took(), "nothing set aside since")
}

// BenchmarkWALSync_QuickCheck measures what the store's Sync adds to
// Badger's when no memtable rotated: the quick check (and the listing of
// the directory once per walRescan).
func BenchmarkWALSync_QuickCheck(b *testing.B) {
	s, err := OpenBadger(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for b.Loop() {
		if err := s.wals.afterSync(); err != nil {
			b.Fatal(err)
		}
	}
}
