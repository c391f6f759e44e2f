package store

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newerSegment makes a segment value one of the next segment format
// version, as a newer store would have written it: its own checksum.
func newerSegment(v []byte) []byte {
	v[0] = segmentVersion + 1
	binary.BigEndian.PutUint32(v[len(v)-4:], crc32.Checksum(v[:len(v)-4], segmentTable))
	return v
}

// newerQueue opens a store whose queue holds the segments [0, 2) ("r0",
// "r1"), [2, 5) of a newer format version and, unless last, [5, 6)
// ("after"), as an older build opens a directory a newer one wrote: the
// store is reopened after the newer segment was put in place. It returns
// the store, the queue and the newer segment's value.
func newerQueue(t *testing.T, last bool) (*Badger, QueueID, []byte) {
	t.Helper()
	dir := t.TempDir()
	s, err := OpenBadger(dir, nil)
	require.NoError(t, err)
	q := QueueID{Topic: 1}
	write := func(from uint64, vals ...string) {
		var b Batch
		for i, v := range vals {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: from + uint64(i), Value: []byte(v)})
		}
		require.NoError(t, s.Write(&b))
	}
	write(0, "r0", "r1")
	write(2, "n2", "n3", "n4")
	if !last {
		write(5, "after")
	}
	require.Equal(t, map[bool]int{false: 3, true: 2}[last], segmentKeys(t, s, q))
	damageSegmentWith(t, s, q, 2, newerSegment)
	require.NoError(t, s.Close())
	s, err = OpenBadger(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, q, segmentBytes(t, s, q, 2)
}

// segmentBytes returns the value of q's segment starting at start, nil if
// there is none.
func segmentBytes(t *testing.T, s *Badger, q QueueID, start uint64) []byte {
	t.Helper()
	var v []byte
	require.NoError(t, s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(recordKey(q, start))
		if err != nil {
			if err == badger.ErrKeyNotFound {
				return nil
			}
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	}))
	return v
}

// TestSegmentsNewer_ReadStopsBeforeIt: a segment of a format version this
// build does not know is not damage: Read does not report its offsets as
// records with no value (which the engine counts as corrupt and skips, so
// consumers would commit past them), it returns the records before it and
// stops there, and a read from inside it fails with ErrUnsupportedFormat
// naming the version. Records after it read as before.
func TestSegmentsNewer_ReadStopsBeforeIt(t *testing.T) {
	s, q, _ := newerQueue(t, false)
	got, err := s.Read(q, 0, 100, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []Record{{Offset: 0, Value: []byte("r0")}, {Offset: 1, Value: []byte("r1")}}, got)
	for _, from := range []uint64{2, 3, 4} {
		_, err = s.Read(q, from, 100, 0, 0)
		require.ErrorIs(t, err, ErrUnsupportedFormat, "a read from %d", from)
		assert.Contains(t, err.Error(), "version 2")
	}
	got, err = s.Read(q, 5, 100, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, []Record{{Offset: 5, Value: []byte("after")}}, got)
	first, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	assert.Equal(t, []any{uint64(0), uint64(6), true}, []any{first, next, ok})
}

// TestSegmentsNewer_LastSegmentRefusedNotOverwritten: where a queue whose
// last segment is of a newer format version ends is unknown, so Bounds
// fails with ErrUnsupportedFormat instead of taking it for one damaged
// record, and so does an append, which would otherwise be written into the
// segment's offsets and rewrite it as records with no value.
func TestSegmentsNewer_LastSegmentRefusedNotOverwritten(t *testing.T) {
	s, q, v := newerQueue(t, true)
	_, _, _, err := s.Bounds(q)
	require.ErrorIs(t, err, ErrUnsupportedFormat)
	err = s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 3, Value: []byte("new")}}})
	require.ErrorIs(t, err, ErrUnsupportedFormat)
	assert.True(t, bytes.Equal(v, segmentBytes(t, s, q, 2)), "the segment is left as it was")
	assert.Equal(t, 2, segmentKeys(t, s, q))
}

// TestSegmentsNewer_WriteIntoRefused: a write into the offsets of a segment
// of a newer format version is refused, not made by rewriting the
// segment's other records as records with no value.
func TestSegmentsNewer_WriteIntoRefused(t *testing.T) {
	s, q, v := newerQueue(t, false)
	err := s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 3, Value: []byte("new")}}})
	require.ErrorIs(t, err, ErrUnsupportedFormat)
	assert.True(t, bytes.Equal(v, segmentBytes(t, s, q, 2)), "the segment is left as it was")
}

// TestSegmentsNewer_DeleteKeepsItWhole: a deletion that reaches into a
// segment of a newer format version (its records cannot be split) leaves
// it whole, and deletes the rest of its range; one that covers it deletes
// it.
func TestSegmentsNewer_DeleteKeepsItWhole(t *testing.T) {
	for name, r := range map[string][2]uint64{"head": {0, 3}, "middle": {3, 4}, "tail": {4, 6}} {
		t.Run(name, func(t *testing.T) {
			s, q, v := newerQueue(t, false)
			require.NoError(t, s.DeleteRange(q, r[0], r[1]))
			assert.True(t, bytes.Equal(v, segmentBytes(t, s, q, 2)), "the segment is left as it was")
			got, err := s.Read(q, 5, 100, 0, 0)
			if r[1] == 6 {
				// The queue now ends with it, where it ends unknown.
				require.ErrorIs(t, err, ErrUnsupportedFormat)
			} else {
				require.NoError(t, err)
				assert.Len(t, got, 1)
			}
			if r[0] == 0 {
				got, err = s.Read(q, 0, 2, 0, 0)
				require.NoError(t, err)
				assert.Empty(t, got)
			}
		})
	}
	t.Run("covered", func(t *testing.T) {
		s, q, _ := newerQueue(t, false)
		require.NoError(t, s.DeleteRange(q, 0, 5))
		assert.Nil(t, segmentBytes(t, s, q, 2), "a range that covers it deletes it")
		got, err := s.Read(q, 0, 100, 0, 0)
		require.NoError(t, err)
		assert.Equal(t, []Record{{Offset: 5, Value: []byte("after")}}, got)
	})
}

// TestSegmentsNewer_VerifyRecordsIsNotDamage: VerifyRecords reports a
// segment of a newer format version with ErrUnsupportedFormat, not as
// damage (ErrDamaged), on which a cluster node would move its store aside.
func TestSegmentsNewer_VerifyRecordsIsNotDamage(t *testing.T) {
	s, _, _ := newerQueue(t, false)
	err := s.VerifyRecords()
	require.ErrorIs(t, err, ErrUnsupportedFormat)
	assert.NotErrorIs(t, err, ErrDamaged)
}
