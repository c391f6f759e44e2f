package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeWithin runs a Write from another goroutine and fails the test if it
// has not returned by the deadline: a Write that waits for a lock the
// caller holds would otherwise hang the test.
func writeWithin(t *testing.T, s *Badger, b *Batch) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Write(b) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a Write between two deletion chunks did not return: the deletion holds the write lock")
	}
}

func fillSegments(t *testing.T, s *Badger, q QueueID, n uint64, size int) {
	t.Helper()
	var b Batch
	for off := range n {
		b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: fmt.Appendf(nil, "%0*d", size, off)})
		if len(b.Entries) == 1000 || off == n-1 {
			require.NoError(t, s.Write(&b))
			b.Entries = b.Entries[:0]
		}
	}
}

// TestBadgerDeleteRange_ChunksLetWritesIn deletes a range of thousands of
// segments and checks that the deletion works in chunks of at most
// deleteChunkSegments segments with no lock held between them (a Write
// there returns), and that a chunk looks its segments up again under the
// lock: a Write between two chunks that repacks the records around the
// next chunk's start is neither lost nor mistaken for the range.
func TestBadgerDeleteRange_ChunksLetWritesIn(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q, other := QueueID{Topic: 1}, QueueID{Topic: 2}
	const n = 20_000
	fillSegments(t, s, q, n, 100)
	segs := segmentKeys(t, s, q)
	require.Greater(t, segs, 4*deleteChunkSegments, "enough segments for several chunks")

	var (
		between int
		at      uint64
	)
	s.afterChunk = func(next uint64) {
		between++
		if between != 2 {
			return
		}
		at = next
		again := []byte("again")
		writeWithin(t, s, &Batch{Entries: []Entry{
			{Queue: q, Offset: next - 2, Value: again}, // already deleted: written back
			{Queue: q, Offset: next - 1, Value: again},
			{Queue: q, Offset: next, Value: again}, // not yet deleted: overwritten, then deleted
			{Queue: q, Offset: next + 1, Value: again},
			{Queue: other, Offset: 0, Value: again},
		}})
	}
	require.NoError(t, s.DeleteRange(q, 0, n-10))
	require.GreaterOrEqual(t, between, segs/deleteChunkSegments-1,
		"%d segments deleted in %d chunks: more than %d segments per chunk", segs, between+1, deleteChunkSegments)

	recs, err := s.Read(q, 0, n, 0, 0)
	require.NoError(t, err)
	want := []uint64{at - 2, at - 1}
	for off := uint64(n - 10); off < n; off++ {
		want = append(want, off)
	}
	got := make([]uint64, len(recs))
	for i, r := range recs {
		got[i] = r.Offset
	}
	require.Equal(t, want, got)
	require.Equal(t, "again", string(recs[0].Value))
	require.Equal(t, fmt.Sprintf("%0100d", n-10), string(recs[2].Value))
	recs, err = s.Read(other, 0, 10, 0, 0)
	require.NoError(t, err)
	require.Len(t, recs, 1)
}

// TestBadgerDropQueue_ChunksLetWritesIn drops a queue of thousands of
// segments while another queue is written between the chunks.
func TestBadgerDropQueue_ChunksLetWritesIn(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q, other := QueueID{Topic: 1}, QueueID{Topic: 2}
	fillSegments(t, s, q, 10_000, 100)
	var written uint64
	s.afterChunk = func(uint64) {
		writeWithin(t, s, &Batch{Entries: []Entry{{Queue: other, Offset: written, Value: []byte("meanwhile")}}})
		written++
	}
	require.NoError(t, s.DropQueue(q))
	require.Greater(t, written, uint64(1), "the drop ran in several chunks")
	_, _, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.False(t, ok, "queue empty after the drop")
	first, next, ok, err := s.Bounds(other)
	require.NoError(t, err)
	require.Equal(t, []any{uint64(0), written, true}, []any{first, next, ok})
}

// TestBadgerReclaim_QuietStore checks how Reclaim tells a quiet store,
// whose memtables it flushes, from a busy one, whose writes it must not
// block: a Write running, or one started while it watches, means busy.
func TestBadgerReclaim_QuietStore(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.True(t, s.quiet(), "no write at all")

	s.writing.Add(1) // as a Write in progress does
	require.False(t, s.quiet(), "a Write in progress")
	s.writing.Add(-1)

	// Writes that keep coming: within 50 windows of quietFor, a Write
	// loop starts one inside a window however the machine schedules it.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for off := uint64(0); ; off++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := s.Write(&Batch{Entries: []Entry{{Queue: QueueID{Topic: 1}, Offset: off, Value: []byte("x")}}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	busy := false
	for range 50 {
		if !s.quiet() {
			busy = true
			break
		}
	}
	close(stop)
	<-done
	require.True(t, busy, "a store written in a loop is never quiet")
	require.True(t, s.quiet(), "quiet again once the writes stop")
	require.NoError(t, s.Reclaim())
}
