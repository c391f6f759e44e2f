package store_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// A Read continuing where the last one of its queue stopped seeks straight
// to the segment it stopped in; these tests change the segments in between
// and check that the continuing Read still returns exactly the records.

func hintWrite(t *testing.T, s *store.Badger, q store.QueueID, from, to uint64, tag string) {
	t.Helper()
	var b store.Batch
	for off := from; off < to; off++ {
		b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off, Value: []byte(fmt.Sprintf("%s-%d", tag, off))})
	}
	require.NoError(t, s.Write(&b))
}

func hintValues(t *testing.T, s *store.Badger, q store.QueueID, from, to uint64, max int) []string {
	t.Helper()
	recs, err := s.Read(q, from, to, max, 0)
	require.NoError(t, err)
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	return out
}

func TestBadgerReadContinuesAfterSegmentsMoved(t *testing.T) {
	s := openBadger(t, t.TempDir(), nil)
	q := store.QueueID{Topic: 1, Queue: 0}
	hintWrite(t, s, q, 0, 5, "a")
	hintWrite(t, s, q, 5, 10, "a")
	require.Equal(t, []string{"5:a-5", "6:a-6"}, hintValues(t, s, q, 5, 10, 2))

	// Rewrite offsets 3..9: the segment the last Read stopped in (at 5)
	// is replaced by segments that start elsewhere.
	hintWrite(t, s, q, 3, 10, "b")
	require.Equal(t, []string{"7:b-7", "8:b-8", "9:b-9"}, hintValues(t, s, q, 7, 10, 32))
}

func TestBadgerReadContinuesAfterHeadDeleted(t *testing.T) {
	s := openBadger(t, t.TempDir(), nil)
	q := store.QueueID{Topic: 1, Queue: 0}
	hintWrite(t, s, q, 0, 10, "a")
	require.Equal(t, []string{"0:a-0", "1:a-1", "2:a-2", "3:a-3"}, hintValues(t, s, q, 0, 10, 4))

	// Deleting the head splits the segment the last Read stopped in.
	require.NoError(t, s.DeleteRange(q, 0, 2))
	require.Equal(t, []string{"4:a-4", "5:a-5", "6:a-6", "7:a-7", "8:a-8", "9:a-9"}, hintValues(t, s, q, 4, 10, 32))
	require.Equal(t, []string{"2:a-2", "3:a-3"}, hintValues(t, s, q, 0, 4, 32))
}

func TestBadgerReadContinuesAcrossSegments(t *testing.T) {
	s := openBadger(t, t.TempDir(), nil)
	q := store.QueueID{Topic: 1, Queue: 0}
	for i := uint64(0); i < 10; i++ {
		hintWrite(t, s, q, i*7, i*7+7, "a")
	}
	var got []string
	for from := uint64(0); from < 70; {
		recs := hintValues(t, s, q, from, 70, 3)
		require.NotEmpty(t, recs)
		got = append(got, recs...)
		from += uint64(len(recs))
	}
	require.Len(t, got, 70)
	for i, g := range got {
		require.Equal(t, fmt.Sprintf("%d:a-%d", i, i), g)
	}
}
