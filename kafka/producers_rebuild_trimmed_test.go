package kafka_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// appendOthers stores n records of no producer in partition 0 of topic.
func appendOthers(ctx context.Context, t *testing.T, e *equeue.Engine, topic string, n int) {
	t.Helper()
	msgs := make([]*equeue.Message, n)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: []byte("other")}
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Queue: 0, Messages: msgs})
	require.NoError(t, err)
}

// dropOldest deletes the n oldest records of topic, a topic of one
// partition, as its MaxMessages limit does (OverflowDropOldest): the
// limit is set to what it holds, then n records of no producer are
// stored past it.
func dropOldest(ctx context.Context, t *testing.T, e *equeue.Engine, topic string, n int) {
	t.Helper()
	before, err := e.QueueInfo(ctx, topic, 0)
	require.NoError(t, err)
	require.NoError(t, e.SetTopicLimits(ctx, topic, equeue.TopicLimits{MaxMessages: before.Messages, Overflow: equeue.OverflowDropOldest}))
	appendOthers(ctx, t, e, topic, n)
	after, err := e.QueueInfo(ctx, topic, 0)
	require.NoError(t, err)
	require.Equal(t, before.MinOffset+int64(n), after.MinOffset, "the oldest records deleted")
}

// TestProduce_RetryOfABatchTrimmedAfterTheRebuildIsADuplicate: a
// restarted listener learns an idempotent producer's state from the
// partition while its first records are still there, reading back only
// the producer's last ones; the partition's oldest records, the
// producer's first batch among them, are then deleted (a topic limit,
// retention), and the retry of that first batch comes. The listener
// reads on down to the partition's first offset and finds none of its
// records: they were deleted, not never stored, so the batch is answered
// DUPLICATE_SEQUENCE_NUMBER, taken for stored, and nothing is stored
// again. Before, the read was taken for one of a partition that deleted
// nothing, as it was when the state was learned, and the batch was
// refused OUT_OF_ORDER_SEQUENCE_NUMBER, which makes franz-go send it
// again under a new epoch: stored twice.
func TestProduce_RetryOfABatchTrimmedAfterTheRebuildIsADuplicate(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7501), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	require.Equal(t, int64(0), a.BaseOffset)
	// More records than the producer's state is read back from at
	// first (MaxPullBatch), so its first batch is not read then.
	appendOthers(ctx, t, e, "t", equeue.MaxPullBatch+100)
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)

	again := kclient(t, serve(t, e, nil))
	c := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 4, "c0"))
	require.Equal(t, int16(0), c.ErrorCode, "the next batch, in order")
	dropOldest(ctx, t, e, "t", 2) // batch a's records
	stored := storedCount(t, e, "t")

	retry := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	assert.Equal(t, int16(46), retry.ErrorCode, "DUPLICATE_SEQUENCE_NUMBER: stored, then deleted")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")
}

// trimOnFirstPull is an engine whose first pull runs trim before it
// reads.
type trimOnFirstPull struct {
	*equeue.Engine
	once sync.Once
	trim func()
}

func (b *trimOnFirstPull) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	b.once.Do(b.trim)
	return b.Engine.Pull(ctx, req)
}

// TestProduce_RetryOfABatchTrimmedDuringTheRebuildIsADuplicate: the
// partition's oldest records, an idempotent producer's first batch among
// them, are deleted after a restarted listener read the partition's
// bounds (its first offset 0, nothing lost) and before it read its
// records: the read, down to offset 0, finds none of that batch's
// records, deleted under it. The batch's retry is answered
// DUPLICATE_SEQUENCE_NUMBER, taken for stored, not refused
// OUT_OF_ORDER_SEQUENCE_NUMBER as a batch the partition never held.
func TestProduce_RetryOfABatchTrimmedDuringTheRebuildIsADuplicate(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7502), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)

	trimming := &trimOnFirstPull{Engine: e, trim: func() { dropOldest(ctx, t, e, "t", 2) }}
	again := kclient(t, serve(t, trimming, nil))
	retry := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	assert.Equal(t, int16(46), retry.ErrorCode, "DUPLICATE_SEQUENCE_NUMBER: stored, then deleted")
	assert.Equal(t, int64(4), storedCount(t, e, "t"), "nothing stored again: b and the two records that trimmed a")
	next := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 4, "c0"))
	require.Equal(t, int16(0), next.ErrorCode)
}
