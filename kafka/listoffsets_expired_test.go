package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestListOffsets_ByTimeOverExpiredMessages: a search by time that meets a
// run of expired messages (TTL) still finds the first live message stored
// at or after the time. Expired messages are skipped by pulls; a probe
// that found none of them live within the pull's scan bound was taken for
// the partition's end, answering -1 ("none": clients go to the end and
// skip the live messages after the run).
func TestListOffsets_ByTimeOverExpiredMessages(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	appendN := func(n int, ttl time.Duration) {
		t.Helper()
		msgs := make([]*equeue.Message, n)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("v"), TTL: ttl}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	nextMilli := func() time.Time {
		now := time.Now()
		for time.Now().UnixMilli() == now.UnixMilli() {
			time.Sleep(100 * time.Microsecond) // the clock, not another goroutine
		}
		return time.Now()
	}
	appendN(10, 0)                      // 0..9, live
	appendN(50, 50*time.Millisecond)    // 10..59, expire soon
	between := nextMilli()              // after 0..59 were stored
	nextMilli()                         // 60.. in a later millisecond
	appendN(40, 0)                      // 60..99, live
	require.Eventually(t, func() bool { // 10..59 expired
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 10, Max: 1})
		return err == nil && (len(res.Messages) == 0 || res.Messages[0].Offset >= 60)
	}, 10*time.Second, 5*time.Millisecond)

	p := listOffset(t, kclient(t, addr), "t", 0, between.UnixMilli())
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(60), p.Offset, "the first live message stored at or after the time")
}

// TestListOffsets_MaxTimestampOverExpiredTail: with LogAppendTime,
// MAX_TIMESTAMP of a partition whose last messages expired (TTL) answers
// the last live message, not -1 as for an empty partition.
func TestListOffsets_MaxTimestampOverExpiredTail(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cl := kclient(t, serve(t, e, &kafka.Options{LogAppendTime: true}))
	appendN := func(n int, ttl time.Duration) {
		t.Helper()
		msgs := make([]*equeue.Message, n)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("v"), TTL: ttl}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	appendN(10, 0)                      // 0..9, live
	appendN(100, 50*time.Millisecond)   // 10..109, expire soon
	require.Eventually(t, func() bool { // 10..109 expired
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 10, Max: 1})
		return err == nil && len(res.Messages) == 0
	}, 10*time.Second, 5*time.Millisecond)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 9, Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	last := res.Messages[0]

	p := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, last.StoredAt.UnixMilli(), p.Timestamp, "the last live message's time")
	assert.LessOrEqual(t, p.Offset, int64(9), "a live message")
	assert.GreaterOrEqual(t, p.Offset, int64(0), "a live message")
}
