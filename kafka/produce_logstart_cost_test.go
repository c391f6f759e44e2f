package kafka_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// topicCounting is an engine that counts its Topic calls.
type topicCounting struct {
	*equeue.Engine
	calls atomic.Int64
}

func (b *topicCounting) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	b.calls.Add(1)
	return b.Engine.Topic(ctx, name)
}

// TestProduce_LogStartOffsetReadOncePerTopic: a Produce answer gives each
// stored partition its log start offset (the queue's low watermark), with
// at most one description of each topic of the request, not one per
// partition (an engine's are read a partition at a time, with none): each
// description reads every partition of the topic, so a request that
// writes all of a topic's partitions, as a producer's to its only broker
// does, cost the square of their count.
func TestProduce_LogStartOffsetReadOncePerTopic(t *testing.T) {
	const parts = 32
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", parts))
	for q := range parts {
		msgs := make([]*equeue.Message, q+1)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("v")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: msgs})
		require.NoError(t, err)
	}
	b := &topicCounting{Engine: e}
	cl := kclient(t, serve(t, b, nil))

	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	for p := range int32(parts) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, rawBatch(-1, -1, -1, "a")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	before := b.calls.Load()
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.LessOrEqual(t, b.calls.Load()-before, int64(1), "the topic is described once for the request")

	ti, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, parts)
	for _, p := range resp.Topics[0].Partitions {
		require.Equal(t, int16(0), p.ErrorCode, "partition %d", p.Partition)
		assert.Equal(t, int64(p.Partition+1), p.BaseOffset, "partition %d", p.Partition)
		assert.Equal(t, ti.Queues[p.Partition].MinOffset, p.LogStartOffset, "partition %d", p.Partition)
	}
}
