package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A group coordinated outside the engine (the Kafka listener's, which
// stores its offsets through CommitGroupOffsets) has no subscriptions: it
// consumes the queues it has committed offsets of. KeepUnconsumed must
// keep what such a group has not consumed yet, as it does for a native
// group: it used to take only subscriptions into account, so a pass
// deleted every message a Kafka consumer group had still to read. Like a
// native group that has not started on a queue of its topic, it holds
// back the queues of the topic it has not committed on yet.
func TestRetention_KeepUnconsumedWaitsForAGroupCoordinatedOutside(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	fillQueue(t, e, "t", 10)
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: []byte("a")}, {Body: []byte("b")}}})
	require.NoError(t, err)
	require.NoError(t, e.CommitGroupOffsets(ctx, "kafka-group", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 3}))
	keep := equeue.RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true}

	res, err := e.ApplyRetention(ctx, keep)
	require.NoError(t, err)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(3), info.Queues[0].MinOffset, "only what the group committed on t/0 is deleted")
	assert.Zero(t, info.Queues[1].MinOffset, "the group has not started on t/1: held back, as a native group's queue is")
	assert.Equal(t, int64(3), res.Deleted)

	require.NoError(t, e.CommitGroupOffsets(ctx, "kafka-group", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 8}))
	res, err = e.ApplyRetention(ctx, keep)
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.Deleted, "what the group consumed since")
}
