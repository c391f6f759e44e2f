package store

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/crashsim"
)

// A Write that fails stores nothing, and leaves nothing behind that a
// later Write acts on either. Found by review: a Write that failed after
// it had packed the records of one queue (here, on a later queue of the
// batch, one whose segment is of a later format version) still raised the
// store's known end of that queue, and the next Write to it set the
// queue's end mark to that end, past every record stored. Once the value
// log lost the queue's last segment, as a machine crash or one flipped
// byte does, the queue ended there: the offsets of the failed Write, whose
// records were answered "not stored", read back as records lost, and the
// next append went after them.
func TestBadger_FailedWriteDoesNotMoveTheEndMark(t *testing.T) {
	dir := t.TempDir()
	q := QueueID{Topic: 1, Queue: 2}
	newer := QueueID{Topic: 2}
	s, err := OpenBadger(dir, valueLogOptions())
	require.NoError(t, err)
	records := func(from, to uint64) []Entry {
		var out []Entry
		for off := from; off < to; off++ {
			out = append(out, Entry{Queue: q, Offset: off, Value: valueLogRecord(off)})
		}
		return out
	}
	require.NoError(t, s.Write(&Batch{Entries: records(0, 10)}))
	require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: newer, Value: []byte("n0")}}}))
	damageSegmentWith(t, s, newer, 0, newerSegment)

	failed := &Batch{Entries: append(records(10, 20), Entry{Queue: newer, Value: []byte("over n0")})}
	require.ErrorIs(t, s.Write(failed), ErrUnsupportedFormat)
	_, next, _, err := s.Bounds(q)
	require.NoError(t, err)
	require.Equal(t, uint64(10), next, "the failed Write stored nothing")

	require.NoError(t, s.Write(&Batch{Entries: records(10, 16)}))
	require.NoError(t, s.Sync())
	require.NoError(t, s.Close())
	crashsim.FlipInLastValueLog(t, dir, valueLogRecord(12)) // the last segment, [10, 16)

	s, err = OpenBadger(dir, valueLogOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(16), next, "the queue ends after the last Write that succeeded")

	want := make([]Record, 0, 16)
	for _, en := range records(0, 10) {
		want = append(want, Record{Offset: en.Offset, Value: en.Value})
	}
	for off := uint64(10); off < 16; off++ {
		want = append(want, Record{Offset: off}) // lost with the value log's tail
	}
	requireRecords(t, s, q, want)
}
