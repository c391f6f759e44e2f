package kafka_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// produceAll sends one Produce request with batch(p) to each of the
// topic's parts partitions and returns the partitions' answers.
func produceAll(ctx context.Context, t testing.TB, cl *kgo.Client, topic string, parts int, batch func(p int) []byte) []kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 60_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), batch(p)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, parts)
	return resp.Topics[0].Partitions
}

// TestProduce_RebuildDescribesTheTopicOnce: an idempotent producer that
// a restarted listener knows nothing of sends a batch to each partition
// of a topic of many: its state is learned from each partition's records
// with the topic described once, not once (or twice) per partition.
// Before, each partition's rebuild described the whole topic for the
// partition's bounds and its ID, and the append described it again:
// 2 × 64 + 1 descriptions, each reading all 64 partitions.
func TestProduce_RebuildDescribesTheTopicOnce(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	const parts, pid = 64, int64(7201)
	require.NoError(t, e.CreateTopic(ctx, "t", parts))
	first := kclient(t, serve(t, e, nil))
	for _, p := range produceAll(ctx, t, first, "t", parts, func(p int) []byte { return rawBatch(pid, 0, 0, fmt.Sprint("a", p)) }) {
		require.Equal(t, int16(0), p.ErrorCode)
	}

	counting := &topicCounting{Engine: e}
	again := kclient(t, serve(t, counting, nil))
	got := produceAll(ctx, t, again, "t", parts, func(p int) []byte { return rawBatch(pid, 0, 1, fmt.Sprint("b", p)) })
	for _, p := range got {
		require.Equal(t, int16(0), p.ErrorCode, "partition %d", p.Partition)
		assert.Equal(t, int64(1), p.BaseOffset, "partition %d", p.Partition)
	}
	// One description for the topic's ID, one for the answer's log start
	// offsets (setLogStarts).
	assert.LessOrEqual(t, counting.calls.Load(), int64(2), "the topic is described once, not per partition")

	// The state learned is right: the retry of a first batch is
	// acknowledged where it was stored, one out of order refused.
	retry := produceAll(ctx, t, again, "t", parts, func(p int) []byte { return rawBatch(pid, 0, 0, fmt.Sprint("a", p)) })
	for _, p := range retry {
		require.Equal(t, int16(0), p.ErrorCode, "partition %d", p.Partition)
		assert.Equal(t, int64(0), p.BaseOffset, "partition %d", p.Partition)
	}
	skip := produceAll(ctx, t, again, "t", parts, func(p int) []byte { return rawBatch(pid, 0, 5, "c") })
	for _, p := range skip {
		assert.Equal(t, int16(45), p.ErrorCode, "partition %d: OUT_OF_ORDER_SEQUENCE_NUMBER", p.Partition)
	}
}

// BenchmarkProduce_RebuildManyPartitions: a restarted listener learns an
// idempotent producer's state on each of a topic's 256 partitions, from
// one Produce request naming them all; each iteration is a new listener.
//
//	go test -run '^$' -bench RebuildManyPartitions -benchtime 20x ./kafka
func BenchmarkProduce_RebuildManyPartitions(b *testing.B) {
	e := openEngine(b, nil)
	ctx := context.Background()
	const parts, pid = 256, int64(7202)
	require.NoError(b, e.CreateTopic(ctx, "t", parts))
	for p := range parts {
		msgs := make([]*equeue.Message, 100)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("other")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: p, Messages: msgs})
		require.NoError(b, err)
	}
	cl := kclient(b, serve(b, e, nil))
	for _, p := range produceAll(ctx, b, cl, "t", parts, func(p int) []byte { return rawBatch(pid, 0, 0, "a") }) {
		require.Equal(b, int16(0), p.ErrorCode)
	}
	counting := &topicCounting{Engine: e}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		again := kclient(b, serve(b, counting, nil))
		b.StartTimer()
		// A retry of the batch stored: each partition's state is
		// rebuilt, nothing is stored.
		for _, p := range produceAll(ctx, b, again, "t", parts, func(p int) []byte { return rawBatch(pid, 0, 0, "a") }) {
			require.Equal(b, int16(0), p.ErrorCode, "iteration %d", i)
		}
	}
	b.ReportMetric(float64(counting.calls.Load())/float64(b.N), "describes/op")
}
