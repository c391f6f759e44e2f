package kafka_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// listOffsetsCostParts is the partition count of the topic the cost test
// and benchmark of ListOffsets ask about: the most a topic may have.
const listOffsetsCostParts = equeue.MaxQueuesPerTopic

// perPartitionListOffsets is a ListOffsets request naming each of the
// parts partitions of topic in an entry of its own, as a client asking
// for one partition at a time does over as many requests, at ts.
func perPartitionListOffsets(topic string, parts int, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	for p := range int32(parts) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// filledTopic makes topic with parts partitions, partition q holding q+1
// messages.
func filledTopic(ctx context.Context, t testing.TB, e *equeue.Engine, topic string, parts int) {
	t.Helper()
	require.NoError(t, e.CreateTopic(ctx, topic, parts))
	for q := range parts {
		msgs := make([]*equeue.Message, q%4+1)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("v")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Queue: q, Messages: msgs})
		require.NoError(t, err)
	}
}

// TestListOffsets_PartitionsAreReadOneByOne: ListOffsets reads each
// partition asked for alone (Engine.QueueInfo), not the description of
// its whole topic (Topic, which reads every partition): a client asking
// for a topic's partitions one at a time (sarama's GetOffset), or naming
// each in an entry of its own, cost the square of the topic's partition
// count. The earliest and latest offsets are those of each partition,
// and a partition outside the topic is still UNKNOWN_TOPIC_OR_PARTITION.
func TestListOffsets_PartitionsAreReadOneByOne(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	filledTopic(ctx, t, e, "t", listOffsetsCostParts)
	b := &topicCounting{Engine: e}
	cl := kclient(t, serve(t, b, nil))

	for _, ts := range []int64{-1, -2} {
		req := perPartitionListOffsets("t", listOffsetsCostParts+1, ts)
		before := b.calls.Load()
		raw, err := cl.SeedBrokers()[0].Request(ctx, req) // as it is: the client would split it
		require.NoError(t, err)
		resp := raw.(*kmsg.ListOffsetsResponse)
		assert.Zero(t, b.calls.Load()-before, "timestamp %d: no topic described", ts)
		require.Len(t, resp.Topics, listOffsetsCostParts+1)
		for i, rt := range resp.Topics {
			require.Len(t, rt.Partitions, 1)
			p := rt.Partitions[0]
			require.Equal(t, int32(i), p.Partition)
			if i == listOffsetsCostParts {
				assert.Equal(t, int16(3), p.ErrorCode, "UNKNOWN_TOPIC_OR_PARTITION past the topic's partitions")
				continue
			}
			require.Equal(t, int16(0), p.ErrorCode, "partition %d", i)
			want := int64(i%4 + 1)
			if ts == -2 {
				want = 0
			}
			assert.Equal(t, want, p.Offset, "partition %d at %d", i, ts)
		}
	}
}

// BenchmarkListOffsets_PerPartitionOf256: a ListOffsets request for the
// latest offset of each of a topic's 256 partitions, each named in an
// entry of its own.
func BenchmarkListOffsets_PerPartitionOf256(b *testing.B) {
	e := openEngine(b, nil)
	ctx := context.Background()
	filledTopic(ctx, b, e, "t", listOffsetsCostParts)
	cl := kclient(b, serve(b, e, nil))
	req := perPartitionListOffsets("t", listOffsetsCostParts, -1)
	b.ResetTimer()
	for range b.N {
		raw, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil || len(raw.(*kmsg.ListOffsetsResponse).Topics) != listOffsetsCostParts {
			b.Fatal(err)
		}
	}
}
