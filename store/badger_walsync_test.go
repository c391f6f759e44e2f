package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walRecorder replaces w's flushes with a record of them, and records
// what w's listings of the directory found.
type walRecorder struct {
	mu       sync.Mutex
	fids     []int
	gone     []int   // of fids, those whose log was gone when flushed
	listings [][]int // what each listing found
	fail     error
	inner    func(int) error
}

// recordWALSyncs records w's flushes, then does them with inner (none when
// nil), and w's listings.
func recordWALSyncs(w *walSync, inner func(int) error) *walRecorder {
	r := &walRecorder{inner: inner}
	w.flush = func(fid int) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.fids = append(r.fids, fid)
		if r.fail != nil {
			return r.fail
		}
		if r.inner != nil {
			err := r.inner(fid)
			if errors.Is(err, fs.ErrNotExist) {
				r.gone = append(r.gone, fid)
			}
			return err
		}
		return nil
	}
	list := w.listLogs
	w.listLogs = func() ([]int, error) {
		fids, err := list()
		r.mu.Lock()
		defer r.mu.Unlock()
		r.listings = append(r.listings, fids)
		return fids, err
	}
	return r
}

// took returns the logs flushed since its last call (or look's), those
// found gone among them too.
func (r *walRecorder) took() []int {
	return r.look().took
}

// walLook is what the Syncs since the last took or look did with the
// memtable logs.
type walLook struct {
	took     []int   // the logs flushed, in order
	gone     []int   // of took, those gone when flushed
	listings [][]int // what each listing of the directory found
}

// flushed reports whether fid was flushed with its log still there.
func (l walLook) flushed(fid int) bool {
	return slices.Contains(l.took, fid) && !slices.Contains(l.gone, fid)
}

func (r *walRecorder) look() walLook {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := walLook{took: r.fids, gone: r.gone, listings: r.listings}
	r.fids, r.gone, r.listings = nil, nil, nil
	return out
}

// fakeLogs returns what creates and deletes empty memtable logs in dir,
// for the tracker's tests on a directory Badger does not own.
func fakeLogs(t *testing.T, dir string) (touch, remove func(fids ...int)) {
	w := &walSync{dir: dir}
	touch = func(fids ...int) {
		for _, fid := range fids {
			require.NoError(t, os.WriteFile(w.path(fid), nil, 0o600))
		}
	}
	remove = func(fids ...int) {
		for _, fid := range fids {
			require.NoError(t, os.Remove(w.path(fid)))
		}
	}
	return touch, remove
}

// The tracker's decisions on a directory it does not own: which logs a
// Sync flushes after rotations, with logs deleted in between.
func TestWALSync_FlushesTheLogsSetAside(t *testing.T) {
	dir := t.TempDir()
	touch, remove := fakeLogs(t, dir)
	touch(3)
	w, err := newWALSync(dir, 64<<20)
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
// newest log and flushed the logs set aside since its last Sync. With the
// shortcut (walOnlySync) it flushes the newest too, as Badger's Sync is not
// called; without it the newest is Badger's to flush.
func TestBadgerSync_FlushesTheLogsOfMemtablesSetAside(t *testing.T) {
	for _, walOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("walOnly=%v", walOnly), func(t *testing.T) {
			if walOnly && runtime.GOOS != "linux" {
				t.Skip("the shortcut is for Linux")
			}
			defer setWALOnlySync(walOnly)()
			dir := t.TempDir()
			o := DefaultBadgerOptions()
			o.MemTableSize = 1 << 20
			s, err := OpenBadger(dir, &o)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			require.NotNil(t, s.wals)
			r := recordWALSyncs(s.wals, s.wals.flushLog)
			dbSyncs := countDBSyncs(s)
			start := s.wals.fid
			require.Positive(t, start, "the active memtable's log is known at open")
			require.NoError(t, s.Sync())
			require.Empty(t, r.took(), "no rotation: Badger's own Sync covers the active log")
			require.Equal(t, 1, dbSyncs(), "the first Sync is Badger's: the last process's writes are not known")

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
			l := r.look()
			require.Len(t, l.listings, 1, "the rotations made the Sync list the logs")
			// Badger writes a set-aside memtable out as a synced table and
			// then deletes its log, which can happen before the Sync looks
			// (a loaded machine): such a log needs no flush.
			for fid := start; fid < s.wals.fid; fid++ {
				assert.True(t, l.flushed(fid) || slices.Contains(l.gone, fid) || !slices.Contains(l.listings[0], fid),
					"log %d, set aside since the last Sync, is flushed or was gone when the Sync looked (listed %v, flushed %v, gone %v)",
					fid, l.listings[0], l.took, l.gone)
			}
			for _, fid := range l.took {
				require.GreaterOrEqual(t, fid, start)
				if !walOnly {
					require.Less(t, fid, s.wals.fid, "the newest log is Badger's to sync")
				}
			}
			if walOnly {
				require.True(t, l.flushed(s.wals.fid), "the newest log, flushed by the store")
				require.Equal(t, s.wals.fid, l.took[len(l.took)-1], "the newest log, flushed last")
				require.Zero(t, dbSyncs())
			} else {
				require.Equal(t, 1, dbSyncs())
			}
			require.NoError(t, s.Sync())
			if walOnly {
				require.Equal(t, []int{s.wals.fid}, r.took(), "nothing set aside since: the active log alone")
			} else {
				require.Empty(t, r.took(), "nothing set aside since")
			}
		})
	}
}

// useShortcut turns the Sync shortcut on for t (walOnlySync), which is
// for Linux only: elsewhere t is skipped.
func useShortcut(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the shortcut is for Linux")
	}
	t.Cleanup(setWALOnlySync(true))
}

// setWALOnlySync sets walOnlySync for a test and returns what puts it
// back.
func setWALOnlySync(on bool) func() {
	was := walOnlySync
	walOnlySync = on
	return func() { walOnlySync = was }
}

// countDBSyncs counts the calls of Badger's Sync s makes from now on: the
// returned function reports those since its last call.
func countDBSyncs(s *Badger) func() int {
	var mu sync.Mutex
	n := 0
	inner := s.dbSync
	s.dbSync = func() error {
		mu.Lock()
		n++
		mu.Unlock()
		return inner()
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		out := n
		n = 0
		return out
	}
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

// syncActive's decisions on a directory it does not own: the active log
// alone while no rotation shows, every log from the last look's newest on
// (the newest too) after one, and a listing once the counted writes or a
// touch say that a rotation may hide from the quick check.
func TestWALSync_SyncActiveFlushesTheActiveLog(t *testing.T) {
	dir := t.TempDir()
	touch, remove := fakeLogs(t, dir)
	w, err := newWALSync(dir, 4000)
	require.NoError(t, err)
	require.ErrorIs(t, w.syncActive(), errNoActiveLog, "no log at all: the store does Badger's Sync")
	touch(3)
	w, err = newWALSync(dir, 4000)
	require.NoError(t, err)
	require.Equal(t, int64(1000), w.relistAt)
	r := recordWALSyncs(w, w.flushLog)

	require.NoError(t, w.syncActive())
	require.NoError(t, w.syncActive())
	require.Equal(t, []int{3, 3}, r.took(), "no rotation: the active log")
	require.NotNil(t, w.file, "kept open")

	touch(4, 5)
	require.NoError(t, w.syncActive())
	require.Equal(t, []int{3, 4, 5}, r.took(), "the logs active since the last look, and the newest")
	require.Equal(t, 5, w.fid)

	// 5 is held by a reader after its flush, 6 came and went, 7 is active:
	// the quick check sees nothing. That takes a memtable's worth of
	// writes, which the count shows.
	touch(6, 7)
	remove(6)
	w.wrote(999)
	require.NoError(t, w.syncActive())
	require.Equal(t, []int{5}, r.took(), "below the count, the quick check decides")
	w.wrote(1)
	require.NoError(t, w.syncActive())
	require.Equal(t, []int{5, 7}, r.took(), "the count reached: listed")
	require.Equal(t, 7, w.fid)
	require.Zero(t, w.written.Load(), "counted from the listing")

	// Something else wrote (a flush, a GC round): listed at once.
	touch(8)
	remove(7)
	touch(9)
	remove(8)
	w.touch()
	require.NoError(t, w.syncActive())
	require.Equal(t, []int{9}, r.took())
	require.False(t, w.stale.Load())

	// The active log written out between the check and the flush: listed.
	w.flush = func(fid int) error {
		r.mu.Lock()
		r.fids = append(r.fids, fid)
		r.mu.Unlock()
		if fid == 9 {
			return fs.ErrNotExist
		}
		return nil
	}
	touch(10)
	w.scan = time.Now() // the check alone would pass 9
	require.NoError(t, w.syncActive())
	require.Equal(t, []int{9, 10}, r.took())

	// A flush that fails fails the Sync.
	r = recordWALSyncs(w, nil)
	r.fail = errors.New("test: flush failed")
	require.ErrorContains(t, w.syncActive(), "test: flush failed")
	w.close()
	require.Nil(t, w.file)
}

// The count of bytes written (txnTally) bounds what Badger's
// memtables take: between two rotations, the store counted at least two
// of syncActive's listing thresholds, whatever the shape of the writes.
// A log that came and went unseen takes a whole memtable's life, so the
// count has reached the threshold by then.
func TestBadgerSync_CountedBytesBoundAMemtable(t *testing.T) {
	for _, shape := range []struct {
		name string
		b    func(off uint64) *Batch
	}{
		{"one-byte records", func(off uint64) *Batch {
			b := &Batch{}
			for i := range 64 {
				b.Entries = append(b.Entries, Entry{Queue: QueueID{Topic: 1, Queue: uint32(i % 4)}, Offset: off + uint64(i/4), Value: []byte{1}})
			}
			return b
		}},
		{"100-byte records", func(off uint64) *Batch {
			b := &Batch{}
			for i := range 64 {
				b.Entries = append(b.Entries, Entry{Queue: QueueID{Topic: 2}, Offset: off + uint64(i), Value: bytes.Repeat([]byte{2}, 100)})
			}
			return b
		}},
		{"small metadata", func(off uint64) *Batch {
			b := &Batch{}
			for i := range 32 {
				b.Meta = append(b.Meta, MetaOp{Key: fmt.Appendf(nil, "k%d-%d", off, i), Value: []byte{3}})
			}
			return b
		}},
	} {
		t.Run(shape.name, func(t *testing.T) {
			o := DefaultBadgerOptions()
			o.MemTableSize = 1 << 20
			s, err := OpenBadger(t.TempDir(), &o)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			fid := s.wals.fid
			var off uint64
			var counted []int64 // at each rotation
			for len(counted) < 3 {
				b := shape.b(off)
				off += 64
				require.NoError(t, s.Write(b))
				if _, err := os.Stat(s.wals.path(fid + 1)); err == nil {
					counted = append(counted, s.wals.written.Load())
					fid++
				}
			}
			for i := 1; i < len(counted); i++ {
				require.GreaterOrEqual(t, counted[i]-counted[i-1], 2*s.wals.relistAt,
					"a memtable's life counted as %d bytes", counted[i]-counted[i-1])
			}
		})
	}
}

// Sync calls Badger's own Sync (which flushes the value log too) only
// when a value may have gone to the value log since the last Sync, or
// something other than Write wrote to the store; after small writes it
// flushes the memtable's log alone.
func TestBadgerSync_FlushesTheValueLogOnlyWhenWritten(t *testing.T) {
	useShortcut(t)
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	dbSyncs := countDBSyncs(s)
	r := recordWALSyncs(s.wals, s.wals.flushLog)
	threshold := int(DefaultBadgerOptions().ValueThreshold)
	q := QueueID{Topic: 1}
	var off uint64
	rec := func(size int) Entry {
		off++
		return Entry{Queue: q, Offset: off - 1, Value: bytes.Repeat([]byte{1}, size)}
	}
	for _, c := range []struct {
		name   string
		do     func() error
		badger int // Badger's Syncs expected
	}{
		{"open", func() error { return nil }, 1},
		{"small records", func() error { return s.Write(&Batch{Entries: []Entry{rec(100), rec(100)}}) }, 0},
		{"nothing", func() error { return nil }, 0},
		{"a record at the threshold", func() error { return s.Write(&Batch{Entries: []Entry{rec(threshold)}}) }, 1},
		{"small metadata", func() error { return s.Write(&Batch{Meta: []MetaOp{{Key: []byte("a"), Value: []byte("b")}}}) }, 0},
		{"metadata at the threshold", func() error {
			return s.Write(&Batch{Meta: []MetaOp{{Key: []byte("a"), Value: bytes.Repeat([]byte{2}, threshold)}}})
		}, 1},
		{"a deleted metadata key", func() error { return s.Write(&Batch{Meta: []MetaOp{{Key: []byte("a"), Delete: true}}}) }, 0},
		{"a deleted range", func() error { return s.DeleteRange(q, 0, 1) }, 1},
		{"small records again", func() error { return s.Write(&Batch{Entries: []Entry{rec(10)}}) }, 0},
	} {
		require.NoError(t, c.do(), c.name)
		require.NoError(t, s.Sync(), c.name)
		require.Equal(t, c.badger, dbSyncs(), c.name)
		if c.badger == 0 {
			require.Equal(t, []int{s.wals.fid}, r.took(), "%s: the active memtable's log", c.name)
		} else {
			r.took()
		}
	}
	// A flush of the active log that fails fails the Sync.
	r.fail = errors.New("test: fsync failed")
	require.NoError(t, s.Write(&Batch{Entries: []Entry{rec(10)}}))
	require.ErrorContains(t, s.Sync(), "test: fsync failed")
	require.Zero(t, dbSyncs())
}
