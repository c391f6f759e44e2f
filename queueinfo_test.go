package equeue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestEngine_QueueInfoIsTopicsOwnQueue: QueueInfo describes one queue as
// Topic describes it (bounds, writability, messages held, after retention
// moved the low watermark too), and answers a queue outside the topic
// ErrQueueNotFound, an unknown topic ErrTopicNotFound and a name no topic
// can have ErrInvalidName; a namespace view's answers name its topics as
// the view does.
func TestEngine_QueueInfoIsTopicsOwnQueue(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := context.Background()
	require.NoError(t, e.CreateTopic(ctx, "t", 3))
	for q := range 3 {
		msgs := make([]*equeue.Message, q+2)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("v")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: msgs})
		require.NoError(t, err)
	}
	require.NoError(t, e.SetQueueWritable(ctx, "t", 1, false))
	ti, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	for q := range 3 {
		got, err := e.QueueInfo(ctx, "t", q)
		require.NoError(t, err)
		assert.Equal(t, ti.Queues[q], got, "queue %d", q)
	}
	_, err = e.QueueInfo(ctx, "t", 3)
	assert.ErrorIs(t, err, equeue.ErrQueueNotFound)
	_, err = e.QueueInfo(ctx, "t", -1)
	assert.ErrorIs(t, err, equeue.ErrQueueNotFound)
	_, err = e.QueueInfo(ctx, "missing", 0)
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	_, err = e.QueueInfo(ctx, strings.Repeat("x", 200), 0)
	assert.ErrorIs(t, err, equeue.ErrInvalidName)

	ns, err := e.Namespace("ns")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "n", 1))
	got, err := ns.QueueInfo(ctx, "n", 0)
	require.NoError(t, err)
	assert.Equal(t, equeue.QueueInfo{ID: 0, Writable: true}, got)
	_, err = ns.QueueInfo(ctx, "n", 1)
	require.ErrorIs(t, err, equeue.ErrQueueNotFound)
	assert.NotContains(t, err.Error(), "ns:", "the view's name of the topic")
}
