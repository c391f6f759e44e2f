package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProduce_BatchThePartitionNeverHeldIsOutOfOrder: a producer whose
// sequence numbers have a gap (its first batch here, taken as it came,
// starts at 10) sends, to a restarted listener, a batch behind its last
// sequence number that the partition never held: the listener read the
// partition from its first offset, nothing lost or deleted, and found
// no record of it. As from Kafka, whose broker answers a duplicate only
// for a batch its producer state holds, the batch is refused
// OUT_OF_ORDER_SEQUENCE_NUMBER (45) and nothing is stored. Before, it
// was answered DUPLICATE_SEQUENCE_NUMBER (46), which clients take for
// stored: its records were lost. A retry of a batch stored is still
// acknowledged where it was stored.
func TestProduce_BatchThePartitionNeverHeldIsOutOfOrder(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7401), int16(0)
	first := kclient(t, serve(t, e, nil))
	a := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 10, "a0", "a1"))
	require.Equal(t, int16(0), a.ErrorCode)
	b := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, 12, "b0", "b1"))
	require.Equal(t, int16(0), b.ErrorCode)
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	never := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 4, "n0", "n1"))
	assert.Equal(t, int16(45), never.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER, not DUPLICATE_SEQUENCE_NUMBER")
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored")

	retry := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 10, "a0", "a1"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, a.BaseOffset, retry.BaseOffset, "a retry of a batch stored is acknowledged where it was")
	next := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 14, "c0"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, stored, next.BaseOffset)
}
