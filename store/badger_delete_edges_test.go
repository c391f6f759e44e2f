package store

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeleteRange_TwoLargeEdges: a range that starts in one large segment
// and ends in the next writes both back in part; in one transaction the
// two parts exceeded what Badger takes, and the deletion failed, the same
// way at every retry. Segments this large are the InMemory profile's
// (SegmentBytes follows its threshold there).
func TestDeleteRange_TwoLargeEdges(t *testing.T) {
	o := DefaultBadgerOptions()
	o.InMemory = true
	s, err := OpenBadger("", &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q := QueueID{Topic: 1}
	rec := func(off uint64) []byte { return bytes.Repeat([]byte{byte(off)}, 99<<10) }
	// Two segments of 8 records of 99 KiB: one per write.
	for base := uint64(0); base < 16; base += 8 {
		var b Batch
		for off := base; off < base+8; off++ {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: rec(off)})
		}
		require.NoError(t, s.Write(&b))
	}
	require.Equal(t, 2, segmentKeys(t, s, q))

	require.NoError(t, s.DeleteRange(q, 7, 9), "keeps 7 records of each segment: more than one transaction takes")
	recs, err := s.Read(q, 0, 100, 0, 0)
	require.NoError(t, err)
	var offs []uint64
	for _, r := range recs {
		offs = append(offs, r.Offset)
		require.Equal(t, rec(r.Offset), r.Value)
	}
	require.Equal(t, []uint64{0, 1, 2, 3, 4, 5, 6, 9, 10, 11, 12, 13, 14, 15}, offs)
}
