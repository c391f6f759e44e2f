package store

import (
	"bytes"
	"io"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restoreCaches is what a Restore refused before it changed the store
// must leave as it was: the queues' ends (Write's cache of where each
// queue ends) and the Sync's accounting of the work that may have gone
// to the value log or rotated the memtable unseen.
type restoreCaches struct {
	ends      map[QueueID]uint64
	vlogGen   uint64
	walsStale bool
}

func cachesOf(s *Badger) restoreCaches {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return restoreCaches{ends: maps.Clone(s.ends), vlogGen: s.vlogGen.Load(), walsStale: s.wals.stale.Load()}
}

// A Restore refused (a stream that is not a snapshot, or a held GC
// round's sync failing) changes nothing: it used to empty the queues'
// ends and count itself as work the next Sync must cover with Badger's
// Sync and a listing of the logs before it looked at its stream. After
// the refusal, reads, ends, Writes and the next Sync (which needs no
// Badger Sync) behave as before it.
func TestBadgerRestore_RefusedLeavesTheCachesAsTheyWere(t *testing.T) {
	for _, tc := range []struct {
		name string
		// prepare sets the refusal up before the caches are looked at;
		// it returns what undoes it.
		prepare func(s *Badger) (undo func())
		stream  func(t *testing.T, s *Badger) io.Reader
	}{
		{"bad header", func(*Badger) func() { return func() {} }, func(*testing.T, *Badger) io.Reader {
			return strings.NewReader("not a snapshot")
		}},
		{"held round", func(s *Badger) func() {
			// A round is held after its sync could not list the logs,
			// which leaves the next Sync to list them: the release's
			// listing fails too (EMFILE, say).
			failing := &atomic.Bool{}
			failing.Store(true)
			list := s.wals.listLogs
			s.wals.listLogs = func() ([]int, error) {
				if failing.Load() {
					return nil, ErrSyncIncomplete
				}
				return list()
			}
			s.wals.touch()
			s.held.add(func() {})
			return func() {
				failing.Store(false)
				s.held.abandon()
			}
		}, func(t *testing.T, s *Badger) io.Reader {
			var snap bytes.Buffer
			sn, err := s.Snapshot()
			require.NoError(t, err)
			_, err = sn.WriteTo(&snap)
			sn.Release()
			require.NoError(t, err)
			return &snap
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenBadger(t.TempDir(), nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			q := QueueID{Topic: 7, Queue: 1}
			b := &Batch{Meta: []MetaOp{{Key: []byte("m"), Value: []byte("v")}}}
			for off := range uint64(10) {
				b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: []byte{byte(off)}})
			}
			require.NoError(t, s.Write(b))
			require.NoError(t, s.Sync())
			recs, err := s.Read(q, 0, 100, 100, 0)
			require.NoError(t, err)
			require.Len(t, recs, 10)
			undo := tc.prepare(s)
			stream := tc.stream(t, s)
			before := cachesOf(s)
			require.Equal(t, map[QueueID]uint64{q: 10}, before.ends)

			require.ErrorIs(t, s.Restore(stream), ErrRestoreRefused)
			assert.Equal(t, before, cachesOf(s), "the caches after the refused Restore")
			undo()

			var badgerSyncs atomic.Int64
			dbSync := s.dbSync
			s.dbSync = func() error { badgerSyncs.Add(1); return dbSync() }
			require.NoError(t, s.Sync())
			assert.Zero(t, badgerSyncs.Load(), "the Sync after the refusal needs no Badger Sync: nothing was written")
			again, err := s.Read(q, 0, 100, 100, 0)
			require.NoError(t, err)
			assert.Equal(t, recs, again, "reads after the refusal")
			_, next, ok, err := s.Bounds(q)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, uint64(10), next)
			require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 10, Value: []byte{10}}}}))
			assert.Equal(t, map[QueueID]uint64{q: 11}, cachesOf(s).ends, "the append went on from the cached end")
			v, err := s.GetMeta([]byte("m"))
			require.NoError(t, err)
			assert.Equal(t, []byte("v"), v)
		})
	}
}
