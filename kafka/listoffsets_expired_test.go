package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
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
