package equeue_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// rewriteSegmentHolding calls change with the value of the store segment
// (the records of a run of offsets, see README "Storage") of the closed
// engine directory dir that holds body, stores what it returns and gives
// that back.
func rewriteSegmentHolding(t *testing.T, dir string, body []byte, change func(v []byte) []byte) []byte {
	t.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithLogger(nil))
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	var out []byte
	require.NoError(t, db.Update(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte("m")})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if bytes.Contains(v, body) {
				out = change(v)
				return txn.Set(it.Item().KeyCopy(nil), out)
			}
		}
		return nil
	}))
	require.NotNil(t, out, "a segment holds %q", body)
	return out
}

// segmentOfNextVersion makes a segment one of the next segment format
// version, as a newer engine would write it: version byte first, its
// checksum last.
func segmentOfNextVersion(v []byte) []byte {
	v[0]++
	binary.BigEndian.PutUint32(v[len(v)-4:], crc32.Checksum(v[:len(v)-4], crc32.MakeTable(crc32.Castagnoli)))
	return v
}

// segmentHolding returns the value of the segment of dir that holds body.
func segmentHolding(t *testing.T, dir string, body []byte) []byte {
	t.Helper()
	return rewriteSegmentHolding(t, dir, body, func(v []byte) []byte { return v })
}

// writeSegments opens an engine on dir, stores each of runs in topic "t"
// with an append of its own (a segment of its own in the store) and
// closes it.
func writeSegments(t *testing.T, dir string, runs ...[]string) {
	t.Helper()
	ctx := ctxT(t)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, run := range runs {
		var msgs []*equeue.Message
		for _, b := range run {
			msgs = append(msgs, &equeue.Message{Body: []byte(b)})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())
}

// TestEngine_SegmentOfANewerFormatIsRefusedNotSkipped: a store segment of
// a format version this build does not know (a newer engine wrote it
// before this one opened the directory) is not damage: pulls stop before
// it and a pull from it fails with ErrUnsupportedFormat, counted as such,
// nothing counted corrupt; the messages after it are served; a retention
// pass by age keeps it; and the engine never rewrites or deletes it.
func TestEngine_SegmentOfANewerFormatIsRefusedNotSkipped(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	writeSegments(t, dir, []string{"before"}, []string{"newer 1", "newer 2", "newer 3"}, []string{"after"})
	newer := rewriteSegmentHolding(t, dir, []byte("newer 1"), segmentOfNextVersion)

	e, err := equeue.Open(dir, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "before", string(res.Messages[0].Body))
	assert.Equal(t, int64(1), res.NextOffset, "the pull stops before it")
	assert.Empty(t, res.Corrupt)
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1, Max: 10})
	require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)
	assert.ErrorIs(t, err, equeue.ErrCorrupt)
	assert.Contains(t, err.Error(), "t/0 at 1")
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 4, Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "after", string(res.Messages[0].Body))

	ret, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Hour})
	require.NoError(t, err)
	assert.Zero(t, ret.Deleted)
	assert.Zero(t, e.Stats().CorruptRecords, "nothing counted as damage")
	assert.Equal(t, uint64(1), e.Stats().UnsupportedFormatPulls)
	require.NoError(t, e.Close())
	assert.Equal(t, newer, segmentHolding(t, dir, []byte("newer 1")), "the segment is as the newer engine wrote it")
}

// TestEngine_OpenRefusesAQueueEndingInASegmentOfANewerFormat: where a queue
// whose last segment is of a newer format version ends is unknown, and a
// send would be written into that segment's offsets: Open fails with
// ErrUnsupportedFormat rather than take the segment for one damaged record
// and overwrite it.
func TestEngine_OpenRefusesAQueueEndingInASegmentOfANewerFormat(t *testing.T) {
	dir := t.TempDir()
	writeSegments(t, dir, []string{"before"}, []string{"newer 1", "newer 2"})
	newer := rewriteSegmentHolding(t, dir, []byte("newer 1"), segmentOfNextVersion)

	e, err := equeue.Open(dir, nil)
	if err == nil {
		ctx := ctxT(t)
		_, serr := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("next")}}})
		assert.NoError(t, serr)
		require.NoError(t, e.Close())
	}
	require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)
	assert.Equal(t, newer, segmentHolding(t, dir, []byte("newer 1")), "the segment is as the newer engine wrote it")
}
