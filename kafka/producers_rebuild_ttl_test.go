package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// expiresAt reports, for each record of partition 0 of topic from offset
// from on, whether the engine gave it an expiry.
func expiresAt(t *testing.T, e *equeue.Engine, topic string, from int64) []bool {
	t.Helper()
	res, err := e.Pull(testCtx(t), &equeue.PullRequest{Topic: topic, Offset: from, Max: 100})
	require.NoError(t, err)
	var got []bool
	for _, m := range res.Messages {
		got = append(got, !m.ExpiresAt.IsZero())
	}
	return got
}

// TestProduce_RebuiltStateOnATopicWithATimeToLive: on a topic with a
// default time-to-live the engine gives every record an expiry, the
// listener's too. A restarted listener learns an idempotent producer's
// state from those records: the retry of a batch stored (franz-go and
// the Java producer send one again after a timeout) is acknowledged
// where it was stored, and nothing is stored twice; a batch sent ahead
// of one not stored is refused OUT_OF_ORDER_SEQUENCE_NUMBER. Before, the
// rebuild took no record with an expiry for the listener's, so it never
// learned the producer's state there: the retry was taken as a new batch
// and stored again.
func TestProduce_RebuiltStateOnATopicWithATimeToLive(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{DefaultTTL: time.Hour}}))
	const pid, epoch = int64(7601), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)
	require.Equal(t, []bool{true, true, true, true}, expiresAt(t, e, "t", 0), "the engine gave the records an expiry")
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	retryB := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), retryB.ErrorCode)
	assert.Equal(t, b.BaseOffset, retryB.BaseOffset, "acknowledged where it was stored")
	retryA := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), retryA.ErrorCode)
	assert.Equal(t, a.BaseOffset, retryA.BaseOffset, "acknowledged where it was stored")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")

	ahead := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 6, "d0"))
	assert.Equal(t, int16(45), ahead.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER: batch 4 was not stored")
	next := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 4, "c0", "c1"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, stored, next.BaseOffset, "the next batch follows the others")
	assert.Equal(t, stored+2, storedCount(t, e, "t"))
}

// TestProduce_RebuiltStateWithATimeToLiveSwitchedOnThenOff: an idempotent
// producer's first batch went to a topic without a default time-to-live,
// its next once the topic had one (the engine gave those records an
// expiry), which was then taken off. After a restart of the listener the
// retry of the last batch is acknowledged where it was stored. Before,
// the rebuild read the producer's state from its first batch alone, the
// last it took for the listener's, and took the retry for the next batch
// in order: it was stored again.
func TestProduce_RebuiltStateWithATimeToLiveSwitchedOnThenOff(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7602), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{DefaultTTL: time.Hour}))
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{}))
	require.Equal(t, []bool{false, false, true, true}, expiresAt(t, e, "t", 0), "batch b's records alone have an expiry")
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	retry := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, b.BaseOffset, retry.BaseOffset, "acknowledged where it was stored")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")
	next := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 4, "c0"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, stored, next.BaseOffset, "the next batch follows the others")
}

// TestProduce_RetryOfAnExpiredBatchBehindOnesWithATimeToLive: an
// idempotent producer's first batch went to a topic whose default
// time-to-live it outlived (its records expired, a pull passes them by),
// its next once the topic's default was an hour. After a restart of the
// listener the producer's state is learned from the later records, with
// their expiry; the retry of the first batch, behind them but no longer
// readable, is answered DUPLICATE_SEQUENCE_NUMBER (stored, expired since)
// and the retry of the last is acknowledged where it was stored; nothing
// is stored again. Before, the rebuild found none of the producer's
// records it took for the listener's and took both retries as they came:
// they were stored again.
func TestProduce_RetryOfAnExpiredBatchBehindOnesWithATimeToLive(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{DefaultTTL: time.Millisecond}}))
	const pid, epoch = int64(7603), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	require.Eventually(t, func() bool {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 2})
		return err == nil && res.Expired == 2
	}, 10*time.Second, time.Millisecond, "batch a's records expire")
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{DefaultTTL: time.Hour}))
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)
	require.Equal(t, []bool{true, true}, expiresAt(t, e, "t", 0), "batch b's records, alone readable, have an expiry")
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	retryA := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	assert.Equal(t, int16(46), retryA.ErrorCode, "DUPLICATE_SEQUENCE_NUMBER: stored, expired since")
	retryB := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), retryB.ErrorCode)
	assert.Equal(t, b.BaseOffset, retryB.BaseOffset, "acknowledged where it was stored")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")
}
