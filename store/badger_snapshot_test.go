package store_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

func TestBadgerSnapshot_RestoreGivesThePointInTime(t *testing.T) {
	src := openBadger(t, t.TempDir(), nil)
	q := store.QueueID{Topic: 1, Queue: 2}
	write := func(s *store.Badger, from, to int) {
		var b store.Batch
		for i := from; i < to; i++ {
			b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: uint64(i), Value: []byte(fmt.Sprintf("v%d", i))})
		}
		b.Meta = append(b.Meta, store.MetaOp{Key: []byte("k"), Value: []byte(fmt.Sprint(to))})
		require.NoError(t, s.Write(&b))
	}
	write(src, 0, 100)
	sn, err := src.Snapshot()
	require.NoError(t, err)
	write(src, 100, 150) // after the snapshot: not in it
	var buf bytes.Buffer
	n, err := sn.WriteTo(&buf)
	require.NoError(t, err)
	assert.Equal(t, int64(buf.Len()), n)
	sn.Release()

	dst := openBadger(t, t.TempDir(), nil)
	write(dst, 0, 300) // replaced by the restore
	require.NoError(t, dst.Restore(bytes.NewReader(buf.Bytes())))
	first, next, ok, err := dst.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(0), first)
	assert.Equal(t, uint64(100), next)
	recs, err := dst.Read(q, 0, 100, 1000, 1<<20)
	require.NoError(t, err)
	require.Len(t, recs, 100)
	assert.Equal(t, "v99", string(recs[99].Value))
	v, err := dst.GetMeta([]byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "100", string(v))
	// Appends after a restore continue the restored queue.
	write(dst, 100, 110)
	recs, err = dst.Read(q, 95, 110, 1000, 1<<20)
	require.NoError(t, err)
	require.Len(t, recs, 15)
	assert.Equal(t, "v109", string(recs[14].Value))
}

func TestBadgerSnapshot_RestoreRefusesATruncatedStream(t *testing.T) {
	src := openBadger(t, t.TempDir(), nil)
	require.NoError(t, src.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("a"), Value: []byte("b")}}}))
	sn, err := src.Snapshot()
	require.NoError(t, err)
	defer sn.Release()
	var buf bytes.Buffer
	_, err = sn.WriteTo(&buf)
	require.NoError(t, err)
	dst := openBadger(t, t.TempDir(), nil)
	for _, cut := range []int{0, 5, buf.Len() - 1} {
		err := dst.Restore(bytes.NewReader(buf.Bytes()[:cut]))
		assert.ErrorIs(t, err, store.ErrBadSnapshot, "cut at %d", cut)
	}
}

// A stream that does not start with a snapshot's header is refused before
// the store changes: the error says so (ErrRestoreRefused), the store
// holds what it held and is not marked as cut short.
func TestBadgerSnapshot_RestoreRefusesAStreamWithoutHeaderUnchanged(t *testing.T) {
	dst := openBadger(t, t.TempDir(), nil)
	require.NoError(t, dst.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("a"), Value: []byte("b")}}}))
	for _, stream := range []string{"", "equeue", "not a snapshot at all, not at all\n\x00\x00"} {
		err := dst.Restore(bytes.NewReader([]byte(stream)))
		require.ErrorIs(t, err, store.ErrBadSnapshot, "stream %q", stream)
		require.ErrorIs(t, err, store.ErrRestoreRefused, "stream %q", stream)
		cut, err := dst.RestoreCutShort()
		require.NoError(t, err)
		require.False(t, cut)
		v, err := dst.GetMeta([]byte("a"))
		require.NoError(t, err)
		require.Equal(t, "b", string(v))
	}
}

// A Restore that stops before the end of its snapshot leaves a store that
// says so (RestoreCutShort), across a reopen, until a Restore runs to its
// end; a snapshot of such a store does not carry the mark. Each cut point
// of a stream of records and metadata is tried, the last ones falling
// between the records and the metadata, and within the metadata.
func TestBadgerSnapshot_RestoreCutShortIsMarked(t *testing.T) {
	src := openBadger(t, t.TempDir(), nil)
	for i := range 4 {
		var b store.Batch
		for j := range 50 {
			b.Entries = append(b.Entries, store.Entry{Queue: store.QueueID{Topic: 1, Queue: uint32(i)}, Offset: uint64(j), Value: []byte(fmt.Sprint("v", j))})
		}
		b.Meta = []store.MetaOp{{Key: []byte(fmt.Sprint("\x00a", i)), Value: []byte("1")}, {Key: []byte(fmt.Sprint("z", i)), Value: []byte("2")}}
		require.NoError(t, src.Write(&b))
	}
	sn, err := src.Snapshot()
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = sn.WriteTo(&buf)
	require.NoError(t, err)
	sn.Release()
	whole := buf.Bytes()

	dir := t.TempDir()
	dst, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	cut, err := dst.RestoreCutShort()
	require.NoError(t, err)
	require.False(t, cut, "a new store")
	for _, at := range []int{40, len(whole) / 2, len(whole) - 40, len(whole) - 20, len(whole) - 3} {
		require.ErrorIs(t, dst.Restore(bytes.NewReader(whole[:at])), store.ErrBadSnapshot)
		cut, err := dst.RestoreCutShort()
		require.NoError(t, err)
		require.True(t, cut, "cut at %d of %d", at, len(whole))

		// The mark is on the disk: a reopened store says so too.
		require.NoError(t, dst.Close())
		dst, err = store.OpenBadger(dir, nil)
		require.NoError(t, err)
		cut, err = dst.RestoreCutShort()
		require.NoError(t, err)
		require.True(t, cut, "reopened, cut at %d", at)

		// Copying the partial store does not copy the mark.
		psn, err := dst.Snapshot()
		require.NoError(t, err)
		var pbuf bytes.Buffer
		_, err = psn.WriteTo(&pbuf)
		require.NoError(t, err)
		psn.Release()
		other := openBadger(t, t.TempDir(), nil)
		require.NoError(t, other.Restore(&pbuf))
		cut, err = other.RestoreCutShort()
		require.NoError(t, err)
		require.False(t, cut)
	}
	require.NoError(t, dst.Restore(bytes.NewReader(whole)))
	cut, err = dst.RestoreCutShort()
	require.NoError(t, err)
	require.False(t, cut, "restored whole")
	require.NoError(t, dst.Close())
	dst, err = store.OpenBadger(dir, nil)
	require.NoError(t, err)
	cut, err = dst.RestoreCutShort()
	require.NoError(t, err)
	require.False(t, cut, "restored whole, reopened")
	v, err := dst.GetMeta([]byte("z3"))
	require.NoError(t, err)
	require.Equal(t, "2", string(v))
}

// A store cut short by RestoreNoted gives its note back, across a reopen,
// until a Restore runs to its end; Restore's mark carries none.
func TestBadgerSnapshot_RestoreNoteSurvivesAReopen(t *testing.T) {
	src := openBadger(t, t.TempDir(), nil)
	require.NoError(t, src.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("a"), Value: []byte("b")}}}))
	sn, err := src.Snapshot()
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = sn.WriteTo(&buf)
	require.NoError(t, err)
	sn.Release()
	whole := buf.Bytes()

	dir := t.TempDir()
	dst, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, dst.Close()) }()
	require.ErrorIs(t, dst.RestoreNoted(bytes.NewReader(whole[:len(whole)-1]), []byte("note")), store.ErrBadSnapshot)
	require.NoError(t, dst.Close())
	dst, err = store.OpenBadger(dir, nil)
	require.NoError(t, err)
	note, cut, err := dst.RestoreNote()
	require.NoError(t, err)
	require.True(t, cut)
	require.Equal(t, "note", string(note))

	require.ErrorIs(t, dst.Restore(bytes.NewReader(whole[:len(whole)-1])), store.ErrBadSnapshot)
	note, cut, err = dst.RestoreNote()
	require.NoError(t, err)
	require.True(t, cut)
	require.Nil(t, note)

	require.NoError(t, dst.RestoreNoted(bytes.NewReader(whole), []byte("note")))
	note, cut, err = dst.RestoreNote()
	require.NoError(t, err)
	require.False(t, cut)
	require.Nil(t, note)
}

// A snapshot whose record key is not a record key's width (a key in the
// record space of any other length) is refused as a bad snapshot, not
// loaded for reads to misread later, and the store says it was cut short
// until a good snapshot is restored.
func TestBadgerSnapshot_RestoreRefusesMalformedRecordKeys(t *testing.T) {
	empty := openBadger(t, t.TempDir(), nil)
	sn, err := empty.Snapshot()
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = sn.WriteTo(&buf)
	require.NoError(t, err)
	sn.Release()
	header := buf.Bytes()[:buf.Len()-2] // the magic, without the end frame

	// A record key is 'm', topic and queue (4 bytes each) and offset (8).
	good := append([]byte{'m', 0, 0, 0, 1, 0, 0, 0, 0}, make([]byte, 8)...)
	stream := func(keys ...[]byte) []byte {
		out := append([]byte(nil), header...)
		for _, k := range keys {
			out = append(out, byte(len(k)), 1)
			out = append(out, k...)
			out = append(out, 'v')
		}
		return append(out, 0, 0)
	}
	dst := openBadger(t, t.TempDir(), nil)
	for _, key := range [][]byte{
		{'m'},
		good[:9],                // a queue prefix alone
		good[:16],               // one byte short
		append(good[:17:17], 0), // one byte long
	} {
		err := dst.Restore(bytes.NewReader(stream(key)))
		require.ErrorIs(t, err, store.ErrBadSnapshot, "key %x", key)
		require.ErrorContains(t, err, "record key")
		cut, err := dst.RestoreCutShort()
		require.NoError(t, err)
		require.True(t, cut, "key %x: the store holds part of a snapshot", key)
	}
	// A good snapshot restores and clears the mark.
	require.NoError(t, dst.Restore(bytes.NewReader(stream([]byte("xmeta")))))
	cut, err := dst.RestoreCutShort()
	require.NoError(t, err)
	require.False(t, cut)
	v, err := dst.GetMeta([]byte("meta"))
	require.NoError(t, err)
	require.Equal(t, "v", string(v))
}

// A snapshot taken before a Restore of its store does not stream what the
// Restore left (it streamed the empty store Restore's drop left, as a
// whole snapshot): it fails with ErrSnapshotRestoredOver. One taken after
// streams the restored store.
func TestBadgerSnapshot_RestoredOverFails(t *testing.T) {
	src := openBadger(t, t.TempDir(), nil)
	require.NoError(t, src.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("k"), Value: []byte("src")}}}))
	sn, err := src.Snapshot()
	require.NoError(t, err)
	var other bytes.Buffer
	_, err = sn.WriteTo(&other)
	require.NoError(t, err)
	sn.Release()

	s := openBadger(t, t.TempDir(), nil)
	require.NoError(t, s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("k"), Value: []byte("own")}}}))
	before, err := s.Snapshot()
	require.NoError(t, err)
	defer before.Release()
	require.NoError(t, s.Restore(bytes.NewReader(other.Bytes())))
	var buf bytes.Buffer
	_, err = before.WriteTo(&buf)
	require.ErrorIs(t, err, store.ErrSnapshotRestoredOver)

	after, err := s.Snapshot()
	require.NoError(t, err)
	defer after.Release()
	buf.Reset()
	_, err = after.WriteTo(&buf)
	require.NoError(t, err)
	require.Equal(t, other.Bytes(), buf.Bytes())
}
