package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProduce_RetryOfABatchStoredWithATimeToLiveIsADuplicate: an
// idempotent producer's first batch went to a topic with a default
// time-to-live, which the engine gave its records (an expiry), and its
// next to the same topic once the default was taken off. A restarted
// listener learns the producer's state from its records without an
// expiry, as it stores them, and reads the partition from its first
// offset; the retry of the first batch, whose records are there, under
// the producer's IDs, but with an expiry, is answered
// DUPLICATE_SEQUENCE_NUMBER, taken for stored, and nothing is stored
// again: a read that met records of the producer it does not take for
// its own does not prove that the partition never held the batch.
// Before, it was refused OUT_OF_ORDER_SEQUENCE_NUMBER as a batch the
// partition never held, and franz-go stored it again under a new epoch.
func TestProduce_RetryOfABatchStoredWithATimeToLiveIsADuplicate(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{DefaultTTL: time.Hour}}))
	const pid, epoch = int64(7503), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{}))
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	retry := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	assert.Equal(t, int16(46), retry.ErrorCode, "DUPLICATE_SEQUENCE_NUMBER: stored")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")
	retryB := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), retryB.ErrorCode)
	assert.Equal(t, b.BaseOffset, retryB.BaseOffset, "acknowledged where it was stored")
}

// TestProduce_RetryOfABatchExpiredIsADuplicate: as in
// TestProduce_RetryOfABatchStoredWithATimeToLiveIsADuplicate, but the
// first batch's records have expired by the time its retry comes: a
// pull passes them by, so the listener's read down to the partition's
// first offset does not see them at all. A read that passed records by
// (expired, corrupt, or not given by the store) has not seen every
// record the partition held: the retry is answered
// DUPLICATE_SEQUENCE_NUMBER, not refused OUT_OF_ORDER_SEQUENCE_NUMBER as
// a batch the partition never held.
func TestProduce_RetryOfABatchExpiredIsADuplicate(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{DefaultTTL: time.Millisecond}}))
	const pid, epoch = int64(7504), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	require.Eventually(t, func() bool {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 2})
		return err == nil && res.Expired == 2
	}, 10*time.Second, time.Millisecond, "batch a's records expire")
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{}))
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	retry := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	assert.Equal(t, int16(46), retry.ErrorCode, "DUPLICATE_SEQUENCE_NUMBER: stored, expired since")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")
}
