package store

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// lsmBytes is what the LSM tree's tables hold (uncompressed: Badger's
// OnDiskSize also counts the value-log bytes they point to); memtables are
// flushed to tables when the store closes, so call it after a reopen.
func lsmBytes(s *Badger) int64 {
	var n int64
	for _, t := range s.db.Tables() {
		n += int64(t.UncompressedSize)
	}
	return n
}

// With SegmentBytes above the value threshold, the records of a queue in
// one write are packed into segments of up to SegmentBytes, and those
// segments live in the value log: the LSM tree holds keys and pointers.
// With the default, segments stay below the threshold, inline.
func TestSegmentBytes_LargeSegmentsGoToTheValueLog(t *testing.T) {
	const (
		queues  = 4
		perQ    = 400
		recSize = 140
	)
	write := func(t *testing.T, o *BadgerOptions) (*Badger, string) {
		dir := t.TempDir()
		s, err := OpenBadger(dir, o)
		require.NoError(t, err)
		var b Batch
		for i := range queues * perQ {
			q := QueueID{Topic: 1, Queue: uint32(i % queues)}
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: uint64(i / queues), Value: bytes.Repeat([]byte{byte(i)}, recSize)})
		}
		require.NoError(t, s.Write(&b))
		require.NoError(t, s.Close())
		s, err = OpenBadger(dir, o)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		for qi := range queues {
			q := QueueID{Topic: 1, Queue: uint32(qi)}
			recs, err := s.Read(q, 0, perQ, 0, 0)
			require.NoError(t, err)
			require.Len(t, recs, perQ)
			for i, r := range recs {
				require.Equal(t, uint64(i), r.Offset)
				require.Equal(t, bytes.Repeat([]byte{byte(i*queues + qi)}, recSize), r.Value)
			}
		}
		return s, dir
	}
	payload := int64(queues * perQ * recSize)

	inline, _ := write(t, nil)
	// 142 bytes a record with its length: 7 fit below 1 KiB.
	require.Equal(t, (perQ+6)/7, segmentKeys(t, inline, QueueID{Topic: 1}))
	require.Greater(t, lsmBytes(inline), payload, "inline segments are in the tables")

	o := DefaultBadgerOptions()
	o.SegmentBytes = 16 << 10
	large, _ := write(t, &o)
	// 115 records fit in 16 KiB: 400 take 4 segments.
	require.Equal(t, 4, segmentKeys(t, large, QueueID{Topic: 1}))
	require.Less(t, lsmBytes(large), payload/10, "the tables hold pointers, not the records")
}

func TestSegmentBytes_Options(t *testing.T) {
	o, err := BadgerOptions{}.resolve()
	require.NoError(t, err)
	require.Equal(t, o.ValueThreshold-1, o.SegmentBytes, "default: inline")

	o, err = BadgerOptions{ValueThreshold: 256}.resolve()
	require.NoError(t, err)
	require.Equal(t, int64(255), o.SegmentBytes)

	o, err = BadgerOptions{SegmentBytes: 64 << 10}.resolve()
	require.NoError(t, err)
	require.Equal(t, int64(64<<10), o.SegmentBytes)

	o, err = BadgerOptions{InMemory: true, SegmentBytes: 100}.resolve()
	require.NoError(t, err)
	require.Equal(t, o.ValueThreshold-1, o.SegmentBytes, "in memory: ignored")

	for _, v := range []int64{-1, 63, 1<<20 + 1} {
		_, err := OpenBadger(t.TempDir(), &BadgerOptions{SegmentBytes: v})
		require.ErrorIs(t, err, ErrInvalidOptions, "SegmentBytes %d", v)
		require.ErrorContains(t, err, "SegmentBytes", "SegmentBytes %d", v)
	}
}
