package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A byte limit that cuts across offsets lost before the engine opened
// counts only records among the records it cuts: an offset with no record
// frees no bytes and is not one of them. Counted as records, the lost
// offsets moved the cut's end past held records it had not weighed, and
// it deleted messages the limit did not need to cut (found by review: a
// chunk of record sizes read across the lost range gave each lost offset
// a size of 0, and each was taken for a record cut).
func TestEngine_ByteLimitCutAcrossLostOffsetsCutsOnlyWhatIsOver(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	q := sendNAndClose(t, dir, "t", 10, 8) // "m-0" ... "m-9", committed to 8
	loseTail(t, dir, q, 2, 10)             // 0 and 1 left; 2..7 lost

	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 1 << 20}), "count the bytes stored")
	for i, body := range []string{"a", "b", "c", "d"} {
		res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}})
		require.NoError(t, err)
		require.Equal(t, int64(8+i), res.FirstOffset)
	}
	got, _, _ := browseAll(t, e, "t", 0)
	require.Equal(t, map[int64]string{0: "m-0", 1: "m-1", 8: "a", 9: "b", 10: "c", 11: "d"}, got)

	// Records of 3-byte bodies take 24 bytes, of 1-byte ones 22: 136 in
	// all. Under 70, the two oldest and "a" go (66 left), and no more.
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 70, Overflow: equeue.OverflowDropOldest}))
	got, _, _ = browseAll(t, e, "t", 0)
	assert.Equal(t, map[int64]string{9: "b", 10: "c", 11: "d"}, got, "the limit cut the oldest records down to it, no more")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(9), info.Queues[0].MinOffset)
	assert.Equal(t, int64(3), info.Messages)
}
