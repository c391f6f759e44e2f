package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProduce_RetryOfABatchStoredWithATimeToLiveIsAcknowledgedWhereStored:
// an idempotent producer's first batch went to a topic with a default
// time-to-live, which the engine gave its records (an expiry), and its
// next to the same topic once the default was taken off. A restarted
// listener reads the producer's records back, with an expiry or without
// (the engine's, which the listener's records get too): the retry of the
// first batch is acknowledged where it was stored, and nothing is stored
// again. Before, records with an expiry were not taken for the
// listener's; the retry was refused OUT_OF_ORDER_SEQUENCE_NUMBER as a
// batch the partition never held, and franz-go stored it again under a
// new epoch (later, answered DUPLICATE_SEQUENCE_NUMBER, its offset
// unknown).
func TestProduce_RetryOfABatchStoredWithATimeToLiveIsAcknowledgedWhereStored(t *testing.T) {
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
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, a.BaseOffset, retry.BaseOffset, "acknowledged where it was stored")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")
	retryB := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), retryB.ErrorCode)
	assert.Equal(t, b.BaseOffset, retryB.BaseOffset, "acknowledged where it was stored")
}

// TestProduce_RetryBehindRecordsNotTheListenersIsADuplicate: the read
// back of a restarted listener met messages named as an idempotent
// producer's records that a Kafka record cannot make (here with an
// attempt: a native producer's), below the producer's last batch. It
// does not take them for the producer's, and a read that met them does
// not prove that the partition never held the producer's batch at those
// sequence numbers: its retry is answered DUPLICATE_SEQUENCE_NUMBER, not
// refused OUT_OF_ORDER_SEQUENCE_NUMBER, and nothing is stored.
func TestProduce_RetryBehindRecordsNotTheListenersIsADuplicate(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7505), int16(0)
	var named []*equeue.Message
	for seq := range 2 {
		named = append(named, &equeue.Message{ID: fmt.Sprintf("kafka-%d-%d-0-%d", pid, epoch, seq), Body: []byte("native"), Attempt: 1})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: named})
	require.NoError(t, err)
	first := kclient(t, serve(t, e, nil))
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 2, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	retry := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 0, "a0", "a1"))
	assert.Equal(t, int16(46), retry.ErrorCode, "DUPLICATE_SEQUENCE_NUMBER: the read does not prove it never stored")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored")
}

// TestProduce_RetryOfABatchExpiredIsADuplicate: as in
// TestProduce_RetryOfABatchStoredWithATimeToLiveIsAcknowledgedWhereStored, but the
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
