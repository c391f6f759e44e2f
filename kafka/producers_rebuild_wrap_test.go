package kafka_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProduce_RebuiltStateKnowsTheBatchesInFlightAcrossTheWrap: as
// TestProduce_RebuiltStateKnowsEveryBatchInFlight, with the producer's
// sequence numbers wrapping around after the first batch in flight
// (Kafka's sequence numbers go from 2^31-1 back to 0): the retry of that
// batch, stored below the records first read, is found too.
func TestProduce_RebuiltStateKnowsTheBatchesInFlightAcrossTheWrap(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7021), int16(0)
	const batches, size, between = 5, 300, 100
	seqOf := func(b int) int32 {
		if b == 0 {
			return math.MaxInt32 - size + 1
		}
		return int32((b - 1) * size)
	}
	values := func(b int) []string {
		out := make([]string, size)
		for i := range out {
			out[i] = fmt.Sprintf("b%d-%d", b, i)
		}
		return out
	}
	first := kclient(t, serve(t, e, nil))
	bases := make([]int64, batches)
	for b := range batches {
		got := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, seqOf(b), values(b)...))
		require.Equal(t, int16(0), got.ErrorCode, "batch %d", b)
		bases[b] = got.BaseOffset
		others := make([]*equeue.Message, between)
		for i := range others {
			others[i] = &equeue.Message{Body: []byte("other")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: others})
		require.NoError(t, err)
	}
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	for b := range batches {
		got := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, seqOf(b), values(b)...))
		require.Equal(t, int16(0), got.ErrorCode, "the retry of batch %d is taken", b)
		assert.Equal(t, bases[b], got.BaseOffset, "batch %d acknowledged where it was stored", b)
	}
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")
}

// TestProduce_RebuiltStateKnowsABatchAcrossTheWrap: a batch whose
// sequence numbers wrap around (2^31-1, then 0) is named by the wrapped
// numbers, so a listener that knows nothing of its producer reads it
// back whole and acknowledges its retry where it was stored. Before, its
// records after the wrap were named 2^31 and on, which the read back does
// not take for a producer's: the retry was refused
// OUT_OF_ORDER_SEQUENCE_NUMBER, and franz-go sent its records again.
func TestProduce_RebuiltStateKnowsABatchAcrossTheWrap(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7022), int16(0)
	batch := rawBatch(pid, epoch, math.MaxInt32-1, "a", "b", "c", "d")
	first := produceRaw(ctx, t, kclient(t, serve(t, e, nil)), "t", 0, batch)
	require.Equal(t, int16(0), first.ErrorCode)
	retry := produceRaw(ctx, t, kclient(t, serve(t, e, nil)), "t", 0, batch)
	require.Equal(t, int16(0), retry.ErrorCode, "the retry is taken")
	assert.Equal(t, first.BaseOffset, retry.BaseOffset, "acknowledged where it was stored")
	assert.Equal(t, int64(4), storedCount(t, e, "t"), "stored once")
}
