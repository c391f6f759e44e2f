package equeue_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestAdmin_QueueCountsThatOverflowAreRefused: a queue count whose product
// with the lanes (or sum with the queues there) wraps around int is
// refused with ErrInvalidArgument and changes nothing, instead of adding
// (or creating) a few queues, or a huge count.
func TestAdmin_QueueCountsThatOverflowAreRefused(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 4}))
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	wraps := 1<<62 + 1 // times 4 lanes: 4 modulo 2^64

	err := e.AddQueues(ctx, "p", wraps)
	require.ErrorIs(t, err, equeue.ErrInvalidArgument, "AddQueues(%d) on a 4-lane topic", wraps)
	info, err := e.Topic(ctx, "p")
	require.NoError(t, err)
	assert.Len(t, info.Queues, 4, "nothing added")

	err = e.CreateTopicWith(ctx, "c", equeue.TopicOptions{Queues: wraps, Priorities: 4})
	require.ErrorIs(t, err, equeue.ErrInvalidArgument, "CreateTopicWith(Queues: %d, Priorities: 4)", wraps)
	_, err = e.Topic(ctx, "c")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "nothing created")

	// A negative count whose product with the lanes wraps to a valid one.
	negWraps := -(1 << 62) + 1 // times 4 lanes: 4 modulo 2^64
	err = e.CreateTopicWith(ctx, "n", equeue.TopicOptions{Queues: negWraps, Priorities: 4})
	require.ErrorIs(t, err, equeue.ErrInvalidArgument, "CreateTopicWith(Queues: %d, Priorities: 4)", negWraps)
	_, err = e.Topic(ctx, "n")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "nothing created")

	// len(queues)+n wrapping negative: refused before any metadata is
	// written (it used to store a negative queue count and then try to
	// allocate MaxInt queues).
	err = e.AddQueues(ctx, "t", math.MaxInt)
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Len(t, info.Queues, 4, "nothing added")
}
