package store

import (
	"bytes"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lostSegmentsStore writes segments to the value log of a store in dir,
// closes it, zeroes 8 KiB in the middle of its value-log file (bytes a
// machine crash or the disk lost), and opens it again.
func lostSegmentsStore(t *testing.T, dir string, o *BadgerOptions) *Badger {
	t.Helper()
	s, err := OpenBadger(dir, o)
	require.NoError(t, err)
	var b Batch
	for i := range 1600 {
		b.Entries = append(b.Entries, Entry{Queue: QueueID{Topic: 1, Queue: uint32(i % 4)}, Offset: uint64(i / 4), Value: bytes.Repeat([]byte{byte(i)}, 140)})
	}
	require.NoError(t, s.Write(&b))
	require.NoError(t, s.Close())
	files := vlogFiles(t, dir)
	require.NotEmpty(t, files)
	f, err := os.OpenFile(files[0], os.O_RDWR, 0)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(200_000), "the segments are in the value log")
	_, err = f.WriteAt(make([]byte, 8<<10), fi.Size()/2)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	s, err = OpenBadger(dir, o)
	require.NoError(t, err)
	return s
}

// A segment whose bytes Badger cannot read back (it answers nothing) reads
// as corrupt records; a snapshot carries it as a damaged segment of as many
// offsets, where it failed whole before: one damaged segment kept its store
// from ever being snapshot again. The restored store reads the same records
// and the same corrupt offsets, ends each queue where the source does (the
// last segments are lost too here: Badger cut its value log at the damage,
// and the source ends them at their end marks, which snapshots do not
// carry). Its verification takes the carried segments as written: the
// store holds what it was given, and a node that verifies at every open
// would otherwise rebuild it from the same snapshot at every open.
func TestBadgerSnapshot_CarriesALostSegmentAsDamaged(t *testing.T) {
	o := DefaultBadgerOptions()
	o.SegmentBytes = 16 << 10
	src := lostSegmentsStore(t, t.TempDir(), &o)
	defer func() { require.NoError(t, src.Close()) }()
	require.ErrorIs(t, src.VerifyRecords(), ErrDamaged)

	sn, err := src.Snapshot()
	require.NoError(t, err)
	defer sn.Release()
	var buf bytes.Buffer
	_, err = sn.WriteTo(&buf)
	require.NoError(t, err)
	assert.Positive(t, sn.Damaged(), "the snapshot says it carries damage")

	dst, err := OpenBadger(t.TempDir(), &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	require.NoError(t, dst.Restore(&buf))
	lost := 0
	for q := range uint32(4) {
		qid := QueueID{Topic: 1, Queue: q}
		want, err := src.Read(qid, 0, 1000, 0, 0)
		require.NoError(t, err)
		got, err := dst.Read(qid, 0, 1000, 0, 0)
		require.NoError(t, err)
		require.Equal(t, want, got, "queue %d", q)
		wantFirst, wantNext, wantOK, err := src.Bounds(qid)
		require.NoError(t, err)
		gotFirst, gotNext, gotOK, err := dst.Bounds(qid)
		require.NoError(t, err)
		require.Equal(t, []any{wantFirst, wantNext, wantOK}, []any{gotFirst, gotNext, gotOK}, "queue %d: bounds", q)
		require.Equal(t, uint64(400), wantNext, "queue %d ends where it was written to", q)
		for _, r := range got {
			if r.Value == nil {
				lost++
			}
		}
	}
	assert.Positive(t, lost, "records of the damaged segment read as records with no value")
	require.NoError(t, dst.VerifyRecords(), "the carried damage is as written")
}

// damagedSegment stands for as many offsets as asked, and never decodes.
func TestDamagedSegment_StandsForItsCount(t *testing.T) {
	for _, count := range []uint64{1, 2, 5, 127, 128, 5000} {
		v := damagedSegment(count)
		n, err := segmentCount(v)
		require.NoError(t, err, "count %d", count)
		assert.Equal(t, int(count), n)
		require.ErrorIs(t, decodeSegment(v, func(int, []byte) bool { return true }), errSegment)
		assert.Equal(t, 10+count, damagedEnd(10, v, noNextSegment))
		assert.Equal(t, min(10+count, 12), damagedEnd(10, v, 12))
	}
}

// Only a damaged segment exactly as a snapshot carries it is taken for
// carried damage: a sound segment is not, nor is a carried one that damage
// then reached (a byte of its padding or of its checksum changed).
func TestCarriedDamage_IsTheCarriedSegmentOnly(t *testing.T) {
	for _, count := range []uint64{1, 2, 127, 128, 5000} {
		v := damagedSegment(count)
		assert.True(t, carriedDamage(v), "count %d", count)
		for _, at := range []int{len(v) / 2, len(v) - 1} {
			d := bytes.Clone(v)
			d[at] ^= 1
			assert.False(t, carriedDamage(d), "count %d, byte %d changed", count, at)
		}
	}
	assert.False(t, carriedDamage(encodeSegment(nil, [][]byte{[]byte("a"), []byte("b")})))
	assert.False(t, carriedDamage(nil))
}
