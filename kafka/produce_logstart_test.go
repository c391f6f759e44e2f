package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProduce_LogStartOffsetIsTheLowWatermark: a Produce answer carries the
// partition's log start offset, as Kafka's does: the queue's low watermark,
// after retention moved it; it was always -1. A refused partition's is -1,
// as from Kafka.
func TestProduce_LogStartOffsetIsTheLowWatermark(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 5}}))
	cl := kclient(t, serve(t, e, nil))
	msgs := make([]*equeue.Message, 20)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: []byte("v")}
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)

	for _, b := range [][]byte{rawBatch(-1, -1, -1, "a"), rawBatch(-1, -1, -1, "b", "c")} {
		got := produceRaw(ctx, t, cl, "t", 0, b)
		require.Equal(t, int16(0), got.ErrorCode)
		// The append is answered once the topic is trimmed back to its
		// limit, and nothing else writes it: the start read now is the
		// one the append left.
		ti, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		low := ti.Queues[0].MinOffset
		require.Positive(t, low, "retention moved the start")
		assert.Equal(t, low, got.LogStartOffset)
	}

	// Refused: no start, as from Kafka.
	got := produceRaw(ctx, t, cl, "t", 0, rawBatchOf(nonIdempotent(2), framed(recordBody(0, "a"))))
	require.NotEqual(t, int16(0), got.ErrorCode)
	assert.Equal(t, int64(-1), got.LogStartOffset)
}
