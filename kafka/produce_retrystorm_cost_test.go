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

// describeCounting is an engine that counts its topic descriptions
// (Topic, which reads every queue of the topic) and the queues they and
// QueueInfo read.
type describeCounting struct {
	*equeue.Engine
	topics, queues atomic.Int64
}

func (b *describeCounting) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	ti, err := b.Engine.Topic(ctx, name)
	b.topics.Add(1)
	b.queues.Add(int64(len(ti.Queues)))
	return ti, err
}

func (b *describeCounting) QueueInfo(ctx context.Context, topic string, queue int) (equeue.QueueInfo, error) {
	b.queues.Add(1)
	return b.Engine.QueueInfo(ctx, topic, queue)
}

// reads returns the descriptions and queue reads b made while fn ran.
func (b *describeCounting) reads(fn func()) (topics, queues int64) {
	t0, q0 := b.topics.Load(), b.queues.Load()
	fn()
	return b.topics.Load() - t0, b.queues.Load() - q0
}

// TestProduce_RetryStormCostsNoTopicDescriptions: an idempotent
// producer's batches to every partition of a topic of many, sent again
// (a retry storm: each a duplicate), or out of order (each refused), cost
// no description of the topic while no topic was created or deleted: the
// check that the producer's state is not of a topic deleted since
// (topicReplaced) takes the topic's ID remembered for the engine's topics
// version, and each partition's log start is read from that partition
// alone, so a request reads each of its partitions a bounded number of
// times. Before, each duplicate or refused batch described the whole
// topic, and so did the log starts of each request: a request to all of
// a topic's P partitions read P*(P+1) queues.
func TestProduce_RetryStormCostsNoTopicDescriptions(t *testing.T) {
	const parts = 16
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", parts))
	b := &describeCounting{Engine: e}
	cl := kclient(t, serve(t, b, nil))
	const pid = int64(7501)

	var first []kmsg.ProduceResponseTopicPartition
	_, queues := b.reads(func() { first = produceAll(ctx, t, cl, "t", parts, batchAt(pid, 0)) })
	for _, p := range first {
		require.Equal(t, int16(0), p.ErrorCode, "partition %d", p.Partition)
	}
	t.Logf("first batches: %d queue reads", queues)

	for round := range 3 {
		var again []kmsg.ProduceResponseTopicPartition
		topics, queues := b.reads(func() { again = produceAll(ctx, t, cl, "t", parts, batchAt(pid, 0)) })
		t.Logf("duplicates, round %d: %d descriptions, %d queue reads", round, topics, queues)
		assert.Zero(t, topics, "round %d: no description of the topic", round)
		assert.LessOrEqual(t, queues, int64(2*parts), "round %d: each partition read a bounded number of times", round)
		for i, p := range again {
			require.Equal(t, int16(0), p.ErrorCode, "partition %d", p.Partition)
			assert.Equal(t, first[i].BaseOffset, p.BaseOffset, "partition %d: acknowledged where stored", p.Partition)
			assert.Equal(t, int64(0), p.LogStartOffset, "partition %d", p.Partition)
		}
	}

	var refused []kmsg.ProduceResponseTopicPartition
	topics, queues := b.reads(func() { refused = produceAll(ctx, t, cl, "t", parts, batchAt(pid, 5)) })
	t.Logf("out of order: %d descriptions, %d queue reads", topics, queues)
	assert.Zero(t, topics, "no description of the topic")
	assert.LessOrEqual(t, queues, int64(2*parts))
	for _, p := range refused {
		assert.Equal(t, int16(45), p.ErrorCode, "partition %d: OUT_OF_ORDER_SEQUENCE_NUMBER", p.Partition)
	}
	assert.Equal(t, int64(parts), storedCountAll(t, e, "t"), "nothing stored twice")
}

// batchAt returns a batch of one record of producer pid at sequence seq,
// for each partition.
func batchAt(pid int64, seq int32) func(int) []byte {
	return func(int) []byte { return rawBatch(pid, 0, seq, "v") }
}

// storedCountAll is how many messages the partitions of topic hold.
func storedCountAll(t *testing.T, e *equeue.Engine, topic string) int64 {
	t.Helper()
	ti, err := e.Topic(testCtx(t), topic)
	require.NoError(t, err)
	var n int64
	for _, q := range ti.Queues {
		n += q.MaxOffset - q.MinOffset
	}
	return n
}
